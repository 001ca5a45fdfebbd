// TrackOptions: the per-receiver tracker (--track.*, --key.max-bytes) and its publishing.
//
// The tracker's own settings are its struct, sketch::HeavyHittersOptions, embedded as the
// base: its fields read as TrackOptions' own (track.half_life, track.candidates), and a
// TrackOptions is the tracker's options wherever a source builds one, with nothing copied
// field by field. The flags set five of them, with the ranges Validate() checks:
//   half_life      --track.half-life     [1ms, 24h]
//   candidates     --track.candidates    [1, 1048576]: top-K table slots per receiver
//   sketch_bytes   --track.sketch-bytes  [1 KiB, 1 GiB]: the count-min sketch per receiver
//   sketch_depth   --track.sketch-depth  [1, 16]: its rows; the width is what the bytes hold
//   max_key_bytes  --key.max-bytes       [16, 65536]
// The defaults are the tracker's, one home for both. half_life, 500 ms: a key that jumps to
// 30% of 500 sampled events/s crosses a 10% threshold after 0.29 s (0.585 half-lives), so
// with the dwell and a publish tick it is reported hot within a second. max_key_bytes is
// the bytes stored per candidate, from every source: a longer key is not rejected but
// tracked as its first max_key_bytes bytes plus the hash of the whole key, so two long keys
// with one prefix stay distinct; below 16 the hash suffix leaves no room for a readable
// prefix, and the default, 128, is the default ExportOptions::label_max_bytes, so a stored
// key fills a raw label.
//
// Defaults, Validate() and thread safety as options.h says for every options struct.

#ifndef HOTKEY_CONFIG_TRACK_OPTIONS_H_
#define HOTKEY_CONFIG_TRACK_OPTIONS_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace hotkey::config {

struct TrackOptions : sketch::HeavyHittersOptions {
  // How often trackers publish a merged snapshot; in [10ms, 1h]. Below 10 ms the merge
  // cost dominates the receivers' CPU.
  absl::Duration publish_interval = absl::Milliseconds(250);
  // Window of the exported ops/s rates; at least publish_interval, at most 1h.
  absl::Duration rate_window = absl::Seconds(10);
  // --track.slots: also count every source's traffic by Redis Cluster slot and hash tag
  // (source/slot_counts.h); nullopt ("auto"): DaemonOptions::TracksSlots() decides, and the
  // counting runs only while the shard says it is a Redis Cluster node.
  std::optional<bool> slots;

  // Points the aggregator's rate history holds at most, spares included: a point per tick
  // over rate_window, kept at least publish_interval / 2 apart (a tick closer to the last
  // point is not kept), the point being built, and two spares: 2 * ceil(rate_window /
  // publish_interval) + 4. 84 by default.
  uint64_t MaxRatePoints() const;

  // The ranges above, then the tracker's own check (sketch::HeavyHittersOptions::Validate():
  // its table of candidates x max_key_bytes, its sketch's shape), so that a tracker the
  // daemon builds from validated options is never refused at start.
  absl::Status Validate() const;
  friend bool operator==(const TrackOptions&, const TrackOptions&) = default;
};

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_TRACK_OPTIONS_H_
