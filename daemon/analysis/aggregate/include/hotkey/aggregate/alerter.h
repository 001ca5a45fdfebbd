// Alerter: decides which keys are hot, with a minimum dwell and hysteresis, and logs each
// hot episode's start and end once.
//
// A key becomes hot after its share has stayed above its threshold (AlertOptions::
// ThresholdFor) for min_dwell, and only while the shard serves at least min_ops_per_second
// and more than 0 (the idle guard: on a near-silent shard one request is a large share, and
// on a silent one shares stay frozen). The caller passes the shard's ops/s over the rate
// window (aggregator.h), which reaches 0 once traffic stops. A hot key cools when its share
// drops below threshold * (1 - hysteresis), when the shard goes idle, or when it leaves the
// tracker. Time is whatever the caller passes, so tests use a fake clock: a monotonic
// reading for the dwell and the episode's duration, and a wall reading only to stamp the
// log lines.
//
// Episode logs are logfmt lines with the key's label (never raw bytes when the operator
// hides keys), the peak share, the duration, the fix advised and the fix in force: an
// episode's end names the last fix advised during it (the cooling tick, under the
// threshold, is advised on no more), and `in_force` the fix the kits applied last (the
// feed's, NoteInForce()), which the advice does not show once the fix works.
//
// Thread-compatible: the aggregator calls it from one thread.

#ifndef HOTKEY_AGGREGATE_ALERTER_H_
#define HOTKEY_AGGREGATE_ALERTER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "hotkey/config/options.h"

namespace hotkey::aggregate {

class Alerter {
 public:
  // Receives each finished log line (without newline).
  using LogSink = std::function<void(std::string_view line)>;

  // `subject` names what is watched in the log lines: "hot <subject> episode started",
  // <subject>="<label>" ("key", "slot", "tag").
  Alerter(const config::AlertOptions& options, LogSink log, std::string subject = "key");

  void SetOptions(const config::AlertOptions& options) { options_ = options; }
  const config::AlertOptions& options() const { return options_; }

  struct KeyState {
    bool hot = false;
    absl::Time over_since = absl::InfiniteFuture();  // first tick above threshold (monotonic)
    absl::Time hot_since = absl::InfiniteFuture();   // monotonic
    double peak_share = 0;
    // First tick of the current run under the cooling line (monotonic); InfiniteFuture
    // while over it.
    absl::Time under_since = absl::InfiniteFuture();
    std::string label;     // for the episode-end log line
    std::string strategy;  // the last non-empty strategy observed
    std::string in_force;  // the last fix in force noted (NoteInForce)
  };

  // One evaluation tick: call Observe() for every tracked key, then Finish(). The shard is
  // idle (nothing is hot) when `shard_ops_per_second` is 0 or under min_ops_per_second.
  // `now` is monotonic; `wall` (the same instant on the wall clock) stamps the log lines.
  void Begin(absl::Time now, double shard_ops_per_second, absl::Time wall);
  // The same for a caller with one clock: `now` stamps the log lines too.
  void Begin(absl::Time now, double shard_ops_per_second) { Begin(now, shard_ops_per_second, now); }
  // `id` identifies the key (its hash); returns whether it is hot after this observation.
  // A hot key cools once its share has stayed under the cooling line for `cool_grace` (0:
  // at the first tick under it); an idle shard cools it at once.
  bool Observe(uint64_t id, double share, double threshold, std::string_view label,
               std::string_view strategy, absl::Duration cool_grace = absl::ZeroDuration());
  // The same, with the label made only if the key is pending or hot (it is kept for the
  // episode's log lines): a caller observing every tracked key labels a few of them, not
  // all (a hashed label costs an HMAC).
  bool Observe(uint64_t id, double share, double threshold, absl::FunctionRef<std::string()> label,
               std::string_view strategy, absl::Duration cool_grace = absl::ZeroDuration());
  // The fix advised for hot key `id` (a strategy name), for its episode's end line; a key
  // neither hot nor pending is left alone.
  void NoteFix(uint64_t id, std::string_view strategy);
  // The fix the kits apply to key `id` ("" for none); the episode's lines name the last
  // one noted, and a new one noted while the key is hot is a change (fixes_changed()). A
  // key neither hot nor pending is left alone.
  void NoteInForce(uint64_t id, std::string_view strategy);
  // Keys not observed this tick are treated as share 0: hot ones cool, pending ones reset.
  void Finish();

  // The state of a key, or null if it is neither hot nor pending.
  const KeyState* Find(uint64_t id) const;
  size_t hot_count() const;
  // Episodes started since construction.
  uint64_t started() const { return started_; }
  // Changes of a hot key's fix in force (NoteInForce) since construction.
  uint64_t fixes_changed() const { return fixes_changed_; }

 private:
  void Log(bool start, const KeyState& s, double share, double threshold);

  config::AlertOptions options_;
  LogSink log_;
  std::string subject_;
  std::string started_msg_, ended_msg_;
  absl::Time now_;
  absl::Time wall_;
  bool idle_ = false;
  struct Entry {
    KeyState state;
    uint64_t seen_tick = 0;
  };
  absl::flat_hash_map<uint64_t, Entry> keys_;
  uint64_t tick_ = 0;
  uint64_t started_ = 0;
  uint64_t fixes_changed_ = 0;
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_ALERTER_H_
