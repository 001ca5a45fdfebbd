// Tests for HeavyHitters' rounding (heavy_hitters.h, "Rounding"): every stored weight rounds
// toward its side of the truth, the per-event sums by two ulps unconditionally, so that
//   LowerBound(k) <= true(k) <= UpperBound(k)  and  true total <= Total()
// hold exactly, on streams whose sums are not doubles, and each bound is within
//   (1 + 2^-50)^n  of the truth for a value that n events added to (test_util.h's matchers).
// The truths are exact: rationals (Boost.Multiprecision) summing each event's weight times
// the tracker's own decay factor. The raw sums are counts, rounded to nearest: exact for
// integer weights. A saved count of roundings (from a build that counted them) is pinned in
// serialize_test.cc.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "boost/multiprecision/cpp_int.hpp"
#include "hotkey/sketch/heavy_hitters.h"
#include "test_util.h"

namespace hotkey::sketch {
namespace {

using Rational = boost::multiprecision::cpp_rational;
using testing::EntryCountAt;
using testing::KeyFor;
using testing::kRoundingsAt;
using testing::kTotalsAt;
using testing::LowerBoundOf;
using testing::Patch;
using testing::Rechecksum;
using testing::Reload;
using testing::UpperBoundOf;

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

HeavyHitters MustCreate(const HeavyHittersOptions& o) {
  absl::StatusOr<HeavyHitters> hh = HeavyHitters::Create(o, kT0);
  REQUIRE(hh.ok());
  return *std::move(hh);
}

HeavyHittersOptions Options(uint32_t candidates, absl::Duration half_life) {
  HeavyHittersOptions o;
  o.candidates = candidates;
  o.half_life = half_life;
  return o;
}

long double ToLong(const Rational& r) { return r.convert_to<long double>(); }

TEST_CASE("HeavyHitters: bounds hold on their side after many fractional decayed events",
          "[sketch][rounding][decay]") {
  // 200,000 events of fractional weights (some near kMaxWeight, so sums pass 2^53), decay
  // on (half-life 1 s), the clock moving every 100 events by 0.137 s: no factor is a power
  // of two, and 27 s stay below the rescale at 40 half-lives. Six keys in an eight-slot
  // table, each admitted at its first event; the truths in forward-decayed units are exact
  // sums of weight * factor, the factor computed as the tracker computes it.
  HeavyHitters hh = MustCreate(Options(8, absl::Seconds(1)));
  const double weights[] = {
      HeavyHitters::kMaxWeight, 999999999999999.9, 7e14 + 0.25, 1, 1.5, 0.1, 3, 1.0 / 3};
  std::mt19937_64 gen(2026);
  absl::flat_hash_map<std::string, Rational> forward;
  absl::flat_hash_map<std::string, uint64_t> events;
  Rational forward_total[kNumOps];
  uint64_t inexact = 0;
  double factor = 1;
  absl::Time t = kT0;
  auto check = [&] {
    INFO("at " << absl::FormatDuration(t - kT0) << ", factor " << factor);
    Rational total = 0;
    for (const auto& [key, f] : forward) {
      INFO(key << ", " << events[key] << " events");
      const Rational decayed = f / Rational(factor);
      REQUIRE(Rational(hh.LowerBound(key)) <= decayed);
      REQUIRE(decayed <= Rational(hh.UpperBound(key)));
      // Admitted from the sketch at its first event: less than two of its units on top.
      REQUIRE_THAT(hh.UpperBound(key), UpperBoundOf(ToLong(decayed), hh, events[key], 1));
      REQUIRE_THAT(hh.LowerBound(key), LowerBoundOf(ToLong(decayed), events[key]));
      total += decayed;
    }
    for (int o = 0; o < kNumOps; ++o) {
      REQUIRE(forward_total[o] / Rational(factor) <= Rational(hh.Total(static_cast<Op>(o))));
    }
    REQUIRE(total <= Rational(hh.Total()));
    REQUIRE_THAT(hh.Total(), UpperBoundOf(ToLong(total), hh, 200000));
  };
  for (int i = 0; i < 200000; ++i) {
    if (i % 100 == 0) {
      hh.Advance(t += absl::Milliseconds(137));
      factor = std::exp2(absl::ToDoubleSeconds(t - kT0) / 1.0);
    }
    const std::string key = KeyFor(gen() % 6);
    const double weight = weights[gen() % std::size(weights)];
    const Op op = gen() % 3 ? Op::kRead : Op::kWrite;
    hh.Update(key, op, weight);
    const Rational w = Rational(weight) * Rational(factor);
    inexact += Rational(weight * factor) != w;
    forward[key] += w;
    forward_total[static_cast<int>(op)] += w;
    ++events[key];
    if (i % 20000 == 19999) check();
  }
  REQUIRE(hh.size() == 6);
  // The products did round (most of them), and the decayed weights passed 2^53.
  CHECK(inexact > 100000);
  CHECK(hh.LowerBound(KeyFor(0)) > 0x1p53);
}

TEST_CASE("HeavyHitters: a sum that rounding to nearest would stall still bounds the truth",
          "[sketch][rounding]") {
  // Above 2^53 a double's ulp is 2 or more: 2e16 + 1 is 2e16 in a double, so a sum rounded
  // to nearest would lose every unit event below. The steps keep them, on the right side.
  REQUIRE(2e16 + 1.0 == 2e16);
  HeavyHitters hh = MustCreate(Options(1, absl::InfiniteDuration()));
  for (int i = 0; i < 20; ++i) hh.Update("big", Op::kRead, HeavyHitters::kMaxWeight);
  for (int i = 0; i < 1000; ++i) hh.Update("big", Op::kRead, 1);
  const double big = 2e16 + 1000;  // the truth, a double itself
  CHECK_THAT(hh.UpperBound("big"), UpperBoundOf(big, hh, 1020, 1));
  CHECK_THAT(hh.LowerBound("big"), LowerBoundOf(big, 1020));
  CHECK_THAT(hh.Total(), UpperBoundOf(big, hh, 1020));
  // The raw sum is a count rounded to nearest: it stalls (the truth is not a double below
  // 2^53 here), where the decayed ones do not.
  CHECK(hh.RawTotal(Op::kRead) == 2e16);
}

TEST_CASE("HeavyHitters: integer weights count exactly in the raw sums", "[sketch][rounding]") {
  HeavyHitters hh = MustCreate(Options(4, absl::Seconds(1)));
  absl::flat_hash_map<std::string, double> raw;
  double total[kNumOps] = {0, 0};
  std::mt19937_64 gen(7);
  absl::Time t = kT0;
  for (int i = 0; i < 50000; ++i) {
    if (i % 500 == 0) hh.Advance(t += absl::Milliseconds(90));
    const std::string key = KeyFor(gen() % 3);
    const Op op = i % 4 ? Op::kRead : Op::kWrite;
    const double weight = static_cast<double>(1 + gen() % 1000);
    hh.Update(key, op, weight);
    total[static_cast<int>(op)] += weight;
  }
  CHECK(hh.RawTotal(Op::kRead) == total[0]);
  CHECK(hh.RawTotal(Op::kWrite) == total[1]);
  double reported = 0;
  hh.ForEach([&](const HeavyHitter& h) {
    // Whole numbers, summed exactly (each key admitted at its first event).
    CHECK(h.raw_weight[0] == std::floor(h.raw_weight[0]));
    CHECK(h.raw_weight[1] == std::floor(h.raw_weight[1]));
    reported += h.raw_weight[0] + h.raw_weight[1];
  });
  CHECK(reported == total[0] + total[1]);
}

TEST_CASE("HeavyHitters: a state saved with stalled sums and its count loads as bounds",
          "[sketch][rounding][serialize]") {
  // A build that rounded to nearest and counted its roundings would have saved "big"'s
  // 20 events of 1e15 and 1000 of 1 as 2e16 (the unit events stalled), with a count of
  // 2 * 1020 roundings. This build widens such values once when it loads them, by
  // keep = 1 - 2040 * 2^-53 (a relative 2.3e-13, 4500 at 2e16): every bound then holds.
  HeavyHitters hh = MustCreate(Options(1, absl::InfiniteDuration()));
  for (int i = 0; i < 20; ++i) hh.Update("big", Op::kRead, HeavyHitters::kMaxWeight);
  for (int i = 0; i < 1000; ++i) hh.Update("big", Op::kRead, 1);
  const double big = 2e16 + 1000;
  std::string saved = hh.Serialize();
  Patch<double>(&saved, kTotalsAt, 2e16);  // total[read]
  const size_t entry = EntryCountAt(saved) + 4;
  Patch<double>(&saved, entry + 8, 2e16);   // upper
  Patch<double>(&saved, entry + 16, 2e16);  // weight[read]
  auto load = [&](uint64_t roundings) {
    std::string b = saved;
    Patch<uint64_t>(&b, kRoundingsAt, roundings);
    Rechecksum(&b);
    absl::StatusOr<HeavyHitters> back = Reload(b);
    REQUIRE(back.ok());
    return *std::move(back);
  };
  const HeavyHitters counted = load(2 * 1020);
  CHECK(counted.Total() >= big);
  CHECK(counted.Total(Op::kRead) >= big);
  CHECK(counted.UpperBound("big") >= big);
  CHECK(counted.LowerBound("big") <= big);
  CHECK(counted.Total() <= big * (1 + 0x1p-40));
  // Without the count, the stalled values are below the truth: the widening is what makes
  // them bounds.
  const HeavyHitters uncounted = load(0);
  CHECK(uncounted.Total() < big);
  CHECK(uncounted.UpperBound("big") < big);
}

}  // namespace
}  // namespace hotkey::sketch
