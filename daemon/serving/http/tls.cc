// Builds the OpenSSL context of the HTTP server from a parsed web config; see tls.h.

#include "hotkey/http/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <boost/asio/ip/address.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hotkey::http {

namespace {

namespace ssl = boost::asio::ssl;

std::string OpenSslError(const boost::system::error_code& ec) {
  std::string m = ec.message();
  // Asio's message is OpenSSL's reason string ("no start line", "key values mismatch");
  // the library queue may hold more detail.
  ERR_clear_error();
  return m;
}

// True if the certificate has a DNS, e-mail, IP or URI subject alternative name equal to
// one of `allowed` (the toolkit's client_allowed_sans semantics; IPs in their usual text).
bool HasAllowedSan(X509* cert, const std::vector<std::string>& allowed) {
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return false;
  bool found = false;
  for (int i = 0; i < sk_GENERAL_NAME_num(names) && !found; ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
    std::string value;
    if (n->type == GEN_DNS || n->type == GEN_EMAIL || n->type == GEN_URI) {
      const ASN1_STRING* s = n->d.ia5;
      value.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)), ASN1_STRING_length(s));
    } else if (n->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* s = n->d.iPAddress;
      const unsigned char* b = ASN1_STRING_get0_data(s);
      if (ASN1_STRING_length(s) == 4) {
        boost::asio::ip::address_v4::bytes_type bytes;
        std::memcpy(bytes.data(), b, 4);
        value = boost::asio::ip::address_v4(bytes).to_string();
      } else if (ASN1_STRING_length(s) == 16) {
        boost::asio::ip::address_v6::bytes_type bytes;
        std::memcpy(bytes.data(), b, 16);
        value = boost::asio::ip::address_v6(bytes).to_string();
      }
    }
    if (value.empty()) continue;
    found = std::find(allowed.begin(), allowed.end(), value) != allowed.end();
  }
  GENERAL_NAMES_free(names);
  return found;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ssl::context>> MakeTlsContext(const config::TlsServerConfig& t) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_server);
  SSL_CTX* h = ctx->native_handle();
  auto fail = [](std::string_view what, const boost::system::error_code& ec) {
    return absl::InvalidArgumentError(
        absl::StrCat("tls_server_config: ", std::string(what), ": ", OpenSslError(ec)));
  };
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_compression, ec);
  SSL_CTX_set_options(h, SSL_OP_NO_RENEGOTIATION);
  if (t.prefer_server_cipher_suites) {
    SSL_CTX_set_options(h, SSL_OP_CIPHER_SERVER_PREFERENCE);
  } else {
    SSL_CTX_clear_options(h, SSL_OP_CIPHER_SERVER_PREFERENCE);
  }
  // Note: OpenSSL 3 at Debian's security level 2 has no signature algorithm TLS 1.0/1.1 may
  // use, so those versions cannot complete a handshake even when min_version allows them.
  if (SSL_CTX_set_min_proto_version(h, static_cast<int>(t.min_version)) != 1 ||
      SSL_CTX_set_max_proto_version(h, static_cast<int>(t.max_version)) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("tls_server_config: OpenSSL refused the version range");
  }
  std::vector<std::string> ciphers;
  for (const std::string& cs : t.cipher_suites) {
    for (const auto& [go, openssl] : config::TlsCipherSuiteNames()) {
      if (cs == go && *openssl != '\0') ciphers.push_back(openssl);
    }
  }
  if (!ciphers.empty() && SSL_CTX_set_cipher_list(h, absl::StrJoin(ciphers, ":").c_str()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat("tls_server_config.cipher_suites: not supported by this OpenSSL: ",
                     absl::StrJoin(t.cipher_suites, ", ")));
  }
  if (!t.curve_preferences.empty()) {
    std::vector<std::string> groups;
    for (const std::string& c : t.curve_preferences) {
      for (const auto& [go, openssl] : config::TlsCurveNames()) {
        if (c == go) groups.push_back(openssl);
      }
    }
    if (SSL_CTX_set1_groups_list(h, absl::StrJoin(groups, ":").c_str()) != 1) {
      ERR_clear_error();
      return absl::InvalidArgumentError(
          absl::StrCat("tls_server_config.curve_preferences: not supported by this OpenSSL: ",
                       absl::StrJoin(t.curve_preferences, ", ")));
    }
  }
  if (!t.cert_file.empty()) {
    ctx->use_certificate_chain_file(t.cert_file, ec);
    if (ec) return fail(absl::StrCat("cert_file \"", t.cert_file, "\""), ec);
  } else {
    ctx->use_certificate_chain(boost::asio::buffer(t.cert), ec);
    if (ec) return fail("cert", ec);
  }
  if (!t.key_file.empty()) {
    ctx->use_private_key_file(t.key_file, ssl::context::pem, ec);
    if (ec) return fail(absl::StrCat("key_file \"", t.key_file, "\""), ec);
  } else {
    ctx->use_private_key(boost::asio::buffer(t.key), ssl::context::pem, ec);
    if (ec) return fail("key", ec);
  }
  if (SSL_CTX_check_private_key(h) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("tls_server_config: the key does not match the certificate");
  }
  if (!t.client_ca_file.empty()) {
    ctx->load_verify_file(t.client_ca_file, ec);
    if (ec) return fail(absl::StrCat("client_ca_file \"", t.client_ca_file, "\""), ec);
    // The CA names sent in the CertificateRequest, so a client with several certificates
    // picks the right one.
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(t.client_ca_file.c_str())) {
      SSL_CTX_set_client_CA_list(h, names);
    }
    ERR_clear_error();
  } else if (!t.client_ca.empty()) {
    ctx->add_certificate_authority(boost::asio::buffer(t.client_ca), ec);
    if (ec) return fail("client_ca", ec);
  }

  int mode = ssl::verify_none;
  bool accept_any = false;  // request a certificate but do not judge it (Go's semantics)
  switch (t.client_auth_type) {
    case config::ClientAuthType::kNoClientCert:
      break;
    case config::ClientAuthType::kRequestClientCert:
      mode = ssl::verify_peer;
      accept_any = true;
      break;
    case config::ClientAuthType::kRequireAnyClientCert:
      mode = ssl::verify_peer | ssl::verify_fail_if_no_peer_cert;
      accept_any = true;
      break;
    case config::ClientAuthType::kVerifyClientCertIfGiven:
      mode = ssl::verify_peer;
      break;
    case config::ClientAuthType::kRequireAndVerifyClientCert:
      mode = ssl::verify_peer | ssl::verify_fail_if_no_peer_cert;
      break;
  }
  ctx->set_verify_mode(mode, ec);
  if (mode != ssl::verify_none) {
    ctx->set_verify_callback(
        [accept_any, sans = t.client_allowed_sans](bool preverified, ssl::verify_context& vc) {
          X509_STORE_CTX* sc = vc.native_handle();
          if (accept_any) preverified = true;
          if (!preverified || sans.empty() || X509_STORE_CTX_get_error_depth(sc) != 0)
            return preverified;
          return HasAllowedSan(X509_STORE_CTX_get_current_cert(sc), sans);
        },
        ec);
    // Required by OpenSSL for session resumption when peers are verified.
    static constexpr unsigned char kSessionContext[] = "hotkeyd";
    SSL_CTX_set_session_id_context(h, kSessionContext, sizeof kSessionContext - 1);
  }
  if (ec) return fail("client verification", ec);
  return ctx;
}

}  // namespace hotkey::http
