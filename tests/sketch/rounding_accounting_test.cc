// Tests for HeavyHitters' accounting of its roundings (heavy_hitters.h): every sum is kept
// rounded to nearest, two roundings are counted per event (R = roundings()), and what is
// read is widened by them (keep = 1 - R * 2^-53), so that
//   LowerBound(k) <= true(k) <= UpperBound(k)  and  true total <= Total()
// hold for any stream, even one whose stored sums stall; the count is settled into the
// stored values every 2^31 events without moving a bound across the truth; Merge() counts
// the larger of its two counts; Serialize() keeps it (serialize_test.cc).
// The truths here are exact: integer weights, no decay, sums of doubles that are doubles
// (or, above 2^53, that are not, on purpose).

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "test_util.h"

namespace hotkey::sketch {
namespace {

using testing::KeyFor;
using testing::kRoundingsAt;
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

HeavyHittersOptions NoDecay(uint32_t candidates, uint32_t lobby) {
  HeavyHittersOptions o;
  o.candidates = candidates;
  o.lobby = lobby;
  o.half_life = absl::InfiniteDuration();
  return o;
}

TEST_CASE("HeavyHitters: a sum that rounding to nearest would stall still bounds the truth",
          "[sketch][rounding]") {
  // Above 2^53 a double's ulp is 2 or more: 1e16 + 1 rounds to 1e16 (a tie, to even), and
  // 2e16 + 1 to 2e16. Every unit event below is lost from the stored sums, yet the bounds
  // must cover it.
  constexpr double kBig = HeavyHitters::kMaxWeight;  // 1e15, the largest weight counted
  REQUIRE(1e16 + 1.0 == 1e16);
  REQUIRE(2e16 + 1.0 == 2e16);
  HeavyHitters hh = MustCreate(NoDecay(1, 0));
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
  REQUIRE_FALSE(hh.InLobby("cm"));
  REQUIRE(hh.roundings() == 2 * (20 + 1000 + 10 + 1000));

  // The stored totals did stall: they hold none of the 2000 unit events.
  const std::string bytes = hh.Serialize();
  CHECK(Peek<double>(bytes, 66) == 2e16);  // total[read]
  CHECK(Peek<double>(bytes, 74) == 1e16);  // total[write]

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
  absl::StatusOr<HeavyHitters> wrong = HeavyHitters::Deserialize(uncounted);
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
  HeavyHitters hh = MustCreate(NoDecay(1, 0));
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
  // Every path an event takes (table hit, lobby hit, sketch miss, admission, promotion),
  // with decay (a factor that is not 1) and clock moves, which count none.
  HeavyHittersOptions o = NoDecay(8, 8);
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
  HeavyHitters fed = MustCreate(NoDecay(8, 8));
  absl::flat_hash_map<std::string, double> truth;
  double total = 0;
  auto feed = [&](HeavyHitters& hh, int key, double weight) {
    hh.Update(KeyFor(key), Op::kRead, weight);
    truth[KeyFor(key)] += weight;
    total += weight;
  };
  // Keys 0..7 fill the table at their first events, 100 - i events of weight 3 each; keys
  // 8..59, 30 to 36 events of weight 1 to 3 each, interleaved, share the lobby's 8 ways and
  // the sketch. Keys 60..79 are never fed.
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
  absl::StatusOr<HeavyHitters> hh = HeavyHitters::Deserialize(bytes);
  REQUIRE(hh.ok());
  REQUIRE(hh->roundings() == HeavyHitters::kMaxRoundings - 2);
  const std::string hot = KeyFor(0);  // the heaviest key, in the table
  REQUIRE(hh->LowerBound(hot) > 0);

  // One event reaches the most a tracker counts, 2^32, without settling.
  feed(*hh, 0, 1);
  REQUIRE(hh->roundings() == HeavyHitters::kMaxRoundings);

  struct Seen {
    double upper, lower;
    bool in_lobby;
  };
  absl::flat_hash_map<std::string, Seen> before;
  size_t in_table = 0, in_lobby = 0;
  for (int i = 0; i < 80; ++i) {
    const std::string k = KeyFor(i);
    const double exact = truth.contains(k) ? truth[k] : 0.0;
    INFO(k << " truth " << exact);
    const Seen s{hh->UpperBound(k), hh->LowerBound(k), hh->InLobby(k)};
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
    in_lobby += s.in_lobby;
    before[k] = s;
  }
  REQUIRE(in_table == 8);
  REQUIRE(in_lobby >= 4);
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
    REQUIRE(hh->InLobby(k) == s.in_lobby);
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
  absl::StatusOr<HeavyHitters> back = HeavyHitters::Deserialize(hh->Serialize());
  REQUIRE(back.ok());
  CHECK(back->roundings() == 2 * 3);
  CHECK(back->UpperBound(hot) == hh->UpperBound(hot));
}

TEST_CASE("HeavyHitters: a merge counts the larger of the two counts of roundings",
          "[sketch][rounding][merge]") {
  // Each merged value is a value of one side plus one of the other, summed rounding up (or
  // down, for lower values): its drift from the exact sum is at most the larger side's.
  const HeavyHittersOptions o = NoDecay(8, 8);
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

}  // namespace
}  // namespace hotkey::sketch
