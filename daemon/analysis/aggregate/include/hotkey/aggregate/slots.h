// SlotTracker: the aggregator's view of the shard's traffic by Redis Cluster slot and by hash
// tag, once per tick, from the sources' slot counts (source/slot_counts.h).
//
// Slots. The sources' counts (undecayed sums) are added up; their difference since the last
// tick feeds, for every slot:
//  - a decayed weight with the trackers' half-life, whose share of the total is what
//    detection and the choice of exported slots read (it moves within a second, as a key's
//    decayed share does);
//  - a ring of kBuckets + 1 buckets, each rate_window / kBuckets long, whose sum is the slot's
//    ops over the rate window (between rate_window and rate_window * (1 + 1 / kBuckets) long):
//    the exported share and ops/s, and what a move is planned on.
// A change in the reporting sources (a source's first report, a restart) resets the base, so
// no count is taken as traffic twice.
//
// Tags. The sources' tag trackers are merged (as the keys' are); a tag's decayed share (what
// detection reads) is its decayed weight over the key tracker's decayed total (every event,
// tagged or not), so a tag's share and a key's are of the same traffic. A tag's exported
// share and ops/s are on its slot's basis, the rate window: its slot's window ops times the
// tag's part of the slot's decayed ops, so a tag never shows more than its own slot.
//
// Hot slots and tags: each has an Alerter (alerter.h) of its own with the default threshold
// of the rules (alert.default_threshold; the rules' per-key patterns do not apply), its dwell
// and hysteresis, and episode log lines ("hot slot episode started", slot=1234). Exported:
// hot ones, and the top_k over min_share (export options), with the keys' hysteresis, so
// the label sets stay bounded by top_k and do not churn; never 16,384 series.
//
// Advice per cause. A hot slot whose busiest tracked key carries at least kKeyDominates of
// its ops is advised `key` (moving the slot would only move the hot spot: the key's own fix
// applies); else one whose busiest tag does is advised `tag` (re-key: the tag's keys given
// tags of their own, split `tag_split` ways so that no piece is hot; a tag is one slot, so
// moving it only moves the hot spot). Each is kept down to kKeyReleases, so a slot near the
// line does not flap. A hot slot through many keys and tags is advised `move` when the plan
// moves it, and nothing otherwise.
//
// The node against its peers. With the cluster around the shard known (ClusterInputs, every
// shard interval), the node's commands/s are compared with its peers' mean (`peers`), and
// one plan (cluster/move_plan.h: PlanRebalance) is made over every slot the node serves,
// hot or not, on their ops over the rate window: which slots go to which primaries, every
// node's projected load, one script. It exists only while the node is over its target or
// clearly over its peers and the plan brings it under its goal; the last plan is handed back
// for hysteresis. While a hot slot is advised `key` or `tag`, no plan is made: that fix
// changes the loads a plan would be made on.
//
// Memory is fixed: MemoryBytes() (3 arrays of kSlots doubles, kBuckets + 1 of floats, plus one
// merged tag tracker; the plan is bounded by MoveOptions::max_slots), pinned by
// tests/daemon/analysis/aggregate/slots_test.cc. Per tick the work is O(kSlots) plus the tracked
// tags and keys.
//
// Thread-compatible: called from the aggregator's thread.

#ifndef HOTKEY_AGGREGATE_SLOTS_H_
#define HOTKEY_AGGREGATE_SLOTS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "hotkey/aggregate/alerter.h"
#include "hotkey/aggregate/key_label.h"
#include "hotkey/cluster/move_plan.h"
#include "hotkey/cluster/slot.h"
#include "hotkey/cluster/topology.h"
#include "hotkey/config/options.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "hotkey/source/report.h"
#include "hotkey/text/enum_names.h"

