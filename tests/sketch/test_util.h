// Helpers shared by the sketch tests: key names for Zipf ranks, exact counters to compare
// the sketches against, matchers for a tracker's bounds against an exact truth, little-endian
// patching of serialised buffers (re-checksummed the way sketch/byte_io.cc does), and an
// allocation guard.
//
// Everything here is deterministic: streams come from a seeded std::mt19937_64.

#ifndef HOTKEY_TESTS_SKETCH_TEST_UTIL_H_
#define HOTKEY_TESTS_SKETCH_TEST_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/container/flat_hash_map.h"
#include "hotkey/loadgen/zipf.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace hotkey::sketch {
// The sampler of the load generator (header-only) makes the test streams.
using ::hotkey::loadgen::ZipfDistribution;
}  // namespace hotkey::sketch

namespace hotkey::sketch::testing {

// "k:<rank>": the key the tests use for Zipf rank (or any id) `id`.
std::string KeyFor(uint64_t id);

// Writes "k:<id>" into `buf` (at least 24 bytes) and returns a view of it: no allocation,
// for the long stream loops.
std::string_view KeyInto(uint64_t id, char* buf);

// Parses a key made by KeyFor() back to its id; false for any other key.
bool IdOf(std::string_view key, uint64_t* id);

// Calls sink(rank) `events` times with Zipf(n, s) ranks from a mt19937_64 seeded `seed`.
template <class Sink>
void ForEachZipf(uint64_t n, double s, size_t events, uint64_t seed, Sink&& sink) {
  std::mt19937_64 gen(seed);
  ZipfDistribution zipf(n, s);
  for (size_t i = 0; i < events; ++i) sink(zipf(gen));
}

// Exact per-id counts of a stream, and the tracker fed the same stream (reads, weight 1).
struct ExactStream {
  absl::flat_hash_map<uint64_t, double> counts;
  double total = 0;
};

// Feeds `tracker` (if not null) and `exact` the Zipf stream described above.
void FeedZipf(uint64_t n, double s, size_t events, uint64_t seed, HeavyHitters* tracker,
              ExactStream* exact);

// How many of `top` (reported keys) are truly among the heaviest k: a reported key counts
// when its exact count is at least the k-th largest exact count (so ties at the boundary
// are not held against the tracker).
size_t CorrectInTopK(const std::vector<HeavyHitter>& top, const ExactStream& exact, size_t k);
// How many of the exact top k (ties broken by id) appear in `top`.
size_t FoundOfTopK(const std::vector<HeavyHitter>& top, const ExactStream& exact, size_t k);

// Ids ordered by count, heaviest first, ties broken by id (so the order is deterministic).
std::vector<uint64_t> ByCountDescending(const absl::flat_hash_map<uint64_t, double>& counts);

// A bound read from a tracker against the exact truth it bounds. The tracker keeps its sums
// rounded to nearest and widens what it reads by its count of roundings R = hh.roundings()
// (heavy_hitters.h): keep = 1 - R * 2^-53, an upper value is read as stored / keep, a lower
// one as stored * keep. So, besides never crossing the truth, a bound is at most that far
// from it:
//   * StoredSums::kExact, for streams whose every sum is a double (integer weights at a
//     decay factor of 1 or a power of two): the stored value is the truth, and only the read
//     widens it:  truth <= upper <= truth / keep,  truth * keep <= lower <= truth;
//   * StoredSums::kRounded, for any stream: the stored value itself may have drifted by up to
//     R roundings, a relative R * 2^-53 (a sum that stalls loses that much), and the read
//     widens it again:  truth <= upper <= truth / keep^2,  truth * keep^2 <= lower <= truth.
// Each also allows 8 * 2^-53 relative for the read's own roundings. A read rounds outward up
// to three times, each by less than an ulp (a relative 2^-52): Total() adds the two ops,
// rounds the divisor factor * keep down and the quotient up, and a lower bound adds the
// ops, multiplies by keep and divides by the factor. At a decay factor of 1 or a power of
// two the factor's rounding is exact, and 4 * 2^-53 (two roundings) would do; any other
// factor (decay on, between powers) takes the third, 6 * 2^-53, which 8 covers with room.
// With R == 0 the widening is nil: a bound of an exact stream is the truth within 3 ulps.
// The truth is a long double, so a test may compute a truth that is not a double (a sum of
// decayed weights) without rounding it first. The comparison is made in long double (64-bit
// significand on x86-64), so its own roundings are far below the allowance. Usage:
//   CHECK_THAT(hh.UpperBound("c"), UpperBoundOf(10, hh));
enum class StoredSums { kExact, kRounded };

class BoundOfTruth : public Catch::MatcherBase<double> {
 public:
  BoundOfTruth(bool upper, long double truth, uint64_t roundings, StoredSums sums)
      : upper_(upper), truth_(truth), roundings_(roundings), sums_(sums) {}
  bool match(const double& bound) const override;
  std::string describe() const override;

