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
// Above kExactPerSecond events a second, counting is sampled: every event is counted while
// the source's rate (measured between Advance() calls at least kRatePeriod apart) is under
// it; above, about one event in N is, with weight N, N the rate over kExactPerSecond (the
// gaps drawn at random between 1 and 2N - 1, so that a stream that cycles through N keys is
// not aliased). A slot with 0.1% of the traffic is then still counted a thousand times a
// second, so its share over the rate window stays within a few percent, and the cost of
// counting slots stops growing with the rate: one decrement per event skipped
// (bench/slots_cost.sh measures it). Under kExactPerSecond, as at a Redis shard's rates,
// counts are exact.
//
// Memory is fixed at creation: kSlots doubles plus the tag tracker (MemoryBytes()); copies
// of the same shape copy-assign into each other with no allocation (report_buffer.h).
// Update() allocates nothing and costs O(key length) plus, for a tagged key, one tracker
// update, for each event counted (tests/daemon/input/source/slot_counts_test.cc counts its
// allocations).
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

  static constexpr double kExactPerSecond = 1e6;
  static constexpr absl::Duration kRatePeriod = absl::Milliseconds(100);

  void Update(std::string_view key, sketch::Op op, double weight = 1.0) {
    if (on_ && !on_->load(std::memory_order_relaxed)) return;
    ++seen_;
    if (--skip_ > 0) return;
    if (stride_ > 1) {
      // xorshift32: the gap to the next counted event, uniform in [1, 2 * stride - 1].
      random_ ^= random_ << 13;
      random_ ^= random_ >> 17;
      random_ ^= random_ << 5;
      skip_ = 1 + random_ % (2 * stride_ - 1);
      weight *= stride_;
    } else {
      skip_ = 1;
    }
    const std::optional<std::string_view> tag = cluster::HashTag(key);
    counts_[cluster::Crc16(tag ? *tag : key) & (cluster::kSlots - 1)] += weight;
    if (tag) tags_.Update(*tag, op, weight);
  }
  // Brings the tags' decay to `now` (as HeavyHitters::Advance), and the sampling stride to the
  // rate since the last change once kRatePeriod has passed.
  void Advance(absl::Time now) {
    tags_.Advance(now);
    const absl::Duration d = now - rate_start_;
    if (d < kRatePeriod) return;
    const double rate = static_cast<double>(seen_) / absl::ToDoubleSeconds(d);
    stride_ = rate > kExactPerSecond ? static_cast<uint32_t>(rate / kExactPerSecond) : 1;
    if (skip_ > 2 * stride_) skip_ = 1;
    seen_ = 0;
    rate_start_ = now;
  }
  // One event in stride() is counted now (1: every one).
  uint32_t stride() const { return stride_; }

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
  SlotCounts(sketch::HeavyHitters tags, const std::atomic<bool>* on, absl::Time now);

  std::vector<double> counts_;  // cluster::kSlots
  sketch::HeavyHitters tags_;
  const std::atomic<bool>* on_ = nullptr;
  // Sampling: events seen since rate_start_, the stride, the events left to skip, the
  // generator's state (a fixed seed: counts are reproducible run to run).
  uint64_t seen_ = 0;
  absl::Time rate_start_;
  uint32_t stride_ = 1;
  uint32_t skip_ = 1;
  uint32_t random_ = 0x9e3779b9;
};

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_SLOT_COUNTS_H_
