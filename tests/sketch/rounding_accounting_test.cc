// Tests for HeavyHitters' accounting of its roundings (heavy_hitters.h): every sum is kept
// rounded to nearest, two roundings are counted per event (R = roundings()), and what is
// read is widened by them (keep = 1 - R * 2^-53), so that
//   LowerBound(k) <= true(k) <= UpperBound(k)  and  true total <= Total()
// hold for any stream, even one whose stored sums stall; the count is settled into the
// stored values every 2^31 events without moving a bound across the truth; Merge() counts
// the larger of its two counts; Serialize() keeps it (serialize_test.cc); settles compound,
// a relative 2^-21 each.
// The truths here are exact: integer weights, no decay, sums of doubles that are doubles
// (or, above 2^53, that are not, on purpose); with decay, sums of products of a weight and
// the tracker's own factor, added in long double (its error, 2^-64 relative an operation,
// is far inside the widening of the two roundings counted per event).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "test_util.h"

namespace hotkey::sketch {
using testing::Reload;
namespace {

using testing::KeyFor;
using testing::kRoundingsAt;
using testing::kTotalsAt;
using testing::LowerBoundOf;
using testing::Patch;
using testing::Peek;
using testing::Rechecksum;
using testing::StoredSums;
using testing::UpperBoundOf;

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

HeavyHitters MustCreate(const HeavyHittersOptions& o) {
  absl::StatusOr<HeavyHitters> hh = HeavyHitters::Create(o, kT0);
  REQUIRE(hh.ok());
  return *std::move(hh);
}

HeavyHittersOptions NoDecay(uint32_t candidates) {
  HeavyHittersOptions o;
  o.candidates = candidates;
  o.half_life = absl::InfiniteDuration();
  return o;
}

// `hh` saved and restored with its count of roundings set to `roundings`. At
// kMaxRoundings the next event settles it, as a tracker does every 2^31 events (too many
// to run here); counting more roundings than were made is safe. Below the true count the
// tracker is wrong on purpose, to show what the count is for.
HeavyHitters WithRoundings(const HeavyHitters& hh, uint64_t roundings) {
  std::string bytes = hh.Serialize();
  Patch<uint64_t>(&bytes, kRoundingsAt, roundings);
  Rechecksum(&bytes);
  absl::StatusOr<HeavyHitters> back = Reload(bytes);
  REQUIRE(back.ok());
  REQUIRE(back->roundings() == roundings);
  return *std::move(back);
}

// A settle, and a read at the most a tracker counts (2^32 roundings), each widen a value by
// keep = 1 - 2^-21 (exactly, at R = 2^32): a value through `settles` settles and read at any
// count is within (1 - 2^-21)^-(settles + 1) of what it stored before them, for an upper
// value, and (1 - 2^-21)^(settles + 1) for a lower one. That is a relative
// (settles + 1) * 2^-21 plus second-order terms (at 4 widenings, 10 * 2^-42 = 2^-38.7) and
// the directed roundings (an ulp, 2^-52, per settle, three per read): 2^-16 of the
// first-order term (2^-37 a widening) covers both. Half the reviewer's (settles + 1) * 2^-20,
// which a read just before the next settle would never approach.
long double SettledSlack(int settles) { return (settles + 1) * 0x1p-21L * (1 + 0x1p-16L); }

// Whether `bound` is on its side of `truth` (an exact stored value before any settle) and
// within SettledSlack(settles) of it.
bool WithinSettled(bool upper, double bound, long double truth, int settles) {
  const long double b = bound, slack = SettledSlack(settles);
  return upper ? truth <= b && b <= truth * (1 + slack) : b <= truth && b >= truth * (1 - slack);
}

TEST_CASE("HeavyHitters: a sum that rounding to nearest would stall still bounds the truth",
          "[sketch][rounding]") {
  // Above 2^53 a double's ulp is 2 or more: 1e16 + 1 rounds to 1e16 (a tie, to even), and
  // 2e16 + 1 to 2e16. Every unit event below is lost from the stored sums, yet the bounds
  // must cover it.
  constexpr double kBig = HeavyHitters::kMaxWeight;  // 1e15, the largest weight counted
  REQUIRE(1e16 + 1.0 == 1e16);
  REQUIRE(2e16 + 1.0 == 2e16);
  HeavyHitters hh = MustCreate(NoDecay(1));
  // "big" takes the one table slot; "cm" stays in the sketch, its estimate (at most 1e16)
  // never passing big's bound (2e16).
  for (int i = 0; i < 20; ++i) hh.Update("big", Op::kRead, kBig);
  for (int i = 0; i < 1000; ++i) hh.Update("big", Op::kRead, 1);
  for (int i = 0; i < 10; ++i) hh.Update("cm", Op::kWrite, kBig);
  for (int i = 0; i < 1000; ++i) hh.Update("cm", Op::kWrite, 1);
  const double big = 2e16 + 1000, cm = 1e16 + 1000;  // the truths, doubles themselves
  REQUIRE(big - 2e16 == 1000);
  REQUIRE(cm - 1e16 == 1000);
  REQUIRE(hh.size() == 1);
  REQUIRE(hh.LowerBound("big") > 0);  // in the table
  REQUIRE(hh.LowerBound("cm") == 0);  // not in it: the sketch bounds it
  REQUIRE(hh.roundings() == 2 * (20 + 1000 + 10 + 1000));

  // The stored totals did stall: they hold none of the 2000 unit events.
  const std::string bytes = hh.Serialize();
  CHECK(Peek<double>(bytes, kTotalsAt) == 2e16);      // total[read]
  CHECK(Peek<double>(bytes, kTotalsAt + 8) == 1e16);  // total[write]

  // Yet every bound holds. The stored sums drifted by up to R roundings and the read widens
  // them by as much again, hence StoredSums::kRounded (a relative 2 * R * 2^-53 at most).
  CHECK_THAT(hh.UpperBound("big"), UpperBoundOf(big, hh, StoredSums::kRounded));
  CHECK_THAT(hh.LowerBound("big"), LowerBoundOf(big, hh, StoredSums::kRounded));
  CHECK_THAT(hh.UpperBound("cm"), UpperBoundOf(cm, hh, StoredSums::kRounded));
  CHECK_THAT(hh.Total(Op::kRead), UpperBoundOf(big, hh, StoredSums::kRounded));
  CHECK_THAT(hh.Total(Op::kWrite), UpperBoundOf(cm, hh, StoredSums::kRounded));
  CHECK_THAT(hh.Total(), UpperBoundOf(big + cm, hh, StoredSums::kRounded));
  const std::vector<HeavyHitter> top = hh.TopK(1);
  REQUIRE(top.size() == 1);
  CHECK_THAT(top[0].estimate, UpperBoundOf(big, hh, StoredSums::kRounded));
  CHECK_THAT(top[0].weight[static_cast<int>(Op::kRead)],
             LowerBoundOf(big, hh, StoredSums::kRounded));
  // The drift is real: the lower bound is further below the truth than one widening
  // (R * 2^-53) reaches, which is why the read's widening alone is not the error bound.
  CHECK_FALSE(LowerBoundOf(big, hh).match(hh.LowerBound("big")));

  // And the widening is what saves the bounds: the same state read with no roundings counted
  // (as a tracker that rounded outward would be) reports less than the truth.
  std::string uncounted = bytes;
  Patch<uint64_t>(&uncounted, kRoundingsAt, 0);
  Rechecksum(&uncounted);
  absl::StatusOr<HeavyHitters> wrong = Reload(uncounted);
  REQUIRE(wrong.ok());
  CHECK(wrong->UpperBound("big") < big);
  CHECK(wrong->UpperBound("cm") < cm);
  CHECK(wrong->Total() < big + cm);
}

TEST_CASE("HeavyHitters: a sum that rounding to nearest lifts stays within twice the widening",
          "[sketch][rounding]") {
  // The other way: at 1e16 (ulp 2), 1e16 + 1.5 rounds to 1e16 + 2, so each event of weight
  // 1.5 lifts the stored sum 0.5 above the truth. The read widens the lifted sum again.
  REQUIRE(1e16 + 1.5 == 1e16 + 2);
  HeavyHitters hh = MustCreate(NoDecay(1));
  for (int i = 0; i < 10; ++i) hh.Update("k", Op::kRead, HeavyHitters::kMaxWeight);
  for (int i = 0; i < 1000; ++i) hh.Update("k", Op::kRead, 1.5);
  const double truth = 1e16 + 1500;
  REQUIRE(truth - 1e16 == 1500);
  CHECK(Peek<double>(hh.Serialize(), 66) == 1e16 + 2000);  // the stored total, lifted
  CHECK_THAT(hh.UpperBound("k"), UpperBoundOf(truth, hh, StoredSums::kRounded));
  CHECK_THAT(hh.Total(), UpperBoundOf(truth, hh, StoredSums::kRounded));
  CHECK_THAT(hh.LowerBound("k"), LowerBoundOf(truth, hh, StoredSums::kRounded));
  // Further above the truth than one widening (R * 2^-53) reaches.
  CHECK_FALSE(UpperBoundOf(truth, hh).match(hh.UpperBound("k")));
  CHECK_FALSE(UpperBoundOf(truth, hh).match(hh.Total()));
}

TEST_CASE("HeavyHitters: two roundings are counted per event", "[sketch][rounding]") {
  // Every path an event takes (table hit, sketch miss, admission, eviction),
  // with decay (a factor that is not 1) and clock moves, which count none.
  HeavyHittersOptions o = NoDecay(8);
  o.sketch_bytes = 1024;
  o.half_life = absl::Seconds(1);
  HeavyHitters hh = MustCreate(o);
  CHECK(hh.roundings() == 0);
  std::mt19937_64 gen(2026);
  ZipfDistribution zipf(500, 1.0);
  uint64_t events = 0;
  absl::Time t = kT0;
  for (int i = 0; i < 20000; ++i) {
    if (i % 100 == 0) {
      hh.Advance(t += absl::Milliseconds(37));
      REQUIRE(hh.roundings() == 2 * events);
    }
    hh.Update(KeyFor(zipf(gen)), i % 3 ? Op::kRead : Op::kWrite, 1 + i % 4);
    ++events;
    REQUIRE(hh.roundings() == 2 * events);
  }
  // The extremes of the weights counted: kMinWeight itself, and a weight capped to kMaxWeight.
  hh.Update("tiny", Op::kRead, HeavyHitters::kMinWeight);
  hh.UpdateHashed(HashKey("huge", o.seed), "huge", Op::kWrite, 1e300);
  events += 2;
  CHECK(hh.roundings() == 2 * events);
  // A rescale (the clock 50 half-lives on) rounds outward: it counts none.
  hh.Advance(t += absl::Seconds(50));
  CHECK(hh.roundings() == 2 * events);

  // Ignored events count none and change nothing: the saved state is the same bytes, for a
  // key outside the tracker and one in its table.
  REQUIRE(hh.LowerBound(KeyFor(1)) > 0);
  const std::string before = hh.Serialize();
  const double kInf = std::numeric_limits<double>::infinity();
  for (double w :
       {0.0, -0.0, -1.0, -kInf, std::nan(""), 0x1p-901,
        std::nextafter(HeavyHitters::kMinWeight, 0.0), std::numeric_limits<double>::denorm_min()}) {
    INFO("weight " << w);
    hh.Update("ignored", Op::kRead, w);
    hh.Update(KeyFor(1), Op::kWrite, w);
    CHECK(hh.roundings() == 2 * events);
    CHECK(hh.Serialize() == before);
  }
}

TEST_CASE("HeavyHitters: settling the rounding count keeps every bound", "[sketch][rounding]") {
  // A tracker settles its count every 2^31 events, too many to run here. A saved tracker is
  // given a count one event short of that instead (counting more roundings than were made
  // is safe), and a few events take it through the settling.
  HeavyHitters fed = MustCreate(NoDecay(8));
  absl::flat_hash_map<std::string, double> truth;
  double total = 0;
  auto feed = [&](HeavyHitters& hh, int key, double weight) {
    hh.Update(KeyFor(key), Op::kRead, weight);
    truth[KeyFor(key)] += weight;
    total += weight;
  };
  // Keys 0..7 fill the table at their first events, 100 - i events of weight 3 each; keys
  // 8..59, 30 to 36 events of weight 1 to 3 each, interleaved, share the sketch. Keys 60..79
  // are never fed.
  for (int i = 0; i < 8; ++i) {
    for (int n = 0; n < 100 - i; ++n) feed(fed, i, 3);
  }
  for (int r = 0; r < 36; ++r) {
    for (int i = 8; i < 60; ++i) {
      if (r < 30 + i % 7) feed(fed, i, 1 + i % 3);
    }
  }
  std::string bytes = fed.Serialize();
  Patch<uint64_t>(&bytes, kRoundingsAt, HeavyHitters::kMaxRoundings - 2);
  Rechecksum(&bytes);
  absl::StatusOr<HeavyHitters> hh = Reload(bytes);
  REQUIRE(hh.ok());
  REQUIRE(hh->roundings() == HeavyHitters::kMaxRoundings - 2);
  const std::string hot = KeyFor(0);  // the heaviest key, in the table
  REQUIRE(hh->LowerBound(hot) > 0);

  // One event reaches the most a tracker counts, 2^32, without settling.
  feed(*hh, 0, 1);
  REQUIRE(hh->roundings() == HeavyHitters::kMaxRoundings);

  struct Seen {
    double upper, lower;
  };
  absl::flat_hash_map<std::string, Seen> before;
  size_t in_table = 0;
  for (int i = 0; i < 80; ++i) {
    const std::string k = KeyFor(i);
    const double exact = truth.contains(k) ? truth[k] : 0.0;
    INFO(k << " truth " << exact);
    const Seen s{hh->UpperBound(k), hh->LowerBound(k)};
    REQUIRE(s.upper >= exact);
    REQUIRE(s.lower <= exact);
    REQUIRE((s.lower > 0) == (i < 8));  // keys 0..7 hold the table
    if (i < 8) {
      // Admitted at their first events: bounded within the widening of 2^32 roundings, a
      // relative 2^-21 (and their stored sums are exact).
      REQUIRE_THAT(s.upper, UpperBoundOf(exact, *hh));
      REQUIRE_THAT(s.lower, LowerBoundOf(exact, *hh));
      REQUIRE(s.upper > exact);
    }
    in_table += s.lower > 0;
    before[k] = s;
  }
  REQUIRE(in_table == 8);
  const double total_before = hh->Total();
  REQUIRE_THAT(total_before, UpperBoundOf(total, *hh));

  // The next event settles, and counts anew; so do the two after it.
  for (int i = 0; i < 3; ++i) feed(*hh, 0, 1);
  CHECK(hh->roundings() == 2 * 3);

  // Settling applies the widening the reads already applied to the stored values, so a
  // bound moves by a few ulps (a relative 2^-48 here), not by another 2^-21, and only
  // outward: it never crosses the truth. Nothing moves between tiers.
  constexpr double kUlps = 0x1p-48;
  for (int i = 0; i < 80; ++i) {
    const std::string k = KeyFor(i);
    const double exact = truth.contains(k) ? truth[k] : 0.0;
    const Seen& s = before[k];
    const double upper = hh->UpperBound(k), lower = hh->LowerBound(k);
    INFO(k << " truth " << exact << " upper " << s.upper << " -> " << upper << " lower " << s.lower
           << " -> " << lower);
    REQUIRE(upper >= exact);
    REQUIRE(lower <= exact);
    REQUIRE((lower > 0) == (s.lower > 0));
    if (k != hot) {  // no events since `before`: the settling alone
      REQUIRE(upper >= s.upper);
      REQUIRE(lower <= s.lower);
    }
    const double added = k == hot ? 3 : 0;
    REQUIRE(upper <= (s.upper + added) * (1 + kUlps));
    REQUIRE(lower >= (s.lower + added) * (1 - kUlps));
  }
  CHECK(hh->Total() >= total);
  CHECK(hh->Total() >= total_before + 3);
  CHECK(hh->Total() <= (total_before + 3) * (1 + kUlps));
  // The settled tracker is a valid saved tracker, with its new count.
  absl::StatusOr<HeavyHitters> back = Reload(hh->Serialize());
  REQUIRE(back.ok());
  CHECK(back->roundings() == 2 * 3);
  CHECK(back->UpperBound(hot) == hh->UpperBound(hot));
}

TEST_CASE("HeavyHitters: a merge counts the larger of the two counts of roundings",
          "[sketch][rounding][merge]") {
  // Each merged value is a value of one side plus one of the other, summed rounding up (or
  // down, for lower values): its drift from the exact sum is at most the larger side's.
  const HeavyHittersOptions o = NoDecay(8);
  HeavyHitters a = MustCreate(o), b = MustCreate(o);
  absl::flat_hash_map<std::string, double> truth;
  // Keys 0..3 go to both, 4..5 to `a` only, 6..7 to `b` only: 8 keys, all in every table.
  auto feed = [&](HeavyHitters& hh, int key, int events) {
    for (int i = 0; i < events; ++i) hh.Update(KeyFor(key), Op::kRead, 1 + key % 3);
    truth[KeyFor(key)] += events * (1 + key % 3);
  };
  for (int k : {0, 1, 2, 3, 4, 5}) feed(a, k, 2);
  for (int k : {0, 1, 2, 3, 6, 7}) feed(b, k, 5);
  REQUIRE(a.roundings() == 2 * 12);
  REQUIRE(b.roundings() == 2 * 30);
  double total = 0;
  for (const auto& [k, w] : truth) total += w;

  HeavyHitters ab = a, ba = b, empty_b = MustCreate(o), a_empty = a;
  REQUIRE(ab.Merge(b).ok());
  REQUIRE(ba.Merge(a).ok());
  REQUIRE(empty_b.Merge(b).ok());
  REQUIRE(a_empty.Merge(MustCreate(o)).ok());
  CHECK(ab.roundings() == 2 * 30);
  CHECK(ba.roundings() == 2 * 30);
  CHECK(empty_b.roundings() == 2 * 30);
  CHECK(a_empty.roundings() == 2 * 12);
  for (const HeavyHitters* m : {&ab, &ba}) {
    REQUIRE(m->size() == 8);
    CHECK_THAT(m->Total(), UpperBoundOf(total, *m));
    for (const auto& [k, w] : truth) {
      INFO(k);
      CHECK_THAT(m->UpperBound(k), UpperBoundOf(w, *m));
      CHECK_THAT(m->LowerBound(k), LowerBoundOf(w, *m));
    }
  }
}

TEST_CASE(
    "HeavyHitters: settling twice or more widens stored weight by about 2^-21 per settle, never "
    "across the truth",
    "[sketch][rounding]") {
  // A settle widens every stored value once by its keep, whether or not an event touched it
  // since the last: a value that stays through k settles is widened k times. Keys 0..7 fill
  // the table at their first events, 20 reads and 20 writes of weight 1000 + i each, so their
  // stored sums are their exact truths; keys 8..19 stay in the sketch, 1 + i % 5 events of
  // weight 1 + i % 3 each; "tick" takes the event that settles each time, into the sketch.
  HeavyHitters hh = MustCreate(NoDecay(8));
  absl::flat_hash_map<std::string, long double> truth;
  long double total = 0;
  auto feed = [&](HeavyHitters& t, const std::string& key, Op op, double weight) {
    t.Update(key, op, weight);
    truth[key] += weight;
    total += weight;
  };
  for (int i = 0; i < 8; ++i) {
    for (int n = 0; n < 20; ++n) {
      feed(hh, KeyFor(i), Op::kRead, 1000 + i);
      feed(hh, KeyFor(i), Op::kWrite, 1000 + i);
    }
  }
  for (int i = 8; i < 20; ++i) {
    for (int n = 0; n < 1 + i % 5; ++n) feed(hh, KeyFor(i), Op::kRead, 1 + i % 3);
  }
  REQUIRE(hh.size() == 8);
  // The sketch keys' bounds before any settle: what the settles then compound (the stored
  // cells, exact integer sums, widened by 2 * 380 roundings).
  absl::flat_hash_map<std::string, double> sketch_upper;
  for (int i = 8; i < 20; ++i) {
    REQUIRE(hh.LowerBound(KeyFor(i)) == 0);
    sketch_upper[KeyFor(i)] = hh.UpperBound(KeyFor(i));
  }

  // Every bound after `settles` settles, read at the count `hh` holds. `widenings` is how
  // many times the table's values were widened by the full keep (the settles, and the read
  // when the count is 2^32): their upper bounds are at least that far above the truth, their
  // lower bounds that far below, which shows the settles compounding.
  auto check = [&](const HeavyHitters& t, int settles, int widenings) {
    const long double reached = widenings * 0x1p-21L * (1 - 0x1p-16L);
    for (int i = 0; i < 8; ++i) {
      const std::string k = KeyFor(i);
      const double upper = t.UpperBound(k), lower = t.LowerBound(k);
      INFO(k << " after " << settles << " settles, truth " << static_cast<double>(truth[k])
             << " upper " << upper << " lower " << lower);
      CHECK(WithinSettled(true, upper, truth[k], settles));
      CHECK(WithinSettled(false, lower, truth[k], settles));
      CHECK(upper >= truth[k] * (1 + reached));
      CHECK(lower <= truth[k] * (1 - reached));
    }
    for (int i = 8; i < 20; ++i) {
      const std::string k = KeyFor(i);
      const double upper = t.UpperBound(k);
      INFO(k << " after " << settles << " settles, truth " << static_cast<double>(truth[k])
             << " upper " << upper);
      CHECK(upper >= truth[k]);
      CHECK(WithinSettled(true, upper, sketch_upper[k], settles));
      CHECK(t.LowerBound(k) == 0);
    }
    CHECK(WithinSettled(true, t.Total(), total, settles));
    CHECK(t.Total() >= total * (1 + reached));
  };

  const std::string hot = KeyFor(7);
  double hot_upper[4] = {hh.UpperBound(hot), 0, 0, 0};
  for (int settles = 1; settles <= 3; ++settles) {
    INFO("settle " << settles);
    hh = WithRoundings(hh, HeavyHitters::kMaxRoundings);
    // The widest read after settles - 1 settles: at the full count, just before the next. It
    // reaches the slack's first-order term, so no smaller multiple of 2^-21 would hold.
    check(hh, settles - 1, settles);
    feed(hh, "tick", Op::kRead, 1);  // settles, then counts this event
    REQUIRE(hh.roundings() == 2);
    REQUIRE(hh.size() == 8);
    check(hh, settles, settles);
    hot_upper[settles] = hh.UpperBound(hot);
  }
  // Read at the same count (one event's), the bound grew with each settle: it compounds.
  CHECK(hot_upper[1] > hot_upper[0]);
  CHECK(hot_upper[2] > hot_upper[1]);
  CHECK(hot_upper[3] > hot_upper[2]);
  CHECK(hot_upper[3] > hot_upper[1]);
}

TEST_CASE(
    "HeavyHitters: a merge and a settle keep the bounds of sums that rounding to nearest moves",
    "[sketch][rounding][merge]") {
  // Both trackers hold a read sum that stalls ("s": each 1 after 1e16 is lost, 1e16 + 1 is
  // 1e16) and a write sum that lifts ("l": each 1.5 after 1e16 adds 2), `a` for 1000 events
  // and `b` for 10, so `a` counts 100 times the roundings. The merge adds their stored values
  // rounding outward, so the merged drift (1010 below the truth for "s", 505 above for "l")
  // is within the larger count's widening, not the smaller's.
  REQUIRE(1e16 + 1.0 == 1e16);
  REQUIRE(1e16 + 1.5 == 1e16 + 2);
  const HeavyHittersOptions o = NoDecay(4);
  auto make = [&](int small_events) {
    HeavyHitters hh = MustCreate(o);
    for (int i = 0; i < 10; ++i) hh.Update("s", Op::kRead, HeavyHitters::kMaxWeight);
    for (int i = 0; i < small_events; ++i) hh.Update("s", Op::kRead, 1);
    for (int i = 0; i < 10; ++i) hh.Update("l", Op::kWrite, HeavyHitters::kMaxWeight);
    for (int i = 0; i < small_events; ++i) hh.Update("l", Op::kWrite, 1.5);
    return hh;
  };
  const HeavyHitters a = make(1000), b = make(10);
  REQUIRE(a.roundings() == 2 * 2020);
  REQUIRE(b.roundings() == 2 * 40);
  // The merged truths, which are not doubles (the ulp at 2e16 is 4).
  const long double s = 2e16L + 1010, l = 2e16L + 1515;

  HeavyHitters ab = a;
  REQUIRE(ab.Merge(b).ok());
  REQUIRE(ab.size() == 2);
  CHECK(ab.roundings() == a.roundings());
  const std::string bytes = ab.Serialize();
  CHECK(Peek<double>(bytes, kTotalsAt) == 2e16);             // stalled: 1010 below
  CHECK(Peek<double>(bytes, kTotalsAt + 8) == 2e16 + 2020);  // lifted: 505 above
  CHECK_THAT(ab.UpperBound("s"), UpperBoundOf(s, ab, StoredSums::kRounded));
  CHECK_THAT(ab.LowerBound("s"), LowerBoundOf(s, ab, StoredSums::kRounded));
  CHECK_THAT(ab.UpperBound("l"), UpperBoundOf(l, ab, StoredSums::kRounded));
  CHECK_THAT(ab.LowerBound("l"), LowerBoundOf(l, ab, StoredSums::kRounded));
  CHECK_THAT(ab.Total(Op::kRead), UpperBoundOf(s, ab, StoredSums::kRounded));
  CHECK_THAT(ab.Total(Op::kWrite), UpperBoundOf(l, ab, StoredSums::kRounded));
  CHECK_THAT(ab.Total(), UpperBoundOf(s + l, ab, StoredSums::kRounded));

  // The larger count is what keeps them: the same merged state counting none, or only the
  // smaller side's (2 * 40, a widening of 178 at 2e16), puts "s" and the read total below
  // their truths and "l"'s lower bound above its.
  for (uint64_t r : {uint64_t{0}, b.roundings()}) {
    INFO("merged state read with " << r << " roundings counted");
    const HeavyHitters wrong = WithRoundings(ab, r);
    CHECK(wrong.UpperBound("s") < s);
    CHECK(wrong.Total(Op::kRead) < s);
    CHECK(wrong.LowerBound("l") > l);
  }

  // (b) After a settle, whether the merged tracker settles or a side settles before the merge
  // (the merge then counts the other side's roundings, 2 * 40): one event of "x" takes each
  // through it. The settle widens the drifted values by 2^-21 (some 9.5e9 at 2e16), far past
  // their drift, and within SettledSlack of the truth (the drift, 2^-44 relative, is inside its
  // margin).
  HeavyHitters merged_then_settled = WithRoundings(ab, HeavyHitters::kMaxRoundings);
  merged_then_settled.Update("x", Op::kRead, 1);
  CHECK(merged_then_settled.roundings() == 2);
  HeavyHitters settled_then_merged = WithRoundings(a, HeavyHitters::kMaxRoundings);
  settled_then_merged.Update("x", Op::kRead, 1);
  REQUIRE(settled_then_merged.Merge(b).ok());
  CHECK(settled_then_merged.roundings() == b.roundings());
  for (const HeavyHitters* hh : {&merged_then_settled, &settled_then_merged}) {
    INFO((hh == &merged_then_settled ? "merged, then settled" : "settled, then merged"));
    REQUIRE(hh->size() == 3);
    CHECK(WithinSettled(true, hh->UpperBound("s"), s, 1));
    CHECK(WithinSettled(false, hh->LowerBound("s"), s, 1));
    CHECK(WithinSettled(true, hh->UpperBound("l"), l, 1));
    CHECK(WithinSettled(false, hh->LowerBound("l"), l, 1));
    CHECK(WithinSettled(true, hh->UpperBound("x"), 1, 1));
    CHECK(WithinSettled(false, hh->LowerBound("x"), 1, 1));
    CHECK(WithinSettled(true, hh->Total(Op::kRead), s + 1, 1));
    CHECK(WithinSettled(true, hh->Total(Op::kWrite), l, 1));
    CHECK(WithinSettled(true, hh->Total(), s + l + 1, 1));
  }
}

TEST_CASE("HeavyHitters: the decayed weight's product is rounded and counted",
          "[sketch][rounding][decay]") {
  // With decay an event adds weight * factor, the factor exp2((t - L) / h) of the tracker's
  // clock: a product rounded to nearest, counted with the sum. Events come at 0.3 s, 0.7 s,
  // 1.1 s, ... after the landmark (half-life 1 s), so no factor is a power of two, and up to
  // 19.9 s (below the rescale at 40 half-lives, which rounds outward and counts none). Most
  // weights are near kMaxWeight: stored sums pass 2^53 at the first events and reach 1e21.
  HeavyHittersOptions o = NoDecay(8);
  o.half_life = absl::Seconds(1);
  HeavyHitters hh = MustCreate(o);
  const double half_life_s = absl::ToDoubleSeconds(o.half_life);
  const double weights[] = {
      HeavyHitters::kMaxWeight, 999999999999999.9, 7e14 + 0.25, 1, 1.5, 0.1, 3};
  std::mt19937_64 gen(41);
  // The truths in forward-decayed units: sums of weight * factor, each product of two
  // doubles exact to 2^-64 in long double.
  absl::flat_hash_map<std::string, long double> forward;
  long double forward_total[kNumOps] = {0, 0};
  uint64_t events = 0, inexact = 0;
  long double heaviest = 0;
  for (int step = 0; step < 50; ++step) {
    const absl::Time t = kT0 + absl::Milliseconds(300 + 400 * step);
    hh.Advance(t);
    // The tracker's factor, as it computes it.
    const double factor = std::exp2(absl::ToDoubleSeconds(t - kT0) / half_life_s);
    REQUIRE(factor != std::exp2(std::round(std::log2(factor))));
    for (int n = 0; n < 40; ++n) {
      const std::string key = KeyFor(gen() % 6);
      const double weight = weights[gen() % std::size(weights)];
      const Op op = n % 3 ? Op::kRead : Op::kWrite;
      hh.Update(key, op, weight);
      ++events;
      inexact += std::fma(weight, factor, -(weight * factor)) != 0;
      forward[key] += static_cast<long double>(weight) * factor;
      forward_total[static_cast<int>(op)] += static_cast<long double>(weight) * factor;
    }
    REQUIRE(hh.roundings() == 2 * events);
    REQUIRE(hh.size() == forward.size());  // every key in the table from its first event
    // The truths decayed to now: forward-decayed sums divided by the factor now.
    INFO("at " << absl::FormatDuration(t - kT0) << ", factor " << factor);
    for (const auto& [key, f] : forward) {
      INFO(key);
      const long double decayed = f / factor;
      heaviest = std::max(heaviest, decayed);
      CHECK_THAT(hh.UpperBound(key), UpperBoundOf(decayed, hh, StoredSums::kRounded));
      CHECK_THAT(hh.LowerBound(key), LowerBoundOf(decayed, hh, StoredSums::kRounded));
    }
    for (const HeavyHitter& h : hh.TopK(6)) {
      INFO(h.key);
      const long double decayed = forward[h.key] / factor;
      CHECK_THAT(h.estimate, UpperBoundOf(decayed, hh, StoredSums::kRounded));
      CHECK_THAT(h.lower_bound, LowerBoundOf(decayed, hh, StoredSums::kRounded));
    }
    CHECK_THAT(hh.Total(Op::kRead),
               UpperBoundOf(forward_total[0] / factor, hh, StoredSums::kRounded));
    CHECK_THAT(hh.Total(Op::kWrite),
               UpperBoundOf(forward_total[1] / factor, hh, StoredSums::kRounded));
    CHECK_THAT(hh.Total(), UpperBoundOf((forward_total[0] + forward_total[1]) / factor, hh,
                                        StoredSums::kRounded));
  }
  // The products did round (most of them), and the decayed weights passed 2^53.
  CHECK(inexact > events / 2);
  CHECK(heaviest > 0x1p53L);
}

}  // namespace
}  // namespace hotkey::sketch
