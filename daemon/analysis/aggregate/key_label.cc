#include "hotkey/aggregate/key_label.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstring>

#include "absl/strings/str_format.h"
#include "hotkey/text/utf8.h"

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

// Whether the n-byte UTF-8 sequence at `s` is a bidirectional control (Unicode's
// Bidi_Control property: U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069). Shown as
// is, one reorders the text around it: a label with U+202E (right-to-left override) reads
// backwards in a dashboard or a terminal, so one key can pass for another.
bool IsBidiControl(std::string_view s, size_t n) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  if (n == 2) return b(0) == 0xD8 && b(1) == 0x9C;  // U+061C
  if (n != 3 || b(0) != 0xE2) return false;
  if (b(1) == 0x80) return b(2) == 0x8E || b(2) == 0x8F || (b(2) >= 0xAA && b(2) <= 0xAE);
  return b(1) == 0x81 && b(2) >= 0xA6 && b(2) <= 0xA9;
}

}  // namespace

std::string KeyLabeler::Escape(std::string_view bytes, size_t max_bytes, bool* cut) {
  std::string out;
  *cut = false;
  while (!bytes.empty()) {
    const size_t n = text::Utf8SequenceLength(bytes);
    const unsigned char c = static_cast<unsigned char>(bytes[0]);
    const bool plain =
        (n > 1 && !IsBidiControl(bytes, n)) || (n == 1 && c >= 0x20 && c != 0x7F && c != '\\');
    // Not plain: every byte of the sequence (one if it is not valid UTF-8) as \xHH.
    const size_t escaped = n > 1 ? n : 1;
    const size_t need = plain ? n : 4 * escaped;
    if (out.size() + need > max_bytes) {
      *cut = true;
      break;
    }
    if (plain) {
      out.append(bytes.substr(0, n));
      bytes.remove_prefix(n);
    } else {
      for (size_t i = 0; i < escaped; ++i) {
        absl::StrAppendFormat(&out, "\\x%02x", static_cast<unsigned char>(bytes[i]));
      }
      bytes.remove_prefix(escaped);
    }
  }
  return out;
}

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
      bool cut;
      std::string out = Escape(family, Room(max_bytes_, suffix), &cut);
      return out + suffix;
    }
    case config::KeyLabelMode::kRaw:
      break;
  }
  // Raw: room for a cut marker and a hash in case the key does not fit.
  bool cut;
  std::string out = Escape(key, max_bytes_, &cut);
  if (!cut && !truncated) return out;
  const std::string suffix =
      Fit(std::string(kCutMarker).append(HashText(key, truncated, hash)), max_bytes_);
  out = Escape(key, Room(max_bytes_, suffix), &cut);
  return out + suffix;
}

}  // namespace hotkey::aggregate
