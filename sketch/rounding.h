// Directed rounding for the sketches' bounds: sums, products and quotients of non-negative
// doubles rounded up (for upper bounds) or down (for lower bounds), one ulp at most.
//
// IEEE arithmetic rounds to nearest, so a bound kept in a double can drift to the wrong side
// of the truth: 2e16 + 1 is 2e16 in a double, and a counter that absorbs many such adds
// ends far below the weight it was given. These helpers find the sign of the exact rounding
// error (Fast2Sum on the ordered pair, Dekker 1971, for a sum; the FMA residual of a product
// or quotient, Boldo & Muller 2011) and step one ulp outward when it is not zero, so that
// for a, b >= 0
//   AddDown(a, b) <= a + b <= AddUp(a, b),   MulDown(a, b) <= a * b <= MulUp(a, b),
//   DivDown(a, b) <= a / b <= DivUp(a, b)    (b > 0),
// with equality whenever the exact result is a double. The cost is a few flops and one
// fma() (glibc picks the FMA instruction at load time where the CPU has it); the global
// rounding mode (fesetround) is never touched. Inputs must be finite and >= +0, not -0.
// Internal to hotkey::sketch.
//
// The Step variants below are cheaper and coarser: a sum rounded to nearest, then stepped
// outward by whole ulps whatever its error was (an integer add on its bits). They suit a
// path where finding the sign costs more than an ulp or two of drift: the tracker's
// per-event sums (heavy_hitters.h). For a >= 0 and an x > 0 known only as w = RN(x) (x a
// product, say), x and the sums normal (>= 2^-1022) and finite,
//   AddDownStep2(a, w) <= a + x <= AddUpStep2(a, w),
//   (a + x) * (1 - 2^-50) < AddDownStep2(a, w),   AddUpStep2(a, w) < (a + x) * (1 + 2^-50),
// and NextDown(w) <= x <= NextUp(w) (tests/sketch/rounding_test.cc).

#ifndef HOTKEY_SKETCH_ROUNDING_H_
#define HOTKEY_SKETCH_ROUNDING_H_

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace hotkey::sketch::internal {

// The next double above x (finite, >= +0), or x itself if x is +inf.
inline double NextUp(double x) {
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  return std::bit_cast<double>(bits + (x < std::numeric_limits<double>::infinity()));
}
// The next double below x (> 0), or 0 for x == 0.
inline double NextDown(double x) {
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  return std::bit_cast<double>(bits - (x > 0));
}

// Whether s = RN(a + b) is below or above a + b, for a, b >= 0: Fast2Sum (Dekker 1971) on
// the ordered pair. With hi = max(a, b) and lo = min(a, b), s - hi is exact, so the exact
// error a + b - s is lo - (s - hi), and its sign is a comparison. Three flops and a
// comparison, where TwoSum (which needs no order) takes six flops. When the sum overflows
// (s = +inf), s - hi is +inf: "below" is false, so AddUp stays +inf, and "above" is true,
// so AddDown steps to DBL_MAX, which the exact sum exceeds (tests/sketch/rounding_test.cc).
inline bool SumBelowExact(double a, double b, double s) {
  return s - std::max(a, b) < std::min(a, b);
}
inline bool SumAboveExact(double a, double b, double s) {
  return s - std::max(a, b) > std::min(a, b);
}

// Branch-free: on decayed (fractional) weights the sign of the error is a coin toss, and a
// mispredicted branch per add cost more than the exact error itself.
inline double AddUp(double a, double b) {
  const double s = a + b;
  const uint64_t step = SumBelowExact(a, b, s);  // never when s is +inf
  return std::bit_cast<double>(std::bit_cast<uint64_t>(s) + step);
}
inline double AddDown(double a, double b) {
  const double s = a + b;
  const uint64_t step = SumAboveExact(a, b, s);  // only when s > 0; +inf steps to DBL_MAX
  return std::bit_cast<double>(std::bit_cast<uint64_t>(s) - step);
}

// RN(a + w) two ulps up, or down: one step covers the sum's rounding, the other w's. For
// s = RN(y), NextUp(s) >= y (if s < y, s is the double just below y). When x > w, x - w is
// at most half the gap above w; the double one step above RN(a + w) is at least a + w >= w,
// so the gap above it is at least as wide, and the second step passes a + x. The same holds
// below. Relative bounds: RN errs by at most 2^-53 (twice: w, then the sum) and a step is
// at most 2^-52 of the value, so the result is within (1 + 2^-53)^2 * (1 + 2^-52)^2 <
// 1 + 2^-50 of a + x. The sum must be finite (up) or positive (down).
inline double AddUpStep2(double a, double w) {
  return std::bit_cast<double>(std::bit_cast<uint64_t>(a + w) + 2);
}
inline double AddDownStep2(double a, double w) {
  return std::bit_cast<double>(std::bit_cast<uint64_t>(a + w) - 2);
}

// Below this, an FMA residual may itself underflow and lose its sign; results that small
// (2^-968, weights decayed by thousands of half-lives) step outward unconditionally.
inline constexpr double kResidualFloor = 0x1p-968;

// The exact a * b - RN(a * b) has the sign of fma(a, b, -p) away from underflow.
inline double MulUp(double a, double b) {
  const double p = a * b;
  if (p < kResidualFloor) return (a == 0 || b == 0) ? 0.0 : NextUp(p);
  return std::fma(a, b, -p) > 0 ? NextUp(p) : p;
}
inline double MulDown(double a, double b) {
  const double p = a * b;
  if (p < kResidualFloor) return NextDown(p);
  return std::fma(a, b, -p) < 0 ? NextDown(p) : p;
}

// q = RN(a / b) is below a / b exactly when q * b < a; the remainder a - q * b is a double,
// so fma(q, b, -a) computes it exactly (away from underflow).
inline double DivUp(double a, double b) {
  const double q = a / b;
  if (q < kResidualFloor) return a == 0 ? 0.0 : NextUp(q);
  return std::fma(q, b, -a) < 0 ? NextUp(q) : q;
}
inline double DivDown(double a, double b) {
  const double q = a / b;
  if (q < kResidualFloor) return NextDown(q);
  return std::fma(q, b, -a) > 0 ? NextDown(q) : q;
}

}  // namespace hotkey::sketch::internal

#endif  // HOTKEY_SKETCH_ROUNDING_H_
