// EpisodeLog: every hot key, slot and tag episode of the recent past, a SLOWLOG for hot keys,
// for /api/v1/episodes and the landing page's episode list.
//
// An episode opens at the tick its subject turns hot (alerter.h decides) and closes at the
// first tick it is no longer hot (cooled, idle shard, left the tracker). Each holds its
// start and end (wall stamps; open: no end), its peak share (of the alerter's share, as the
// episode's log lines print it) and peak ops/s, its threshold, the fix advised and each
// change of it (the first kMaxChanges, the rest counted), and the fix in force, with the
// first and last time it was seen so: the feed's fix for the key (what the kits apply,
// Hot()'s `in_force`), which the advice no longer shows once the fix works; for a key the
// feed never named, the strategy of the measured loads file's measurements naming the
// episode's key (or naming no key) while it was open (config/measured_loads.h).
//
// Bounded: a ring of `capacity` episodes; the oldest gives way. Labels are cut to
// `label_bytes`, kept in storage reserved at construction, as is the index of open
// episodes (at most one per episode of the ring), so memory is fixed (MemoryBound(), pinned
// by episodes_test.cc).
//
// Thread-safe: one mutex; the aggregator's thread feeds it (Begin, Hot, Finish), the daemon's
// measured-loads poll notes measurements, readers (JSON, Serialize) are on any thread.

#ifndef HOTKEY_AGGREGATE_EPISODES_H_
#define HOTKEY_AGGREGATE_EPISODES_H_

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hotkey/text/enum_names.h"

namespace hotkey::aggregate {

class EpisodeLog {
 public:
  static constexpr size_t kDefaultCapacity = 1000;
  static constexpr size_t kMaxChanges = 8;
  static constexpr size_t kStrategyBytes = 15;

  enum class Kind : uint8_t { kKey, kSlot, kTag };
  static constexpr text::EnumName<Kind> kKindNames[] = {
      {Kind::kKey, "key"}, {Kind::kSlot, "slot"}, {Kind::kTag, "tag"}};
  static constexpr std::string_view KindName(Kind k) { return text::NameOf(kKindNames, k); }

  // Who says a fix is in force: the feed (the kits apply it), or the measured loads file.
  enum class InForceBy : uint8_t { kMeasuredLoads, kFeed };
  static constexpr text::EnumName<InForceBy> kInForceByNames[] = {
      {InForceBy::kMeasuredLoads, "measured_loads"}, {InForceBy::kFeed, "feed"}};

  struct Change {
    int64_t time_ns = 0;  // wall
    char strategy[kStrategyBytes + 1] = {};
  };
  struct Episode {
    uint64_t seq = 0;  // 1, 2, ... in order of start, across restarts
    Kind kind = Kind::kKey;
    uint64_t id = 0;    // key hash, slot number, tag hash
    std::string label;  // capacity reserved at construction
    int64_t start_ns = 0;
    int64_t end_ns = 0;        // 0: open
    bool interrupted = false;  // closed by a restart, not by cooling
    double peak_share = 0;
    double peak_ops = 0;
    double threshold = 0;
    std::array<Change, kMaxChanges> changes;
    uint8_t change_count = 0;
    uint32_t changes_dropped = 0;
    // The fix in force; in_force_since_ns 0: none seen.
    char in_force[kStrategyBytes + 1] = {};
    InForceBy in_force_by = InForceBy::kMeasuredLoads;
    int64_t in_force_since_ns = 0;
    int64_t in_force_last_ns = 0;
  };

  EpisodeLog(size_t capacity, size_t label_bytes);

  // One tick at wall time `wall`: Hot() for every hot subject, then Finish(), which closes
  // the open episodes not seen.
  void Begin(absl::Time wall);
  // `strategy`: the fix advised now ("" before any advice); `in_force`: the feed's fix for
  // the key now ("" for none).
  void Hot(Kind kind, uint64_t id, std::string_view label, double share, double ops,
           double threshold, std::string_view strategy, std::string_view in_force = "");
  void Finish();

  // A measurement of the shards' loads taken at `time` under fix `strategy`, for key `key`
  // (empty: every open key episode); an episode the feed has named a fix for keeps the
  // feed's.
  void NoteMeasured(std::string_view strategy, std::string_view key, absl::Time time);

  // The JSON of /api/v1/episodes (docs/history.md): the newest `limit` episodes, newest first.
  std::string Json(size_t limit) const;

  size_t count() const;
  size_t open_count() const;
  size_t capacity() const { return capacity_; }
  // Bytes held: the ring, its reserved labels and the open index, all fixed at construction.
  size_t MemoryBytes() const;
  // What MemoryBytes() is for `capacity` episodes of labels up to `label_bytes`.
  static size_t MemoryBound(size_t capacity, size_t label_bytes);

  // The episodes, oldest first. Deserialize() replaces them; episodes open at the save are
  // closed at `saved` (the state file's stamp) and marked interrupted: the alerter starts
  // afresh, and a subject still hot opens a new episode after its dwell.
  std::string Serialize() const;
  absl::Status Deserialize(std::string_view data, absl::Time saved);
  static size_t MaxSerializedBytes(size_t capacity);

 private:
  static void SetStrategy(char* dst, std::string_view s);
  static void NoteInForce(Episode& e, InForceBy by, std::string_view strategy, int64_t t);
  Episode& Push();  // the ring's next slot, cleared

  const size_t capacity_;
  const size_t label_bytes_;
  mutable std::mutex mu_;
  std::vector<Episode> ring_;  // guarded by mu_
  size_t head_ = 0;            // guarded by mu_
  size_t count_ = 0;           // guarded by mu_
  uint64_t next_seq_ = 1;      // guarded by mu_
  int64_t now_ns_ = 0;         // guarded by mu_
  uint64_t tick_ = 0;          // guarded by mu_
  struct Open {
    size_t index;
    uint64_t seen;
  };
  using OpenIndex = absl::flat_hash_map<std::pair<uint8_t, uint64_t>, Open>;
  // Bytes of an open index reserved for `capacity` episodes.
  static size_t OpenIndexBytes(size_t capacity);
  OpenIndex open_;  // guarded by mu_; reserved for capacity_ entries
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_EPISODES_H_
