#include "web_config.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include <yaml-cpp/yaml.h>
#include <boost/asio/ip/address.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hotkey::daemon {

namespace {

namespace ssl = boost::asio::ssl;

// A web config file is well under a KiB plus maybe inline PEM; the cap stops a wrong path
// (/dev/zero, a log) from eating memory.
constexpr size_t kMaxFileBytes = size_t{1} << 20;

// bcrypt of a random password, cost 10 (the toolkit's documented cost): an unknown user is
// checked against it so that a wrong user name costs as long as a wrong password.
constexpr char kDecoyHash[] = "$2y$10$gMEdsdo/XfEF0UyYOYt1beSA8fZ1B0wf22fDDZ9WY44gXnC4Lj0VK";

// bcrypt reads at most 72 bytes of a password; a longer one would be checked on its prefix
// only, so it is refused (as Go's bcrypt does).
constexpr size_t kMaxPasswordBytes = 72;

// Go's tls.CipherSuites() names, with OpenSSL's name for each ("" for the TLS 1.3 suites,
// which Go does not let a config restrict, and neither do we).
constexpr std::pair<const char*, const char*> kCiphers[] = {
    {"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"},
    {"TLS_AES_128_GCM_SHA256", ""},
    {"TLS_AES_256_GCM_SHA384", ""},
    {"TLS_CHACHA20_POLY1305_SHA256", ""},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"},
};

// Go's curve names (the toolkit's list) and OpenSSL's group names.
constexpr std::pair<const char*, const char*> kCurves[] = {
    {"CurveP256", "P-256"}, {"CurveP384", "P-384"}, {"CurveP521", "P-521"}, {"X25519", "X25519"}};

constexpr std::pair<const char*, TlsVersion> kVersions[] = {{"TLS10", TlsVersion::kTls10},
                                                            {"TLS11", TlsVersion::kTls11},
                                                            {"TLS12", TlsVersion::kTls12},
                                                            {"TLS13", TlsVersion::kTls13}};

// The toolkit's configurable headers; an empty list means any value.
struct AllowedHeader {
  const char* name;
  std::vector<std::string> values;
};
const std::vector<AllowedHeader>& AllowedHeaders() {
  static const auto* headers = new std::vector<AllowedHeader>{
      {"Strict-Transport-Security", {}},
      {"X-Content-Type-Options", {"nosniff"}},
      {"X-Frame-Options", {"deny", "sameorigin"}},
      {"X-XSS-Protection", {}},
      {"Content-Security-Policy", {}},
  };
  return *headers;
}

std::string Line(const YAML::Mark& mark) {
  return mark.line >= 0 ? absl::StrCat("line ", mark.line + 1, ": ") : std::string();
}

absl::Status Error(const YAML::Node& node, std::string_view path, std::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(Line(node.Mark()), std::string(path), ": ", std::string(message)));
}

// A string value; null (`key:` with nothing) reads as "", as in the toolkit.
absl::Status ReadString(const YAML::Node& node, std::string_view path, std::string* out) {
  if (node.IsNull()) {
    out->clear();
    return absl::OkStatus();
  }
  if (!node.IsScalar()) return Error(node, path, "must be a single value, not a list or map");
  *out = node.Scalar();
  return absl::OkStatus();
}

absl::Status ReadBool(const YAML::Node& node, std::string_view path, bool* out) {
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, *out)) {
    return Error(node, path, "must be true or false");
  }
  return absl::OkStatus();
}

absl::Status ReadList(const YAML::Node& node, std::string_view path,
                      std::vector<std::string>* out) {
  out->clear();
  if (node.IsNull()) return absl::OkStatus();
  if (!node.IsSequence()) return Error(node, path, "must be a list");
  for (const YAML::Node& item : node) {
    if (!item.IsScalar()) return Error(item, path, "every item must be a single value");
    out->push_back(item.Scalar());
  }
  return absl::OkStatus();
}

