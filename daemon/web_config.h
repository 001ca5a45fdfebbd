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
// the file is read at start (not at every request).
//
// BasicAuth checks `Authorization: Basic` credentials against the bcrypt hashes with
// crypt_r(3) (libxcrypt) and a constant-time comparison. bcrypt costs about 70 ms at cost 10,
// on purpose, so verified credentials are remembered in a small cache keyed by an HMAC of
// user and password (never the password itself), as the toolkit does.

#ifndef HOTKEY_DAEMON_WEB_CONFIG_H_
#define HOTKEY_DAEMON_WEB_CONFIG_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/ssl/context.hpp>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"

namespace hotkey::daemon {

// Go's tls.ClientAuthType, by the names the toolkit accepts.
enum class ClientAuthType {
  kNoClientCert,                // no certificate asked for
  kRequestClientCert,           // asked for, not required, not verified
  kRequireAnyClientCert,        // required, not verified (any certificate passes)
  kVerifyClientCertIfGiven,     // not required; verified against the client CA if sent
  kRequireAndVerifyClientCert,  // required and verified: the only one that authenticates
};

// Protocol versions; the values are the wire versions (and OpenSSL's TLS1_x_VERSION).
enum class TlsVersion : uint16_t {
  kTls10 = 0x0301,
  kTls11 = 0x0302,
  kTls12 = 0x0303,
  kTls13 = 0x0304
};

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

// Parses the YAML text of a web config file. `base_dir` is joined to relative file paths
// ("" leaves them as written). Checks every value but not the files themselves.
// Errors read "line N: section.key: problem".
absl::StatusOr<WebConfig> ParseWebConfig(std::string_view yaml_text, std::string_view base_dir);

// Reads and parses `path`, then checks that the certificate, key and CA files it names can
// be read. The PEM contents are checked by MakeTlsContext.
absl::StatusOr<WebConfig> LoadWebConfigFile(const std::string& path);

// Builds the OpenSSL server context for a validated TlsServerConfig: loads certificate, key
// and CA (bad or mismatched PEM is an error here), versions, ciphers, curves and client
// verification. The context keeps a copy of what its verify callback needs.
absl::StatusOr<std::unique_ptr<boost::asio::ssl::context>> MakeTlsContext(
    const TlsServerConfig& tls);

// True if `hash` is a bcrypt hash crypt(3) can check: $2a$, $2b$ or $2y$, cost 04-31,
// 22 salt and 31 hash characters of bcrypt's base64.
bool IsBcryptHash(std::string_view hash);

// Verifies HTTP basic credentials against bcrypt hashes.
//
// Thread-safe: CheckCached is cheap and meant for the I/O thread; Check may take a bcrypt
// cost's time and belongs on a worker thread.
class BasicAuth {
 public:
  // Verified credentials remembered at most; when full the cache is emptied (a restart of
  // the count costs one bcrypt per client, and no client can pin entries).
  static constexpr size_t kMaxCached = 256;

  explicit BasicAuth(std::map<std::string, std::string> users);

  // The answer without bcrypt when it is known: false for a missing or malformed header,
  // true for credentials verified before; nullopt when Check must run.
  std::optional<bool> CheckCached(std::string_view authorization) const;

  // The full check: parses `Authorization: Basic base64(user:password)`, runs bcrypt
  // (against a fixed decoy hash for an unknown user, so timing does not tell which users
  // exist) and compares in constant time. Remembers success.
  bool Check(std::string_view authorization);

  size_t cached() const;

 private:
  struct Credentials {
    std::string user, password;
  };
  static std::optional<Credentials> Parse(std::string_view authorization);
  std::string CacheKey(const Credentials& c) const;

  const std::map<std::string, std::string> users_;
  std::string hmac_key_;  // random per instance; keys the cache
  mutable std::mutex mu_;
  absl::flat_hash_set<std::string> verified_;  // guarded by mu_; HMACs of good credentials
};

}  // namespace hotkey::daemon

#endif  // HOTKEY_DAEMON_WEB_CONFIG_H_
