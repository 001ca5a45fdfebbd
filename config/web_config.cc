// The web config file reader; see web_config.h for the format and its differences from the
// exporter toolkit.
//
// yaml-cpp throws on malformed input; every call into it happens under ParseWebConfig's
// CatchYamlErrors (yaml_util.h), so nothing escapes. Values are kept as the file gives
// them (Go's names for suites and curves, PEM text or paths): turning them into an OpenSSL
// context is daemon/serving/http/tls.cc's job, and a bad PEM is found there.

#include "hotkey/config/web_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "yaml_util.h"

namespace hotkey::config {

namespace {

using internal::YamlError;

// A web config file is well under a KiB plus maybe inline PEM; the cap stops a wrong path
// (/dev/zero, a log) from eating memory.
constexpr size_t kMaxFileBytes = size_t{1} << 20;

// Go's tls.CipherSuites() names, with OpenSSL's name for each ("" for the TLS 1.3 suites,
// which Go does not let a config restrict, and neither do we).
constexpr TlsName kCiphers[] = {
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
constexpr TlsName kCurves[] = {
    {"CurveP256", "P-256"}, {"CurveP384", "P-384"}, {"CurveP521", "P-521"}, {"X25519", "X25519"}};

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

// A string value; null (`key:` with nothing) reads as "", as in the toolkit.
absl::Status ReadString(const YAML::Node& node, std::string_view path, std::string* out) {
  if (node.IsNull()) {
    out->clear();
    return absl::OkStatus();
  }
  if (!node.IsScalar()) return YamlError(node, path, "must be a single value, not a list or map");
  *out = node.Scalar();
  return absl::OkStatus();
}

absl::Status ReadBool(const YAML::Node& node, std::string_view path, bool* out) {
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, *out)) {
    return YamlError(node, path, "must be true or false");
  }
  return absl::OkStatus();
}

absl::Status ReadList(const YAML::Node& node, std::string_view path,
                      std::vector<std::string>* out) {
  out->clear();
  if (node.IsNull()) return absl::OkStatus();
  if (!node.IsSequence()) return YamlError(node, path, "must be a list");
  for (const YAML::Node& item : node) {
    if (!item.IsScalar()) return YamlError(item, path, "every item must be a single value");
    out->push_back(item.Scalar());
  }
  return absl::OkStatus();
}

// Calls `on_key(key_node, key_path, value_node)` for each entry of a map section, refusing
// non-scalar and duplicate keys (yaml-cpp keeps duplicates; the toolkit's strict parser
// refuses them).
absl::Status ForEachKey(const YAML::Node& map, std::string_view path,
                        const internal::EntryHandler& on_key) {
  if (!map.IsMap()) return YamlError(map, path, "must be a map of keys to values");
  static constexpr internal::MapWords kWords = {"keys must be plain strings", "appears twice"};
  return internal::ForEachEntry(map, path, kWords, on_key);
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
          absl::StatusOr<TlsVersion> version =
              text::ParseName(kTlsVersionNames, text, "TLS version");
          if (!version.ok()) return YamlError(v, name, std::string(version.status().message()));
          (key == "min_version" ? t.min_version : t.max_version) = *version;
          return absl::OkStatus();
        }
        if (key == "cipher_suites") {
          if (absl::Status r = ReadList(v, name, &t.cipher_suites); !r.ok()) return r;
          for (const std::string& cs : t.cipher_suites) {
            bool known = false;
            for (const auto& [go, openssl] : kCiphers) known = known || cs == go;
            if (!known) {
              return YamlError(v, name,
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
              return YamlError(
                  v, name,
                  absl::StrCat("unknown curve \"", curve,
                               "\" (expected CurveP256, CurveP384, CurveP521 or X25519)"));
            }
          }
          return absl::OkStatus();
        }
        return YamlError(
            k, name,
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
    return YamlError(section, p, "set cert_file or cert, not both");
  if (!t.key.empty() && !t.key_file.empty())
    return YamlError(section, p, "set key_file or key, not both");
  if (!t.client_ca.empty() && !t.client_ca_file.empty()) {
    return YamlError(section, p, "set client_ca_file or client_ca, not both");
  }
  if (t.cert.empty() && t.cert_file.empty())
    return YamlError(section, p, "missing one of cert_file or cert");
  if (t.key.empty() && t.key_file.empty())
    return YamlError(section, p, "missing one of key_file or key");

  const YAML::Node ca_line = client_auth_node ? *client_auth_node : section;
  if (client_auth.empty()) {
    t.client_auth_type = ClientAuthType::kNoClientCert;
  } else {
    absl::StatusOr<ClientAuthType> type =
        text::ParseName(kClientAuthTypeNames, client_auth, "client auth type");
    if (!type.ok()) {
      return YamlError(ca_line, "tls_server_config.client_auth_type",
                       std::string(type.status().message()));
    }
    t.client_auth_type = *type;
  }
  const bool has_ca = !t.client_ca.empty() || !t.client_ca_file.empty();
  if (has_ca && t.client_auth_type == ClientAuthType::kNoClientCert) {
    return YamlError(ca_line, "tls_server_config.client_auth_type",
                     "a client CA is set but client_auth_type is NoClientCert (use "
                     "RequireAndVerifyClientCert to authenticate clients by certificate)");
  }
  if (!has_ca && (t.client_auth_type == ClientAuthType::kVerifyClientCertIfGiven ||
                  t.client_auth_type == ClientAuthType::kRequireAndVerifyClientCert)) {
    return YamlError(
        ca_line, "tls_server_config.client_auth_type",
        absl::StrCat(client_auth, " needs client_ca_file (or client_ca) to verify against"));
  }
  if (!t.client_allowed_sans.empty() &&
      t.client_auth_type != ClientAuthType::kRequireAnyClientCert &&
      t.client_auth_type != ClientAuthType::kRequireAndVerifyClientCert) {
    return YamlError(
        *sans_node, "tls_server_config.client_allowed_sans",
        "needs client_auth_type RequireAnyClientCert or RequireAndVerifyClientCert (other "
        "types let a client connect without a certificate)");
  }
  if (t.min_version > t.max_version) {
    return YamlError(section, p, "min_version is above max_version");
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
          return YamlError(k, name, "unknown key (expected headers or http2)");
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
                return YamlError(
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
                return YamlError(hv, hname, "must be one line");
              }
              if (!allowed->values.empty() &&
                  std::find(allowed->values.begin(), allowed->values.end(), value) ==
                      allowed->values.end()) {
                return YamlError(
                    hv, hname,
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
          return YamlError(k, name, "a user name cannot contain ':' (basic auth splits on it)");
        }
        std::string hash;
        if (absl::Status r = ReadString(v, name, &hash); !r.ok()) return r;
        // The value is not echoed: it is a password hash.
        if (!IsBcryptHash(hash)) {
          return YamlError(v, name,
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
          return YamlError(k, name,
                           "not supported by hotkeyd (limit requests in a proxy in front of it)");
        }
        return YamlError(
            k, name,
            "unknown key (expected tls_server_config, http_server_config or basic_auth_users)");
      });
  if (!s.ok()) return s;
  return c;
}

// Whether `path` opens as a regular file. O_NONBLOCK and the type check: the TLS library
// later reads it with a blocking open, which a FIFO would hold forever.
absl::Status CheckReadable(const std::string& key, const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tls_server_config.", key, ": cannot read \"", path, "\": ", strerror(errno)));
  }
  struct stat st;
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  ::close(fd);
  if (!regular) {
    return absl::InvalidArgumentError(
        absl::StrCat("tls_server_config.", key, ": \"", path, "\" is not a regular file"));
  }
  return absl::OkStatus();
}

}  // namespace

