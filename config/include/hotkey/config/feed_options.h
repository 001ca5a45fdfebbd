// FeedOptions: the hot-key feed's policy (the rules file's feed section: lease, hold, pins
// and blocks). A pin names a fix of the shard load model, so this header needs
// hotkey/model/shard_model.h.
//
// Defaults, Validate() and thread safety as options.h says for every options struct.

#ifndef HOTKEY_CONFIG_FEED_OPTIONS_H_
#define HOTKEY_CONFIG_FEED_OPTIONS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hotkey/model/shard_model.h"

namespace hotkey::config {

// One key pattern of the rules file's feed section: an exact key, a prefix, or a glob (as
// ThresholdRule's).
struct FeedPattern {
  enum Kind { kKey, kPrefix, kGlob };
  Kind kind = kKey;
  std::string pattern;  // not empty; bytes

  // True if `key` matches. A glob is compiled on each call (it allocates).
  bool Matches(std::string_view key) const;
  absl::Status Validate() const;
  friend bool operator==(const FeedPattern&, const FeedPattern&) = default;
};

// A key (kKey) or every key starting with some bytes (kPrefix) that the feed always carries
// with `mode`, whatever is measured.
struct FeedPin {
  FeedPattern match;                                                 // kKey or kPrefix
  hotkey::model::Strategy mode = hotkey::model::Strategy::kIsolate;  // not kNone

  absl::Status Validate() const;
  friend bool operator==(const FeedPin&, const FeedPin&) = default;
};

// The hot-key feed's policy (GET /api/v1/hotkeys and its stream): the rules file's feed
// section.
struct FeedOptions {
  // An entry a client has not seen renewed for this long is void; in [1s, 1h]. The stream
  // renews every entry with a heartbeat every lease / kHeartbeatsPerLease.
  absl::Duration lease = absl::Seconds(10);
  // refresh_seconds given to clients for cache and split_cache entries; unset: the cluster
  // model's refresh (--cluster.refresh), so the clients apply the fix the advice projected.
  // In [1ms, 1h].
  std::optional<absl::Duration> refresh;
  // split_factor given for split and split_cache entries; unset: the cluster model's split
  // (--cluster.split), at least 2. In [2, 1024].
  std::optional<int> split_factor;
  // An advised entry stays while its key is hot, even when the advice says none since (the
  // fix in force lowers what the shard sees of the key; FeedState::NextFix); it leaves once
  // the key has not been hot for this long. 0s: at the first tick it is not hot. In [0s, 1h]
  // (feed.h, FeedState).
  absl::Duration hold = absl::Seconds(60);
  std::vector<FeedPin> pins;        // at most kMaxRules
  std::vector<FeedPattern> blocks;  // at most kMaxRules

  static constexpr int kHeartbeatsPerLease = 5;
  static constexpr size_t kMaxRules = 1024;
  static constexpr int kMaxSplitFactor = 1024;

  absl::Duration heartbeat() const { return lease / kHeartbeatsPerLease; }
  absl::Status Validate() const;
  friend bool operator==(const FeedOptions&, const FeedOptions&) = default;
};

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_FEED_OPTIONS_H_
