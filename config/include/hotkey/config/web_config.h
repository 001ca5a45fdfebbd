// WebConfig: the --web.config.file (TLS, basic auth and response headers of the HTTP
// server), in the Prometheus exporter-toolkit format, so one file works for hotkeyd and for
// every Go exporter beside it:
// https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md
//
//   tls_server_config:            # absent or empty: plain HTTP
//     cert_file: server.crt       # or `cert:` with the PEM inline; relative paths are taken
//     key_file: server.key        #   from the file's own directory, as the toolkit does
//     client_auth_type: RequireAndVerifyClientCert
//     client_ca_file: ca.crt      # or `client_ca:` inline
//     client_allowed_sans: [prometheus.example]   # a client certificate SAN must be listed
//     min_version: TLS12          # TLS10..TLS13, default TLS12; max_version default TLS13
//     cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]  # Go names; TLS <= 1.2 only
//     prefer_server_cipher_suites: true
//     curve_preferences: [X25519, CurveP256]
//   http_server_config:
//     http2: true                 # accepted and ignored: hotkeyd speaks HTTP/1.1 only
//     headers: {X-Frame-Options: deny}
//   basic_auth_users:
//     prometheus: $2y$10$...      # bcrypt, e.g. `htpasswd -nbBC 10 "" password | tr -d ':\n'`
//
// Differences from the toolkit, all on the strict side: unknown and duplicate keys are errors
// with their line; `rate_limit` is refused as not supported; a non-empty tls_server_config
// without a certificate is an error rather than a silent fall-back to plain HTTP; the
// verifying client auth types need an explicit client CA (Go would use the system roots);
// the file is re-read when it changes (WebConfigWatcher, polled every few seconds), not at
// every request.
//
// This is the reading and checking only, into a plain WebConfig: the daemon builds its
// OpenSSL context from it (http/tls.h, where bad or mismatched PEM is found) and checks
// credentials against its hashes (daemon/serving/http/basic_auth.h). No OpenSSL here.
//
// yaml-cpp exceptions are caught inside; these functions never throw. Thread-safe.

#ifndef HOTKEY_CONFIG_WEB_CONFIG_H_
#define HOTKEY_CONFIG_WEB_CONFIG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "hotkey/text/enum_names.h"

