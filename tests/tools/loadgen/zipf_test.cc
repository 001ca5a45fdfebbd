// Tests for ZipfDistribution (tools/loadgen/include/hotkey/loadgen/zipf.h): the empirical
// frequencies of ranks 1, 2 and 10 match k^-s / H(n, s), every sample is in [1, n], and
// degenerate n work. The sampler drives the stream tests of sketch_test and the load generator.

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "hotkey/loadgen/zipf.h"

namespace hotkey::loadgen {
namespace {

// H(n, s) = sum_{k=1..n} k^-s, summed smallest first for accuracy.
double Harmonic(uint64_t n, double s) {
  double h = 0;
  for (uint64_t k = n; k >= 1; --k) h += std::pow(static_cast<double>(k), -s);
  return h;
}

TEST_CASE("Zipf: ranks 1, 2 and 10 occur with frequency k^-s / H(n, s)", "[loadgen][zipf]") {
  const uint64_t n = 1000000;
  const int samples = 1000000;
  for (double s : {0.9, 1.0, 1.2}) {
    INFO("s = " << s);
    ZipfDistribution zipf(n, s);
    CHECK(zipf.n() == n);
    CHECK(zipf.s() == s);
    std::mt19937_64 gen(81);
    std::vector<int> count(11, 0);
    for (int i = 0; i < samples; ++i) {
      const uint64_t k = zipf(gen);
      if (k <= 10) ++count[k];
    }
    const double h = Harmonic(n, s);
    for (int k : {1, 2, 10}) {
      const double p = std::pow(k, -s) / h;
      INFO("rank " << k << ": expected " << p * samples << ", got " << count[k]);
      // Rank 10 at s = 0.9 is the rarest (p ~ 0.004, ~4000 samples, 1.6% standard error).
      CHECK(count[k] == Approx(p * samples).epsilon(0.05));
    }
  }
}

TEST_CASE("Zipf: an exponent next to 1 matches s = 1", "[loadgen][zipf]") {
  // s = 1 is where H's closed form divides by zero; the sampler switches formula there.
  const int samples = 300000;
  for (double s : {1.0 - 1e-9, 1.0 + 1e-9, 1.0 + 1e-6}) {
    INFO("s = " << s);
    ZipfDistribution zipf(1000, s);
    std::mt19937_64 gen(82);
    int ones = 0;
    for (int i = 0; i < samples; ++i) ones += zipf(gen) == 1;
    CHECK(ones == Approx(samples / Harmonic(1000, 1.0)).epsilon(0.03));
  }
}

TEST_CASE("Zipf: every sample lies in [1, n]", "[loadgen][zipf]") {
  for (uint64_t n :
       {uint64_t{1}, uint64_t{2}, uint64_t{3}, uint64_t{10}, uint64_t{1000}, uint64_t{1} << 40}) {
    for (double s : {0.1, 0.5, 0.9, 1.0, 1.2, 2.0, 5.0}) {
      INFO("n = " << n << ", s = " << s);
      ZipfDistribution zipf(n, s);
      std::mt19937_64 gen(83);
      uint64_t lo = UINT64_MAX, hi = 0;
      std::vector<bool> seen(std::min<uint64_t>(n, 3) + 1, false);
      for (int i = 0; i < 50000; ++i) {
        const uint64_t k = zipf(gen);
        lo = std::min(lo, k);
        hi = std::max(hi, k);
        if (k < seen.size()) seen[k] = true;
      }
      CHECK(lo >= 1);
      CHECK(hi <= n);
      // Rank 1 has probability 1 / H(n, s): certain to appear unless n is huge and s small.
      if (n <= 1000 || s >= 0.9) CHECK(lo == 1);
      // For tiny n with mild skew every rank appears.
      if (n <= 3 && s <= 2.0) {
        for (uint64_t k = 1; k <= n; ++k) CHECK(seen[k]);
      }
    }
  }
}

TEST_CASE("Zipf: n = 1 always returns 1", "[loadgen][zipf]") {
  for (double s : {0.01, 1.0, 3.0}) {
    ZipfDistribution zipf(1, s);
    std::mt19937_64 gen(84);
    for (int i = 0; i < 10000; ++i) REQUIRE(zipf(gen) == 1);
  }
}

TEST_CASE("Zipf: n = 2 splits as 1 : 2^-s", "[loadgen][zipf]") {
  ZipfDistribution zipf(2, 1.5);
  std::mt19937_64 gen(85);
  int ones = 0;
  const int samples = 200000;
  for (int i = 0; i < samples; ++i) ones += zipf(gen) == 1;
  const double p1 = 1 / (1 + std::pow(2, -1.5));
  CHECK(ones == Approx(p1 * samples).epsilon(0.01));
}

}  // namespace
}  // namespace hotkey::loadgen
