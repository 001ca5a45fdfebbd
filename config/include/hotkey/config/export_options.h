// ExportOptions: which keys reach /metrics and how they are labelled (the rules file's
// export section), and the key label modes with their names and parser.
//
// Defaults, Validate() and thread safety as options.h says for every options struct.

#ifndef HOTKEY_CONFIG_EXPORT_OPTIONS_H_
#define HOTKEY_CONFIG_EXPORT_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hotkey/text/enum_names.h"

namespace hotkey::config {

// How keys appear as label values.
enum class KeyLabelMode {
  kRaw,     // the key, made valid UTF-8 and cut to label_max_bytes
  kHash,    // a hex hash of the key only (keys may be user ids)
  kPrefix,  // the key up to its last ':' (or its first label_max_bytes bytes) plus a hash
};

// The values of the rules file's export.key_label.
inline constexpr text::EnumName<KeyLabelMode> kKeyLabelModeNames[] = {
    {KeyLabelMode::kRaw, "raw"}, {KeyLabelMode::kHash, "hash"}, {KeyLabelMode::kPrefix, "prefix"}};
constexpr std::string_view KeyLabelModeName(KeyLabelMode mode) {
  return text::NameOf(kKeyLabelModeNames, mode);
}
absl::StatusOr<KeyLabelMode> ParseKeyLabelMode(std::string_view text);  // raw, hash, prefix

// Which keys reach /metrics, and how they are labelled.
struct ExportOptions {
  // Keys exported per snapshot, largest share first; in [1, 1000]. At most
  // TrackOptions::candidates keys exist to export.
  uint32_t top_k = 10;
  // A key enters the exported set at this share of the shard's traffic; in (0, 1].
  double min_share = 0.01;
  // A key leaves the exported set when its share falls below
  // min_share * (1 - hysteresis), so label sets do not churn; in [0, 1).
  double hysteresis = 0.2;
  // Evidence a key needs to enter the exported set (hot keys excepted): its ops/s over the
  // rate window (hotkey_key_ops_per_second, sampling-scaled; until the window has filled,
  // its ops so far over the whole window); in [0, 1e12], 0 turns it off.
  // On a quiet shard one request is a large share, so without it every stray key would
  // get its own series for a while. 2: a key needs 20 requests in the default 10 s window;
  // on a 21 ops/s shard of random keys that takes out every stray key (pinned by
  // aggregator_test.cc), while a key at 2 ops/s or more is exported as before.
  double min_key_ops_per_second = 2;
  KeyLabelMode label = KeyLabelMode::kRaw;
  // Upper bound on a key label's length in bytes; in [16, 16384].
  size_t label_max_bytes = 128;

  absl::Status Validate() const;
  friend bool operator==(const ExportOptions&, const ExportOptions&) = default;
};

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_EXPORT_OPTIONS_H_
