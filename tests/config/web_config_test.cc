// Tests of the web config file reader (config/include/hotkey/config/web_config.h): every key
// of the exporter-toolkit format, the errors (unknown keys with their line, bad versions,
// ciphers, curves, client auth combinations, hashes, headers, missing files). The OpenSSL
// context and basic auth built from it are tested in tests/daemon/program/daemon/ (tls_test.cc,
// basic_auth_test.cc); the same file served over real sockets by tls_auth_e2e.sh.

#include "hotkey/config/web_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"

namespace hotkey::config {
namespace {

// bcrypt (cost 4, so the tests stay fast) of "s3cret", made by `htpasswd -nbBC 4 alice s3cret`.
constexpr char kAliceHash[] = "$2y$04$oq0sbqR7xRbBx86XxsDJ3.BeXSa2YKkI.7mClcrSl/hOFUPD4wQym";

std::string Message(const absl::Status& s) { return std::string(s.message()); }

// A temporary directory for files the config names (their content is not read here).
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/hotkey-web-config-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name), std::ios::binary) << text;
  }

 private:
  std::string dir_;
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
       "line 4: tls_server_config.min_version: \"TLS14\" is not a TLS version"},
      {"  max_version: tls12\n", "\"tls12\" is not a TLS version (TLS10, TLS11, TLS12, TLS13)"},
      {"  min_version: TLS13\n  max_version: TLS12\n", "min_version is above max_version"},
      {"  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n",
       "unknown or insecure cipher suite \"TLS_RSA_WITH_RC4_128_SHA\""},
      {"  cipher_suites: TLS_AES_128_GCM_SHA256\n", "cipher_suites: must be a list"},
      {"  curve_preferences: [P-256]\n", "unknown curve \"P-256\""},
      {"  client_auth_type: RequireClientCerts\n",
       "client_auth_type: \"RequireClientCerts\" is not a client auth type (NoClientCert, "
       "RequestClientCert, RequireAnyClientCert, RequireClientCert, VerifyClientCertIfGiven, "
       "RequireAndVerifyClientCert)"},
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
  TempDir pki;
  pki.Write("server.crt", "certificate\n");
  pki.Write("server.key", "key\n");
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

TEST_CASE("WebConfig: a FIFO as the file or as a PEM file is refused at once, never read",
          "[web_config]") {
  // A FIFO with no writer would block a read, and the TLS library's blocking open of a PEM
  // file, on the thread that polls the file.
  TempDir pki;
  pki.Write("server.crt", "certificate\n");
  pki.Write("server.key", "key\n");
  REQUIRE(::mkfifo(pki.Path("fifo.yml").c_str(), 0600) == 0);
  REQUIRE(::mkfifo(pki.Path("fifo.key").c_str(), 0600) == 0);
  absl::StatusOr<WebConfig> file = LoadWebConfigFile(pki.Path("fifo.yml"));
  REQUIRE_FALSE(file.ok());
  CHECK(Message(file.status()) ==
        absl::StrCat("web config file \"", pki.Path("fifo.yml"),
                     "\" is not a regular file (a FIFO, a device or a directory)"));

  pki.Write("web.yml", "tls_server_config:\n  cert_file: server.crt\n  key_file: fifo.key\n");
  absl::StatusOr<WebConfig> key = LoadWebConfigFile(pki.Path("web.yml"));
  REQUIRE_FALSE(key.ok());
  CHECK_THAT(Message(key.status()),
             Catch::Contains(absl::StrCat("tls_server_config.key_file: \"", pki.Path("fifo.key"),
                                          "\" is not a regular file")));
  // The watcher reads the PEM files' bytes too: it reports the problem and returns.
  WebConfigWatcher w(pki.Path("web.yml"));
  absl::StatusOr<std::optional<WebConfig>> p = w.Poll();
  CHECK_FALSE(p.ok());
}

TEST_CASE("WebConfig: the name tables hold every Go name once", "[web_config]") {
  for (const auto& table : {TlsCipherSuiteNames(), TlsCurveNames()}) {
    REQUIRE_FALSE(table.empty());
    for (size_t i = 0; i < table.size(); ++i) {
      for (size_t j = i + 1; j < table.size(); ++j) {
        CHECK(std::string(table[i].go) != table[j].go);
      }
    }
  }
}

TEST_CASE(
    "WebConfig: WebConfigWatcher loads a changed file, its changed PEM files, and "
    "reports a broken one once",
    "[web_config]") {
  TempDir dir;
  dir.Write("server.crt", "certificate one\n");
  dir.Write("server.key", "key\n");
  const std::string tls = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n";
  dir.Write("web.yml", tls);
  WebConfigWatcher w(dir.Path("web.yml"));

  absl::StatusOr<std::optional<WebConfig>> p = w.Poll();  // the first poll always loads
  REQUIRE(p.ok());
  REQUIRE(p->has_value());
  CHECK((*p)->tls_enabled);
  p = w.Poll();
  REQUIRE(p.ok());
  CHECK_FALSE(p->has_value());  // nothing changed

  // A rotated certificate keeps its path: its bytes are the change.
  dir.Write("server.crt", "certificate two\n");
  p = w.Poll();
  REQUIRE(p.ok());
  CHECK(p->has_value());
  CHECK_FALSE(w.Poll()->has_value());

  // A new password.
  dir.Write("web.yml", tls + "basic_auth_users:\n  alice: " + std::string(kAliceHash) + "\n");
  p = w.Poll();
  REQUIRE(p.ok());
  REQUIRE(p->has_value());
  CHECK((*p)->basic_auth_users.count("alice") == 1);

  // A broken file is an error once; polled again unchanged, it is not news.
  dir.Write("web.yml", tls + "basic_auth_users: [\n");
  p = w.Poll();
  CHECK_FALSE(p.ok());
  CHECK_THAT(Message(p.status()), Catch::Contains("web.yml"));
  p = w.Poll();
  REQUIRE(p.ok());
  CHECK_FALSE(p->has_value());

  // Fixed again: loaded.
  dir.Write("web.yml", tls);
  p = w.Poll();
  REQUIRE(p.ok());
  CHECK(p->has_value());

  // A named file that goes away is a change, and an error.
  std::remove(dir.Path("server.key").c_str());
  p = w.Poll();
  CHECK_FALSE(p.ok());
  CHECK_THAT(Message(p.status()), Catch::Contains("key_file"));
}

}  // namespace
}  // namespace hotkey::config
