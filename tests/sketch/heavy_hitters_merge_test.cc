// Tests for HeavyHitters::Merge: two trackers fed the halves of one stream, merged, behave
// like a tracker of the whole stream (top-100 precision against exact counts, every bound
// still holds); trackers on different clocks and landmarks merge to the exact decayed
// weights; trackers of different options or seeds are refused and left untouched.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "test_util.h"

namespace hotkey::sketch {
namespace {

using testing::CorrectInTopK;
using testing::ExactStream;
using testing::ForEachZipf;
using testing::FoundOfTopK;
using testing::IdOf;
using testing::KeyFor;
using testing::KeyInto;
using testing::UpperBoundOf;

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

HeavyHitters MustCreate(const HeavyHittersOptions& o, absl::Time now = kT0) {
  absl::StatusOr<HeavyHitters> hh = HeavyHitters::Create(o, now);
  REQUIRE(hh.ok());
  return *std::move(hh);
}

HeavyHittersOptions NoDecay() {
  HeavyHittersOptions o;
  o.half_life = absl::InfiniteDuration();
  o.candidates = 200;
  return o;
}

TEST_CASE("Merge: two halves merged match the whole stream's top-100 and keep every bound",
          "[sketch][merge]") {
  HeavyHitters first = MustCreate(NoDecay());
  HeavyHitters second = MustCreate(NoDecay());
  ExactStream exact;
  char buf[24];
  size_t i = 0;
  std::mt19937_64 coin(52);
  ForEachZipf(1000000, 1.0, 2000000, 51, [&](uint64_t rank) {
    // The first half of the stream goes mostly to `first`, the second mostly to `second`,
    // so the two tables hold different key sets as well as different counts.
    const bool to_first = (i++ < 1000000) == (coin() % 8 != 0);
    (to_first ? first : second).Update(KeyInto(rank, buf), i % 3 ? Op::kRead : Op::kWrite);
    exact.counts[rank] += 1;
    exact.total += 1;
  });
  const double first_writes = first.RawTotal(Op::kWrite);
  REQUIRE(first.Merge(second).ok());
  CHECK(first.RawTotal(Op::kRead) + first.RawTotal(Op::kWrite) == 2000000);
  CHECK(first.RawTotal(Op::kWrite) == first_writes + second.RawTotal(Op::kWrite));
  CHECK_THAT(first.Total(), UpperBoundOf(2000000, first, 2000000));
  CHECK(first.size() == first.options().candidates);

  const std::vector<HeavyHitter> top = first.TopK(100);
  REQUIRE(top.size() == 100);
  const double precision = CorrectInTopK(top, exact, 100) / 100.0;
  const double recall = FoundOfTopK(top, exact, 100) / 100.0;
  INFO("precision " << precision << " recall " << recall);
  CHECK(precision >= 0.99);
  CHECK(recall >= 0.99);

  auto true_count = [&](uint64_t id) {
    auto it = exact.counts.find(id);
    return it == exact.counts.end() ? 0.0 : it->second;
  };
  for (const HeavyHitter& h : first.TopK(first.options().candidates)) {
    uint64_t id;
    REQUIRE(IdOf(h.key, &id));
    INFO("reported " << h.key);
    CHECK(h.lower_bound <= true_count(id));
    CHECK(true_count(id) <= h.estimate);
  }
  std::mt19937_64 gen(53);
  std::uniform_int_distribution<uint64_t> id_dist(1, 1500000);
  for (int n = 0; n < 20000; ++n) {
    const uint64_t id = id_dist(gen);
    const std::string key = KeyFor(id);
    INFO("key " << key);
    REQUIRE(first.LowerBound(key) <= true_count(id));
    REQUIRE(true_count(id) <= first.UpperBound(key));
  }
}

// Feeds "a" (reads) and "b" (writes) every 100 ms from `from` to `to` into `hh`, and into
// exact decayed counters evaluated at `at`.
struct DecayedTruth {
  double h;
  double a = 0, b = 0;
  void Feed(HeavyHitters* hh, absl::Time from, absl::Time to, absl::Time at) {
    for (absl::Time t = from; t < to; t += absl::Milliseconds(100)) {
      hh->Advance(t);
      hh->Update("a", Op::kRead, 2.0);
      hh->Update("b", Op::kWrite, 1.0);
      const double age = absl::ToDoubleSeconds(at - t);
      a += 2.0 * std::exp2(-age / h);
      b += 1.0 * std::exp2(-age / h);
    }
  }
};

TEST_CASE("Merge: trackers on different clocks merge to the exact decayed weights",
          "[sketch][merge]") {
  HeavyHittersOptions o;
  o.half_life = absl::Seconds(1);
  o.candidates = 16;
  // `behind` stops at 5 s; `ahead` runs to 50 s, past a rescale (its landmark moved).
  // Weights at 50 s: behind's events are 45+ half-lives old; keep them visible by also
  // checking a pair that is only 3 half-lives apart.
  for (double ahead_s : {8.0, 50.0}) {
    INFO("ahead runs to " << ahead_s << " s");
    const absl::Time end = kT0 + absl::Seconds(ahead_s);
    DecayedTruth truth{1};
    HeavyHitters behind = MustCreate(o);
    HeavyHitters ahead = MustCreate(o);
    truth.Feed(&behind, kT0, kT0 + absl::Seconds(5), end);
    truth.Feed(&ahead, kT0, end, end);
    behind.Advance(kT0 + absl::Seconds(5));
    ahead.Advance(end);

    SECTION("merging the later clock into the earlier one") {
      HeavyHitters merged = behind;
      REQUIRE(merged.Merge(ahead).ok());
      CHECK(merged.now() == end);
      CHECK(merged.Estimate("a") == Approx(truth.a).epsilon(1e-6));
      CHECK(merged.Estimate("b") == Approx(truth.b).epsilon(1e-6));
      CHECK(merged.LowerBound("a") == Approx(truth.a).epsilon(1e-6));
      CHECK(merged.Total() == Approx(truth.a + truth.b).epsilon(1e-6));
      CHECK(merged.Total(Op::kWrite) == Approx(truth.b).epsilon(1e-6));
    }
    SECTION("merging the earlier clock into the later one") {
      HeavyHitters merged = ahead;
      REQUIRE(merged.Merge(behind).ok());
      CHECK(merged.now() == end);
      CHECK(merged.Estimate("a") == Approx(truth.a).epsilon(1e-6));
      CHECK(merged.Estimate("b") == Approx(truth.b).epsilon(1e-6));
      CHECK(merged.Total() == Approx(truth.a + truth.b).epsilon(1e-6));
      const std::vector<HeavyHitter> top = merged.TopK(2);
      REQUIRE(top.size() == 2);
      CHECK(top[0].key == "a");
      CHECK(top[0].raw_weight[static_cast<int>(Op::kRead)] ==
            2.0 * 10 * (5 + ahead_s));  // raw weights add undecayed
    }
  }
}

TEST_CASE("Merge: trackers of different options or seeds are refused and left untouched",
          "[sketch][merge]") {
  HeavyHittersOptions base;
  HeavyHitters hh = MustCreate(base);
  for (int i = 0; i < 1000; ++i) hh.Update(KeyFor(i % 37), Op::kRead);
  const std::string before = hh.Serialize();

  std::vector<HeavyHittersOptions> others(6, base);
  others[0].seed = base.seed + 1;
  others[1].candidates = base.candidates + 1;
  others[2].half_life = base.half_life * 2;
  others[3].max_key_bytes = base.max_key_bytes * 2;
  others[4].sketch_bytes = base.sketch_bytes * 2;
  others[5].sketch_depth = base.sketch_depth + 1;
  for (size_t i = 0; i < others.size(); ++i) {
    INFO("variant " << i);
    HeavyHitters other = MustCreate(others[i]);
    other.Update("x", Op::kRead);
    const absl::Status s = hh.Merge(other);
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK(hh.Serialize() == before);
  }
  // An equal budget that rounds to the same sketch shape is the same tracker shape.
  HeavyHittersOptions same_shape = base;
  same_shape.sketch_bytes = base.sketch_bytes + 3;
  HeavyHitters compatible = MustCreate(same_shape);
  CHECK(hh.Merge(compatible).ok());
}

TEST_CASE("Merge: merging a tracker with an empty one changes no figure", "[sketch][merge]") {
  HeavyHittersOptions o;
  o.candidates = 32;
  HeavyHitters hh = MustCreate(o);
  absl::Time t = kT0;
  for (int i = 0; i < 5000; ++i) {
    if (i % 100 == 0) hh.Advance(t += absl::Milliseconds(300));
    hh.Update(KeyFor(i % 50 == 0 ? 1 : i % 211), i % 5 ? Op::kRead : Op::kWrite);
  }
  HeavyHitters empty = MustCreate(o);
  const std::vector<HeavyHitter> top = hh.TopK(32);
  REQUIRE(hh.Merge(empty).ok());
  const std::vector<HeavyHitter> after = hh.TopK(32);
  REQUIRE(after.size() == top.size());
  for (size_t i = 0; i < top.size(); ++i) {
    INFO("rank " << i << " estimate " << top[i].estimate << " after " << after[i].estimate);
    CHECK(after[i].key == top[i].key);
    CHECK(after[i].estimate == Approx(top[i].estimate).epsilon(1e-12));
    CHECK(after[i].lower_bound == Approx(top[i].lower_bound).epsilon(1e-12));
  }
}

}  // namespace
}  // namespace hotkey::sketch
