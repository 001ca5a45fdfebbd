// Tests rounding.h's sums against an independent exact error: TwoSum (Knuth, TAOCP vol. 2
// 4.2.2), which needs no ordering of its operands, on pairs across the whole range of
// doubles (subnormals, equal and far-apart exponents, overflow):
//   AddDown(a, b) <= a + b <= AddUp(a, b), each one ulp from RN(a + b) at most, and equal
//   to it exactly when a + b is a double.
// And the per-event path's AddUpStep2/AddDownStep2 against exact rational arithmetic
// (Boost.Multiprecision): a + x for x = p * q known only as w = RN(p * q), on the right side
// and within a relative 2^-50.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "boost/multiprecision/cpp_int.hpp"
#include "rounding.h"

namespace hotkey::sketch::internal {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMax = std::numeric_limits<double>::max();

// a + b - RN(a + b), exactly, for a finite sum.
double TwoSumError(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  return (a - (s - bb)) + (b - bb);
}

void CheckPair(double a, double b) {
  INFO("a = " << a << ", b = " << b);
  const double s = a + b;
  const double up = AddUp(a, b);
  const double down = AddDown(a, b);
  REQUIRE(up == AddUp(b, a));
  REQUIRE(down == AddDown(b, a));
  if (std::isinf(s)) {
    // The exact sum is above every double: DBL_MAX bounds it below, +inf above.
    REQUIRE(up == kInf);
    REQUIRE(down == kMax);
    return;
  }
  const double err = TwoSumError(a, b);
  REQUIRE(up == (err > 0 ? std::nextafter(s, kInf) : s));
  REQUIRE(down == (err < 0 ? std::nextafter(s, 0.0) : s));
}

TEST_CASE("AddUp and AddDown round a sum outward only when it is inexact") {
  SECTION("known sums") {
    const double two53 = 0x1p53;
    CHECK(AddUp(two53, 1) == two53 + 2);  // RN(2^53 + 1) = 2^53, below the sum
    CHECK(AddDown(two53, 1) == two53);
    CHECK(AddUp(two53, 2) == two53 + 2);  // exact
    CHECK(AddDown(two53, 2) == two53 + 2);
    CHECK(AddUp(two53 + 2, 1) == two53 + 4);  // RN(2^53 + 3) = 2^53 + 4, above the sum
    CHECK(AddDown(two53 + 2, 1) == two53 + 2);
    CHECK(AddUp(0, 0) == 0);
    CHECK(AddDown(0, 0) == 0);
    CHECK(AddUp(1, 0) == 1);
    CHECK(AddDown(0, 1) == 1);
  }
  SECTION("edges") {
    const double tiny = std::numeric_limits<double>::denorm_min();
    const double edges[] = {0, tiny,   2 * tiny, 0x1p-1022,  0x1p-1000, 0.1,  1,        1 + 0x1p-52,
                            3, 0x1p52, 0x1p53,   0x1p53 + 2, 1e15,      1e27, 0x1p1023, kMax};
    for (double a : edges) {
      for (double b : edges) CheckPair(a, b);
    }
  }
  SECTION("random pairs over the whole range") {
    std::mt19937_64 rng(20261202);
    std::uniform_int_distribution<int> exponent(-1074, 1023);
    std::uniform_int_distribution<int> gap(0, 60);
    std::uniform_real_distribution<double> mantissa(1, 2);
    for (int i = 0; i < 200000; ++i) {
      const double a = std::ldexp(mantissa(rng), exponent(rng));
      // Half the pairs have nearby exponents, where the sum's rounding is most varied.
      const int e = i % 2 ? exponent(rng) : std::ilogb(a) - gap(rng);
      const double b = std::ldexp(mantissa(rng), e);
      if (!std::isfinite(a) || !std::isfinite(b)) continue;
      CheckPair(a, b);
    }
  }
}

using Rational = boost::multiprecision::cpp_rational;

// a + p * q, exactly, against AddUpStep2(a, RN(p * q)) and AddDownStep2.
void CheckStep2(double a, double p, double q) {
  const double w = p * q;
  INFO("a = " << a << ", p = " << p << ", q = " << q << ", w = " << w);
  const Rational exact = Rational(a) + Rational(p) * Rational(q);
  const double up = AddUpStep2(a, w), down = AddDownStep2(a, w);
  REQUIRE(Rational(down) <= exact);
  REQUIRE(exact <= Rational(up));
  const Rational step(0x1p-50);
  REQUIRE(Rational(up) < exact * (1 + step));
  REQUIRE(Rational(down) > exact * (1 - step));
  // And the one-event forms the tracker admits a key with.
  REQUIRE(Rational(NextDown(w)) <= Rational(p) * Rational(q));
  REQUIRE(Rational(p) * Rational(q) <= Rational(NextUp(w)));
}

TEST_CASE("AddUpStep2 and AddDownStep2 bound a + x for x known rounded to nearest") {
  SECTION("known sums") {
    // RN(0.1 * 3) is above the product, RN(2^53 + 1) below the sum: both steps are needed.
    CheckStep2(0x1p53, 1, 1);
    CheckStep2(0x1p53, 0.1, 3);
    CheckStep2(0, 0.1, 3);
    CheckStep2(1e16, 1, 1.5);
    CheckStep2(1, 1, 1);
    // Exact sums step too: never equal to the sum.
    CHECK(AddUpStep2(2, 1) > 3);
    CHECK(AddDownStep2(2, 1) < 3);
  }
  SECTION("random sums of a product, as the tracker's per-event path makes them") {
    // a is a stored sum, p a weight in [2^-900, 1e15], q a decay factor in [1, 2^40].
    std::mt19937_64 rng(20261204);
    std::uniform_real_distribution<double> mantissa(1, 2);
    std::uniform_int_distribution<int> weight_exp(-900, 49), factor_exp(0, 39), gap(-60, 60);
    for (int i = 0; i < 20000; ++i) {
      const double p = std::ldexp(mantissa(rng), weight_exp(rng));
      const double q = std::ldexp(mantissa(rng), factor_exp(rng));
      // Sums near the product (where both roundings matter most) and far above or below it.
      const double a = i % 5 == 0 ? 0 : std::ldexp(mantissa(rng), std::ilogb(p * q) + gap(rng));
      CheckStep2(a, p, q);
    }
  }
}

}  // namespace
}  // namespace hotkey::sketch::internal
