// Tests of the web config file (daemon/web_config.h): every key of the exporter-toolkit
// format, the errors (unknown keys with their line, bad versions, ciphers, curves, client
// auth combinations, hashes, headers, missing files), the OpenSSL context built from it
// (certificates made here with the OpenSSL API), and BasicAuth's checks and cache.
// The same file served over real sockets is tested by tls_auth_e2e.sh.

#include "web_config.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace hotkey::daemon {
namespace {

// bcrypt (cost 4, so the tests stay fast) of "s3cret", made by `htpasswd -nbBC 4 alice s3cret`.
constexpr char kAliceHash[] = "$2y$04$oq0sbqR7xRbBx86XxsDJ3.BeXSa2YKkI.7mClcrSl/hOFUPD4wQym";

std::string Message(const absl::Status& s) { return std::string(s.message()); }

std::string BasicHeader(std::string_view user_colon_password) {
  return "Basic " + absl::Base64Escape(
                        absl::string_view(user_colon_password.data(), user_colon_password.size()));
}

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

TEST_CASE("WebConfig: an empty file means plain HTTP without authentication", "[web_config]") {
  for (const char* text : {"", "# nothing\n", "tls_server_config:\n", "tls_server_config: {}\n"}) {
    absl::StatusOr<WebConfig> c = ParseWebConfig(text, "");
    REQUIRE(c.ok());
    CHECK_FALSE(c->tls_enabled);
    CHECK(c->basic_auth_users.empty());
    CHECK(c->headers.empty());
  }
}

TEST_CASE("WebConfig: every key of the toolkit's format is read", "[web_config]") {
  const std::string yaml = absl::StrCat(R"(
tls_server_config:
  cert_file: server.crt
  key_file: /abs/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  client_allowed_sans: [prometheus.example, 10.0.0.1]
  min_version: TLS13
  max_version: TLS13
  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256]
  prefer_server_cipher_suites: false
  curve_preferences: [X25519, CurveP256]
http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    X-Content-Type-Options: nosniff
    Strict-Transport-Security: max-age=31536000
    X-XSS-Protection: ""
basic_auth_users:
  alice: )",
                                        kAliceHash, "\n  bob: ", kAliceHash, "\n");
  absl::StatusOr<WebConfig> c = ParseWebConfig(yaml, "/etc/hotkeyd");
  REQUIRE(c.ok());
  CHECK(c->tls_enabled);
  const TlsServerConfig& t = c->tls;
  CHECK(t.cert_file == "/etc/hotkeyd/server.crt");  // relative to the file's directory
  CHECK(t.key_file == "/abs/server.key");           // absolute stays
  CHECK(t.client_ca_file == "/etc/hotkeyd/ca.crt");
  CHECK(t.client_auth_type == ClientAuthType::kRequireAndVerifyClientCert);
  CHECK(t.client_allowed_sans == std::vector<std::string>{"prometheus.example", "10.0.0.1"});
  CHECK(t.min_version == TlsVersion::kTls13);
  CHECK(t.max_version == TlsVersion::kTls13);
  CHECK(t.cipher_suites.size() == 2);
  CHECK_FALSE(t.prefer_server_cipher_suites);
  CHECK(t.curve_preferences == std::vector<std::string>{"X25519", "CurveP256"});
  // The blank X-XSS-Protection is "unset".
  CHECK(c->headers == std::vector<std::pair<std::string, std::string>>{
                          {"X-Frame-Options", "deny"},
                          {"X-Content-Type-Options", "nosniff"},
                          {"Strict-Transport-Security", "max-age=31536000"}});
  CHECK(c->basic_auth_users.size() == 2);
  CHECK(c->basic_auth_users.at("bob") == kAliceHash);
}

TEST_CASE("WebConfig: defaults are the toolkit's", "[web_config]") {
  absl::StatusOr<WebConfig> c =
      ParseWebConfig("tls_server_config:\n  cert: inline-cert\n  key: inline-key\n", "/d");
  REQUIRE(c.ok());
  CHECK(c->tls_enabled);
  CHECK(c->tls.cert == "inline-cert");
  CHECK(c->tls.cert_file.empty());
  CHECK(c->tls.min_version == TlsVersion::kTls12);
  CHECK(c->tls.max_version == TlsVersion::kTls13);
  CHECK(c->tls.prefer_server_cipher_suites);
  CHECK(c->tls.client_auth_type == ClientAuthType::kNoClientCert);
}