namespace hotkey::aggregate {

enum class SlotAdvice { kNone, kKey, kTag, kMove };
// No advice has the empty name: the API shows null and /metrics no sample for it, and an
// episode records no strategy.
inline constexpr text::EnumName<SlotAdvice> kSlotAdviceNames[] = {{SlotAdvice::kNone, ""},
                                                                  {SlotAdvice::kKey, "key"},
                                                                  {SlotAdvice::kTag, "tag"},
                                                                  {SlotAdvice::kMove, "move"}};
constexpr std::string_view SlotAdviceName(SlotAdvice advice) {
  return text::NameOf(kSlotAdviceNames, advice);
}

struct SlotSnapshot {
  uint16_t slot = 0;
  double share = 0;           // of the shard's ops, over the rate window
  double decayed_share = 0;   // over about one half-life: detection, export choice
  double ops_per_second = 0;  // over the rate window
  bool hot = false;
  absl::Time hot_since = absl::InfiniteFuture();  // wall stamp
  // The slot's busiest tracked key (its label) and that key's share of the slot's decayed
  // ops; empty and 0 when no tracked key is in the slot.
  std::string top_key;
  double top_key_share = 0;
  // The slot's busiest tag (its label) and that tag's share of the slot's decayed ops; empty
  // and 0 when no tracked tag is in the slot.
  std::string top_tag;
  double top_tag_share = 0;
  SlotAdvice advice = SlotAdvice::kNone;  // hot slots only
  // With advice `tag`: into how many tags the tag's keys should be spread, the fewest that
  // leave each piece under the hot line (its share over the alert's cooling line).
  int tag_split = 0;
};

struct TagSnapshot {
  std::string tag;    // the tag's bytes (a prefix when truncated)
  std::string label;  // as a key's label (key_label.h)
  uint64_t hash = 0;  // the tag tracker's hash of it
  bool truncated = false;
  uint16_t slot = 0;          // the slot of every key with this tag
  double decayed_share = 0;   // decayed weight over the shard's decayed total: detection
  double share = 0;           // of the shard's ops over the rate window (the slot's basis)
  double ops_per_second = 0;  // over the rate window (the slot's basis)
  bool hot = false;
};

// One node of the Redis Cluster around the shard, as the shard and its peers answered.
struct ClusterNode {
  std::string id;
  std::string address;  // host:port
  bool myself = false;
  int slots = 0;
  bool asked = false;  // asked at least once (the own node: answered); else `up` means nothing
  bool up = false;
  std::optional<double> ops_per_second;  // commands/s (INFO)
  std::optional<double> busy;
  std::optional<double> capacity_ops;
};

// The cluster around the shard; nodes empty outside a cluster or before the shard answered.
struct ClusterInputs {
  std::vector<ClusterNode> nodes;            // myself among them
  bool tls = false;                          // the nodes are reached over TLS (redis-cli --tls)
  std::vector<cluster::SlotRange> my_slots;  // the slots myself serves
  const ClusterNode* Myself() const;
};

// The node against its peers (the other primaries that answered), every shard interval.
struct PeerComparison {
  std::optional<double> ops_per_second;  // the node's own commands/s
  std::optional<double> peers_mean;      // the peers' mean commands/s
  std::optional<double> ratio;           // ops_per_second / peers_mean
  size_t peers_up = 0;                   // peers with a load
  size_t peers = 0;                      // other primaries serving slots
};

struct SlotsSnapshot {
  bool enabled = false;             // the sources count slots (--track.slots)
  std::vector<SlotSnapshot> slots;  // exported, largest decayed share first
  std::vector<TagSnapshot> tags;    // exported, largest share first
  size_t hot_slots = 0;
  size_t hot_tags = 0;
  ClusterInputs cluster;                  // as set
  PeerComparison peers;                   // from `cluster`
  std::optional<cluster::MovePlan> move;  // the rebalance, when one is advised
  size_t memory_bytes = 0;                // SlotTracker::MemoryBytes()
};

class SlotTracker {
 public:
  static constexpr int kBuckets = 10;
  static constexpr double kKeyDominates = 0.5;
  static constexpr double kKeyReleases = 0.4;

  SlotTracker(const config::TrackOptions& track, const config::ReloadableOptions& reloadable,
              Alerter::LogSink log);

  void SetReloadable(const config::ReloadableOptions& reloadable);
  void SetClusterInputs(ClusterInputs inputs) { cluster_ = std::move(inputs); }

  // One tick. `keys` is the merged key tracker (for its decayed total and the slots' top
  // keys); `shard_ops` the shard's ops/s over the rate window (the idle guard); `target_load`
  // and `capacity_ops` (nullopt: unknown) the advice model's, for the move plan; `stamp`
  // turns a monotonic reading into a wall stamp.
  SlotsSnapshot Build(std::span<const std::shared_ptr<const source::SourceReport>> reports,
                      const sketch::HeavyHitters& keys, absl::Time now, absl::Time wall,
                      double shard_ops, double target_load, std::optional<double> capacity_ops,
                      const KeyLabeler& labeler);

  // Bytes held, fixed at construction but for the merged tag tracker (the size of one
  // source's tag tracker once there are two sources).
  size_t MemoryBytes() const;
  // The most MemoryBytes() can be with trackers of `tracker_bytes` each.
  static size_t MemoryBound(size_t tracker_bytes);

 private:
  void TakeCounts(std::span<const std::shared_ptr<const source::SourceReport>> reports,
                  absl::Time now);
  const sketch::HeavyHitters* MergeTags(
      std::span<const std::shared_ptr<const source::SourceReport>> reports);

  const config::TrackOptions track_;
  config::ReloadableOptions reloadable_;
  ClusterInputs cluster_;
  Alerter slot_alerter_;
  Alerter tag_alerter_;
  // The sources' summed counts at the last tick, and how many sources they came from.
  std::vector<double> last_;
  std::vector<double> sum_;  // scratch: this tick's
  int last_sources_ = -1;
  absl::Time last_time_;
  // Decayed weight per slot, its total, and the seconds of steady traffic it stands for.
  std::vector<double> decayed_;
  double decayed_total_ = 0;
  double decayed_window_ = 0;
  // The window's ring: (kBuckets + 1) x kSlots, the bucket in use `bucket_`, each bucket's
  // start (InfiniteFuture: unused) and total.
  std::vector<float> ring_;
  std::vector<absl::Time> bucket_start_;
  std::vector<double> bucket_total_;
  int bucket_ = 0;
  absl::flat_hash_set<uint16_t> exported_slots_;
  absl::flat_hash_set<uint64_t> exported_tags_;
  absl::flat_hash_map<uint16_t, SlotAdvice> advice_;  // of the hot slots
  std::optional<cluster::MovePlan> plan_;             // the last one advised
  std::optional<sketch::HeavyHitters> merged_tags_;
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_SLOTS_H_
