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
// where epsilon() = e / width and delta() = e^-depth, and true(k) is the exact (real) sum
// of the weights given for k, each multiplied by every Scale() and Merge() factor applied
// after it. The first inequality holds exactly, for any stream of finite weights: every
// add, product and RaiseTo() rounds toward +inf (rounding.h), so no counter ever drops
// below the mass it was given, however large it grows or however small the weight added to
// it. Rounding up costs at most one ulp (a relative 2^-52) per operation on a counter.
// RaiseTo() keeps the first guarantee for a key whose weight is known to be at most the
// value raised to.
//
// Cost: Update and Estimate touch `depth` counters (4 by default); memory is
// width * depth * 8 bytes, fixed at construction. Counters are 64-bit doubles: decayed
// weights are fractional, and a 32-bit float (used before) stops counting unit weights at
// 2^24 and loses any weight below 2^-24 of its counter, which a few large events or a day
// of traffic reach. Float counters rounded up would keep Estimate >= true, but each add
// below a counter's ulp would then count a whole ulp (8 unit weights in a cell of 1e8),
// which breaks the epsilon bound instead. At the same byte budget a double sketch is half
// as wide, so epsilon() is twice a float sketch's. Weights must be positive and finite.
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
  // Largest width and depth accepted: 2^26 counters a row, 16 rows (8 GiB).
  static constexpr uint32_t kMaxWidth = 1u << 26;
  static constexpr uint32_t kMaxDepth = 16;

  // A sketch of `width` (a power of two) columns and `depth` rows, all zero.
  static absl::StatusOr<CountMinSketch> Create(uint32_t width, uint32_t depth);
  // The smallest sketch with epsilon() <= epsilon and delta() <= delta;
  // epsilon and delta in (0, 1), delta >= e^-kMaxDepth (else an error, not a weaker sketch).
  static absl::StatusOr<CountMinSketch> FromError(double epsilon, double delta);
  // The widest sketch of `depth` rows that fits in `bytes`.
  static absl::StatusOr<CountMinSketch> FromBytes(size_t bytes, uint32_t depth);

  // One counter.
  using Counter = double;

  // Adds `weight` (> 0, finite) to the key, conservatively. Returns the key's new estimate.
  double Update(uint64_t hash, double weight);
  // Raises each of the key's counters to at least `value`: used to hand a key's count back
  // to the sketch (a key leaving the top-K table) without breaking Estimate() >= true.
  void RaiseTo(uint64_t hash, double value);
  // The key's estimate: an upper bound on its weight (see the guarantees above).
  double Estimate(uint64_t hash) const;

  // Adds `factor` (>= 0, finite) * other, counter by counter, rounding up. Fails unless the
  // shapes are equal.
  absl::Status Merge(const CountMinSketch& other, double factor = 1.0);
  // Multiplies every counter by `factor` in [0, 1], rounding up: the rescale step of
  // forward decay.
  void Scale(double factor);
  // Sets every counter to zero.
  void Clear();

  uint32_t width() const { return width_; }
  uint32_t depth() const { return depth_; }
  double epsilon() const;
  double delta() const;
  // Bytes of counter memory.
  size_t bytes() const { return counters_.size() * sizeof(Counter); }

  // A versioned, checksummed byte string; Deserialize() rejects anything else, including
  // the float counters of format version 1.
  std::string Serialize() const;
  static absl::StatusOr<CountMinSketch> Deserialize(std::string_view bytes);

  // Raw access for serialisation by structures built on this one.
  const std::vector<Counter>& counters() const { return counters_; }

 private:
  CountMinSketch(uint32_t width, uint32_t depth);
  friend class HeavyHitters;

  // Update(), inlined into the tracker's per-event path (count_min_inline.h): the rows
  // unrolled for the default depth of 4. With kRoundUp false the new estimate is rounded to
  // nearest, not up: for the tracker, which counts its roundings (heavy_hitters.h).
  template <bool kRoundUp>
  [[gnu::always_inline]] inline double UpdateInline(uint64_t hash, double weight);
  // UpdateInline<false>(), out of line: for the tracker's miss path at depths other than 4.
  [[gnu::noinline]] double UpdateNearest(uint64_t hash, double weight);
  // The same for a sketch known to have depth 4.
  template <bool kRoundUp>
  [[gnu::always_inline]] inline double Update4Inline(uint64_t hash, double weight);
  // RaiseTo(), the same way, for the tracker's lobby write-backs.
  [[gnu::always_inline]] inline void RaiseToInline(uint64_t hash, double value);

  size_t Column(uint64_t hash, uint32_t row) const {
    const uint32_t lo = static_cast<uint32_t>(hash);
    const uint32_t hi = static_cast<uint32_t>(hash >> 32) | 1u;  // odd: rows never coincide
    return static_cast<size_t>(row) * width_ + ((lo + row * hi) & mask_);
  }

  uint32_t width_;
  uint32_t depth_;
  uint32_t mask_;
  std::vector<Counter> counters_;  // row-major: depth_ rows of width_ counters
};

}  // namespace hotkey::sketch

#endif  // HOTKEY_SKETCH_COUNT_MIN_H_
