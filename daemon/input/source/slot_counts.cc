#include "hotkey/source/slot_counts.h"

#include <utility>

namespace hotkey::source {

SlotCounts::SlotCounts(sketch::HeavyHitters tags, const std::atomic<bool>* on, absl::Time now)
    : counts_(cluster::kSlots, 0.0), tags_(std::move(tags)), on_(on), rate_start_(now) {}

absl::StatusOr<SlotCounts> SlotCounts::Create(const sketch::HeavyHittersOptions& tag_options,
                                              absl::Time now, const std::atomic<bool>* on) {
  absl::StatusOr<sketch::HeavyHitters> tags = sketch::HeavyHitters::Create(tag_options, now);
  if (!tags.ok()) return tags.status();
  return SlotCounts(*std::move(tags), on, now);
}

size_t SlotCounts::MemoryBytesFor(const sketch::HeavyHittersOptions& tag_options) {
  absl::StatusOr<sketch::HeavyHitters> tags =
      sketch::HeavyHitters::Create(tag_options, absl::UnixEpoch());
  return cluster::kSlots * sizeof(double) + (tags.ok() ? tags->MemoryBytes() : 0);
}

}  // namespace hotkey::source
