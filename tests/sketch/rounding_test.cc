// Tests rounding.h's sums against an independent exact error: TwoSum (Knuth, TAOCP vol. 2
// 4.2.2), which needs no ordering of its operands, on pairs across the whole range of
// doubles (subnormals, equal and far-apart exponents, overflow):
//   AddDown(a, b) <= a + b <= AddUp(a, b), each one ulp from RN(a + b) at most, and equal
//   to it exactly when a + b is a double.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

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

}  // namespace
}  // namespace hotkey::sketch::internal
