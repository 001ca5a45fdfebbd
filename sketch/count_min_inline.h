// CountMinSketch::UpdateInline(): the conservative update, defined here so that the
// tracker's per-event path (heavy_hitters.cc) inlines it. Internal to hotkey::sketch.
//
// Depths 2 to 4 have their rows unrolled, each by its own instance of one template: one
// minimum of the key's cells, the weight in whole units rounded up, one integer sum and one
// max-store a row, so that fewer rows cost fewer instructions; a width that is not a power of
// two takes the instances with a multiply-shift in place of the mask. Other depths take the loop.
// An add that would pass kCellMax leaves through UpdateSaturating(), which makes room and adds. All
// follow Column()'s mapping (pinned by heavy_hitters_eviction_test.cc).

#ifndef HOTKEY_SKETCH_COUNT_MIN_INLINE_H_
#define HOTKEY_SKETCH_COUNT_MIN_INLINE_H_

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "hotkey/sketch/count_min.h"
#include "rounding.h"

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

template <uint32_t kDepth, bool kExactUnits, bool kRange>
inline double CountMinSketch::UpdateRowsInline(uint64_t hash, double weight) {
  static_assert(kDepth >= 2 && kDepth <= kMaxUnrolledDepth);
  assert(depth_ == kDepth && weight > 0 && weight <= kMaxWeight);
  assert(layout_ == (kRange ? kRangeLayout : 0) + kDepth);
  // The cells' addresses first: a store to a u32 cell may alias the sketch's u32 members
  // (width_, mask_), so addresses worked out after one would be read again.
  Counter* const row0 = counters_.data();
  Counter* c[kDepth];
#pragma GCC unroll 8
  for (uint32_t r = 0; r < kDepth; ++r) c[r] = row0 + ColumnIn<kRange>(hash, r);
  Counter min = *c[0];
#pragma GCC unroll 8
  for (uint32_t r = 1; r < kDepth; ++r) min = std::min(min, *c[r]);
  // x < kMaxAddUnits (false for NaN too), so the units fit a Counter; the sum is checked
  // for overflow past kCellMax.
  const double x = weight * inv_scale_;
  Counter target;
  if (!(x < internal::kMaxAddUnits) ||
      __builtin_add_overflow(min, kExactUnits ? UnitsUp(weight, inv_scale_) : UnitsAbove(x),
                             &target)) [[unlikely]] {
    return UpdateSaturating(hash, weight, kExactUnits);
  }
#pragma GCC unroll 8
  for (uint32_t r = 0; r < kDepth; ++r) *c[r] = std::max(*c[r], target);
  return target * scale_;
}

template <bool kExactUnits>
inline double CountMinSketch::UpdateAnyInline(uint64_t hash, double weight) {
  // The tracker's default shape (heavy_hitters.h: 3 rows of a power-of-two width) first: it
  // pays one comparison, as depth 4 did when it was the only depth unrolled.
  if (layout_ == 3) [[likely]]
    return UpdateRowsInline<3, kExactUnits, false>(hash, weight);
  if (layout_ == 2) return UpdateRowsInline<2, kExactUnits, false>(hash, weight);
  if (layout_ == 4) return UpdateRowsInline<4, kExactUnits, false>(hash, weight);
  if (layout_ == kRangeLayout + 3) return UpdateRowsInline<3, kExactUnits, true>(hash, weight);
  if (layout_ == kRangeLayout + 2) return UpdateRowsInline<2, kExactUnits, true>(hash, weight);
  if (layout_ == kRangeLayout + 4) return UpdateRowsInline<4, kExactUnits, true>(hash, weight);
  return UpdateAnyDepth(hash, kExactUnits ? weight : internal::NextUp(weight));
}

inline double CountMinSketch::UpdateInline(uint64_t hash, double weight) {
  return UpdateAnyInline<true>(hash, weight);
}

}  // namespace hotkey::sketch

#endif  // HOTKEY_SKETCH_COUNT_MIN_INLINE_H_