 private:
  bool upper_;
  long double truth_;
  uint64_t roundings_;
  StoredSums sums_;
};

// `truth` <= the bound <= `truth` widened by hh's roundings (see above).
BoundOfTruth UpperBoundOf(long double truth, const HeavyHitters& hh,
                          StoredSums sums = StoredSums::kExact);
// `truth` narrowed by hh's roundings <= the bound <= `truth` (see above).
BoundOfTruth LowerBoundOf(long double truth, const HeavyHitters& hh,
                          StoredSums sums = StoredSums::kExact);

// Offset of the u64 count of roundings in a version-4 HKHH buffer: after the magic (4),
// version (2), the options and times (u32 x3, u64, i64, u64, i64 x3: 60 bytes) and the f64
// totals and raw totals (32). Version 3 has no such field (everything after it is 8 bytes
// earlier).
inline constexpr size_t kRoundingsAt = 98;
// Offset of the f64 totals in a version-4 (or 3) HKHH buffer: total[read], then total[write].
inline constexpr size_t kTotalsAt = 66;

// Offset of the u32 entry count in a version-4 HKHH buffer: after the sketch's counters
// (@106 u32 width, @14 u32 depth, @110 f64 counters[width * depth]). The first entry follows
// it, 4 bytes on; serialize_test.cc draws the whole layout.
size_t EntryCountAt(const std::string& hkhh);

// Offset of the i64 saved clock (Unix nanoseconds) in an HKHH buffer of any version: after
// the magic (4), version (2), options (u32 x3, u64, i64, u64: 36) and start and landmark (16).
inline constexpr size_t kClockAt = 58;

// The clock saved in an HKHH buffer (the Unix epoch for a buffer too short to hold one).
absl::Time SavedClock(std::string_view hkhh);

// HeavyHitters::Deserialize(bytes, SavedClock(bytes)): the saved tracker with its time line
// where it was saved, for the tests of the format rather than of placing.
absl::StatusOr<HeavyHitters> Reload(std::string_view bytes);

// The seed of the serialised forms' trailing checksum (sketch/byte_io.cc).
inline constexpr uint64_t kChecksumSeed = 0x636865636b73756dULL;

// Recomputes the trailing 8-byte checksum of a serialised sketch after a test edited it.
void Rechecksum(std::string* buf);

// Overwrites sizeof(T) bytes at `offset` with `v`, little-endian (the build's byte order;
// byte_io.cc static_asserts little-endian).
template <class T>
void Patch(std::string* buf, size_t offset, T v) {
  std::memcpy(buf->data() + offset, &v, sizeof v);
}
template <class T>
T Peek(const std::string& buf, size_t offset) {
  T v;
  std::memcpy(&v, buf.data() + offset, sizeof v);
  return v;
}

// Allocation guard (tests/lib/alloc_count.h, whose alloc_count.cc replaces the global
// operator new): while a ScopedAllocationLimit lives, any single allocation on this thread
// larger than `max_bytes` throws std::bad_alloc instead of being attempted, and is
// recorded. Lets a test prove that a hostile buffer is rejected without the code first
// allocating what the buffer claims.
class ScopedAllocationLimit {
 public:
  explicit ScopedAllocationLimit(size_t max_bytes);
  ~ScopedAllocationLimit();
  ScopedAllocationLimit(const ScopedAllocationLimit&) = delete;
  ScopedAllocationLimit& operator=(const ScopedAllocationLimit&) = delete;
  // The largest allocation refused so far (0 if none).
  size_t largest_refused() const;
};

}  // namespace hotkey::sketch::testing

#endif  // HOTKEY_TESTS_SKETCH_TEST_UTIL_H_
