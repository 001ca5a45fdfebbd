// MeasuredLoads: each shard's load as measured outside hotkeyd (by the shards themselves,
// e.g. Redis INFO commandstats deltas), read from --model.measured-loads-file so that the
// landing page can show it beside the shard load model's projection for each fix.
//
// The file is one JSON object (RFC 8259), at most kMaxFileBytes:
//
//   {
//     "timestamp": 1764604800.25,             required: when it was measured (the end of
//                                             the measuring interval), Unix seconds
//     "ops_per_second": [1939.2, 437.5, ...], required: every shard's ops/s, shard 0 first,
//                                             1 to model::Cluster::kMaxShards numbers >= 0
//     "interval_seconds": 2,                  optional: how long it was measured over,
//                                             in [0, 3600]; default 0 (an instant)
//     "strategy": "cache",                    optional: the fix in force while it was
//                                             measured (none, cache, replicate, split,
//                                             split_cache, isolate); default none
//     "key": "user:42",                       optional: the hot key the fix is for, as its
//                                             label on /metrics; default: the hottest key
//     "source": "INFO commandstats, 1 s"      optional: how it was measured, shown as is
//   }
//
// Loads are given in ops/s, what a shard's own statistics count; the daemon divides them by
// --cluster.capacity. Other members are ignored (room for later versions). A writer should
// replace the file atomically (write a temporary file, then rename it over), so that a
// reader never sees half of it; a half-written file is a read error, and the previous
// measurement stays in force until it is stale.
//
// Pure functions; MeasuredLoadsWatcher is thread-compatible. No exceptions escape.

#ifndef HOTKEY_CONFIG_MEASURED_LOADS_H_
#define HOTKEY_CONFIG_MEASURED_LOADS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/model/shard_model.h"

namespace hotkey::config {

struct MeasuredLoads {
  // A measurement file larger than this is refused: 10,000 shards of "123456.789, " fit
  // in 128 KiB, so 1 MiB leaves room for any real one and a wrong path cannot eat memory.
  static constexpr size_t kMaxFileBytes = size_t{1} << 20;
  // Longest "key" and "source" accepted, in bytes.
  static constexpr size_t kMaxKeyBytes = 1024;
  static constexpr size_t kMaxSourceBytes = 256;

  absl::Time time;                     // "timestamp"
  absl::Duration interval;             // "interval_seconds"; 0 if not given
  std::vector<double> ops_per_second;  // one per shard, each finite and >= 0
  model::Strategy strategy = model::Strategy::kNone;
  std::string key;     // empty: not named
  std::string source;  // empty: not given

  friend bool operator==(const MeasuredLoads&, const MeasuredLoads&) = default;
};

// Parses the file's text. InvalidArgument, naming the member and what was wrong, for
// anything but the format above: not JSON, not an object, a missing or non-numeric
// timestamp (it must be finite and after 1970), an interval out of range, an empty, too long or
// non-numeric ops_per_second, a negative or non-finite load, an unknown strategy, a key or source
// that is not a string or is too long.
absl::StatusOr<MeasuredLoads> ParseMeasuredLoads(std::string_view text);

// Reads and parses `path`. NotFound for a missing file; the message names the file.
absl::StatusOr<MeasuredLoads> LoadMeasuredLoadsFile(const std::string& path);

// Re-reads a measured-loads file when its bytes change. Poll() returns the new
// measurement when the file changed (or on the first call), nullopt when it did not, and
// the error when the changed file (or its absence) cannot be used. A problem that stays
// the same (a file still missing, still malformed) is reported once, not at every poll.
class MeasuredLoadsWatcher {
 public:
  explicit MeasuredLoadsWatcher(std::string path) : path_(std::move(path)) {}

  absl::StatusOr<std::optional<MeasuredLoads>> Poll();

  const std::string& path() const { return path_; }

 private:
  const std::string path_;
  bool polled_ = false;
  std::string fingerprint_;  // the file's bytes as last read, or the error reading it
};

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_MEASURED_LOADS_H_