TEST_CASE("WebConfig: each client auth type name is accepted", "[web_config]") {
  const std::pair<const char*, ClientAuthType> cases[] = {
      {"NoClientCert", ClientAuthType::kNoClientCert},
      {"RequestClientCert", ClientAuthType::kRequestClientCert},
      {"RequireAnyClientCert", ClientAuthType::kRequireAnyClientCert},
      {"RequireClientCert", ClientAuthType::kRequireAnyClientCert},
      {"VerifyClientCertIfGiven", ClientAuthType::kVerifyClientCertIfGiven},
      {"RequireAndVerifyClientCert", ClientAuthType::kRequireAndVerifyClientCert},
  };
  for (const auto& [name, type] : cases) {
    const bool none = type == ClientAuthType::kNoClientCert;
    absl::StatusOr<WebConfig> c = ParseWebConfig(
        absl::StrCat("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: ",
                     name, none ? "\n" : "\n  client_ca_file: ca\n"),
        "");
    INFO(name);
    REQUIRE(c.ok());
    CHECK(c->tls.client_auth_type == type);
  }
}

TEST_CASE("WebConfig: unknown keys are refused with their line", "[web_config]") {
  struct Case {
    const char* yaml;
    const char* expect;
  };
  const Case cases[] = {
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  certfile: c\n",
       "line 4: tls_server_config.certfile: unknown key"},
      {"basic_auth_users: {}\nweb_config: 1\n", "line 2: web_config: unknown key"},
      {"http_server_config:\n  headers: {}\n  http3: true\n",
       "line 3: http_server_config.http3: unknown key"},
      {"rate_limit:\n  interval: 1s\n  burst: 20\n", "line 1: rate_limit: not supported"},
      {"basic_auth_users: {}\nbasic_auth_users: {}\n", "line 2: basic_auth_users: appears twice"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<WebConfig> r = ParseWebConfig(c.yaml, "");
    INFO(c.yaml);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(Message(r.status()), Catch::Contains(c.expect));
  }
}

