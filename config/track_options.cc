// TrackOptions' validation and rate-history bound; see track_options.h.

#include "hotkey/config/track_options.h"

#include "absl/strings/str_cat.h"
#include "hotkey/config/values.h"
#include "range.h"

namespace hotkey::config {

using internal::InRange;
using internal::OutOfRange;

absl::Status TrackOptions::Validate() const {
  if (!InRange(half_life, absl::Milliseconds(1), absl::Hours(24))) {
    return OutOfRange("track half-life", "[1ms, 24h]", absl::FormatDuration(half_life));
  }
  if (!InRange(publish_interval, absl::Milliseconds(10), absl::Hours(1))) {
    return OutOfRange("track publish interval", "[10ms, 1h]",
                      absl::FormatDuration(publish_interval));
  }
  if (!InRange(rate_window, publish_interval, absl::Hours(1))) {
    return OutOfRange(
        "track rate window",
        absl::StrCat("[publish interval (", absl::FormatDuration(publish_interval), "), 1h]"),
        absl::FormatDuration(rate_window));
  }
  if (!InRange<uint32_t>(candidates, 1, 1u << 20)) {
    return OutOfRange("track candidates", "[1, 1048576]", candidates);
  }
  if (!InRange<size_t>(sketch_bytes, size_t{1} << 10, size_t{1} << 30)) {
    return OutOfRange("track sketch bytes", "[1KiB, 1GiB]", FormatByteSize(sketch_bytes));
  }
  if (!InRange<uint32_t>(sketch_depth, 1, sketch::CountMinSketch::kMaxDepth)) {
    return OutOfRange("track sketch depth (--track.sketch-depth)", "[1, 16]", sketch_depth);
  }
  if (!InRange<uint32_t>(max_key_bytes, 16, 65536)) {
    return OutOfRange("key max bytes (--key.max-bytes)", "[16, 65536]", max_key_bytes);
  }
  // Each in range, the two can still make a table the tracker refuses.
  if (const uint64_t table = uint64_t{candidates} * max_key_bytes;
      table > sketch::HeavyHitters::kMaxTableBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "track table too large: ", candidates, " --track.candidates x ", max_key_bytes,
        " --key.max-bytes = ", FormatByteSize(table), " of keys, over the tracker's maximum of ",
        FormatByteSize(sketch::HeavyHitters::kMaxTableBytes),
        "; track fewer candidates or keep fewer bytes of each key"));
  }
  // The tracker's own check last, so nothing it would refuse at start passes here.
  if (absl::Status s = HeavyHittersOptions::Validate(); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("track: ", s.message()));
  }
  return absl::OkStatus();
}

uint64_t TrackOptions::MaxRatePoints() const {
  absl::Duration rest;
  const int64_t ticks = absl::IDivDuration(rate_window, publish_interval, &rest);
  return 2 * static_cast<uint64_t>(ticks + (rest > absl::ZeroDuration() ? 1 : 0)) + 4;
}

}  // namespace hotkey::config
