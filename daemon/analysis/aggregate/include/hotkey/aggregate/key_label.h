// KeyLabeler: turns a key's bytes into a Prometheus label value (and the name shown in the
// API, the landing page and logs).
//
// Keys are arbitrary bytes; label values must be valid UTF-8 and should be short. Modes:
//   raw     the key itself, escaped by text::Escape (hotkey/text/escape.h): valid UTF-8
//           passes through, except control characters, bidirectional controls (U+202E...),
//           line separators and backslash, which become \xHH, so distinct keys stay
//           distinct, the label is readable and reads in the key's byte order. Cut at
//           label_max_bytes on a character boundary, with a hash suffix when cut, so two
//           long keys never share a label.
//   hash    "h:" + 16 hex digits of a keyed hash: no key bytes leave the process.
//   prefix  the key up to and including its last ':' (sanitised as in raw), then the hash:
//           "user:#9f2c41d07a1be3e0" keeps the key's family and hides the id.
// The hash is HMAC-SHA256 under a secret (--key.hash-secret-file), cut to 64 bits, so
// nobody without the secret can hash candidate keys to find which one a label stands for.
//
// Thread-compatible; Label() is const and allocates (once per exported key per publish,
// never per event).

#ifndef HOTKEY_AGGREGATE_KEY_LABEL_H_
#define HOTKEY_AGGREGATE_KEY_LABEL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "hotkey/config/options.h"

namespace hotkey::aggregate {

class KeyLabeler {
 public:
  KeyLabeler(config::KeyLabelMode mode, size_t max_bytes, std::string_view secret)
      : mode_(mode), max_bytes_(max_bytes), secret_(secret) {}

  // `truncated` says the tracker kept only a prefix of a longer key; `hash` is then the
  // whole key's hash, used to keep such labels distinct.
  std::string Label(std::string_view key, bool truncated, uint64_t hash) const;

  config::KeyLabelMode mode() const { return mode_; }

 private:
  std::string HashText(std::string_view key, bool truncated, uint64_t hash) const;

  const config::KeyLabelMode mode_;
  const size_t max_bytes_;
  const std::string secret_;
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_KEY_LABEL_H_
