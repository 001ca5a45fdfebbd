// CountMinSketch: approximate weights of many keys in fixed memory.
//
// A count-min sketch (Cormode & Muthukrishnan, "An Improved Data Stream Summary: The
// Count-Min Sketch and its Applications", J. Algorithms 2005) is `depth` rows of `width`
// counters. A key maps to one counter per row; its estimate is the smallest of them. This
// one uses conservative update (Estan & Varghese, SIGCOMM 2002): an update raises each of
// the key's counters only as far as the key's new estimate, which keeps every guarantee
// and cuts the overestimate on skewed streams several-fold.
//
// Guarantees, for N = the total weight added (after any Scale()), and every key k:
//   Estimate(k) >= true(k)                                  (never an underestimate), and
//   Estimate(k) <= true(k) + epsilon() * N   with probability >= 1 - delta(),
// where epsilon() = e / width and delta() = e^-depth. RaiseTo() keeps the first guarantee
// for a key whose weight is known to be at most the value raised to.
//
// Cost: Update and Estimate touch `depth` counters (4 by default); memory is
// width * depth * 4 bytes, fixed at construction. Counters are 32-bit floats: decayed
// weights are fractional, and a float's 24-bit mantissa keeps the relative rounding of a
// counter below 1e-7, far inside epsilon. Weights must be positive and finite.
//
// Keys are given as 64-bit hashes (see hash.h); row i uses column (lo + i * hi) mod width
// of the hash's halves (Kirsch & Mitzenmacher, "Less Hashing, Same Performance", 2006).
//
// Thread-compatible: concurrent const calls are safe; anything else needs one writer.

#ifndef HOTKEY_SKETCH_COUNT_MIN_H_
#define HOTKEY_SKETCH_COUNT_MIN_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hotkey::sketch {

class CountMinSketch {
 public:
  // Largest width and depth accepted: 2^26 counters a row, 16 rows (4 GiB).
  static constexpr uint32_t kMaxWidth = 1u << 26;
  static constexpr uint32_t kMaxDepth = 16;

  // A sketch of `width` (a power of two) columns and `depth` rows, all zero.
  static absl::StatusOr<CountMinSketch> Create(uint32_t width, uint32_t depth);
  // The smallest sketch with epsilon() <= epsilon and delta() <= delta;
  // epsilon and delta in (0, 1), delta >= e^-kMaxDepth (else an error, not a weaker sketch).
  static absl::StatusOr<CountMinSketch> FromError(double epsilon, double delta);
  // The widest sketch of `depth` rows that fits in `bytes`.
  static absl::StatusOr<CountMinSketch> FromBytes(size_t bytes, uint32_t depth);

  // Adds `weight` (> 0, finite) to the key, conservatively. Returns the key's new estimate.
  float Update(uint64_t hash, float weight);
  // Raises each of the key's counters to at least `value`: used to hand a key's count back
  // to the sketch (a key leaving the top-K table) without breaking Estimate() >= true.
  void RaiseTo(uint64_t hash, float value);
  // The key's estimate: an upper bound on its weight (see the guarantees above).
  float Estimate(uint64_t hash) const;

  // Adds `factor` * other, counter by counter. Fails unless the shapes are equal.
  absl::Status Merge(const CountMinSketch& other, float factor = 1.0f);
  // Multiplies every counter by `factor` in [0, 1]: the rescale step of forward decay.
  void Scale(float factor);
  // Sets every counter to zero.
  void Clear();

  uint32_t width() const { return width_; }
  uint32_t depth() const { return depth_; }
  double epsilon() const;
  double delta() const;
  // Bytes of counter memory.
  size_t bytes() const { return counters_.size() * sizeof(float); }

  // A versioned, checksummed byte string; Deserialize() rejects anything else.
  std::string Serialize() const;
  static absl::StatusOr<CountMinSketch> Deserialize(std::string_view bytes);

  // Raw access for serialisation by structures built on this one.
  const std::vector<float>& counters() const { return counters_; }

 private:
  CountMinSketch(uint32_t width, uint32_t depth);
  friend class HeavyHitters;

  size_t Column(uint64_t hash, uint32_t row) const {
    const uint32_t lo = static_cast<uint32_t>(hash);
    const uint32_t hi = static_cast<uint32_t>(hash >> 32) | 1u;  // odd: rows never coincide
    return static_cast<size_t>(row) * width_ + ((lo + row * hi) & mask_);
  }

  uint32_t width_;
  uint32_t depth_;
  uint32_t mask_;
  std::vector<float> counters_;  // row-major: depth_ rows of width_ counters
};

}  // namespace hotkey::sketch

#endif  // HOTKEY_SKETCH_COUNT_MIN_H_
