// CountMinSketch::UpdateInline(): the conservative update, defined here so that the
// tracker's per-event path (heavy_hitters.cc) inlines it. Internal to hotkey::sketch.
//
// The default depth of 4 has its rows unrolled: one minimum of four cells, the weight in
// whole units rounded up, one integer sum and four max-stores, each cell addressed by
// Column() where it is read or written. Other depths take the loop. An add that would pass
// kCellMax leaves through UpdateSaturating(), which makes room and adds. All follow
// Column()'s mapping (pinned by heavy_hitters_eviction_test.cc).

#ifndef HOTKEY_SKETCH_COUNT_MIN_INLINE_H_
#define HOTKEY_SKETCH_COUNT_MIN_INLINE_H_

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "hotkey/sketch/count_min.h"

namespace hotkey::sketch {

namespace internal {
// Cells are divided to at most this many units when the scale rises, so that the next
// rise waits until the largest cell has doubled: O(cells) once per doubling.
inline constexpr double kRoomUnits = 0x1p31;

// The smallest power of two, at least `scale` (a power of two) and at most kMaxScale, that
// holds `value` in kRoomUnits units (kMaxScale if none does).
inline double ScaleFor(double value, double scale) {
  while (value * (1 / scale) > kRoomUnits && scale < CountMinSketch::kMaxScale) scale *= 2;
  return scale;
}
}  // namespace internal

template <typename Up>
void CountMinSketch::Revalue(Up up) {
  double largest = 0;
  for (size_t i = 0; i < counters_.size(); ++i) largest = std::max(largest, up(i));
  double scale = kInitialScale;
  if (largest > 0) {
    // 2^(e - 31) holds a value in [2^e, 2^(e+1)) in at most 2^32 units; ScaleFor() takes it
    // to 2^31 at most.
    scale = std::clamp(std::ldexp(1.0, std::ilogb(largest) - 31), kMinScale, kMaxScale);
    scale = internal::ScaleFor(largest, scale);
  }
  const double inv = 1 / scale;
  // Written in place: up(i) reads cell i (and scale_, unchanged until the end) only.
  for (size_t i = 0; i < counters_.size(); ++i) {
    const double v = up(i);
    counters_[i] = v * inv >= kCellMax ? kCellMax : UnitsUp(v, inv);
  }
  SetScale(scale);
}

inline CountMinSketch::Counter CountMinSketch::UnitsUp(double value, double inv_scale) {
  // value * inv_scale is exact (inv_scale is a power of two) unless it leaves the normal
  // range: then it is below 1 and the add counts one unit, as any positive value does.
  const double x = value * inv_scale;
  const Counter whole = static_cast<Counter>(x);
  return whole + (static_cast<double>(whole) < x || (whole == 0 && value > 0));
}

inline double CountMinSketch::Update4Inline(uint64_t hash, double weight) {
  assert(depth_ == 4 && weight > 0 && weight <= kMaxWeight);
  Counter* const row0 = counters_.data();
  const auto cell = [&](uint32_t r) -> Counter& { return row0[Column(hash, r)]; };
  const Counter min = std::min(std::min(cell(0), cell(1)), std::min(cell(2), cell(3)));
  // Strictly below the room left, so that the one unit of an underflowed x fits too.
  if (!(weight * inv_scale_ < static_cast<double>(kCellMax - min))) [[unlikely]] {
    return UpdateSaturating(hash, weight);
  }
  const Counter target = min + UnitsUp(weight, inv_scale_);
  cell(0) = std::max(cell(0), target);
  cell(1) = std::max(cell(1), target);
  cell(2) = std::max(cell(2), target);
  cell(3) = std::max(cell(3), target);
  return target * scale_;
}

inline double CountMinSketch::UpdateInline(uint64_t hash, double weight) {
  if (depth_ == 4) return Update4Inline(hash, weight);
  return UpdateAnyDepth(hash, weight);
}

}  // namespace hotkey::sketch

#endif  // HOTKEY_SKETCH_COUNT_MIN_INLINE_H_
