// Tests of the OpenSSL context built from a parsed web config (http/tls.h), with
// certificates made here with the OpenSSL API. The parser is tested in
// tests/config/web_config_test.cc; TLS over real sockets by tls_auth_e2e.sh.

#include "hotkey/http/tls.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "hotkey/config/web_config.h"

namespace hotkey::http {
namespace {

using config::ClientAuthType;
using config::ParseWebConfig;
using config::TlsServerConfig;
using config::WebConfig;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

// A directory of PEM files: a self-signed EC certificate with its key, and a second key
// that does not match it.
class TempPki {
 public:
  TempPki() {
    char tmpl[] = "/tmp/hotkey-web-config-XXXXXX";
    dir_ = mkdtemp(tmpl);
    EVP_PKEY* key = EVP_EC_gen("P-256");
    EVP_PKEY* other = EVP_EC_gen("P-256");
    X509* cert = X509_new();
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), 0);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
    X509_set_pubkey(cert, key);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
    X509_set_issuer_name(cert, name);
    X509_sign(cert, key, EVP_sha256());
    cert_pem_ = ToPem([&](BIO* b) { PEM_write_bio_X509(b, cert); });
    key_pem_ = ToPem(
        [&](BIO* b) { PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr); });
    other_key_pem_ = ToPem(
        [&](BIO* b) { PEM_write_bio_PrivateKey(b, other, nullptr, nullptr, 0, nullptr, nullptr); });
    X509_free(cert);
    EVP_PKEY_free(key);
    EVP_PKEY_free(other);
    Write("server.crt", cert_pem_);
    Write("server.key", key_pem_);
    Write("other.key", other_key_pem_);
    Write("garbage.crt", "not a certificate\n");
  }
  ~TempPki() { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name), std::ios::binary) << text;
  }
  const std::string& dir() const { return dir_; }
  const std::string& cert_pem() const { return cert_pem_; }
  const std::string& key_pem() const { return key_pem_; }

 private:
  template <class F>
  static std::string ToPem(F write) {
    BIO* b = BIO_new(BIO_s_mem());
    write(b);
    char* data = nullptr;
    const long n = BIO_get_mem_data(b, &data);
    std::string out(data, static_cast<size_t>(n));
    BIO_free(b);
    return out;
  }

  std::string dir_;
  std::string cert_pem_, key_pem_, other_key_pem_;
};

TEST_CASE("Tls: MakeTlsContext loads a good certificate and key, from files or inline", "[tls]") {
  TempPki pki;
  TlsServerConfig t;
  t.cert_file = pki.Path("server.crt");
  t.key_file = pki.Path("server.key");
  CHECK(MakeTlsContext(t).ok());

  TlsServerConfig inline_pem;
  inline_pem.cert = pki.cert_pem();
  inline_pem.key = pki.key_pem();
  CHECK(MakeTlsContext(inline_pem).ok());

  // Every cipher name and curve the parser accepts is one OpenSSL knows.
  TlsServerConfig all = t;
  absl::StatusOr<WebConfig> c = ParseWebConfig(
      "tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: "
      "[TLS_RSA_WITH_AES_128_CBC_SHA, "
      "TLS_RSA_WITH_AES_256_CBC_SHA, TLS_RSA_WITH_AES_128_GCM_SHA256, "
      "TLS_RSA_WITH_AES_256_GCM_SHA384, "
      "TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384, TLS_CHACHA20_POLY1305_SHA256, "
      "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA, "
      "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA, TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA, "
      "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, "
      "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, "
      "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, "
      "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256]\n"
      "  curve_preferences: [CurveP256, CurveP384, CurveP521, X25519]\n",
      "");
  REQUIRE(c.ok());
  all.cipher_suites = c->tls.cipher_suites;
  all.curve_preferences = c->tls.curve_preferences;
  absl::StatusOr<std::unique_ptr<boost::asio::ssl::context>> ctx = MakeTlsContext(all);
  INFO((ctx.ok() ? std::string() : Message(ctx.status())));
  CHECK(ctx.ok());
}

TEST_CASE("Tls: MakeTlsContext refuses bad PEM and a key that does not match", "[tls]") {
  TempPki pki;
  TlsServerConfig t;
  t.cert_file = pki.Path("garbage.crt");
  t.key_file = pki.Path("server.key");
  absl::StatusOr<std::unique_ptr<boost::asio::ssl::context>> garbage = MakeTlsContext(t);
  REQUIRE_FALSE(garbage.ok());
  CHECK_THAT(Message(garbage.status()), Catch::Contains("cert_file"));

  t.cert_file = pki.Path("server.crt");
  t.key_file = pki.Path("other.key");
  absl::StatusOr<std::unique_ptr<boost::asio::ssl::context>> mismatch = MakeTlsContext(t);
  REQUIRE_FALSE(mismatch.ok());
  CHECK_THAT(Message(mismatch.status()), Catch::Contains("key"));

  t.key_file = pki.Path("server.key");
  t.client_auth_type = ClientAuthType::kRequireAndVerifyClientCert;
  t.client_ca_file = pki.Path("garbage.crt");
  absl::StatusOr<std::unique_ptr<boost::asio::ssl::context>> bad_ca = MakeTlsContext(t);
  REQUIRE_FALSE(bad_ca.ok());
  CHECK_THAT(Message(bad_ca.status()), Catch::Contains("client_ca_file"));

  t.client_ca_file = pki.Path("server.crt");  // a self-signed certificate is its own CA
  CHECK(MakeTlsContext(t).ok());
}

}  // namespace
}  // namespace hotkey::http
