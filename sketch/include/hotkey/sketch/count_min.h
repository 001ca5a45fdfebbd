// CountMinSketch: approximate weights of many keys in fixed memory.
//
// A count-min sketch (Cormode & Muthukrishnan, "An Improved Data Stream Summary: The
// Count-Min Sketch and its Applications", J. Algorithms 2005) is `depth` rows of `width`
// counters. A key maps to one counter per row; its estimate is the smallest of them. This
// one uses conservative update (Estan & Varghese, SIGCOMM 2002): an update raises each of
// the key's counters only as far as the key's new estimate, which keeps every guarantee
// and cuts the overestimate on skewed streams several-fold.
//
// Cells are 32-bit integers of one shared unit, scale() (a power of two): a cell c holds the
// value c * scale(), exactly. Half the bytes of a double cell, so a byte budget holds twice
// the width and half the epsilon. Update() rounds its weight up to whole units, ceil(weight /
// scale()), so integer sums are exact while scale() <= 1 (the tracker's per-event path adds
// floor(weight / scale() + 1) units instead, at most 1 + 2^-20 above the weight, without a
// branch; heavy_hitters.h). When an add would take a cell past
// kCellMax (2^32 - 1), the scale doubles until the largest cell is at most 2^31 units and
// every cell is divided by the same power of two, rounding up (O(cells), rare, counted by
// halvings()). So scale() <= max(kInitialScale, 2^-30 * the largest cell's value) at all
// times (for values below 2^1020), and each add or division raises a cell by less than one
// unit above its exact value (count_min_test.cc).
//
// Guarantees, for N = the total weight added (after any Scale()), and every key k:
//   Estimate(k) >= true(k)                                  (never an underestimate), and
//   Estimate(k) <= true'(k) + epsilon() * N'   with probability >= 1 - delta(),
// where epsilon() = e / width and delta() = e^-depth, true(k) is the exact (real) sum of the
// weights given for k, each multiplied by every Scale() and Merge() factor applied after it,
// and true'(k) and N' are the same sums with every add, product and halving rounded up as
// described: each rounding adds less than scale() at its time (count_min_test.cc pins the
// bound with N' = N). The first inequality holds exactly, for any stream of finite weights
// up to kMaxWeight: every add, product, halving and RaiseTo() rounds toward +inf, so no cell
// ever drops below the mass it was given. RaiseTo() keeps the first guarantee for a key whose
// weight is known to be at most the value raised to.
//
// Cost: Update and Estimate touch `depth` cells (3 at the tracker's default); memory is width *
// depth * 4 bytes, fixed at construction. A float cell (used before doubles) stopped counting unit
// weights at 2^24 and lost any weight below 2^-24 of its cell; a double one costs 8 bytes.
// Shared-scale integers lose nothing below a unit (an add counts at least one) and count
// integer weights exactly until the largest cell passes 2^31. Weights must be positive and
// finite.
//
// Keys are given as 64-bit hashes (see hash.h); row i uses g_i = (lo + i * hi) mod 2^32 of the
// hash's halves (Kirsch & Mitzenmacher, "Less Hashing, Same Performance", 2006), and column
// g_i mod width when the width is a power of two (its low bits), else floor(g_i * width / 2^32)
// (the multiply-shift range reduction of Lemire, "Fast Random Integer Generation in an
// Interval", 2019: one multiply instead of a division). Any width is allowed, so a byte budget
// is used whole: a width held to powers of two wastes up to half of it. Either reduction
// gives each column floor or ceil(2^32 / width) of the 2^32 values of g_i, uniform to within
// width / 2^32 (at most 2^-6 relative, at kMaxWidth), and the bounds above are stated for
// uniform columns. A power-of-two width keeps the mask, which costs one instruction a row
// less and maps keys as sketches saved before other widths were allowed did.
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
  // Largest width and depth accepted: 2^26 cells a row, 16 rows (4 GiB).
  static constexpr uint32_t kMaxWidth = 1u << 26;
  static constexpr uint32_t kMaxDepth = 16;
  // One cell: a count of units of scale().
  using Counter = uint32_t;
  static constexpr Counter kCellMax = 0xffffffffu;
  // The unit of a new sketch. Small, so that the first adds are exact; the first large ones
  // raise it (a few halvings of an almost empty sketch).
  static constexpr double kInitialScale = 0x1p-32;
  // The unit stays in [kMinScale, kMaxScale]: a normal double, and kCellMax units of the
  // largest one still finite (2^1023). A weight above kMaxWeight counts as kMaxWeight.
  static constexpr double kMinScale = 0x1p-1000;
  static constexpr double kMaxScale = 0x1p990;
  static constexpr double kMaxWeight = 0x1p1000;

  // A sketch of `width` columns and `depth` rows, all zero.
  static absl::StatusOr<CountMinSketch> Create(uint32_t width, uint32_t depth);
  // The smallest sketch with epsilon() <= epsilon and delta() <= delta;
  // epsilon and delta in (0, 1), delta >= e^-kMaxDepth (else an error, not a weaker sketch).
  static absl::StatusOr<CountMinSketch> FromError(double epsilon, double delta);
  // The widest sketch of `depth` rows that fits in `bytes`: floor(bytes / (4 * depth)) columns,
  // kMaxWidth at most.
  static absl::StatusOr<CountMinSketch> FromBytes(size_t bytes, uint32_t depth);

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
  // Multiplies every cell's value by `factor` (>= 0, finite), rounding up, and picks the
  // smallest scale() that holds the result with the largest cell at most 2^31 units: the
  // rescale step of forward decay. O(cells).
  void Scale(double factor);
  // Sets every counter to zero.
  void Clear();

  uint32_t width() const { return width_; }
  uint32_t depth() const { return depth_; }
  double epsilon() const;
  double delta() const;
  // Bytes of cell memory.
  size_t bytes() const { return counters_.size() * sizeof(Counter); }
  // The unit of every cell: a power of two in [kMinScale, kMaxScale].
  double scale() const { return scale_; }
  // Times the cells were divided to make room (an add or RaiseTo() past kCellMax), since
  // construction; not serialised.
  uint64_t halvings() const { return halvings_; }

  // A versioned, checksummed byte string; Deserialize() rejects anything else, including
  // the float counters of format version 1 and the double ones of version 2.
  std::string Serialize() const;
  static absl::StatusOr<CountMinSketch> Deserialize(std::string_view bytes);

  // The cells (units of scale()), row-major, for tests and serialisation.
  const std::vector<Counter>& counters() const { return counters_; }
  // The value of cell i: counters()[i] * scale(), exact.
  double value(size_t i) const { return counters_[i] * scale_; }

 private:
  CountMinSketch(uint32_t width, uint32_t depth);
  friend class HeavyHitters;

  // Update(), inlined into the tracker's per-event path (count_min_inline.h): the rows
  // unrolled for depths 2 to kMaxUnrolledDepth, with either column reduction; other depths
  // through UpdateAnyDepth().
  static constexpr uint32_t kMaxUnrolledDepth = 4;
  // layout_ for a width that is not a power of two: kRangeLayout + depth.
  static constexpr uint32_t kRangeLayout = 32;
  [[gnu::always_inline]] inline double UpdateInline(uint64_t hash, double weight);
  [[gnu::noinline]] double UpdateAnyDepth(uint64_t hash, double weight);
  // The same, dispatched on the depth. With kExactUnits the weight counts as
  // ceil(weight / scale()) units (Update()); without, as floor(weight / scale() + 1): at most
  // 1 + 2^-20 units above it, and no branch (the tracker's per-event path).
  template <bool kExactUnits>
  [[gnu::always_inline]] inline double UpdateAnyInline(uint64_t hash, double weight);
  // The same for a sketch known to have kDepth rows (2 to kMaxUnrolledDepth), whose width is
  // a power of two unless kRange.
  template <uint32_t kDepth, bool kExactUnits, bool kRange>
  [[gnu::always_inline]] inline double UpdateRowsInline(uint64_t hash, double weight);
  // The add that would take a cell past kCellMax: raises the scale, then adds, in units
  // as UpdateRowsInline<exact_units>() counts them.
  [[gnu::noinline]] double UpdateSaturating(uint64_t hash, double weight, bool exact_units);
  // Units of ceil(value / scale_), at least 1 for a positive value; value <= kCellMax *
  // scale_.
  static Counter UnitsUp(double value, double inv_scale);
  // floor(x + 1) as rounded, x = weight / scale() in [0, kMaxAddUnits): see UpdateRowsInline().
  static Counter UnitsAbove(double x);
  // Raises scale_ by a power of two until `value` (a cell's value to be) fits in 2^31 units
  // and every cell does, dividing every cell rounding up. O(cells).
  void MakeRoom(double value);
  // Replaces every cell's value v by at least up(v) (monotone, up(0) == 0), with the
  // smallest scale that holds the largest at 2^31 units at most. O(cells).
  template <typename Up>
  void Revalue(Up up);
  // Sets the scale to `scale` (a power of two in range), and inv_scale_.
  void SetScale(double scale);

  // The cell of row `row` for `hash`, in a sketch whose width is a power of two unless
  // kRange.
  template <bool kRange>
  size_t ColumnIn(uint64_t hash, uint32_t row) const {
    const uint32_t lo = static_cast<uint32_t>(hash);
    const uint32_t hi = static_cast<uint32_t>(hash >> 32) | 1u;  // odd: rows never coincide
    const uint32_t g = lo + row * hi;
    return static_cast<size_t>(row) * width_ +
           (kRange ? static_cast<uint32_t>((uint64_t{g} * width_) >> 32) : (g & mask_));
  }
  size_t Column(uint64_t hash, uint32_t row) const {
    return layout_ >= kRangeLayout ? ColumnIn<true>(hash, row) : ColumnIn<false>(hash, row);
  }

  uint32_t width_;
  uint32_t depth_;
  uint32_t mask_;
  // Which update the per-event path takes: the depth for a power-of-two width, kRangeLayout +
  // the depth for another; one comparison picks the default shape's.
  uint32_t layout_;
  double scale_ = kInitialScale;
  double inv_scale_ = 1 / kInitialScale;  // exact: scale_ is a power of two
  uint64_t halvings_ = 0;
  std::vector<Counter> counters_;  // row-major: depth_ rows of width_ cells
};

}  // namespace hotkey::sketch

#endif  // HOTKEY_SKETCH_COUNT_MIN_H_
