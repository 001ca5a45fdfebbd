// AlertOptions: when a key is hot (the rules file's alert section and its per-pattern
// thresholds).
//
// Defaults, Validate() and thread safety as options.h says for every options struct.

#ifndef HOTKEY_CONFIG_ALERT_OPTIONS_H_
#define HOTKEY_CONFIG_ALERT_OPTIONS_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace hotkey::config {

// One per-pattern threshold of the rules file.
struct ThresholdRule {
  enum Kind {
    kPrefix,  // the key starts with `pattern`
    kGlob,    // `pattern` matches the whole key: `*` any bytes, `?` one byte, `[a-z]`,
              // `[!a-z]` / `[^a-z]` a byte class, `\c` the byte c itself
  };
  Kind kind = kPrefix;
  std::string pattern;  // not empty; bytes, compared unsigned
  double share = 0.0;   // the key's threshold, in (0, 1]; unused when `ignore`
  bool ignore = false;  // keys matching are never hot

  // True if `key` matches. A glob is compiled on each call (it allocates); to match many
  // keys use exporter::ThresholdMatcher, which compiles each rule once.
  bool Matches(std::string_view key) const;
  absl::Status Validate() const;
  friend bool operator==(const ThresholdRule&, const ThresholdRule&) = default;
};

// When a key is hot.
struct AlertOptions {
  // Share of the shard's traffic above which a key is hot, unless a rule says otherwise;
  // in (0, 1].
  double default_threshold = 0.10;
  // A key must stay above its threshold this long before it is reported hot; in [0, 1h].
  absl::Duration min_dwell = absl::Milliseconds(250);
  // A hot key cools when its share < threshold * (1 - hysteresis); in [0, 1).
  double hysteresis = 0.2;
  // Hysteresis of a key's advised fix (aggregate/advice_hold.h), as a fraction of the
  // shard's capacity: the held fix gives way when its projected load passes the model's
  // target by more than this, or a cheaper fix projects under the target by more than this.
  // A steady shard's load moves by less; a real change (a CPU quota, a new mix) by more
  // (docs/model.md). In [0, 1).
  double advice_margin = 0.05;
  // Idle guard: no key is hot while the shard's ops/s over the rate window
  // (TrackOptions::rate_window, sampling-scaled like hotkey_shard_ops_per_second) are
  // under this, nor while they are 0, whatever this says; hot keys end when the shard
  // falls under it. In [0, 1e12].
  // 1: a feed that stopped (or trickles) ends its episodes within one rate window, since
  // shares alone never move without traffic (decayed weight over decayed total). Rates
  // are sampling-scaled, so one sampled event in the window counts 1/(p * window) ops/s:
  // at p = 1 and the default 10 s window, 1 ops/s is 10 events in the window, too few for a
  // share to mean anything; at p <= 0.1 any sampled event clears it, so for a sampled
  // feed it guards only against silence. Set it to what a real shard never goes under
  // (the example rules use 100).
  double min_ops_per_second = 1;
  // Tried in order; the first matching rule wins. At most kMaxRules.
  std::vector<ThresholdRule> rules;

  // Bounds the cost of working out one key's threshold: at most kMaxRules matches. The
  // daemon does it once per tracked key and configuration (exporter/aggregator.h), not per tick.
  static constexpr size_t kMaxRules = 1024;

  // The threshold for `key` (arbitrary bytes): the first matching rule's share, +infinity
  // if that rule says ignore, else default_threshold. Compiles glob rules on each call; to
  // look up many keys build an exporter::ThresholdMatcher once.
  double ThresholdFor(std::string_view key) const;
  absl::Status Validate() const;
  friend bool operator==(const AlertOptions&, const AlertOptions&) = default;
};

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_ALERT_OPTIONS_H_