// Calls `on_key(key_node, key, value_node)` for each entry of a map section, refusing
// non-scalar and duplicate keys (yaml-cpp keeps duplicates; the toolkit's strict parser
// refuses them).
template <class OnKey>
absl::Status ForEachKey(const YAML::Node& map, std::string_view path, OnKey on_key) {
  if (!map.IsMap()) return Error(map, path, "must be a map of keys to values");
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    // Copies: `it->` returns a temporary proxy, so a reference to its members would dangle.
    const YAML::Node k = it->first;
    const YAML::Node v = it->second;
    if (!k.IsScalar()) return Error(k, path, "keys must be plain strings");
    const std::string name =
        path.empty() ? k.Scalar() : absl::StrCat(std::string(path), ".", k.Scalar());
    if (!seen.insert(k.Scalar()).second) return Error(k, name, "appears twice");
    if (absl::Status s = on_key(k, name, v); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string JoinDir(std::string_view base_dir, const std::string& file) {
  if (file.empty() || base_dir.empty() || file.front() == '/') return file;
  return (std::filesystem::path(std::string(base_dir)) / file).string();
}

absl::Status ReadTls(const YAML::Node& section, std::string_view base_dir, WebConfig* c) {
  TlsServerConfig& t = c->tls;
  if (section.IsNull()) return absl::OkStatus();  // `tls_server_config:` alone: plain HTTP
  std::string client_auth = "NoClientCert";
  // Copies (YAML::Node is a handle): the iterator's nodes do not outlive the loop.
  std::optional<YAML::Node> client_auth_node, sans_node;
  absl::Status s = ForEachKey(
      section, "tls_server_config",
      [&](const YAML::Node& k, const std::string& name, const YAML::Node& v) -> absl::Status {
        const std::string& key = k.Scalar();
        if (key == "cert") return ReadString(v, name, &t.cert);
        if (key == "key") return ReadString(v, name, &t.key);
        if (key == "client_ca") return ReadString(v, name, &t.client_ca);
        if (key == "cert_file" || key == "key_file" || key == "client_ca_file") {
          std::string* out = key == "cert_file"  ? &t.cert_file
                             : key == "key_file" ? &t.key_file
                                                 : &t.client_ca_file;
          if (absl::Status r = ReadString(v, name, out); !r.ok()) return r;
          *out = JoinDir(base_dir, *out);
          return absl::OkStatus();
        }
        if (key == "client_auth_type") {
          client_auth_node = v;
          return ReadString(v, name, &client_auth);
        }
        if (key == "client_allowed_sans") {
          sans_node = v;
          return ReadList(v, name, &t.client_allowed_sans);
        }
        if (key == "min_version" || key == "max_version") {
          std::string text;
          if (absl::Status r = ReadString(v, name, &text); !r.ok()) return r;
          for (const auto& [vname, version] : kVersions) {
            if (text == vname) {
              (key == "min_version" ? t.min_version : t.max_version) = version;
              return absl::OkStatus();
            }
          }
          return Error(v, name,
                       absl::StrCat("unknown TLS version \"", text,
                                    "\" (expected TLS10, TLS11, TLS12 or TLS13)"));
        }
        if (key == "cipher_suites") {
          if (absl::Status r = ReadList(v, name, &t.cipher_suites); !r.ok()) return r;
          for (const std::string& cs : t.cipher_suites) {
            bool known = false;
            for (const auto& [go, openssl] : kCiphers) known = known || cs == go;
            if (!known) {
              return Error(v, name,
                           absl::StrCat("unknown or insecure cipher suite \"", cs,
                                        "\" (Go names from tls.CipherSuites(), e.g. "
                                        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)"));
            }
          }
          return absl::OkStatus();
        }
        if (key == "prefer_server_cipher_suites")
          return ReadBool(v, name, &t.prefer_server_cipher_suites);
        if (key == "curve_preferences") {
          if (absl::Status r = ReadList(v, name, &t.curve_preferences); !r.ok()) return r;
          for (const std::string& curve : t.curve_preferences) {
            bool known = false;
            for (const auto& [go, openssl] : kCurves) known = known || curve == go;
            if (!known) {
              return Error(v, name,
                           absl::StrCat("unknown curve \"", curve,
                                        "\" (expected CurveP256, CurveP384, CurveP521 or X25519)"));
            }
          }
          return absl::OkStatus();
        }
        return Error(k, name,
                     "unknown key (expected cert_file, key_file, cert, key, client_auth_type, "
                     "client_ca_file, client_ca, client_allowed_sans, min_version, max_version, "
                     "cipher_suites, prefer_server_cipher_suites or curve_preferences)");
      });
  if (!s.ok()) return s;
  if (section.size() == 0) return absl::OkStatus();  // `tls_server_config: {}`: plain HTTP

  // Checks across keys, at the section's line. A section with settings but no certificate
  // is refused: the operator meant TLS, and silently serving plain HTTP would hide it.
  c->tls_enabled = true;
  const std::string_view p = "tls_server_config";
  if (!t.cert.empty() && !t.cert_file.empty())
    return Error(section, p, "set cert_file or cert, not both");
  if (!t.key.empty() && !t.key_file.empty())
    return Error(section, p, "set key_file or key, not both");
  if (!t.client_ca.empty() && !t.client_ca_file.empty()) {
    return Error(section, p, "set client_ca_file or client_ca, not both");
  }
  if (t.cert.empty() && t.cert_file.empty())
    return Error(section, p, "missing one of cert_file or cert");
  if (t.key.empty() && t.key_file.empty())
    return Error(section, p, "missing one of key_file or key");

  const YAML::Node ca_line = client_auth_node ? *client_auth_node : section;
  if (client_auth.empty() || client_auth == "NoClientCert") {
    t.client_auth_type = ClientAuthType::kNoClientCert;
  } else if (client_auth == "RequestClientCert") {
    t.client_auth_type = ClientAuthType::kRequestClientCert;
  } else if (client_auth == "RequireAnyClientCert" || client_auth == "RequireClientCert") {
    t.client_auth_type = ClientAuthType::kRequireAnyClientCert;  // the second: toolkit's old name
  } else if (client_auth == "VerifyClientCertIfGiven") {
    t.client_auth_type = ClientAuthType::kVerifyClientCertIfGiven;
  } else if (client_auth == "RequireAndVerifyClientCert") {
    t.client_auth_type = ClientAuthType::kRequireAndVerifyClientCert;
  } else {
    return Error(ca_line, "tls_server_config.client_auth_type",
                 absl::StrCat("unknown value \"", client_auth,
                              "\" (expected NoClientCert, RequestClientCert, RequireAnyClientCert, "
                              "VerifyClientCertIfGiven or RequireAndVerifyClientCert)"));
  }
  const bool has_ca = !t.client_ca.empty() || !t.client_ca_file.empty();
  if (has_ca && t.client_auth_type == ClientAuthType::kNoClientCert) {
    return Error(ca_line, "tls_server_config.client_auth_type",
                 "a client CA is set but client_auth_type is NoClientCert (use "
                 "RequireAndVerifyClientCert to authenticate clients by certificate)");
  }
  if (!has_ca && (t.client_auth_type == ClientAuthType::kVerifyClientCertIfGiven ||
                  t.client_auth_type == ClientAuthType::kRequireAndVerifyClientCert)) {
    return Error(
        ca_line, "tls_server_config.client_auth_type",
        absl::StrCat(client_auth, " needs client_ca_file (or client_ca) to verify against"));
  }
  if (!t.client_allowed_sans.empty() &&
      t.client_auth_type != ClientAuthType::kRequireAnyClientCert &&
      t.client_auth_type != ClientAuthType::kRequireAndVerifyClientCert) {
    return Error(*sans_node, "tls_server_config.client_allowed_sans",
                 "needs client_auth_type RequireAnyClientCert or RequireAndVerifyClientCert (other "
                 "types let a client connect without a certificate)");
  }
  if (t.min_version > t.max_version) {
    return Error(section, p, "min_version is above max_version");
  }
  return absl::OkStatus();
}

absl::Status ReadHttp(const YAML::Node& section, WebConfig* c) {
  if (section.IsNull()) return absl::OkStatus();
  return ForEachKey(
      section, "http_server_config",
      [&](const YAML::Node& k, const std::string& name, const YAML::Node& v) -> absl::Status {
        if (k.Scalar() == "http2") {
          // Accepted for compatibility and ignored: hotkeyd serves HTTP/1.1 only (ALPN is not
          // offered, so an HTTP/2 client falls back to HTTP/1.1).
          bool ignored;
          return ReadBool(v, name, &ignored);
        }
        if (k.Scalar() != "headers")
          return Error(k, name, "unknown key (expected headers or http2)");
        if (v.IsNull()) return absl::OkStatus();
        return ForEachKey(
            v, name,
            [&](const YAML::Node& hk, const std::string& hname,
                const YAML::Node& hv) -> absl::Status {
              const AllowedHeader* allowed = nullptr;
              for (const AllowedHeader& h : AllowedHeaders()) {
                if (hk.Scalar() == h.name) allowed = &h;
              }
              if (allowed == nullptr) {
                return Error(
                    hk, hname,
                    "this header cannot be configured (allowed: Strict-Transport-Security, "
                    "X-Content-Type-Options, X-Frame-Options, X-XSS-Protection, "
                    "Content-Security-Policy)");
              }
              std::string value;
              if (absl::Status r = ReadString(hv, hname, &value); !r.ok()) return r;
              if (value.empty()) return absl::OkStatus();  // "unset if blank"
              if (value.find_first_of("\r\n") != std::string::npos ||
                  value.find('\0') != std::string::npos) {
                return Error(hv, hname, "must be one line");
              }
              if (!allowed->values.empty() &&
                  std::find(allowed->values.begin(), allowed->values.end(), value) ==
                      allowed->values.end()) {
                return Error(hv, hname,
                             absl::StrCat("must be one of ", absl::StrJoin(allowed->values, ", "),
                                          ", not \"", value, "\""));
              }
              c->headers.emplace_back(hk.Scalar(), value);
              return absl::OkStatus();
            });
      });
}

absl::Status ReadUsers(const YAML::Node& section, WebConfig* c) {
  if (section.IsNull()) return absl::OkStatus();
  return ForEachKey(
      section, "basic_auth_users",
      [&](const YAML::Node& k, const std::string& name, const YAML::Node& v) -> absl::Status {
        if (k.Scalar().find(':') != std::string::npos) {
          return Error(k, name, "a user name cannot contain ':' (basic auth splits on it)");
        }
        std::string hash;
        if (absl::Status r = ReadString(v, name, &hash); !r.ok()) return r;
        // The value is not echoed: it is a password hash.
        if (!IsBcryptHash(hash)) {
          return Error(v, name,
                       "not a bcrypt hash ($2y$, $2b$ or $2a$, cost 04-31); make one with "
                       "htpasswd -nBC 10 \"\" | tr -d ':\\n'");
        }
        c->basic_auth_users[k.Scalar()] = hash;
        return absl::OkStatus();
      });
}

absl::StatusOr<WebConfig> Parse(const std::string& text, std::string_view base_dir) {
  const YAML::Node root = YAML::Load(text);
  WebConfig c;
  if (root.IsNull()) return c;  // an empty file: plain HTTP, no auth (as in the toolkit)
  absl::Status s = ForEachKey(
      root, "",
      [&](const YAML::Node& k, const std::string& name, const YAML::Node& v) -> absl::Status {
        if (name == "tls_server_config") return ReadTls(v, base_dir, &c);
        if (name == "http_server_config") return ReadHttp(v, &c);
        if (name == "basic_auth_users") return ReadUsers(v, &c);
        if (name == "rate_limit") {
          return Error(k, name,
                       "not supported by hotkeyd (limit requests in a proxy in front of it)");
        }
        return Error(
            k, name,
            "unknown key (expected tls_server_config, http_server_config or basic_auth_users)");
      });
  if (!s.ok()) return s;
  return c;
}

std::string OpenSslError(const boost::system::error_code& ec) {
  std::string m = ec.message();
  // Asio's message is OpenSSL's reason string ("no start line", "key values mismatch");
  // the library queue may hold more detail.
  ERR_clear_error();
  return m;
}

absl::Status CheckReadable(const std::string& key, const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (f == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("tls_server_config.", key, ": cannot read \"", path, "\": ", strerror(errno)));
  }
  return absl::OkStatus();
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

absl::StatusOr<WebConfig> ParseWebConfig(std::string_view yaml_text, std::string_view base_dir) {
  try {
    return Parse(std::string(yaml_text), base_dir);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(Line(e.mark), "malformed YAML: ", e.msg));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("reading YAML: ", e.what()));
  }
}

absl::StatusOr<WebConfig> LoadWebConfigFile(const std::string& path) {
  const std::string where = absl::StrCat("web config file \"", path, "\": ");
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (file == nullptr) {
    const int err = errno;
    std::string message =
        absl::StrCat("cannot open web config file \"", path, "\": ", strerror(err));
    return err == ENOENT ? absl::NotFoundError(message) : absl::InvalidArgumentError(message);
  }
  std::string text;
  char buf[8192];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, file.get())) > 0) {
    text.append(buf, n);
    if (text.size() > kMaxFileBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "larger than ", kMaxFileBytes, " bytes"));
    }
  }
  if (std::ferror(file.get())) {
    return absl::InvalidArgumentError(absl::StrCat(where, "read error: ", strerror(errno)));
  }
  absl::StatusOr<WebConfig> c =
      ParseWebConfig(text, std::filesystem::path(path).parent_path().string());
  absl::Status s = c.status();
  if (s.ok() && c->tls_enabled) {
    s = CheckReadable("cert_file", c->tls.cert_file);
    if (s.ok()) s = CheckReadable("key_file", c->tls.key_file);
    if (s.ok()) s = CheckReadable("client_ca_file", c->tls.client_ca_file);
  }
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat(where, s.message()));
  return c;
}

