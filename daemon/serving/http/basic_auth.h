// BasicAuth checks `Authorization: Basic` credentials (RFC 7617) against the bcrypt hashes
// of a --web.config.file's basic_auth_users (hotkey/config/web_config.h), with crypt_r(3)
// (libxcrypt) and a constant-time comparison. bcrypt costs about 70 ms at cost 10, on
// purpose, so verified credentials are remembered in a small cache keyed by an HMAC of user
// and password (never the password itself), as the exporter toolkit does.

#ifndef HOTKEY_HTTP_BASIC_AUTH_H_
#define HOTKEY_HTTP_BASIC_AUTH_H_

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_set.h"

namespace hotkey::http {

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

}  // namespace hotkey::http

#endif  // HOTKEY_HTTP_BASIC_AUTH_H_
