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

// A bound read from a tracker against the exact truth it bounds. The tracker's per-event
// path rounds each sum to nearest and steps it two ulps outward (heavy_hitters.h), so a
// stored value that n events added to is within a relative (1 + 2^-50)^n of its exact value,
// on its side of it; a read rounds outward again, at most two ulps (Total() adds the two
// ops and divides by the decay factor, a lower bound adds the ops and divides), which
// kReadSlack = 2^-50 covers. So
//   truth <= upper <= (truth + units) * (1 + 2^-50)^events * (1 + 2^-50),
//   truth * (1 - 2^-50)^events * (1 - 2^-50) <= lower <= truth,
// where `events` is the number of events added to the value (any larger number will do) and
// `units` two of the sketch's units for each add that rounded the bound up to whole units
// (a key admitted from the sketch carries one). The truth is a long double, so a test may
// compute a truth that is not a double (a sum of decayed weights) without rounding it first;
// the comparison is made in long double (64-bit significand on x86-64), whose own roundings
// are far below the allowance. Usage:
//   CHECK_THAT(hh.UpperBound("c"), UpperBoundOf(10, hh, 10));
class BoundOfTruth : public Catch::MatcherBase<double> {
 public:
  BoundOfTruth(bool upper, long double truth, uint64_t events, long double units)
      : upper_(upper), truth_(truth), events_(events), units_(units) {}
  bool match(const double& bound) const override;
  std::string describe() const override;

 private:
  bool upper_;
  long double truth_;
  uint64_t events_;
  long double units_;
};

// `truth` <= the bound <= `truth` widened by `events` events' steps (see above), plus two of
// the sketch's units (hh.SketchUnit()) for each of `adds`.
BoundOfTruth UpperBoundOf(long double truth, const HeavyHitters& hh, uint64_t events, int adds = 0);
// `truth` narrowed by `events` events' steps <= the bound <= `truth` (see above).
BoundOfTruth LowerBoundOf(long double truth, uint64_t events);

// Offset of the u64 count of roundings in a version-4 (to 6) HKHH buffer: after the magic (4),
// version (2), the options and times (u32 x3, u64, i64, u64, i64 x3: 60 bytes) and the f64
// totals and raw totals (32). Version 3 has no such field (everything after it is 8 bytes
// earlier). Builds that rounded their sums to nearest counted their roundings there; this
// one writes 0 and applies a saved count once when it loads it (heavy_hitters.cc).
inline constexpr size_t kRoundingsAt = 98;
// The largest count of roundings a saved tracker holds: the builds that counted settled it
// every 2^31 events, two roundings each.
inline constexpr uint64_t kMaxSavedRoundings = uint64_t{1} << 32;
// Offset of the f64 totals in a version-4 (or 3) HKHH buffer: total[read], then total[write].
inline constexpr size_t kTotalsAt = 66;

// Offset of the u32 entry count in a version-6 HKHH buffer: after the sketch (@106 u32 width,
// @14 u32 depth, @110 f64 scale, @118 u32 cells[width * depth]). The first entry follows it,
// 4 bytes on; serialize_test.cc draws the whole layout.
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