std::span<const TlsName> TlsCipherSuiteNames() { return kCiphers; }
std::span<const TlsName> TlsCurveNames() { return kCurves; }

absl::StatusOr<WebConfig> ParseWebConfig(std::string_view yaml_text, std::string_view base_dir) {
  return internal::CatchYamlErrors<WebConfig>(
      [&] { return Parse(std::string(yaml_text), base_dir); });
}

absl::StatusOr<WebConfig> LoadWebConfigFile(const std::string& path) {
  const std::string where = absl::StrCat("web config file \"", path, "\": ");
  absl::StatusOr<std::string> text =
      internal::ReadConfigFile(path, "web config file", kMaxFileBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<WebConfig> c =
      ParseWebConfig(*text, std::filesystem::path(path).parent_path().string());
  absl::Status s = c.status();
  if (s.ok() && c->tls_enabled) {
    s = CheckReadable("cert_file", c->tls.cert_file);
    if (s.ok()) s = CheckReadable("key_file", c->tls.key_file);
    if (s.ok()) s = CheckReadable("client_ca_file", c->tls.client_ca_file);
  }
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat(where, s.message()));
  return c;
}

absl::StatusOr<std::optional<WebConfig>> WebConfigWatcher::Poll() {
  // What the config's loading depends on: its own bytes, then the named PEM files' (a
  // rotated certificate keeps its path). Unreadable files leave a marker, so that one
  // appearing, or vanishing, is a change.
  std::string fingerprint;
  auto add = [&fingerprint](const std::string& file) {
    absl::StatusOr<std::string> bytes = internal::ReadConfigFile(file, "file", kMaxFileBytes);
    absl::StrAppend(&fingerprint, file.size(), ":", file, bytes.ok() ? "=" : "!",
                    bytes.ok() ? bytes->size() : 0, ":", bytes.ok() ? *bytes : std::string());
  };
  add(path_);
  absl::StatusOr<WebConfig> c = LoadWebConfigFile(path_);
  if (c.ok() && c->tls_enabled) {
    for (const std::string* f : {&c->tls.cert_file, &c->tls.key_file, &c->tls.client_ca_file}) {
      if (!f->empty()) add(*f);
    }
  }
  if (polled_ && fingerprint == fingerprint_) return std::optional<WebConfig>();
  polled_ = true;
  fingerprint_ = std::move(fingerprint);
  if (!c.ok()) return c.status();
  return std::optional<WebConfig>(*std::move(c));
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

}  // namespace hotkey::config