namespace hotkey::config {

// Go's tls.ClientAuthType, by the names the toolkit accepts.
enum class ClientAuthType {
  kNoClientCert,                // no certificate asked for
  kRequestClientCert,           // asked for, not required, not verified
  kRequireAnyClientCert,        // required, not verified (any certificate passes)
  kVerifyClientCertIfGiven,     // not required; verified against the client CA if sent
  kRequireAndVerifyClientCert,  // required and verified: the only one that authenticates
};
// The toolkit's names; RequireClientCert is its old name for RequireAnyClientCert.
inline constexpr text::EnumName<ClientAuthType> kClientAuthTypeNames[] = {
    {ClientAuthType::kNoClientCert, "NoClientCert"},
    {ClientAuthType::kRequestClientCert, "RequestClientCert"},
    {ClientAuthType::kRequireAnyClientCert, "RequireAnyClientCert"},
    {ClientAuthType::kRequireAnyClientCert, "RequireClientCert"},
    {ClientAuthType::kVerifyClientCertIfGiven, "VerifyClientCertIfGiven"},
    {ClientAuthType::kRequireAndVerifyClientCert, "RequireAndVerifyClientCert"}};

// Protocol versions; the values are the wire versions (and OpenSSL's TLS1_x_VERSION).
enum class TlsVersion : uint16_t {
  kTls10 = 0x0301,
  kTls11 = 0x0302,
  kTls12 = 0x0303,
  kTls13 = 0x0304
};
// The toolkit's names (min_version, max_version).
inline constexpr text::EnumName<TlsVersion> kTlsVersionNames[] = {{TlsVersion::kTls10, "TLS10"},
                                                                  {TlsVersion::kTls11, "TLS11"},
                                                                  {TlsVersion::kTls12, "TLS12"},
                                                                  {TlsVersion::kTls13, "TLS13"}};

struct TlsServerConfig {
  // Exactly one of each pair is set when TLS is on. Paths are absolute or relative to the
  // working directory (already joined with the config file's directory).
  std::string cert_file, cert;  // certificate chain: path, or PEM text
  std::string key_file, key;    // private key: path, or PEM text
  std::string client_ca_file, client_ca;
  ClientAuthType client_auth_type = ClientAuthType::kNoClientCert;
  // Exact matches against the client certificate's DNS, e-mail, IP and URI SANs; empty = no
  // check. Needs a client auth type that requires a certificate.
  std::vector<std::string> client_allowed_sans;
  TlsVersion min_version = TlsVersion::kTls12;
  TlsVersion max_version = TlsVersion::kTls13;
  // Go cipher suite names (tls.CipherSuites()), for TLS 1.0-1.2; empty = OpenSSL's defaults.
  // Like Go, TLS 1.3 suite names are accepted and do not restrict TLS 1.3.
  std::vector<std::string> cipher_suites;
  bool prefer_server_cipher_suites = true;
  // Go curve names (CurveP256, CurveP384, CurveP521, X25519), in preference order.
  std::vector<std::string> curve_preferences;
};

struct WebConfig {
  // False: plain HTTP. True: `tls` holds a certificate and key.
  bool tls_enabled = false;
  TlsServerConfig tls;
  // Response headers added to every answer (toolkit's allowed set and values only).
  std::vector<std::pair<std::string, std::string>> headers;
  // user -> bcrypt hash; empty = no authentication.
  std::map<std::string, std::string> basic_auth_users;
};

// A Go name (the toolkit's) and OpenSSL's name for the same cipher suite or curve.
struct TlsName {
  const char* go;
  const char* openssl;  // "" for the TLS 1.3 suites, which a config does not restrict
};

// Every cipher suite name (Go's tls.CipherSuites()) and curve name the parser accepts, with
// OpenSSL's names: the one table both the parser and the daemon's TLS context read.
std::span<const TlsName> TlsCipherSuiteNames();
std::span<const TlsName> TlsCurveNames();

// Parses the YAML text of a web config file. `base_dir` is joined to relative file paths
// ("" leaves them as written). Checks every value but not the files themselves.
// Errors read "line N: section.key: problem".
absl::StatusOr<WebConfig> ParseWebConfig(std::string_view yaml_text, std::string_view base_dir);

// Reads and parses `path`, then checks that the certificate, key and CA files it names can
// be read. Errors start with 'web config file "path": ' (NotFound when it does not exist).
absl::StatusOr<WebConfig> LoadWebConfigFile(const std::string& path);

// Watches a web config file, so certificates and passwords rotate without a restart, as
// exporter-toolkit re-reads its file. Poll() reads the file and the PEM files it names
// (up to 1 MiB each): when their bytes differ from the last Poll's, it returns the newly
// loaded config, or the error that loading it gave (once: the same broken bytes polled
// again are "unchanged"); else nullopt. The first Poll always loads. Each Poll reads those
// files and parses the YAML.
//
// Thread-compatible.
class WebConfigWatcher {
 public:
  explicit WebConfigWatcher(std::string path) : path_(std::move(path)) {}

  absl::StatusOr<std::optional<WebConfig>> Poll();

  const std::string& path() const { return path_; }

 private:
  const std::string path_;
  bool polled_ = false;
  std::string fingerprint_;  // the bytes of the file and of the files it names, as last read
};

// True if `hash` is a bcrypt hash crypt(3) can check: $2a$, $2b$ or $2y$, cost 04-31,
// 22 salt and 31 hash characters of bcrypt's base64.
bool IsBcryptHash(std::string_view hash);

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_WEB_CONFIG_H_
