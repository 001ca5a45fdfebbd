// MeasuredLoadsOptions: where the per-shard loads measured outside hotkeyd come from
// (--measured-loads.*); the file's format and its reader are measured_loads.h.
//
// Defaults, Validate() and thread safety as options.h says for every options struct.

#ifndef HOTKEY_CONFIG_MEASURED_LOADS_OPTIONS_H_
#define HOTKEY_CONFIG_MEASURED_LOADS_OPTIONS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace hotkey::config {

// Per-shard loads measured outside hotkeyd (measured_loads.h), shown on the landing page
// beside the shard load model's projection for each fix.
struct MeasuredLoadsOptions {
  // The measured-loads file (measured_loads.h), re-read when it changes; empty: none.
  std::string file;
  // A measurement older than this (by its timestamp) is shown as stale; in [1s, 24h].
  // 30 s: two missed writes of a feed that measures every 10 s, or every 15 s scrape.
  absl::Duration max_age = absl::Seconds(30);

  absl::Status Validate() const;
  friend bool operator==(const MeasuredLoadsOptions&, const MeasuredLoadsOptions&) = default;
};

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_MEASURED_LOADS_OPTIONS_H_
