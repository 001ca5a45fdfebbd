// SlotCounts: one source's traffic by Redis Cluster slot and by hash tag, beside its key
// tracker. Every event's key adds its weight to its slot's count (slot.h: the slot Redis
// Cluster puts the key in) and, when the key has a hash tag, to that tag in a top-K of tags
// (a sketch::HeavyHitters keyed by the tag's bytes, decaying as the key tracker does). A
// thousand keys "profile:{42}:*", none hot alone, are one hot tag and one hot slot here.
//
// The slot counts are undecayed sums since creation (weights, so sampling-scaled like the
// tracker's raw totals): the aggregator takes their differences over time (aggregate/slots.h).
//
// Counting can be switched: with a switch given at creation, Update() counts only while it
// reads true (one relaxed atomic load per event when off), so a daemon that does not know yet
// whether its shard is a Redis Cluster node pays nearly nothing until it knows (the
// daemon's --track.slots=auto). Reports carry the switch's state (counting()).
//
// Memory is fixed at creation: kSlots doubles plus the tag tracker (MemoryBytes()); copies
// of the same shape copy-assign into each other with no allocation (report_buffer.h).
// Update() allocates nothing and costs O(key length) plus, for a tagged key, one tracker
// update (tests/daemon/input/source/slot_counts_test.cc counts its allocations).
//
// Thread-compatible.

#ifndef HOTKEY_SOURCE_SLOT_COUNTS_H_
#define HOTKEY_SOURCE_SLOT_COUNTS_H_

#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/cluster/slot.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace hotkey::source {

class SlotCounts {
 public:
  // The tags' tracker from `tag_options` (the daemon gives it the key tracker's options).
  // `on`, when not null, switches counting (it must outlive every copy); null: always on.
  static absl::StatusOr<SlotCounts> Create(const sketch::HeavyHittersOptions& tag_options,
                                           absl::Time now, const std::atomic<bool>* on = nullptr);

  void Update(std::string_view key, sketch::Op op, double weight = 1.0) {
    if (on_ && !on_->load(std::memory_order_relaxed)) return;
    const std::optional<std::string_view> tag = cluster::HashTag(key);
    counts_[cluster::Crc16(tag ? *tag : key) & (cluster::kSlots - 1)] += weight;
    if (tag) tags_.Update(*tag, op, weight);
  }
  // Brings the tags' decay to `now` (as HeavyHitters::Advance).
  void Advance(absl::Time now) { tags_.Advance(now); }

  // The weight counted for `slot` since creation.
  double count(uint16_t slot) const { return counts_[slot]; }
  const std::vector<double>& counts() const { return counts_; }
  const sketch::HeavyHitters& tags() const { return tags_; }
  // Whether Update() counts now.
  bool counting() const { return !on_ || on_->load(std::memory_order_relaxed); }

  size_t MemoryBytes() const { return counts_.size() * sizeof(double) + tags_.MemoryBytes(); }
  // MemoryBytes() of any SlotCounts made with `tag_options`.
  static size_t MemoryBytesFor(const sketch::HeavyHittersOptions& tag_options);

 private:
  SlotCounts(sketch::HeavyHitters tags, const std::atomic<bool>* on);

  std::vector<double> counts_;  // cluster::kSlots
  sketch::HeavyHitters tags_;
  const std::atomic<bool>* on_ = nullptr;
};

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_SLOT_COUNTS_H_
