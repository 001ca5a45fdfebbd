// Tests for HeavyHitters' admission and eviction (sketch/heavy_hitters.cc): a full table
// evicts its weakest entry by current upper bound, though hits leave the min-heap's nodes
// behind their entries, and in whatever order the table was filled; an estimate that does
// not beat the weakest entry is not admitted. Also pins the count-min sketch's unrolled
// depth-4 update against the column mapping count_min.h documents.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "hotkey/sketch/count_min.h"
#include "hotkey/sketch/hash.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace hotkey::sketch {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

HeavyHitters MustCreate(uint32_t candidates) {
  HeavyHittersOptions o;
  o.half_life = absl::InfiniteDuration();
  o.candidates = candidates;
  // A wide sketch: estimates of unseen keys stay 0, so admission is decided by the table.
  o.sketch_bytes = 1 << 20;
  absl::StatusOr<HeavyHitters> hh = HeavyHitters::Create(o, kT0);
  REQUIRE(hh.ok());
  return *std::move(hh);
}

bool Tracked(const HeavyHitters& hh, const std::string& key) { return hh.LowerBound(key) > 0; }

TEST_CASE("Eviction: a full table evicts the entry that is weakest now, not when it entered",
          "[sketch][eviction]") {
  HeavyHitters hh = MustCreate(4);
  // Filled lightest first; then the first two get many hits, so the entries that were the
  // weakest when placed are now the strongest.
  hh.Update("a", Op::kRead, 1);
  hh.Update("b", Op::kRead, 2);
  hh.Update("c", Op::kRead, 3);
  hh.Update("d", Op::kRead, 4);
  for (int i = 0; i < 100; ++i) {
    hh.Update("a", Op::kRead, 1);
    hh.Update("b", Op::kRead, 1);
  }
  // "e" arrives with weight 3.5: above "c" (3), below "d" (4). "c" must go.
  hh.Update("e", Op::kRead, 3.5);
  CHECK(Tracked(hh, "a"));
  CHECK(Tracked(hh, "b"));
  CHECK(!Tracked(hh, "c"));
  CHECK(Tracked(hh, "d"));
  CHECK(Tracked(hh, "e"));
  // The evicted key's weight went back to the sketch: its estimate still bounds it.
  CHECK(hh.UpperBound("c") >= 3);
  // Next weakest is "e" (3.5); "f" at 3.6 replaces it, "g" at 1 is refused.
  hh.Update("f", Op::kRead, 3.6);
  CHECK(!Tracked(hh, "e"));
  CHECK(Tracked(hh, "f"));
  hh.Update("g", Op::kRead, 1);
  CHECK(!Tracked(hh, "g"));
  CHECK(hh.size() == 4);
}

TEST_CASE("Eviction: a table filled heaviest first still evicts its lightest entry",
          "[sketch][eviction]") {
  HeavyHitters hh = MustCreate(3);
  hh.Update("x", Op::kRead, 30);
  hh.Update("y", Op::kRead, 20);
  hh.Update("z", Op::kRead, 10);
  hh.Update("w", Op::kRead, 15);
  CHECK(!Tracked(hh, "z"));
  CHECK(Tracked(hh, "x"));
  CHECK(Tracked(hh, "y"));
  CHECK(Tracked(hh, "w"));
}

TEST_CASE("Eviction: an estimate equal to the weakest entry's is not admitted",
          "[sketch][eviction]") {
  HeavyHitters hh = MustCreate(2);
  hh.Update("p", Op::kRead, 5);
  hh.Update("q", Op::kRead, 6);
  hh.Update("r", Op::kRead, 5);  // estimate 5, weakest 5: stays outside
  CHECK(!Tracked(hh, "r"));
  CHECK(Tracked(hh, "p"));
  hh.Update("r", Op::kRead, 1);  // estimate 6 > 5: in, "p" out
  CHECK(Tracked(hh, "r"));
  CHECK(!Tracked(hh, "p"));
}

TEST_CASE("Eviction: on a random stream every eviction takes a weakest entry",
          "[sketch][eviction]") {
  // The table against a model that knows each tracked key's upper bound: whenever a key
  // leaves, no tracked key that stays may have had a smaller upper bound just before.
  HeavyHitters hh = MustCreate(16);
  std::mt19937_64 gen(7);
  std::uniform_int_distribution<int> key(0, 63);
  std::uniform_real_distribution<double> weight(0.5, 4);
  for (int i = 0; i < 20000; ++i) {
    const std::string k = "k" + std::to_string(key(gen));
    const std::vector<HeavyHitter> before = hh.TopK(hh.size());
    hh.Update(k, Op::kRead, weight(gen));
    const std::vector<HeavyHitter> after = hh.TopK(hh.size());
    for (const HeavyHitter& gone : before) {
      const bool kept = std::any_of(after.begin(), after.end(),
                                    [&](const HeavyHitter& h) { return h.key == gone.key; });
      if (kept) continue;
      for (const HeavyHitter& stay : before) {
        if (stay.key == gone.key) continue;
        INFO("evicted " << gone.key << " at " << gone.estimate << ", kept " << stay.key << " at "
                        << stay.estimate);
        CHECK(stay.estimate >= gone.estimate);
      }
    }
  }
}

TEST_CASE("CountMin: the update follows the documented column of each row, at any width",
          "[sketch][count_min]") {
  // Row i, g = lo + i * (hi | 1) mod 2^32, column g mod width for a power-of-two width and
  // floor(g * width / 2^32) for another: the mapping count_min.h documents, which serialised
  // sketches and merges rely on. The model applies conservative update to it. Depths 2 to 4
  // take the unrolled updates (one per reduction), 5 the loop.
  const uint32_t width = GENERATE(64u, 100u);
  const uint32_t depth = GENERATE(2u, 3u, 4u, 5u);
  INFO("width " << width << " depth " << depth);
  absl::StatusOr<CountMinSketch> cms = CountMinSketch::Create(width, depth);
  REQUIRE(cms.ok());
  std::vector<double> model(size_t{width} * depth, 0.0);  // the value of each cell
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> weight(0.25, 8);
  for (int i = 0; i < 5000; ++i) {
    const uint64_t hash = HashKey("k" + std::to_string(gen() % 500), kDefaultSeed);
    const double w = weight(gen);
    const uint32_t lo = static_cast<uint32_t>(hash);
    const uint32_t hi = static_cast<uint32_t>(hash >> 32) | 1u;
    std::vector<size_t> cell(depth);
    double est = std::numeric_limits<double>::infinity();
    for (uint32_t r = 0; r < depth; ++r) {
      const uint32_t g = lo + r * hi;
      cell[r] = size_t{r} * width + (width == 64 ? (g & 63u) : (uint64_t{g} * width) >> 32);
      est = std::min(est, model[cell[r]]);
    }
    const uint64_t halvings = cms->halvings();
    const double got = cms->Update(hash, w);
    std::vector<double> values(model.size());
    for (size_t c = 0; c < values.size(); ++c) values[c] = cms->value(c);
    if (cms->halvings() != halvings) {
      // Room was made: every cell was divided, rounding up. The model restarts from it.
      REQUIRE(got >= est + w);
      model = values;
      continue;
    }
    // The weight rounded up to whole units of the scale: less than one unit above.
    REQUIRE(got >= est + w);
    REQUIRE(got < est + w + cms->scale());
    for (size_t c : cell) model[c] = std::max(model[c], got);
    REQUIRE(values == model);
  }
}

}  // namespace
}  // namespace hotkey::sketch
