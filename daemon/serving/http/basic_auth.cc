// HTTP basic auth against bcrypt hashes, with a cache of verified credentials; see
// basic_auth.h.

#include "basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace hotkey::http {

namespace {

// bcrypt of a random password, cost 10 (the toolkit's documented cost): an unknown user is
// checked against it so that a wrong user name costs as long as a wrong password.
constexpr char kDecoyHash[] = "$2y$10$gMEdsdo/XfEF0UyYOYt1beSA8fZ1B0wf22fDDZ9WY44gXnC4Lj0VK";

// bcrypt reads at most 72 bytes of a password; a longer one would be checked on its prefix
// only, so it is refused (as Go's bcrypt does).
constexpr size_t kMaxPasswordBytes = 72;

}  // namespace

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

}  // namespace hotkey::http