TEST_CASE("WebConfig: bad values are refused with a clear message", "[web_config]") {
  struct Case {
    const char* yaml;
    const char* expect;
  };
  const std::string tls = "tls_server_config:\n  cert_file: a\n  key_file: b\n";
  const Case cases[] = {
      {"  min_version: TLS14\n",
       "line 4: tls_server_config.min_version: unknown TLS version \"TLS14\""},
      {"  max_version: tls12\n",
       "unknown TLS version \"tls12\" (expected TLS10, TLS11, TLS12 or TLS13)"},
      {"  min_version: TLS13\n  max_version: TLS12\n", "min_version is above max_version"},
      {"  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n",
       "unknown or insecure cipher suite \"TLS_RSA_WITH_RC4_128_SHA\""},
      {"  cipher_suites: TLS_AES_128_GCM_SHA256\n", "cipher_suites: must be a list"},
      {"  curve_preferences: [P-256]\n", "unknown curve \"P-256\""},
      {"  client_auth_type: RequireClientCerts\n",
       "client_auth_type: unknown value \"RequireClientCerts\""},
      {"  client_ca_file: ca\n", "a client CA is set but client_auth_type is NoClientCert"},
      {"  client_auth_type: RequireAndVerifyClientCert\n", "needs client_ca_file"},
      {"  client_auth_type: VerifyClientCertIfGiven\n", "needs client_ca_file"},
      {"  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca\n  client_allowed_sans: "
       "[x]\n",
       "client_allowed_sans: needs client_auth_type RequireAnyClientCert or "
       "RequireAndVerifyClientCert"},
      {"  prefer_server_cipher_suites: maybe\n",
       "prefer_server_cipher_suites: must be true or false"},
      {"  cert: inline\n", "set cert_file or cert, not both"},
      {"  cert_file: [a]\n", "appears twice"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<WebConfig> r = ParseWebConfig(tls + c.yaml, "");
    INFO(c.yaml);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(Message(r.status()), Catch::Contains(c.expect));
  }
  const Case others[] = {
      {"tls_server_config:\n  key_file: b\n",
       "line 2: tls_server_config: missing one of cert_file or cert"},
      {"tls_server_config:\n  cert_file: a\n  min_version: TLS13\n",
       "missing one of key_file or key"},
      {"tls_server_config:\n  min_version: TLS13\n", "missing one of cert_file or cert"},
      {"tls_server_config: [a]\n", "tls_server_config: must be a map"},
      {"basic_auth_users:\n  alice: secret\n", "line 2: basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  alice: $1$abc$abcdefghijklmnopqrstuv\n", "not a bcrypt hash"},
      {"basic_auth_users:\n  \"a:b\": x\n", "cannot contain ':'"},
      {"basic_auth_users: [alice]\n", "basic_auth_users: must be a map"},
      {"http_server_config:\n  headers:\n    Server: evil\n",
       "line 3: http_server_config.headers.Server: this header cannot be configured"},
      {"http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
       "must be one of deny, sameorigin, not \"allow\""},
      {"http_server_config:\n  http2: 3\n", "http2: must be true or false"},
      {"tls_server_config:\n  cert_file: [unclosed\n", "malformed YAML"},
      {"- a\n- b\n", "must be a map"},
  };
  for (const Case& c : others) {
    absl::StatusOr<WebConfig> r = ParseWebConfig(c.yaml, "");
    INFO(c.yaml);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(Message(r.status()), Catch::Contains(c.expect));
  }
}

TEST_CASE("WebConfig: a bcrypt hash is never echoed in an error", "[web_config]") {
  absl::StatusOr<WebConfig> r =
      ParseWebConfig("basic_auth_users:\n  alice: hunter2-not-a-hash\n", "");
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(Message(r.status()), !Catch::Contains("hunter2"));
}

TEST_CASE("WebConfig: IsBcryptHash accepts the three bcrypt prefixes and refuses the rest",
          "[web_config]") {
  CHECK(IsBcryptHash(kAliceHash));
  std::string h = kAliceHash;
  h[2] = 'b';
  CHECK(IsBcryptHash(h));
  h[2] = 'a';
  CHECK(IsBcryptHash(h));
  h[2] = 'x';
  CHECK_FALSE(IsBcryptHash(h));
  std::string cost = kAliceHash;
  cost[4] = '3';
  cost[5] = '2';  // cost 32
  CHECK_FALSE(IsBcryptHash(cost));
  CHECK_FALSE(IsBcryptHash(std::string(kAliceHash).substr(0, 59)));
  std::string bad_char = kAliceHash;
  bad_char[40] = '!';
  CHECK_FALSE(IsBcryptHash(bad_char));
}

TEST_CASE("WebConfig: LoadWebConfigFile resolves paths and refuses missing files", "[web_config]") {
  TempPki pki;
  pki.Write("web.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n");
  absl::StatusOr<WebConfig> c = LoadWebConfigFile(pki.Path("web.yml"));
  REQUIRE(c.ok());
  CHECK(c->tls.cert_file == pki.Path("server.crt"));

  pki.Write("missing.yml", "tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n");
  absl::StatusOr<WebConfig> m = LoadWebConfigFile(pki.Path("missing.yml"));
  REQUIRE_FALSE(m.ok());
  CHECK_THAT(Message(m.status()), Catch::Contains("tls_server_config.cert_file: cannot read"));
  CHECK_THAT(Message(m.status()), Catch::Contains("nope.crt"));
  CHECK_THAT(Message(m.status()), Catch::Contains("No such file"));
  CHECK_THAT(Message(m.status()), Catch::Contains("missing.yml"));  // which file was wrong

  pki.Write("missing_ca.yml",
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
            "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n");
  absl::StatusOr<WebConfig> ca = LoadWebConfigFile(pki.Path("missing_ca.yml"));
  REQUIRE_FALSE(ca.ok());
  CHECK_THAT(Message(ca.status()), Catch::Contains("client_ca_file: cannot read"));

  absl::StatusOr<WebConfig> none = LoadWebConfigFile(pki.Path("absent.yml"));
  REQUIRE_FALSE(none.ok());
  CHECK(absl::IsNotFound(none.status()));
}

TEST_CASE("WebConfig: MakeTlsContext loads a good certificate and key, from files or inline",
          "[web_config]") {
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

TEST_CASE("WebConfig: MakeTlsContext refuses bad PEM and a key that does not match",
          "[web_config]") {
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

TEST_CASE("BasicAuth: the right password passes and is then answered from the cache",
          "[web_config]") {
  BasicAuth auth(std::map<std::string, std::string>{{"alice", kAliceHash}});
  const std::string good = BasicHeader("alice:s3cret");
  CHECK_FALSE(auth.CheckCached(good).has_value());  // not verified yet: bcrypt needed
  CHECK(auth.Check(good));
  CHECK(auth.cached() == 1);
  CHECK(auth.CheckCached(good) == std::optional<bool>(true));
  // The scheme is case-insensitive and surrounding blanks do not matter.
  CHECK(auth.Check("  bAsIc   " + absl::Base64Escape("alice:s3cret") + " "));
}

TEST_CASE("BasicAuth: wrong, unknown, malformed and truncating credentials fail", "[web_config]") {
  BasicAuth auth(std::map<std::string, std::string>{{"alice", kAliceHash}});
  CHECK_FALSE(auth.Check(BasicHeader("alice:s3cre")));
  CHECK_FALSE(auth.Check(BasicHeader("alice:s3cret ")));
  CHECK_FALSE(auth.Check(BasicHeader("Alice:s3cret")));
  CHECK_FALSE(auth.Check(BasicHeader("mallory:s3cret")));  // checked against the decoy hash
  CHECK_FALSE(
      auth.Check(BasicHeader(std::string("alice:s3cret\0tail", 17))));  // crypt stops at NUL
  CHECK_FALSE(auth.Check(BasicHeader("alice:" + std::string(73, 'x'))));
  CHECK(auth.cached() == 0);  // failures are not remembered
  // Malformed headers are answered at once, without bcrypt.
  for (const std::string& h :
       {std::string(), std::string("Basic"), std::string("Bearer abc"),
        std::string("Basic !!!notbase64"), "Basic " + absl::Base64Escape("nocolon"),
        "Basicx " + absl::Base64Escape("alice:s3cret")}) {
    INFO(h);
    CHECK(auth.CheckCached(h) == std::optional<bool>(false));
    CHECK_FALSE(auth.Check(h));
  }
}

TEST_CASE("BasicAuth: an empty password and a colon in the password work", "[web_config]") {
  // `htpasswd -nbBC 4 bob 'a:b'` and `htpasswd -nbBC 4 carol ''`.
  BasicAuth auth({{"bob", "$2y$04$DZ5RUySiONYUDO2Boj.VeObZvzrENgHG2THG.USGZymAObMr8scOC"},
                  {"carol", "$2y$04$QZWMVbQXn2ETjUnp9er2BuuVLn80AxxiQo4Op5XPAUMXElFq9Bi3i"}});
  CHECK(auth.Check(BasicHeader("bob:a:b")));
  CHECK_FALSE(auth.Check(BasicHeader("bob:a")));
  CHECK(auth.Check(BasicHeader("carol:")));
  CHECK_FALSE(auth.Check(BasicHeader("carol:x")));
}

TEST_CASE("BasicAuth: the cache stays bounded", "[web_config]") {
  // Every user shares alice's hash, so each is a distinct verified credential.
  std::map<std::string, std::string> users;
  for (size_t i = 0; i < BasicAuth::kMaxCached + 10; ++i) users[absl::StrCat("u", i)] = kAliceHash;
  BasicAuth auth(users);
  for (size_t i = 0; i < BasicAuth::kMaxCached + 10; ++i) {
    REQUIRE(auth.Check(BasicHeader(absl::StrCat("u", i, ":s3cret"))));
    REQUIRE(auth.cached() <= BasicAuth::kMaxCached);
  }
  CHECK(auth.cached() >= 1);
}

}  // namespace
}  // namespace hotkey::daemon
