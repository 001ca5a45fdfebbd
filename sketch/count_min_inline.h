// CountMinSketch::UpdateInline(): the conservative update, defined here so that the
// tracker's per-event path (heavy_hitters.cc) inlines it. Internal to hotkey::sketch.
//
// The default depth of 4 has its rows unrolled: one minimum of four cells, one sum and four
// max-stores, each cell addressed by Column() where it is read or written. Other depths take
// the loop. RaiseToInline() likewise. All follow Column()'s mapping (pinned by
// heavy_hitters_eviction_test.cc). The sum rounds up for Update() (the sketch's own
// guarantee), or to nearest for the tracker, which counts its roundings and widens its
// bounds when it reads them (heavy_hitters.h).

#ifndef HOTKEY_SKETCH_COUNT_MIN_INLINE_H_
#define HOTKEY_SKETCH_COUNT_MIN_INLINE_H_

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "hotkey/sketch/count_min.h"
#include "rounding.h"

namespace hotkey::sketch {

template <bool kRoundUp>
inline double CountMinSketch::Update4Inline(uint64_t hash, double weight) {
  assert(depth_ == 4 && weight > 0 && std::isfinite(weight));
  Counter* const row0 = counters_.data();
  const auto cell = [&](uint32_t r) -> Counter& { return row0[Column(hash, r)]; };
  const Counter min = std::min(std::min(cell(0), cell(1)), std::min(cell(2), cell(3)));
  const Counter target = kRoundUp ? internal::AddUp(min, weight) : min + weight;
  cell(0) = std::max(cell(0), target);
  cell(1) = std::max(cell(1), target);
  cell(2) = std::max(cell(2), target);
  cell(3) = std::max(cell(3), target);
  return target;
}

template <bool kRoundUp>
inline double CountMinSketch::UpdateInline(uint64_t hash, double weight) {
  assert(weight > 0 && std::isfinite(weight));
  // Conservative update: find the minimum, then lift only the counters below min + weight.
  // Rounded to nearest, 2^53 + 1 would stay 2^53 and the weight be lost: Update() rounds up;
  // the tracker rounds to nearest and accounts for the loss when it reads.
  auto add = [](double a, double b) { return kRoundUp ? internal::AddUp(a, b) : a + b; };
  if (depth_ == 4) return Update4Inline<kRoundUp>(hash, weight);
  Counter* c[kMaxDepth];
  Counter est = std::numeric_limits<Counter>::infinity();
  for (uint32_t r = 0; r < depth_; ++r) {
    c[r] = &counters_[Column(hash, r)];
    est = std::min(est, *c[r]);
  }
  const Counter target = add(est, weight);
  for (uint32_t r = 0; r < depth_; ++r) *c[r] = std::max(*c[r], target);
  return target;
}

inline void CountMinSketch::RaiseToInline(uint64_t hash, double value) {
  // The tracker's lobby writes replaced ways back on its per-event path: the default depth
  // is unrolled as in UpdateInline.
  if (depth_ == 4) {
    Counter* const row0 = counters_.data();
    for (uint32_t r = 0; r < 4; ++r) {
      Counter& c = row0[Column(hash, r)];
      c = std::max(c, value);
    }
    return;
  }
  for (uint32_t r = 0; r < depth_; ++r) {
    Counter& c = counters_[Column(hash, r)];
    c = std::max(c, value);
  }
}

}  // namespace hotkey::sketch

#endif  // HOTKEY_SKETCH_COUNT_MIN_INLINE_H_
