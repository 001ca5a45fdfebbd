#include "hotkey/aggregate/key_label.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstring>

#include "absl/strings/str_format.h"
#include "hotkey/text/escape.h"

namespace hotkey::aggregate {

namespace {

constexpr std::string_view kCutMarker = "~";

// Bytes left for the readable part when `suffix` must fit too.
size_t Room(size_t max_bytes, const std::string& suffix) {
  return max_bytes > suffix.size() ? max_bytes - suffix.size() : 0;
}

// `s` (ASCII: a marker and hex digits) cut to `max_bytes`, so that no label is ever longer
// than label_max_bytes: at its smallest setting (16) a hashed label keeps "h:" and 14 hex
// digits, 56 bits of hash, still far from colliding among the exported keys.
std::string Fit(std::string s, size_t max_bytes) {
  if (s.size() > max_bytes) s.resize(max_bytes);
  return s;
}

}  // namespace

std::string KeyLabeler::HashText(std::string_view key, bool truncated, uint64_t hash) const {
  // A truncated key's stored bytes are only its prefix; its full hash goes in too, so two
  // long keys with one prefix keep distinct labels.
  std::string message(key);
  if (truncated) message.append(reinterpret_cast<const char*>(&hash), sizeof hash);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
  uint64_t h = 0;
  std::memcpy(&h, mac, sizeof h);
  return absl::StrFormat("%016x", h);
}

std::string KeyLabeler::Label(std::string_view key, bool truncated, uint64_t hash) const {
  switch (mode_) {
    case config::KeyLabelMode::kHash:
      // Prefixes are appended to, not `"h:" + HashText(...)`: GCC 12 at -O3 raises a false
      // -Wrestrict when operator+ inserts at the front of a temporary (GCC bug 105329).
      return Fit(std::string("h:").append(HashText(key, truncated, hash)), max_bytes_);
    case config::KeyLabelMode::kPrefix: {
      const size_t colon = key.rfind(':');
      const std::string_view family =
          colon == std::string_view::npos ? std::string_view() : key.substr(0, colon + 1);
      const std::string suffix =
          Fit(std::string("#").append(HashText(key, truncated, hash)), max_bytes_);
      return text::Escape(family, {.max_bytes = Room(max_bytes_, suffix)}) + suffix;
    }
    case config::KeyLabelMode::kRaw:
      break;
  }
  // Raw: room for a cut marker and a hash in case the key does not fit.
  bool cut;
  std::string out = text::Escape(key, {.max_bytes = max_bytes_}, &cut);
  if (!cut && !truncated) return out;
  const std::string suffix =
      Fit(std::string(kCutMarker).append(HashText(key, truncated, hash)), max_bytes_);
  return text::Escape(key, {.max_bytes = Room(max_bytes_, suffix)}) + suffix;
}

}  // namespace hotkey::aggregate
