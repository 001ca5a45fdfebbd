// Tests that the bounds of count_min.h and heavy_hitters.h hold exactly where rounding to
// nearest breaks them: cells holding more than 2^24 (a float's mantissa) or 2^53 (a
// double's) times the weight added to them, small weights after large ones, admission of
// a rising key once cells are that large, decay with a day-long half-life, and a
// randomized stream of mixed weights with decay, rescales and a merge checked against an
// exact (integer) truth:
//   CountMin:      Estimate(k) >= true(k)
//   HeavyHitters:  LowerBound(k) <= true(k) <= UpperBound(k),  true total <= Total().

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "hotkey/sketch/count_min.h"
#include "hotkey/sketch/hash.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "test_util.h"

namespace hotkey::sketch {
using testing::Reload;
namespace {

using testing::KeyFor;

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);
constexpr double k2p24 = 16777216.0;

CountMinSketch MustCms(uint32_t width, uint32_t depth) {
  absl::StatusOr<CountMinSketch> cms = CountMinSketch::Create(width, depth);
  REQUIRE(cms.ok());
  return *std::move(cms);
}

HeavyHitters MustCreate(uint32_t candidates, absl::Duration half_life,
                        size_t sketch_bytes = 32 * 1024, uint32_t depth = 4) {
  HeavyHittersOptions o;
  o.candidates = candidates;
  o.half_life = half_life;
  o.sketch_bytes = sketch_bytes;
  o.sketch_depth = depth;
  absl::StatusOr<HeavyHitters> hh = HeavyHitters::Create(o, kT0);
  REQUIRE(hh.ok());
  return *std::move(hh);
}

bool InTop(const HeavyHitters& hh, const std::string& key, size_t n) {
  for (const HeavyHitter& h : hh.TopK(n)) {
    if (h.key == key) return true;
  }
  return false;
}

// ------------------------------------------------------------------------------ count-min

TEST_CASE("CountMin: 2^25 unit updates to one key are all counted", "[sketch][saturation]") {
  // A float counter stops at 2^24 (2^24 + 1 rounds back to 2^24): half the truth.
  CountMinSketch cms = MustCms(1024, 4);
  const uint64_t h = HashKey("one", kDefaultSeed);
  constexpr uint32_t kUpdates = 1u << 25;
  for (uint32_t i = 0; i < kUpdates; ++i) cms.Update(h, 1.0);
  CHECK(cms.Estimate(h) >= kUpdates);
  CHECK(cms.Estimate(h) == kUpdates);  // integers below 2^53 add exactly
}

TEST_CASE("CountMin: unit updates after 20 updates of 1e6 are all counted",
          "[sketch][saturation]") {
  CountMinSketch cms = MustCms(1024, 4);
  const uint64_t h = HashKey("mixed", kDefaultSeed);
  for (int i = 0; i < 20; ++i) cms.Update(h, 1e6);
  for (int i = 0; i < 1000000; ++i) cms.Update(h, 1.0);
  CHECK(cms.Estimate(h) >= 2.1e7);
}

TEST_CASE("CountMin: small updates after ones of 1e15 are never lost", "[sketch][saturation]") {
  // 2e16 is past 2^53: a double rounded to nearest drops every +1 (its ulp there is 4).
  CountMinSketch cms = MustCms(64, 2);
  const uint64_t h = HashKey("huge", kDefaultSeed);
  for (int i = 0; i < 20; ++i) cms.Update(h, 1e15);
  for (int i = 0; i < 1000; ++i) cms.Update(h, 1.0);
  CHECK(cms.Estimate(h) >= 2e16 + 1000);
  // Rounding up to whole units costs less than one unit (scale(), here 2^23: 2e16 in at most
  // 2^31 units) per update and per division of the cells to make room.
  CHECK(cms.scale() == 0x1p23);
  CHECK(cms.Estimate(h) < 2e16 + 1000 + (1020 + cms.halvings()) * cms.scale());
}

TEST_CASE("CountMin: Scale and Merge round up", "[sketch][saturation]") {
  CountMinSketch a = MustCms(16, 2);
  CountMinSketch b = MustCms(16, 2);
  const uint64_t h = HashKey("k", kDefaultSeed);
  a.Update(h, 1e16);
  b.Update(h, 3.0);
  // 0.1 * 3 and 1e16 + 0.3 are both inexact; rounded to nearest the sum stays 1e16.
  REQUIRE(a.Merge(b, 0.1).ok());
  CHECK(a.Estimate(h) > 1e16);
  CountMinSketch c = MustCms(16, 2);
  c.Update(h, 3.0);
  c.Scale(0.7);                          // 3 * 0.7 rounds to nearest below the real product
  const long double real = 3.0L * 0.7L;  // exact: 55 bits fit a long double's 64
  CHECK(static_cast<long double>(c.Estimate(h)) >= real);
  CHECK(static_cast<long double>(c.Estimate(h)) < real + c.scale());  // less than a unit above
}

// --------------------------------------------------------------------------- heavy hitters

TEST_CASE("HeavyHitters: unit events after 20 of 1e6 are all counted, in the table and out",
          "[sketch][saturation]") {
  // Candidates 1: "in" holds the slot (a heavier key), so "out" lives in the sketch.
  HeavyHitters hh = MustCreate(1, absl::InfiniteDuration());
  hh.Update("in", Op::kRead, 1e9);
  for (int i = 0; i < 20; ++i) hh.Update("out", Op::kRead, 1e6);
  for (int i = 0; i < 1000000; ++i) hh.Update("out", Op::kRead);
  REQUIRE(InTop(hh, "in", 1));
  CHECK(hh.Estimate("out") >= 2.1e7);
  for (int i = 0; i < 1000000; ++i) hh.Update("in", Op::kRead);
  CHECK(hh.Estimate("in") >= 1e9 + 1e6);
  CHECK(hh.LowerBound("in") <= 1e9 + 1e6);
  CHECK(hh.Total() >= 1e9 + 2.1e7 + 1e6);
}

TEST_CASE("HeavyHitters: events at the largest weight do not swallow later small ones",
          "[sketch][saturation]") {
  // kMaxWeight (1e15) is the daemon's weight 1e6 at sampling rate 1e-9. After 20 of them a
  // value is 2e16, past 2^53: rounded to nearest, +1 is lost and +3 becomes +4, so upper
  // bounds fell below the truth and lower bounds rose above it.
  HeavyHitters hh = MustCreate(2, absl::InfiniteDuration());
  for (int i = 0; i < 20; ++i) {
    hh.Update("ones", Op::kRead, HeavyHitters::kMaxWeight);
    hh.Update("threes", Op::kWrite, HeavyHitters::kMaxWeight);
  }
  for (int i = 0; i < 100000; ++i) {
    hh.Update("ones", Op::kRead, 1);
    hh.Update("threes", Op::kWrite, 3);
  }
  const double ones = 2e16 + 1e5, threes = 2e16 + 3e5;  // both exact doubles
  CHECK(hh.UpperBound("ones") >= ones);
  CHECK(hh.LowerBound("ones") <= ones);
  CHECK(hh.UpperBound("threes") >= threes);
  CHECK(hh.LowerBound("threes") <= threes);
  CHECK(hh.Total() >= ones + threes);
  CHECK(hh.Total(Op::kRead) >= ones);
  for (const HeavyHitter& h : hh.TopK(2)) {
    const double truth = h.key == "ones" ? ones : threes;
    CHECK(h.estimate >= truth);
    CHECK(h.lower_bound <= truth);
  }
}

TEST_CASE("HeavyHitters: a rising key is admitted once the sketch's cells pass 2^24",
          "[sketch][saturation]") {
  HeavyHitters hh = MustCreate(1, absl::InfiniteDuration());
  hh.Update("incumbent", Op::kRead, k2p24 + 1000);
  // The riser starts just below the incumbent, then overtakes it one unit at a time.
  hh.Update("riser", Op::kRead, k2p24);
  REQUIRE(InTop(hh, "incumbent", 1));
  for (int i = 0; i < 2000; ++i) hh.Update("riser", Op::kRead);
  CHECK(InTop(hh, "riser", 1));
  CHECK(hh.Estimate("riser") >= k2p24 + 2000);
  CHECK(hh.Estimate("incumbent") >= k2p24 + 1000);  // evicted, written back to the sketch
}

TEST_CASE("HeavyHitters: admission compares estimates without rounding them down",
          "[sketch][saturation]") {
  // 2^24 + 1 rounds to the float 2^24, below the incumbent's 2^24 + 0.5.
  HeavyHitters hh = MustCreate(1, absl::InfiniteDuration());
  hh.Update("incumbent", Op::kRead, k2p24 + 0.5);
  hh.Update("heavier", Op::kRead, k2p24 + 1);
  CHECK(InTop(hh, "heavier", 1));
  CHECK(hh.Estimate("heavier") >= k2p24 + 1);
  CHECK(hh.Estimate("incumbent") >= k2p24 + 0.5);
}

TEST_CASE("HeavyHitters: bounds hold with a 24 h half-life over 45 days",
          "[sketch][saturation][decay]") {
  // Every hour: the incumbent 1e9, "tail" one event of 1e6 and ten of 1; both keys also in
  // a second tracker that holds them in its table. Forward-decayed values grow by 2^40
  // before the rescale at day 40, and "tail"'s cells hold ~35 hours of its weight: ~3.5e7
  // times a unit event, past a float's 2^24. The truth is summed in long double from the
  // real powers of two; the slack 1e-12 covers only the difference between those and the
  // tracker's exp2() factors (a few ulps), not saturation, which loses ~1e-5 here.
  const absl::Duration h = absl::Hours(24);
  HeavyHitters out = MustCreate(1, h);  // "tail" outside the table
  HeavyHitters in = MustCreate(4, h);   // "tail" inside it
  struct Event {
    double hours;
    double weight;
  };
  std::vector<Event> tail;
  constexpr int kHours = 45 * 24;
  for (int hour = 0; hour <= kHours; ++hour) {
    const absl::Time t = kT0 + absl::Hours(hour);
    out.Advance(t);
    in.Advance(t);
    for (HeavyHitters* hh : {&out, &in}) {
      hh->Update("incumbent", Op::kRead, 1e9);
      hh->Update("tail", Op::kWrite, 1e6);
      for (int i = 0; i < 10; ++i) hh->Update("tail", Op::kRead, 1);
    }
    tail.push_back({static_cast<double>(hour), 1e6});
    for (int i = 0; i < 10; ++i) tail.push_back({static_cast<double>(hour), 1});
  }
  long double truth = 0, incumbent = 0;
  for (const Event& e : tail) truth += e.weight * std::exp2l((e.hours - kHours) / 24.0L);
  for (int hour = 0; hour <= kHours; ++hour)
    incumbent += 1e9L * std::exp2l((hour - kHours) / 24.0L);
  const double lo = static_cast<double>(truth) * (1 - 1e-12);
  const double hi = static_cast<double>(truth) * (1 + 1e-12);
  REQUIRE(InTop(out, "incumbent", 1));
  REQUIRE(InTop(in, "tail", 4));
  CHECK(out.Estimate("tail") >= lo);
  CHECK(in.Estimate("tail") >= lo);
  CHECK(in.LowerBound("tail") <= hi);
  CHECK(out.Total() >= static_cast<double>(truth + incumbent) * (1 - 1e-12));
  // And the bounds stay useful: the count-min error is far below the truth here.
  CHECK(out.Estimate("tail") <= static_cast<double>(truth) * (1 + 1e-6) + out.ErrorBound());
}

// An exact truth for streams whose decay factors are exact powers of two (events at whole
// half-lives, integer weights): the weight of key k times 2^hour, as a 128-bit integer.
using Exact = absl::flat_hash_map<std::string, unsigned __int128>;

// Checks LowerBound <= truth <= UpperBound for every key and the total, exactly: the
// tracker's figures times 2^now_hours are exact doubles, compared as integers.
void CheckExact(const HeavyHitters& hh, const Exact& exact, int now_hours) {
  const double scale = std::ldexp(1.0, now_hours);
  unsigned __int128 total = 0;
  size_t checked = 0;
  for (const auto& [key, truth] : exact) {
    total += truth;
    const double up = hh.UpperBound(key) * scale;  // exact: a power-of-two scaling
    const double low = hh.LowerBound(key) * scale;
    INFO("key " << key << " truth " << static_cast<double>(truth) << " upper " << up << " lower "
                << low);
    // truth is an integer: up >= truth iff floor(up) >= truth; low <= truth iff ceil(low) <=.
    REQUIRE(static_cast<unsigned __int128>(up) >= truth);
    REQUIRE(static_cast<unsigned __int128>(std::ceil(low)) <= truth);
    ++checked;
  }
  REQUIRE(checked == exact.size());
  CHECK(static_cast<unsigned __int128>(hh.Total() * scale) >= total);
}

TEST_CASE("HeavyHitters: randomized mixed weights with decay never cross the exact truth",
          "[sketch][saturation][decay]") {
  // 300 keys through 16 slots and a 1 KiB sketch (constant eviction and collision), weights
  // mixing 1..10 with up to 1e6, at whole hours with a 1 h half-life for 60 hours: a rescale
  // at hour 41, forward-decayed values up to ~2^40 * 1e6. Half the events also go to one of
  // two trackers that are merged at the end. At every depth the options allow: depths 2 to 4
  // take their own unrolled update, the others a loop (count_min_inline.h).
  const uint32_t depth = GENERATE(range(1u, CountMinSketch::kMaxDepth + 1));
  INFO("depth " << depth);
  std::mt19937_64 gen(20240610);
  std::uniform_int_distribution<int> key(0, 299);
  std::uniform_int_distribution<int> small(1, 10);
  std::uniform_real_distribution<double> log_weight(0, std::log(1e6));
  std::bernoulli_distribution heavy(0.3);
  const absl::Duration h = absl::Hours(1);
  HeavyHitters all = MustCreate(16, h, 1024, depth);
  HeavyHitters part[2] = {MustCreate(16, h, 1024, depth), MustCreate(16, h, 1024, depth)};
  Exact exact;
  constexpr int kHours = 60;
  for (int hour = 0; hour <= kHours; ++hour) {
    const absl::Time t = kT0 + absl::Hours(hour);
    all.Advance(t);
    for (HeavyHitters& p : part) p.Advance(t);
    for (int i = 0; i < 2000; ++i) {
      const std::string k = KeyFor(key(gen));
      const uint64_t w = heavy(gen) ? static_cast<uint64_t>(std::exp(log_weight(gen)))
                                    : static_cast<uint64_t>(small(gen));
      const Op op = i % 3 ? Op::kRead : Op::kWrite;
      all.Update(k, op, static_cast<double>(w));
      part[i % 2].Update(k, op, static_cast<double>(w));
      exact[k] += static_cast<unsigned __int128>(w) << hour;
    }
  }
  CheckExact(all, exact, kHours);
  REQUIRE(part[0].Merge(part[1]).ok());
  CheckExact(part[0], exact, kHours);
  // A serialised and restored tracker keeps them too.
  absl::StatusOr<HeavyHitters> back = Reload(all.Serialize());
  REQUIRE(back.ok());
  CheckExact(*back, exact, kHours);
}

}  // namespace
}  // namespace hotkey::sketch
