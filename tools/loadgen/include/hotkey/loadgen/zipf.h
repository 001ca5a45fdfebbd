// ZipfDistribution: ranks 1..n drawn with P(k) proportional to k^-s, in O(1) per sample.
//
// Used to make the Sender's background keys, test streams and benchmark streams. Not
// absl::zipf_distribution: that one needs s > 1, and these streams use s = 0.9 and 1.0.
//
// Rejection-inversion sampling (Hormann & Derflinger, "Rejection-inversion to generate
// variates from monotone discrete distributions", ACM TOMACS 1996): invert the integral of
// a continuous hat function x^-s, round to the nearest integer, and accept unless the point
// falls in the thin gap between hat and histogram. The expected number of uniforms per
// sample is below 1.1 for every s > 0, and nothing is precomputed per rank, so n can be
// 10^9.
//
// Thread-compatible; the generator is the caller's (any UniformRandomBitGenerator).

#ifndef HOTKEY_LOADGEN_ZIPF_H_
#define HOTKEY_LOADGEN_ZIPF_H_

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <random>

namespace hotkey::loadgen {

class ZipfDistribution {
 public:
  // n >= 1 ranks, exponent s > 0 (s = 1 is classic Zipf; larger is more skewed).
  ZipfDistribution(uint64_t n, double s)
      : n_(n),
        s_(s),
        h_integral_x1_(HIntegral(1.5) - 1.0),
        h_integral_n_(HIntegral(static_cast<double>(n) + 0.5)),
        squeeze_(2.0 - HIntegralInverse(HIntegral(2.5) - H(2.0))) {
    assert(n >= 1 && s > 0);
  }

  // A rank in [1, n]; rank 1 is the most frequent.
  template <class URBG>
  uint64_t operator()(URBG& gen) {
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    for (;;) {
      const double u = h_integral_n_ + uniform(gen) * (h_integral_x1_ - h_integral_n_);
      const double x = HIntegralInverse(u);
      double k = std::floor(x + 0.5);
      k = std::clamp(k, 1.0, static_cast<double>(n_));
      // Accept at once when k is close enough to x (the squeeze), else test exactly.
      if (k - x <= squeeze_ || u >= HIntegral(k + 0.5) - H(k)) {
        return static_cast<uint64_t>(k);
      }
    }
  }

  uint64_t n() const { return n_; }
  double s() const { return s_; }

 private:
  // The hat h(x) = x^-s, its integral H(x) = (x^(1-s) - 1) / (1 - s) (log x at s = 1),
  // written with expm1/log1p so that s near 1 loses no precision.
  double H(double x) const { return std::exp(-s_ * std::log(x)); }
  double HIntegral(double x) const {
    const double log_x = std::log(x);
    return Helper2((1.0 - s_) * log_x) * log_x;
  }
  double HIntegralInverse(double x) const {
    double t = x * (1.0 - s_);
    if (t < -1.0) t = -1.0;  // rounding guard: the true value is never below -1
    return std::exp(Helper1(t) * x);
  }
  // log1p(x) / x and expm1(x) / x, continuous at 0.
  static double Helper1(double x) { return std::abs(x) > 1e-8 ? std::log1p(x) / x : 1 - x / 2; }
  static double Helper2(double x) { return std::abs(x) > 1e-8 ? std::expm1(x) / x : 1 + x / 2; }

  uint64_t n_;
  double s_;
  double h_integral_x1_;
  double h_integral_n_;
  double squeeze_;
};

}  // namespace hotkey::loadgen

#endif  // HOTKEY_LOADGEN_ZIPF_H_
