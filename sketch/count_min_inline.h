// CountMinSketch::UpdateInline(): the conservative update, defined here so that the
// tracker's per-event path (heavy_hitters.cc) inlines it. Internal to hotkey::sketch.
//
// The default depth of 4 has its rows unrolled: one minimum of four cells, the weight in
// whole units rounded up, one integer sum and four max-stores. Other depths take the loop. An add
// that would pass kCellMax leaves through UpdateSaturating(), which makes room and adds. All follow
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
// The largest x = weight / scale an add takes on the common path: floor(x + 1) and
// ceil(x) then fit a Counter (below 2^32 - 1). The slow path makes room for more.
inline constexpr double kMaxAddUnits = 0x1p32 - 4;

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

inline CountMinSketch::Counter CountMinSketch::UnitsAbove(double x) {
  // RN(x + 1) >= floor(x) + 1 >= x, and it passes x + 1 only when rounding up to the next
  // integer, which takes a fraction of x above 1 - 2^-20 (x < 2^32): 1 + 2^-20 units at most.
  // An underflowed x (0) counts one unit, as a positive weight must.
  return static_cast<Counter>(x + 1.0);
}

inline CountMinSketch::Counter CountMinSketch::UnitsUp(double value, double inv_scale) {
  // value * inv_scale is exact (inv_scale is a power of two) unless it leaves the normal
  // range: then it is below 1 and the add counts one unit, as any positive value does.
  const double x = value * inv_scale;
  const Counter whole = static_cast<Counter>(x);
  return whole + (static_cast<double>(whole) < x || (whole == 0 && value > 0));
}

template <bool kExactUnits>
inline double CountMinSketch::Update4Inline(uint64_t hash, double weight) {
  assert(depth_ == 4 && weight > 0 && weight <= kMaxWeight);
  // The four cells' addresses first: a store to a u32 cell may alias the sketch's u32
  // members (width_, mask_), so addresses worked out after one would be read again.
  Counter* const row0 = counters_.data();
  Counter* const c0 = row0 + Column(hash, 0);
  Counter* const c1 = row0 + Column(hash, 1);
  Counter* const c2 = row0 + Column(hash, 2);
  Counter* const c3 = row0 + Column(hash, 3);
  const Counter min = std::min(std::min(*c0, *c1), std::min(*c2, *c3));
  // x < kMaxAddUnits (false for NaN too), so the units fit a Counter; the sum is checked
  // for overflow past kCellMax.
  const double x = weight * inv_scale_;
  Counter target;
  if (!(x < internal::kMaxAddUnits) ||
      __builtin_add_overflow(min, kExactUnits ? UnitsUp(weight, inv_scale_) : UnitsAbove(x),
                             &target)) [[unlikely]] {
    return UpdateSaturating(hash, weight, kExactUnits);
  }
  *c0 = std::max(*c0, target);
  *c1 = std::max(*c1, target);
  *c2 = std::max(*c2, target);
  *c3 = std::max(*c3, target);
  return target * scale_;
}

inline double CountMinSketch::UpdateInline(uint64_t hash, double weight) {
  if (depth_ == 4) return Update4Inline<true>(hash, weight);
  return UpdateAnyDepth(hash, weight);
}

}  // namespace hotkey::sketch

#endif  // HOTKEY_SKETCH_COUNT_MIN_INLINE_H_