absl::StatusOr<std::unique_ptr<ssl::context>> MakeTlsContext(const TlsServerConfig& t) {
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
    for (const auto& [go, openssl] : kCiphers) {
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
      for (const auto& [go, openssl] : kCurves) {
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
    case ClientAuthType::kNoClientCert:
      break;
    case ClientAuthType::kRequestClientCert:
      mode = ssl::verify_peer;
      accept_any = true;
      break;
    case ClientAuthType::kRequireAnyClientCert:
      mode = ssl::verify_peer | ssl::verify_fail_if_no_peer_cert;
      accept_any = true;
      break;
    case ClientAuthType::kVerifyClientCertIfGiven:
      mode = ssl::verify_peer;
      break;
    case ClientAuthType::kRequireAndVerifyClientCert:
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

bool IsBcryptHash(std::string_view h) {
  // $2y$10$ + 22 salt characters + 31 hash characters = 60.
  if (h.size() != 60 || h[0] != '$' || h[1] != '2' || h[3] != '$' || h[6] != '$') return false;
  if (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') return false;
  if (!absl::ascii_isdigit(h[4]) || !absl::ascii_isdigit(h[5])) return false;
  const int cost = (h[4] - '0') * 10 + (h[5] - '0');
  if (cost < 4 || cost > 31) return false;
  for (size_t i = 7; i < h.size(); ++i) {
    if (!absl::ascii_isalnum(h[i]) && h[i] != '.' && h[i] != '/') return false;
  }
  return true;
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {
  hmac_key_.resize(32);
  if (RAND_bytes(reinterpret_cast<unsigned char*>(hmac_key_.data()),
                 static_cast<int>(hmac_key_.size())) != 1) {
    // No randomness: still correct, only the cache keys become predictable; they never
    // leave the process.
    ERR_clear_error();
  }
}

std::optional<BasicAuth::Credentials> BasicAuth::Parse(std::string_view authorization) {
  // "Basic" is case-insensitive (RFC 7617 section 2), then one or more spaces, then base64.
  auto is_space = [](char ch) { return ch == ' ' || ch == '\t'; };
  while (!authorization.empty() && is_space(authorization.front())) authorization.remove_prefix(1);
  while (!authorization.empty() && is_space(authorization.back())) authorization.remove_suffix(1);
  constexpr std::string_view kScheme = "basic";
  if (authorization.size() <= kScheme.size() || !is_space(authorization[kScheme.size()])) {
    return std::nullopt;
  }
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (absl::ascii_tolower(static_cast<unsigned char>(authorization[i])) != kScheme[i])
      return std::nullopt;
  }
  authorization.remove_prefix(kScheme.size());
  while (!authorization.empty() && is_space(authorization.front())) authorization.remove_prefix(1);
  std::string decoded;
  if (!absl::Base64Unescape(absl::string_view(authorization.data(), authorization.size()),
                            &decoded)) {
    return std::nullopt;
  }
  const size_t colon = decoded.find(':');
  if (colon == std::string::npos) {
    OPENSSL_cleanse(decoded.data(), decoded.size());
    return std::nullopt;
  }
  Credentials c{decoded.substr(0, colon), decoded.substr(colon + 1)};
  OPENSSL_cleanse(decoded.data(), decoded.size());
  return c;
}

std::string BasicAuth::CacheKey(const Credentials& c) const {
  // Length-prefixed, so ("a:", "b") and ("a", ":b") differ.
  std::string msg = absl::StrCat(c.user.size(), ":", c.user, c.password);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), hmac_key_.data(), static_cast<int>(hmac_key_.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), mac, &len);
  OPENSSL_cleanse(msg.data(), msg.size());
  return std::string(reinterpret_cast<const char*>(mac), len);
}

std::optional<bool> BasicAuth::CheckCached(std::string_view authorization) const {
  std::optional<Credentials> c = Parse(authorization);
  if (!c.has_value()) return false;
  const std::string key = CacheKey(*c);
  OPENSSL_cleanse(c->password.data(), c->password.size());
  std::lock_guard<std::mutex> l(mu_);
  if (verified_.contains(key)) return true;
  return std::nullopt;
}

bool BasicAuth::Check(std::string_view authorization) {
  std::optional<Credentials> c = Parse(authorization);
  if (!c.has_value()) return false;
  const auto user = users_.find(c->user);
  const bool known = user != users_.end();
  const std::string& hash = known ? user->second : std::string(kDecoyHash);
  // crypt(3) stops at a NUL byte, and bcrypt at 72 bytes: either would let a different
  // password pass, so such passwords fail (after the same work, for even timing).
  const bool usable =
      c->password.size() <= kMaxPasswordBytes && c->password.find('\0') == std::string::npos;
  // struct crypt_data is 32 KiB: on the heap, one per check (a check costs milliseconds).
  auto data = std::make_unique<crypt_data>();
  const char* out = crypt_r(c->password.c_str(), hash.c_str(), data.get());
  const bool match = out != nullptr && std::strlen(out) == hash.size() &&
                     CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
  OPENSSL_cleanse(data.get(), sizeof(crypt_data));
  const bool ok = known && usable && match;
  if (ok) {
    const std::string key = CacheKey(*c);
    std::lock_guard<std::mutex> l(mu_);
    if (verified_.size() >= kMaxCached) verified_.clear();
    verified_.insert(key);
  }
  OPENSSL_cleanse(c->password.data(), c->password.size());
  return ok;
}

size_t BasicAuth::cached() const {
  std::lock_guard<std::mutex> l(mu_);
  return verified_.size();
}

}  // namespace hotkey::daemon
