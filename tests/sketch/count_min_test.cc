// Tests for CountMinSketch (sketch/count_min.cc): the two error bounds of the header
// (Estimate >= true always; Estimate <= true + epsilon * N for at least 1 - delta of the
// keys) on skewed and flat streams, sizing from (epsilon, delta) and from a byte budget,
// shape validation, conservative update, RaiseTo, Scale/Clear and Merge.
// Serialisation is tested in serialize_test.cc.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "hotkey/loadgen/zipf.h"
#include "hotkey/sketch/count_min.h"
#include "hotkey/sketch/hash.h"
#include "test_util.h"

namespace hotkey::sketch {
namespace {

using testing::ForEachZipf;

CountMinSketch Must(absl::StatusOr<CountMinSketch> cms) {
  REQUIRE(cms.ok());
  return *std::move(cms);
}

// Every cell's value, cells times the scale.
std::vector<double> Values(const CountMinSketch& cms) {
  std::vector<double> v(cms.counters().size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = cms.value(i);
  return v;
}

uint64_t H(uint64_t id) {
  return HashKey(std::string_view(reinterpret_cast<const char*>(&id), 8), 7);
}

// Checks both bounds of the header for every key of `exact`, whose weights sum to n.
void CheckBounds(const CountMinSketch& cms, const absl::flat_hash_map<uint64_t, double>& exact,
                 double n) {
  const double slack = cms.epsilon() * n;
  size_t under = 0, within = 0;
  for (const auto& [id, count] : exact) {
    const double est = cms.Estimate(H(id));
    if (est < count) ++under;
    if (est <= count + slack) ++within;
  }
  const double fraction = static_cast<double>(within) / exact.size();
  INFO("keys " << exact.size() << ", N " << n << ", epsilon*N " << slack);
  CHECK(under == 0);
  CHECK(fraction >= 1 - cms.delta());
}

TEST_CASE("CountMin: estimates bound the truth on a Zipf stream", "[sketch][count_min]") {
  CountMinSketch cms = Must(CountMinSketch::FromError(0.001, 0.01));
  absl::flat_hash_map<uint64_t, double> exact;
  ForEachZipf(100000, 1.0, 1000000, 1, [&](uint64_t id) {
    cms.Update(H(id), 1.0f);
    exact[id] += 1;
  });
  CheckBounds(cms, exact, 1000000);
}

TEST_CASE("CountMin: estimates bound the truth on a uniform stream", "[sketch][count_min]") {
  CountMinSketch cms = Must(CountMinSketch::FromError(0.001, 0.01));
  absl::flat_hash_map<uint64_t, double> exact;
  std::mt19937_64 gen(2);
  std::uniform_int_distribution<uint64_t> key(1, 200000);
  std::uniform_int_distribution<int> weight(1, 4);
  double n = 0;
  for (int i = 0; i < 1000000; ++i) {
    const uint64_t id = key(gen);
    const int w = weight(gen);
    cms.Update(H(id), static_cast<float>(w));
    exact[id] += w;
    n += w;
  }
  CheckBounds(cms, exact, n);
}

TEST_CASE("CountMin: FromError picks the smallest shape meeting epsilon and delta",
          "[sketch][count_min]") {
  const std::pair<double, double> cases[] = {{0.5, 0.5},    {0.1, 0.1},      {0.01, 0.01},
                                             {0.001, 0.05}, {0.0005, 0.001}, {0.003, 1e-6}};
  for (const auto& [eps, delta] : cases) {
    INFO("epsilon " << eps << " delta " << delta);
    CountMinSketch cms = Must(CountMinSketch::FromError(eps, delta));
    CHECK(cms.epsilon() <= eps);
    CHECK(cms.delta() <= delta);
    // Smallest: half the width or one row fewer would miss the target.
    CHECK(std::exp(1.0) / (cms.width() / 2) > eps);
    if (cms.depth() > 1) CHECK(std::exp(-(cms.depth() - 1.0)) > delta);
    CHECK((cms.width() & (cms.width() - 1)) == 0);
    CHECK(cms.bytes() == size_t{cms.width()} * cms.depth() * sizeof(CountMinSketch::Counter));
    CHECK(cms.epsilon() == Approx(std::exp(1.0) / cms.width()));
    CHECK(cms.delta() == Approx(std::exp(-1.0 * cms.depth())));
  }
}

TEST_CASE("CountMin: FromError never returns a sketch weaker than asked", "[sketch][count_min]") {
  // 16 rows give delta = e^-16 ~ 1.1e-7: a smaller delta cannot be met and must be refused,
  // not silently weakened.
  for (double delta : {1e-7, 1e-8, 1e-12}) {
    INFO("delta " << delta);
    absl::StatusOr<CountMinSketch> cms = CountMinSketch::FromError(0.01, delta);
    if (cms.ok()) {
      CHECK(cms->delta() <= delta);
    } else {
      CHECK(cms.status().code() == absl::StatusCode::kInvalidArgument);
    }
  }
}

TEST_CASE("CountMin: FromBytes fits the widest sketch in the budget", "[sketch][count_min]") {
  const std::pair<size_t, uint32_t> cases[] = {{16, 1},     {32 * 1024, 4}, {32 * 1024 + 100, 4},
                                               {100000, 3}, {1 << 20, 16},  {4096, 5},
                                               {18744, 3},  {17784, 2}};
  for (const auto& [budget, depth] : cases) {
    INFO("budget " << budget << " depth " << depth);
    CountMinSketch cms = Must(CountMinSketch::FromBytes(budget, depth));
    CHECK(cms.depth() == depth);
    CHECK(cms.bytes() <= budget);
    // One more column would not fit: the budget is used whole, not rounded down to a power of
    // two.
    CHECK(cms.bytes() + depth * sizeof(CountMinSketch::Counter) > budget);
    CHECK(cms.bytes() == size_t{cms.width()} * depth * sizeof(CountMinSketch::Counter));
  }
  // 4-byte cells: 32 KiB over 4 rows is 2048 columns (epsilon = e / 2048 ~ 0.0013), and 18,744
  // bytes over 3 rows 1562 (where a power of two would have been 1024).
  CHECK(Must(CountMinSketch::FromBytes(32 * 1024, 4)).width() == 2048);
  CHECK(Must(CountMinSketch::FromBytes(18744, 3)).width() == 1562);
}

TEST_CASE("CountMin: invalid shapes and error targets are rejected", "[sketch][count_min]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto rejected = [](const absl::StatusOr<CountMinSketch>& cms) {
    return !cms.ok() && cms.status().code() == absl::StatusCode::kInvalidArgument;
  };
  CHECK(rejected(CountMinSketch::Create(0, 4)));
  CHECK(rejected(CountMinSketch::Create(CountMinSketch::kMaxWidth * 2, 1)));
  CHECK(rejected(CountMinSketch::Create(1024, 0)));
  CHECK(rejected(CountMinSketch::Create(1024, CountMinSketch::kMaxDepth + 1)));
  CHECK(rejected(CountMinSketch::FromError(0, 0.01)));
  CHECK(rejected(CountMinSketch::FromError(1, 0.01)));
  CHECK(rejected(CountMinSketch::FromError(-0.1, 0.01)));
  CHECK(rejected(CountMinSketch::FromError(nan, 0.01)));
  CHECK(rejected(CountMinSketch::FromError(0.01, 0)));
  CHECK(rejected(CountMinSketch::FromError(0.01, 1)));
  CHECK(rejected(CountMinSketch::FromError(0.01, nan)));
  CHECK(rejected(CountMinSketch::FromError(1e-9, 0.01)));  // wider than kMaxWidth
  CHECK(rejected(CountMinSketch::FromBytes(1024, 0)));
  CHECK(rejected(CountMinSketch::FromBytes(1024, CountMinSketch::kMaxDepth + 1)));
  CHECK(rejected(CountMinSketch::FromBytes(15, 4)));  // not one counter a row
  CHECK(rejected(CountMinSketch::FromBytes(0, 1)));
  CHECK(Must(CountMinSketch::Create(1, 1)).bytes() == 4);
  // Any width in range: a power of two is not required.
  CHECK(Must(CountMinSketch::Create(3, 4)).width() == 3);
  CHECK(Must(CountMinSketch::Create(1000, 4)).bytes() == 16000);
}

TEST_CASE("CountMin: conservative update never lowers a counter, at every depth",
          "[sketch][count_min]") {
  // Depths 2 to 4 have their own unrolled update and the others a loop (count_min_inline.h):
  // every one keeps the same rule.
  const uint32_t depth = GENERATE(range(1u, CountMinSketch::kMaxDepth + 1));
  INFO("depth " << depth);
  // A narrow sketch, so keys collide constantly.
  CountMinSketch cms = Must(CountMinSketch::Create(64, depth));
  std::mt19937_64 gen(3);
  std::uniform_int_distribution<uint64_t> key(1, 1000);
  std::uniform_real_distribution<float> weight(0.1f, 10.0f);
  for (int i = 0; i < 5000; ++i) {
    const std::vector<double> before = Values(cms);
    const uint64_t halvings = cms.halvings();
    const uint64_t h = H(key(gen));
    const double w = weight(gen);
    const double old_estimate = cms.Estimate(h);
    const double returned = cms.Update(h, w);
    // The sum rounded up to whole units of the scale: less than one unit above.
    REQUIRE(returned >= old_estimate + w);
    REQUIRE(cms.Estimate(h) == returned);
    const std::vector<double> after = Values(cms);
    if (cms.halvings() != halvings) {
      // Room was made first: every cell was divided by a power of two, rounding up.
      for (size_t c = 0; c < after.size(); ++c) REQUIRE(after[c] >= before[c]);
      continue;
    }
    REQUIRE(returned < old_estimate + w + cms.scale());
    for (size_t c = 0; c < after.size(); ++c) {
      // Each cell is unchanged, or was raised exactly to the key's new estimate.
      REQUIRE(after[c] >= before[c]);
      if (after[c] != before[c]) REQUIRE(after[c] == returned);
    }
  }
}

TEST_CASE("CountMin: the unit stays within 2^-30 of the largest cell as weights grow and shrink",
          "[sketch][count_min]") {
  // Weights from 2^-20 to 2^40, then Scale() and Merge(): whatever moved the scale, it is
  // at most max(kInitialScale, 2^-30 * the largest cell's value), a power of two.
  CountMinSketch cms = Must(CountMinSketch::Create(256, 4));
  CountMinSketch other = Must(CountMinSketch::Create(256, 4));
  auto check = [](const CountMinSketch& c) {
    double largest = 0;
    for (size_t i = 0; i < c.counters().size(); ++i) largest = std::max(largest, c.value(i));
    INFO("scale " << c.scale() << ", largest cell " << largest);
    REQUIRE(c.scale() <= std::max(CountMinSketch::kInitialScale, largest * 0x1p-30));
    int e;
    REQUIRE(std::frexp(c.scale(), &e) == 0.5);
  };
  std::mt19937_64 gen(9);
  for (int i = 0; i < 60; ++i) {
    const double w = std::ldexp(1.0 + (gen() % 1000) / 1000.0, i - 20);
    for (int n = 0; n < 200; ++n) {
      cms.Update(H(gen() % 5000), w);
      other.Update(H(gen() % 5000), w / 3);
    }
    check(cms);
  }
  CHECK(cms.halvings() > 0);
  cms.Scale(0x1p-30);
  check(cms);
  REQUIRE(cms.Merge(other, 0.5).ok());
  check(cms);
  cms.Scale(0);
  check(cms);
  CHECK(cms.scale() == CountMinSketch::kInitialScale);
}

TEST_CASE("CountMin: RaiseTo lifts a key to at least the value and never lowers it",
          "[sketch][count_min]") {
  CountMinSketch cms = Must(CountMinSketch::Create(256, 4));
  const uint64_t a = H(1), b = H(2);
  cms.Update(a, 3.0f);
  cms.RaiseTo(a, 100.0f);
  CHECK(cms.Estimate(a) == 100.0f);
  const std::vector<CountMinSketch::Counter> before = cms.counters();
  cms.RaiseTo(a, 50.0f);  // below the current value: no change
  CHECK(cms.counters() == before);
  CHECK(cms.Estimate(a) == 100.0f);
  cms.RaiseTo(b, 7.0f);
  CHECK(cms.Estimate(b) >= 7.0f);
  CHECK(cms.Estimate(a) == 100.0f);
  // An update after RaiseTo adds on top of the raised value.
  CHECK(cms.Update(a, 1.0f) == 101.0f);
}

TEST_CASE("CountMin: Scale multiplies and Clear zeroes every counter", "[sketch][count_min]") {
  CountMinSketch cms = Must(CountMinSketch::Create(128, 3));
  for (uint64_t i = 0; i < 1000; ++i) cms.Update(H(i), 4.0f);
  const std::vector<double> before = Values(cms);
  cms.Scale(0.25f);
  // Multiples of 4 times 1/4: integers, exact at any scale up to 1.
  REQUIRE(cms.scale() <= 1);
  for (size_t c = 0; c < before.size(); ++c) REQUIRE(cms.value(c) == before[c] * 0.25f);
  cms.Clear();
  for (CountMinSketch::Counter c : cms.counters()) REQUIRE(c == 0);
  CHECK(cms.Estimate(H(1)) == 0.0f);
}

TEST_CASE("CountMin: merging equal shapes keeps the bounds of the concatenated stream",
          "[sketch][count_min]") {
  CountMinSketch a = Must(CountMinSketch::FromError(0.002, 0.02));
  CountMinSketch b = Must(CountMinSketch::FromError(0.002, 0.02));
  absl::flat_hash_map<uint64_t, double> exact;
  size_t i = 0;
  ForEachZipf(50000, 1.1, 600000, 4, [&](uint64_t id) {
    (i++ < 300000 ? a : b).Update(H(id), 1.0f);
    exact[id] += 1;
  });
  const std::vector<double> a_before = Values(a);
  REQUIRE(a.Merge(b).ok());
  for (size_t c = 0; c < a_before.size(); ++c) REQUIRE(a.value(c) == a_before[c] + b.value(c));
  CheckBounds(a, exact, 600000);
}

TEST_CASE("CountMin: merge with a factor adds the scaled counters", "[sketch][count_min]") {
  CountMinSketch a = Must(CountMinSketch::Create(64, 2));
  CountMinSketch b = Must(CountMinSketch::Create(64, 2));
  for (uint64_t i = 0; i < 300; ++i) {
    a.Update(H(i), 1.0f);
    b.Update(H(i * 7), 2.0f);
  }
  const std::vector<double> a_before = Values(a);
  REQUIRE(a.Merge(b, 0.5f).ok());
  for (size_t c = 0; c < a_before.size(); ++c) {
    REQUIRE(a.value(c) == a_before[c] + 0.5f * b.value(c));
  }
}

TEST_CASE("CountMin: merge rejects a different shape", "[sketch][count_min]") {
  CountMinSketch a = Must(CountMinSketch::Create(1024, 4));
  a.Update(H(1), 5.0f);
  const std::vector<CountMinSketch::Counter> before = a.counters();
  for (auto [w, d] : {std::pair<uint32_t, uint32_t>{512, 4}, {2048, 4}, {1024, 3}, {1024, 5}}) {
    INFO(w << "x" << d);
    CountMinSketch b = Must(CountMinSketch::Create(w, d));
    const absl::Status s = a.Merge(b);
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK(a.counters() == before);  // a failed merge leaves the sketch untouched
  }
}

}  // namespace
}  // namespace hotkey::sketch
