// Tests for Serialize()/Deserialize() of CountMinSketch and HeavyHitters: round trips are
// exact (same figures, same bytes, same behaviour afterwards), and every malformed buffer
// is an error status, never a crash, a silent misread, or an allocation the buffer cannot
// justify: every truncation, every flipped bit (checksum), wrong magic, wrong version, and
// hand-made buffers whose checksum is valid but whose fields are absurd.
//
// Layouts (from sketch/count_min.cc and sketch/heavy_hitters.cc), little-endian:
//   common:  "HKCM"|"HKHH" (4) | u16 version | payload | u64 XXH3(body, kChecksumSeed)
//   HKCM:    @6 u32 width | @10 u32 depth | @14 f64 scale | @22 u32 cells[width * depth]
//   HKHH:    @6 u32 candidates | @10 u32 max_key_bytes | @14 u32 sketch_depth
//            | @18 u64 sketch_bytes | @26 i64 half_life_ns | @34 u64 seed | @42 i64 start_ns
//            | @50 i64 landmark_ns | @58 i64 now_ns | @66 f64 total[2] | @82 f64 raw_total[2]
//            | @98 u64 roundings | @106 u32 width | @110 f64 scale | @118 u32 cells
//            | u32 n | n entries:
//            +0 u64 hash | +8 f64 upper | +16 f64 weight[2] | +32 f64 raw[2]
//            | +48 i64 admitted_ns | +56 u8 truncated | +57 u32 key_len | +61 key bytes
//   (versions 7 and 6, whose width is the largest power of two the budget holds where 7's is
//   the most columns; version 5 has f64 counters[width * depth] at @110 instead of the scale and
//   cells, its width what the budget holds at 8 bytes a counter; version 4 adds a keyless
//   lobby after the entries, u32 lobby ways then ways of u64 hash | f64 upper; version 3 has
//   that lobby but no roundings field, so what follows it is 8 bytes earlier; version 2 has
//   neither)

#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <new>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "hotkey/sketch/count_min.h"
#include "hotkey/sketch/hash.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "test_util.h"

namespace hotkey::sketch {
using testing::Reload;
namespace {

using testing::KeyFor;
using testing::kMaxSavedRoundings;
using testing::kRoundingsAt;
using testing::LowerBoundOf;
using testing::Patch;
using testing::Peek;
using testing::Rechecksum;
using testing::ScopedAllocationLimit;
using testing::UpperBoundOf;

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------- count-min

CountMinSketch SmallCountMin() {
  absl::StatusOr<CountMinSketch> cms = CountMinSketch::Create(16, 3);
  REQUIRE(cms.ok());
  for (uint64_t i = 0; i < 200; ++i) cms->Update(HashKey(KeyFor(i), 1), 0.5f + (i % 7));
  return *std::move(cms);
}

TEST_CASE("CountMin: serialize round trip restores every counter", "[sketch][serialize]") {
  absl::StatusOr<CountMinSketch> cms = CountMinSketch::FromError(0.01, 0.01);
  REQUIRE(cms.ok());
  std::mt19937_64 gen(61);
  for (int i = 0; i < 100000; ++i) cms->Update(gen() % 5000, 1.0f + (gen() % 100) / 7.0f);
  const std::string bytes = cms->Serialize();
  CHECK(bytes.size() == 4 + 2 + 8 + 8 + cms->bytes() + 8);
  CHECK(cms->halvings() > 0);  // the scale moved: the round trip keeps it
  absl::StatusOr<CountMinSketch> back = CountMinSketch::Deserialize(bytes);
  REQUIRE(back.ok());
  CHECK(back->width() == cms->width());
  CHECK(back->depth() == cms->depth());
  CHECK(back->counters() == cms->counters());
  CHECK(back->scale() == cms->scale());
  for (uint64_t h = 0; h < 5000; ++h) REQUIRE(back->Estimate(h) == cms->Estimate(h));
  CHECK(back->Serialize() == bytes);
}

TEST_CASE("CountMin: truncated, flipped, wrong-magic and wrong-version buffers are rejected",
          "[sketch][serialize]") {
  const std::string good = SmallCountMin().Serialize();
  REQUIRE(CountMinSketch::Deserialize(good).ok());
  for (size_t len = 0; len < good.size(); ++len) {
    INFO("prefix of " << len << " bytes");
    REQUIRE_FALSE(CountMinSketch::Deserialize(good.substr(0, len)).ok());
  }
  CHECK_FALSE(CountMinSketch::Deserialize(good + '\0').ok());
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      INFO("byte " << i << " bit " << bit);
      REQUIRE_FALSE(CountMinSketch::Deserialize(bad).ok());
    }
  }
  std::string magic = good;
  magic[0] = 'X';
  Rechecksum(&magic);
  CHECK_FALSE(CountMinSketch::Deserialize(magic).ok());
  // Versions 1 and 2 (float and double counters) and unknown versions are refused, naming
  // the version.
  for (uint16_t v : {0, 1, 2, 4, 0xffff}) {
    std::string version = good;
    Patch<uint16_t>(&version, 4, v);
    Rechecksum(&version);
    const absl::Status s = CountMinSketch::Deserialize(version).status();
    INFO("version " << v << ": " << s);
    CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
    CHECK(std::string(s.message()).find("version " + std::to_string(v)) != std::string::npos);
  }
  // A heavy-hitters buffer is not a count-min buffer.
  absl::StatusOr<HeavyHitters> hh = HeavyHitters::Create(HeavyHittersOptions{}, kT0);
  REQUIRE(hh.ok());
  CHECK_FALSE(CountMinSketch::Deserialize(hh->Serialize()).ok());
}

TEST_CASE("CountMin: a checksummed buffer with absurd fields is rejected", "[sketch][serialize]") {
  const std::string good = SmallCountMin().Serialize();
  auto with = [&](auto edit) {
    std::string b = good;
    edit(&b);
    Rechecksum(&b);
    return CountMinSketch::Deserialize(b);
  };
  CHECK_FALSE(with([](std::string* b) { Patch<uint32_t>(b, 6, 15); }).ok());   // not 2^k
  CHECK_FALSE(with([](std::string* b) { Patch<uint32_t>(b, 6, 0); }).ok());    // width 0
  CHECK_FALSE(with([](std::string* b) { Patch<uint32_t>(b, 6, 8); }).ok());    // length
  CHECK_FALSE(with([](std::string* b) { Patch<uint32_t>(b, 6, 32); }).ok());   // length
  CHECK_FALSE(with([](std::string* b) { Patch<uint32_t>(b, 10, 0); }).ok());   // depth 0
  CHECK_FALSE(with([](std::string* b) { Patch<uint32_t>(b, 10, 17); }).ok());  // depth 17
  CHECK_FALSE(with([](std::string* b) { Patch<uint32_t>(b, 10, 2); }).ok());   // length
  // The scale (@14) must be a power of two in [kMinScale, kMaxScale].
  CHECK_FALSE(with([](std::string* b) { Patch<double>(b, 14, -1.0); }).ok());
  CHECK_FALSE(with([](std::string* b) { Patch<double>(b, 14, -0.0); }).ok());
  CHECK_FALSE(with([](std::string* b) { Patch<double>(b, 14, 0.0); }).ok());
  CHECK_FALSE(with([](std::string* b) { Patch<double>(b, 14, 3.0); }).ok());
  CHECK_FALSE(with([](std::string* b) { Patch<double>(b, 14, kNaN); }).ok());
  CHECK_FALSE(with([](std::string* b) { Patch<double>(b, 14, kInf); }).ok());
  CHECK_FALSE(with([](std::string* b) { Patch<double>(b, 14, 0x1p-1001); }).ok());
  CHECK_FALSE(with([](std::string* b) { Patch<double>(b, 14, 0x1p991); }).ok());
  // The same edits with a value in range are accepted: the cases above fail for the reason
  // named, not for a broken helper. Any cell is a valid count of units.
  CHECK(with([](std::string* b) { Patch<double>(b, 14, 4.0); }).ok());
  CHECK(with([](std::string* b) { Patch<double>(b, 14, CountMinSketch::kMaxScale); }).ok());
  CHECK(with([](std::string* b) { Patch<double>(b, 14, CountMinSketch::kMinScale); }).ok());
  CHECK(with([](std::string* b) { Patch<uint32_t>(b, 22, 0xffffffffu); }).ok());
}

TEST_CASE("CountMin: a buffer claiming a 4 GiB sketch is rejected without allocating it",
          "[sketch][serialize]") {
  // Width 2^26 and depth 16 are valid shapes, but the buffer carries no counters: the
  // length check must come before the 4 GiB of counters are allocated.
  std::string b = SmallCountMin().Serialize();
  Patch<uint32_t>(&b, 6, CountMinSketch::kMaxWidth);
  Patch<uint32_t>(&b, 10, CountMinSketch::kMaxDepth);
  Rechecksum(&b);
  std::string outcome;
  {
    ScopedAllocationLimit limit(64 << 20);
    try {
      outcome = CountMinSketch::Deserialize(b).ok() ? "accepted" : "rejected";
    } catch (const std::bad_alloc&) {
      outcome = "tried to allocate " + std::to_string(limit.largest_refused()) + " bytes";
    }
  }
  CHECK(outcome == "rejected");
}

// ------------------------------------------------------------------------ heavy hitters

HeavyHitters MustCreate(const HeavyHittersOptions& o) {
  absl::StatusOr<HeavyHitters> hh = HeavyHitters::Create(o, kT0);
  REQUIRE(hh.ok());
  return *std::move(hh);
}

// A busy tracker: Zipf keys, mixed ops, fractional weights, decay with fractional steps,
// long (truncated) keys, keys with odd bytes. Deterministic.
HeavyHitters BusyTracker(absl::Duration half_life, uint32_t candidates = 100) {
  HeavyHittersOptions o;
  o.half_life = half_life;
  o.candidates = candidates;
  o.max_key_bytes = 12;
  HeavyHitters hh = MustCreate(o);
  std::mt19937_64 gen(71);
  ZipfDistribution zipf(20000, 1.1);
  absl::Time t = kT0;
  for (int i = 0; i < 200000; ++i) {
    if (i % 1000 == 0) hh.Advance(t += absl::Milliseconds(137));
    const uint64_t r = zipf(gen);
    std::string key = KeyFor(r);
    if (r % 5 == 0) key += "-and-a-long-tail-" + std::to_string(r);
    if (r % 7 == 0) key.push_back('\0');
    const Op op = gen() % 10 < 3 ? Op::kWrite : Op::kRead;
    hh.Update(key, op, 1.0 + static_cast<double>(gen() % 4) * 0.25);
  }
  return hh;
}

void CheckSame(const HeavyHitters& a, const HeavyHitters& b) {
  CHECK(a.now() == b.now());
  CHECK(a.size() == b.size());
  CHECK(a.Total() == b.Total());
  CHECK(a.Total(Op::kWrite) == b.Total(Op::kWrite));
  CHECK(a.RawTotal(Op::kRead) == b.RawTotal(Op::kRead));
  CHECK(a.DecayedWindowSeconds() == b.DecayedWindowSeconds());
  CHECK(a.MemoryBytes() == b.MemoryBytes());
  const std::vector<HeavyHitter> ta = a.TopK(a.size()), tb = b.TopK(b.size());
  REQUIRE(ta.size() == tb.size());
  for (size_t i = 0; i < ta.size(); ++i) {
    INFO("rank " << i);
    REQUIRE(ta[i].key == tb[i].key);
    REQUIRE(ta[i].truncated == tb[i].truncated);
    REQUIRE(ta[i].hash == tb[i].hash);
    REQUIRE(ta[i].estimate == tb[i].estimate);
    REQUIRE(ta[i].lower_bound == tb[i].lower_bound);
    for (int o = 0; o < kNumOps; ++o) {
      REQUIRE(ta[i].weight[o] == tb[i].weight[o]);
      REQUIRE(ta[i].raw_weight[o] == tb[i].raw_weight[o]);
    }
    REQUIRE(ta[i].admitted == tb[i].admitted);
  }
  for (uint64_t id = 0; id < 30000; ++id) {
    const std::string key = KeyFor(id);
    REQUIRE(a.Estimate(key) == b.Estimate(key));
    REQUIRE(a.LowerBound(key) == b.LowerBound(key));
  }
}

TEST_CASE("HeavyHitters: serialize round trip keeps TopK, estimates and later updates",
          "[sketch][serialize]") {
  for (absl::Duration half_life : {absl::InfiniteDuration(), absl::Seconds(2)}) {
    INFO("half-life " << absl::FormatDuration(half_life));
    HeavyHitters original = BusyTracker(half_life);
    const std::string bytes = original.Serialize();
    absl::StatusOr<HeavyHitters> restored = Reload(bytes);
    INFO(restored.status());
    REQUIRE(restored.ok());
    CHECK(restored->options().candidates == original.options().candidates);
    CHECK(restored->options().half_life == original.options().half_life);
    CHECK(restored->options().seed == original.options().seed);
    CheckSame(original, *restored);
    CHECK(restored->Serialize() == bytes);

    // Both continue with the same events and stay identical, through evictions and decay.
    std::mt19937_64 gen(72);
    ZipfDistribution zipf(50000, 0.9);
    absl::Time t = original.now();
    for (int i = 0; i < 50000; ++i) {
      if (i % 500 == 0) {
        t += absl::Milliseconds(333);
        original.Advance(t);
        restored->Advance(t);
      }
      const std::string key = KeyFor(zipf(gen));
      const Op op = i % 4 ? Op::kRead : Op::kWrite;
      original.Update(key, op);
      restored->Update(key, op);
    }
    CheckSame(original, *restored);
    CHECK(restored->Serialize() == original.Serialize());
  }
}

TEST_CASE("HeavyHitters: a tracker restored at once round-trips when empty or full",
          "[sketch][serialize]") {
  HeavyHittersOptions o;
  o.candidates = 3;
  HeavyHitters empty = MustCreate(o);
  absl::StatusOr<HeavyHitters> back = Reload(empty.Serialize());
  REQUIRE(back.ok());
  CHECK(back->size() == 0);
  CHECK(back->Serialize() == empty.Serialize());
  HeavyHitters full = MustCreate(o);
  for (int i = 0; i < 10; ++i) full.Update(KeyFor(i), Op::kRead, i + 1);
  back = Reload(full.Serialize());
  REQUIRE(back.ok());
  CHECK(back->size() == 3);
  CheckSame(full, *back);
}

// A small tracker for the exhaustive corruption loops: 4 candidates (full, one truncated
// key, one empty key), a 2 x 8 sketch.
std::string SmallTrackerBytes() {
  HeavyHittersOptions o;
  o.candidates = 4;
  o.sketch_bytes = 128;  // 2 rows of 8 counters
  o.sketch_depth = 2;
  o.max_key_bytes = 8;
  o.half_life = absl::Seconds(5);
  HeavyHitters hh = MustCreate(o);
  hh.Advance(kT0 + absl::Seconds(3));
  for (int i = 0; i < 5; ++i) hh.Update("a-very-long-key", Op::kRead);
  for (int i = 0; i < 4; ++i) hh.Update("", Op::kWrite);
  for (int i = 0; i < 3; ++i) hh.Update("b", Op::kRead);
  for (int i = 0; i < 20; ++i) hh.Update(KeyFor(i), Op::kRead);
  hh.Advance(kT0 + absl::Seconds(4));
  REQUIRE(hh.size() == 4);
  return hh.Serialize();
}

TEST_CASE("HeavyHitters: every truncation of a serialised tracker is rejected",
          "[sketch][serialize]") {
  const std::string good = SmallTrackerBytes();
  REQUIRE(Reload(good).ok());
  for (size_t len = 0; len < good.size(); ++len) {
    INFO("prefix of " << len << " of " << good.size() << " bytes");
    REQUIRE_FALSE(Reload(good.substr(0, len)).ok());
  }
  CHECK_FALSE(Reload(good + "x").ok());
  CHECK_FALSE(Reload("").ok());
}

TEST_CASE("HeavyHitters: every flipped bit of a serialised tracker is rejected",
          "[sketch][serialize]") {
  const std::string good = SmallTrackerBytes();
  for (size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      INFO("byte " << i << " bit " << bit);
      REQUIRE_FALSE(Reload(bad).ok());
    }
  }
}

TEST_CASE("HeavyHitters: wrong magic and wrong version are rejected", "[sketch][serialize]") {
  const std::string good = SmallTrackerBytes();
  std::string magic = good;
  magic.replace(0, 4, "HKCM");
  Rechecksum(&magic);
  CHECK(Reload(magic).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_FALSE(Reload(SmallCountMin().Serialize()).ok());
  // Version 1 (float counters) and unknown versions are refused, naming the version (2,
  // without a lobby, 3, without a count of roundings, 4, 5, 6 and 7 are read).
  for (uint16_t v : {0, 1, 8, 0xffff}) {
    std::string version = good;
    Patch<uint16_t>(&version, 4, v);
    Rechecksum(&version);
    const absl::Status s = Reload(version).status();
    INFO("version " << v << ": " << s);
    CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
    CHECK(std::string(s.message()).find("version " + std::to_string(v)) != std::string::npos);
  }
}

TEST_CASE("HeavyHitters: checksummed buffers with absurd fields are rejected",
          "[sketch][serialize]") {
  const std::string good = SmallTrackerBytes();
  const size_t n_at = testing::EntryCountAt(good);  // u32 entry count
  const size_t e0 = n_at + 4;                       // first entry
  REQUIRE(Peek<uint32_t>(good, n_at) == 4);
  // Find an untruncated entry with a non-empty key, for the hash test.
  size_t plain = 0;
  for (size_t at = e0, i = 0; i < 4; ++i) {
    const uint32_t len = Peek<uint32_t>(good, at + 57);
    if (Peek<uint8_t>(good, at + 56) == 0 && len > 0 && plain == 0) plain = at;
    at += 61 + len;
  }
  REQUIRE(plain != 0);

  struct Case {
    const char* what;
    std::function<void(std::string*)> edit;
  };
  const int64_t start = Peek<int64_t>(good, 42);
  const std::vector<Case> cases = {
      {"0 candidates", [](std::string* b) { Patch<uint32_t>(b, 6, 0); }},
      {"fewer candidates than entries", [](std::string* b) { Patch<uint32_t>(b, 6, 3); }},
      {"too many candidates",
       [](std::string* b) { Patch<uint32_t>(b, 6, HeavyHitters::kMaxCandidates + 1); }},
      {"max_key_bytes 0", [](std::string* b) { Patch<uint32_t>(b, 10, 0); }},
      {"max_key_bytes shorter than a stored key",
       [](std::string* b) { Patch<uint32_t>(b, 10, 7); }},
      {"max_key_bytes too large",
       [](std::string* b) { Patch<uint32_t>(b, 10, HeavyHitters::kMaxKeyBytes + 1); }},
      {"sketch depth 0", [](std::string* b) { Patch<uint32_t>(b, 14, 0); }},
      {"sketch depth 17", [](std::string* b) { Patch<uint32_t>(b, 14, 17); }},
      {"sketch bytes 2^40", [](std::string* b) { Patch<uint64_t>(b, 18, uint64_t{1} << 40); }},
      {"sketch bytes too small", [](std::string* b) { Patch<uint64_t>(b, 18, 4); }},
      {"sketch bytes of another width", [](std::string* b) { Patch<uint64_t>(b, 18, 256); }},
      {"half-life 0", [](std::string* b) { Patch<int64_t>(b, 26, 0); }},
      {"half-life negative", [](std::string* b) { Patch<int64_t>(b, 26, -5); }},
      // The start is the first event's time, which may follow the landmark, never `now`.
      {"start after now",
       [&](std::string* b) { Patch<int64_t>(b, 42, Peek<int64_t>(good, 58) + 1); }},
      {"now before landmark", [&](std::string* b) { Patch<int64_t>(b, 58, start - 1); }},
      {"total NaN", [](std::string* b) { Patch<double>(b, 66, kNaN); }},
      {"total negative", [](std::string* b) { Patch<double>(b, 74, -1.0); }},
      {"raw total infinite", [](std::string* b) { Patch<double>(b, 82, kInf); }},
      // No tracker's value comes near 1e250 (kMaxLoaded in heavy_hitters.cc); one near
      // DBL_MAX would become +inf once widened by a saved count of roundings, or merged.
      {"total above 1e250", [](std::string* b) { Patch<double>(b, 66, 1e251); }},
      {"raw total DBL_MAX", [](std::string* b) { Patch<double>(b, 82, DBL_MAX); }},
      {"roundings above 2^32",
       [](std::string* b) { Patch<uint64_t>(b, kRoundingsAt, kMaxSavedRoundings + 1); }},
      {"sketch width mismatch", [](std::string* b) { Patch<uint32_t>(b, 106, 32); }},
      {"sketch scale negative", [](std::string* b) { Patch<double>(b, 110, -2.0); }},
      {"sketch scale -0", [](std::string* b) { Patch<double>(b, 110, -0.0); }},
      {"sketch scale 0", [](std::string* b) { Patch<double>(b, 110, 0.0); }},
      {"sketch scale NaN", [](std::string* b) { Patch<double>(b, 110, kNaN); }},
      {"sketch scale infinite", [](std::string* b) { Patch<double>(b, 110, kInf); }},
      {"sketch scale not a power of two", [](std::string* b) { Patch<double>(b, 110, 3.0); }},
      {"sketch scale past 1e250 / 2^32", [](std::string* b) { Patch<double>(b, 110, 0x1p800); }},
      {"sketch scale below kMinScale", [](std::string* b) { Patch<double>(b, 110, 0x1p-1001); }},
      {"more entries than candidates", [&](std::string* b) { Patch<uint32_t>(b, n_at, 5); }},
      {"entry count beyond the buffer",
       [&](std::string* b) { Patch<uint32_t>(b, n_at, 0xffffffffu); }},
      {"fewer entries than stored (trailing bytes)",
       [&](std::string* b) { Patch<uint32_t>(b, n_at, 3); }},
      {"entry upper NaN", [&](std::string* b) { Patch<double>(b, e0 + 8, kNaN); }},
      {"entry upper below its weight", [&](std::string* b) { Patch<double>(b, e0 + 8, 0.5); }},
      {"entry weight negative", [&](std::string* b) { Patch<double>(b, e0 + 16, -1.0); }},
      {"entry raw weight infinite", [&](std::string* b) { Patch<double>(b, e0 + 40, kInf); }},
      {"entry upper DBL_MAX", [&](std::string* b) { Patch<double>(b, e0 + 8, DBL_MAX); }},
      {"entry truncated flag 2", [&](std::string* b) { Patch<uint8_t>(b, e0 + 56, 2); }},
      {"entry key_len beyond max_key_bytes",
       [&](std::string* b) { Patch<uint32_t>(b, e0 + 57, 9); }},
      {"entry key_len beyond the buffer",
       [&](std::string* b) { Patch<uint32_t>(b, e0 + 57, 0x7fffffffu); }},
      {"entry hash does not match its key",
       [&](std::string* b) { Patch<uint64_t>(b, plain, Peek<uint64_t>(*b, plain) ^ 1); }},
      {"untruncated entry marked truncated",
       [&](std::string* b) { Patch<uint8_t>(b, plain + 56, 1); }},
      {"duplicate entry",
       [&](std::string* b) {
         // Append a copy of the untruncated entry (raise candidates to make room for it).
         const uint32_t len = Peek<uint32_t>(*b, plain + 57);
         const std::string entry = b->substr(plain, 61 + len);
         b->insert(b->size() - 8, entry);
         Patch<uint32_t>(b, n_at, 5);
         Patch<uint32_t>(b, 6, 5);
       }},
  };
  for (const Case& c : cases) {
    std::string b = good;
    c.edit(&b);
    Rechecksum(&b);
    const absl::Status s = Reload(b).status();
    INFO(c.what << ": " << s);
    CHECK_FALSE(s.ok());
  }
  // Control: a benign edit of the same kind is accepted.
  std::string ok = good;
  Patch<uint32_t>(&ok, 6, 9);  // more candidates than entries is fine
  Rechecksum(&ok);
  CHECK(Reload(ok).ok());
  // So is a total of 1e250 exactly, and it reads as finite.
  std::string large = good;
  Patch<double>(&large, 66, 1e250);
  Rechecksum(&large);
  absl::StatusOr<HeavyHitters> loaded = Reload(large);
  REQUIRE(loaded.ok());
  CHECK(std::isfinite(loaded->Total()));
  CHECK(loaded->Total() > 1e240);  // 1e250 decayed to the tracker's clock
}

// A tracker created at `t` (half-life 1 s) and fed a few keys, saved with its totals and its
// first entry's upper bound at 1e250, the most Deserialize() takes (kMaxLoaded in
// heavy_hitters.cc), and its count of roundings at 2^32, the most a load widens by; loaded.
HeavyHitters LoadedAtLimit(absl::Time t) {
  HeavyHittersOptions o;
  o.candidates = 4;
  o.half_life = absl::Seconds(1);
  absl::StatusOr<HeavyHitters> hh = HeavyHitters::Create(o, t);
  REQUIRE(hh.ok());
  for (int i = 0; i < 12; ++i) hh->Update(KeyFor(i % 6), i % 2 ? Op::kRead : Op::kWrite, 1 + i);
  std::string b = hh->Serialize();
  Patch<double>(&b, testing::kTotalsAt, 1e250);
  Patch<double>(&b, testing::kTotalsAt + 8, 1e250);
  Patch<uint64_t>(&b, kRoundingsAt, kMaxSavedRoundings);
  const size_t e0 = testing::EntryCountAt(b) + 4;
  REQUIRE(Peek<uint32_t>(b, e0 - 4) == 4);
  Patch<double>(&b, e0 + 8, 1e250);  // its upper bound, far above its weights
  Rechecksum(&b);
  absl::StatusOr<HeavyHitters> loaded = Reload(b);
  REQUIRE(loaded.ok());
  REQUIRE(loaded->TopK(1)[0].estimate > 1e250);  // widened by 2^-21 when loaded
  return *std::move(loaded);
}

TEST_CASE("HeavyHitters: a loaded tracker at the 1e250 limit merges and reads finite",
          "[sketch][serialize][merge]") {
  // kMaxLoaded leaves room for what follows a load: the load widens a value by 2^-21 at
  // most (a saved count of roundings), Total() adds two, and Merge() scales the other tracker's
  // values by up to 2^40 (its landmark up to 40 half-lives later) and adds them. Both ways round,
  // at the limit on both sides, and against a fresh tracker.
  const absl::Time late = kT0 + absl::Seconds(40);  // 40 half-lives
  const HeavyHitters early_loaded = LoadedAtLimit(kT0), late_loaded = LoadedAtLimit(late);
  HeavyHitters late_fresh = HeavyHitters::Create(early_loaded.options(), late).value();
  late_fresh.Update("fresh", Op::kRead, 5);

  auto check_finite = [](const HeavyHitters& hh) {
    CHECK(std::isfinite(hh.Total()));
    CHECK(std::isfinite(hh.Total(Op::kRead)));
    CHECK(std::isfinite(hh.Total(Op::kWrite)));
    CHECK(hh.Total() > 1e200);
    for (const HeavyHitter& h : hh.TopK(hh.size())) {
      INFO(h.key);
      CHECK(std::isfinite(h.estimate));
      CHECK(std::isfinite(h.lower_bound));
      CHECK(std::isfinite(hh.UpperBound(h.key)));
    }
    CHECK(std::isfinite(hh.UpperBound("never-seen")));
  };
  struct Case {
    const char* what;
    const HeavyHitters& into;
    const HeavyHitters& other;
  };
  const HeavyHitters early_fresh = HeavyHitters::Create(early_loaded.options(), kT0).value();
  for (const Case& c : {
           Case{"early loaded <- late loaded (scale 2^40)", early_loaded, late_loaded},
           Case{"late loaded <- early loaded (scale 2^-40)", late_loaded, early_loaded},
           Case{"early fresh <- late loaded (scale 2^40)", early_fresh, late_loaded},
           Case{"early loaded <- late fresh (scale 2^40)", early_loaded, late_fresh},
       }) {
    INFO(c.what);
    HeavyHitters merged = c.into;
    REQUIRE(merged.Merge(c.other).ok());
    check_finite(merged);
    // And it goes on: an event, then the clock past the rescale.
    merged.Update("after", Op::kWrite, HeavyHitters::kMaxWeight);
    merged.Advance(late + absl::Seconds(1));
    check_finite(merged);
  }
}

TEST_CASE("HeavyHitters: a count of roundings above 2^32 is rejected", "[sketch][serialize]") {
  // The builds that counted their roundings settled them every 2^31 events (2^32
  // roundings): a larger count was not written by one.
  const std::string good = SmallTrackerBytes();
  auto with_roundings = [&](uint64_t r) {
    std::string b = good;
    Patch<uint64_t>(&b, kRoundingsAt, r);
    Rechecksum(&b);
    return Reload(b);
  };
  for (uint64_t r : {kMaxSavedRoundings + 1, uint64_t{1} << 63, ~uint64_t{0}}) {
    const absl::Status s = with_roundings(r).status();
    INFO(r << " roundings: " << s);
    CHECK_FALSE(s.ok());
    CHECK(std::string(s.message()).find("rounding count") != std::string::npos);
  }
  // Controls: 2^32 itself is a count a tracker could reach, and an odd count loads too.
  CHECK(with_roundings(kMaxSavedRoundings).ok());
  CHECK(with_roundings(3).ok());
}

TEST_CASE("HeavyHitters: a round trip saves no count of roundings and reads the same",
          "[sketch][serialize]") {
  HeavyHitters hh = BusyTracker(absl::Seconds(2));
  const std::string bytes = hh.Serialize();
  CHECK(Peek<uint64_t>(bytes, kRoundingsAt) == 0);
  absl::StatusOr<HeavyHitters> back = Reload(bytes);
  REQUIRE(back.ok());
  // Every figure read is the same (CheckSame), not only close, and so are the bytes saved.
  CheckSame(hh, *back);
  CHECK(back->Serialize() == bytes);
  hh.Update("one more", Op::kWrite);
  back->Update("one more", Op::kWrite);
  CheckSame(hh, *back);
}

TEST_CASE("HeavyHitters: a saved count of roundings widens every stored value once, at load",
          "[sketch][serialize]") {
  // A build that rounded its sums to nearest saved R, the roundings since it last widened its
  // values; this one loads its values widened once by keep = 1 - R * 2^-53 (the upper ones
  // divided by it, rounding up, the lower ones multiplied), and saves them with no count, so
  // a second round trip widens nothing more. At R = 2^32, keep = 1 - 2^-21.
  const HeavyHitters hh = BusyTracker(absl::Seconds(2));
  std::string bytes = hh.Serialize();
  Patch<uint64_t>(&bytes, kRoundingsAt, kMaxSavedRoundings);
  Rechecksum(&bytes);
  absl::StatusOr<HeavyHitters> back = Reload(bytes);
  REQUIRE(back.ok());
  // 1 / keep is 1 + 2^-21 + 2^-42 + ...; a read's own roundings are far below 2^-22.
  auto widened_up = [](double got, double was) {
    return got >= was * (1 + 0x1p-21) && got <= was * (1 + 0x1p-20);
  };
  auto widened_down = [](double got, double was) {
    return got <= was * (1 - 0x1p-21) * (1 + 0x1p-50) && got >= was * (1 - 0x1p-20);
  };
  CHECK(widened_up(back->Total(), hh.Total()));
  CHECK(widened_up(back->Total(Op::kWrite), hh.Total(Op::kWrite)));
  // Counts, not bounds: as saved.
  CHECK(back->RawTotal(Op::kRead) == hh.RawTotal(Op::kRead));
  REQUIRE(back->size() == hh.size());
  // The table, by hash (some keys are truncated: their stored bytes name another key).
  absl::flat_hash_map<uint64_t, HeavyHitter> before;
  hh.ForEach([&](const HeavyHitter& h) { before[h.hash] = h; });
  back->ForEach([&](const HeavyHitter& h) {
    INFO(h.key);
    REQUIRE(before.contains(h.hash));
    const HeavyHitter& was = before[h.hash];
    CHECK(widened_up(h.estimate, was.estimate));
    CHECK(widened_down(h.lower_bound, was.lower_bound));
    CHECK(h.raw_weight[0] == was.raw_weight[0]);
  });
  // Keys outside the table: the sketch's cells are widened too (then rounded up to units).
  for (int i = 0; i < 20000; i += 37) {
    const std::string k = KeyFor(i);
    if (hh.LowerBound(k) > 0) continue;
    INFO(k);
    CHECK(back->UpperBound(k) >= hh.UpperBound(k) * (1 + 0x1p-21));
  }
  // Once: saved again with no count, it loads as it was.
  const std::string again = back->Serialize();
  CHECK(Peek<uint64_t>(again, kRoundingsAt) == 0);
  absl::StatusOr<HeavyHitters> twice = Reload(again);
  REQUIRE(twice.ok());
  CheckSame(*back, *twice);
}

// `v6` (a version-6 buffer) as version 5 saved its sketch: f64 counters, as many as the
// budget holds at 8 bytes each. Counter j of a row is the largest value of the row's cells
// whose column is j under the narrower mask, so every key's counters hold at least its
// cells' values (and load back to them exactly when the budget held the same width).
std::string AsVersion5(const std::string& v6) {
  const uint32_t depth = Peek<uint32_t>(v6, 14);
  const uint64_t budget = Peek<uint64_t>(v6, 18);
  const uint32_t width = Peek<uint32_t>(v6, 106);
  const double scale = Peek<double>(v6, 110);
  const uint32_t old_width = static_cast<uint32_t>(std::bit_floor(
      std::min<uint64_t>(budget / depth / sizeof(double), CountMinSketch::kMaxWidth)));
  REQUIRE(old_width <= width);
  std::string sketch(4 + size_t{old_width} * depth * sizeof(double), '\0');
  Patch<uint32_t>(&sketch, 0, old_width);
  for (uint32_t r = 0; r < depth && old_width > 0; ++r) {
    for (uint32_t c = 0; c < width; ++c) {
      const double v = Peek<uint32_t>(v6, 118 + 4 * (size_t{r} * width + c)) * scale;
      const size_t at = 4 + 8 * (size_t{r} * old_width + (c & (old_width - 1)));
      Patch<double>(&sketch, at, std::max(v, Peek<double>(sketch, at)));
    }
  }
  const size_t end = 118 + 4 * size_t{width} * depth;
  std::string v5 = v6.substr(0, 106) + sketch + v6.substr(end);
  Patch<uint16_t>(&v5, 4, 5);
  Rechecksum(&v5);
  return v5;
}

// `v6` (a version-6 buffer) as an older version: `version` 5, or 4 or 3 with a lobby of
// `ways` (4 a bucket) appended after the entries; version 3 without the count of roundings.
std::string AsOlderVersion(const std::string& v6, uint16_t version,
                           const std::vector<std::pair<uint64_t, double>>& ways) {
  std::string v5 = AsVersion5(v6);
  if (version == 5) return v5;
  v5.resize(v5.size() - 8);  // the checksum
  if (version == 3) v5.erase(kRoundingsAt, 8);
  Patch<uint16_t>(&v5, 4, version);
  const uint32_t n = static_cast<uint32_t>((ways.size() + 3) / 4 * 4);
  std::string lobby(4 + 16 * size_t{n}, '\0');
  Patch<uint32_t>(&lobby, 0, n);
  for (size_t i = 0; i < ways.size(); ++i) {
    Patch<uint64_t>(&lobby, 4 + 16 * i, ways[i].first);
    Patch<double>(&lobby, 4 + 16 * i + 8, ways[i].second);
  }
  v5 += lobby;
  v5.append(8, '\0');
  Rechecksum(&v5);
  return v5;
}

TEST_CASE("HeavyHitters: a version-6 sketch narrower than the budget now holds keeps every bound",
          "[sketch][serialize]") {
  // 1,200 bytes over 3 rows: version 7 saves 100 columns, version 6 saved 64 (the largest power
  // of two). The two widths map keys to unrelated columns, so each loaded cell takes its row's
  // largest: every key then reads at least what it read before.
  HeavyHittersOptions o;
  o.candidates = 4;
  o.sketch_bytes = 1200;
  o.sketch_depth = 3;
  o.half_life = absl::InfiniteDuration();
  HeavyHitters hh = MustCreate(o);
  for (int r = 0; r < 20; ++r) {
    for (int i = 0; i < 300; ++i) hh.Update(KeyFor(i), Op::kRead, 1 + (i % 7 == 0) * r);
  }
  const std::string v7 = hh.Serialize();
  REQUIRE(Peek<uint16_t>(v7, 4) == 7);
  REQUIRE(Peek<uint32_t>(v7, 106) == 100);
  // The same tracker as version 6 saved it: 64 columns, each row's cells its largest in v7,
  // which bounds every key that v7's row bounded.
  const uint32_t old_width = 64;
  std::string sketch(4 + 8 + size_t{old_width} * 3 * 4, '\0');
  Patch<uint32_t>(&sketch, 0, old_width);
  Patch<double>(&sketch, 4, Peek<double>(v7, 110));
  for (uint32_t r = 0; r < 3; ++r) {
    uint32_t largest = 0;
    for (uint32_t c = 0; c < 100; ++c) {
      largest = std::max(largest, Peek<uint32_t>(v7, 118 + 4 * (size_t{r} * 100 + c)));
    }
    for (uint32_t c = 0; c < old_width; ++c) {
      Patch<uint32_t>(&sketch, 12 + 4 * (size_t{r} * old_width + c), largest);
    }
  }
  std::string v6 = v7.substr(0, 106) + sketch + v7.substr(118 + 4 * 300);
  Patch<uint16_t>(&v6, 4, 6);
  Rechecksum(&v6);
  absl::StatusOr<HeavyHitters> back = Reload(v6);
  INFO(back.status());
  REQUIRE(back.ok());
  for (int i = 0; i < 300; ++i) {
    INFO("key " << i);
    CHECK(back->UpperBound(KeyFor(i)) >= hh.UpperBound(KeyFor(i)));
    CHECK(back->LowerBound(KeyFor(i)) == hh.LowerBound(KeyFor(i)));
  }
  CHECK(back->Total() == hh.Total());
  const std::string again = back->Serialize();
  CHECK(Peek<uint16_t>(again, 4) == 7);
  CHECK(Peek<uint32_t>(again, 106) == 100);
  // Saved again, it holds the width version 7 gives the budget.
  CHECK(again.size() == v7.size());
}

TEST_CASE("HeavyHitters: a version-3 buffer loads with no roundings to count",
          "[sketch][serialize]") {
  // A version-3 tracker rounded every sum outward, so its values are bounds as saved, as
  // this build's are: a buffer of this build without the count of roundings (0 here), with
  // an empty lobby, is one.
  HeavyHittersOptions o;
  o.candidates = 4;
  o.sketch_bytes = 256;
  o.half_life = absl::InfiniteDuration();
  HeavyHitters hh = MustCreate(o);
  // Four keys admitted at their first event (the table has room) and heavier than the 30
  // others, which share the sketch.
  for (int r = 0; r < 50; ++r) {
    for (int i = 0; i < 4; ++i) hh.Update(KeyFor(i), Op::kRead, 2);
  }
  for (int r = 0; r < 3; ++r) {
    for (int i = 4; i < 34; ++i) hh.Update(KeyFor(i), Op::kWrite, 1);
  }
  const std::string v6 = hh.Serialize();
  absl::StatusOr<HeavyHitters> back = Reload(AsOlderVersion(v6, 3, {}));
  INFO(back.status());
  REQUIRE(back.ok());
  // Everything but the sketch is as saved; the sketch is twice as wide as version 3's
  // (4-byte cells), every key reading what its counters held.
  const std::string again = back->Serialize();
  CHECK(Peek<uint32_t>(again, 106) == Peek<uint32_t>(v6, 106));
  CHECK(again.substr(0, 106) == v6.substr(0, 106));
  const size_t again_at = testing::EntryCountAt(again), v6_at = testing::EntryCountAt(v6);
  CHECK(again.substr(again_at, again.size() - again_at - 8) ==
        v6.substr(v6_at, v6.size() - v6_at - 8));
  // Nothing to widen: the table's bounds read as hh's, within its 290 events' steps of the
  // truth (plus the sketch's units the keys were admitted with).
  CHECK(back->Total() == hh.Total());
  CHECK_THAT(back->Total(), UpperBoundOf(4 * 100 + 30 * 3, hh, 290));
  for (int i = 0; i < 4; ++i) {
    INFO(KeyFor(i));
    CHECK(back->UpperBound(KeyFor(i)) == hh.UpperBound(KeyFor(i)));
    CHECK(back->LowerBound(KeyFor(i)) == hh.LowerBound(KeyFor(i)));
    CHECK_THAT(back->UpperBound(KeyFor(i)), UpperBoundOf(100, hh, 50, 1));
    CHECK_THAT(back->LowerBound(KeyFor(i)), LowerBoundOf(100, 50));
  }
  for (int i = 4; i < 34; ++i) {
    INFO(KeyFor(i));
    CHECK(back->UpperBound(KeyFor(i)) >= 3);
    // Version 3's narrower sketch held the larger of two columns: at least hh's cells.
    CHECK(back->UpperBound(KeyFor(i)) * (1 + 0x1p-40) >= hh.UpperBound(KeyFor(i)));
  }
}

TEST_CASE("HeavyHitters: a version-5 buffer loads into a sketch of twice its width",
          "[sketch][serialize]") {
  // Version 5 saved double counters: a 32 KiB budget held 1024 columns a row where 4-byte
  // cells hold 2048. Each saved column fills both of its images, so every key, in the table
  // or not, reads at least what it read, and the table is as saved.
  HeavyHittersOptions o;
  o.candidates = 8;
  o.sketch_bytes = 32 * 1024;
  o.sketch_depth = 4;
  o.half_life = absl::Seconds(2);
  HeavyHitters hh = MustCreate(o);
  std::mt19937_64 gen(5);
  for (int i = 0; i < 20000; ++i) {
    hh.Update(KeyFor(gen() % 3000), Op::kRead, 1 + (gen() % 3));
    if (i % 1000 == 0) hh.Advance(kT0 + absl::Milliseconds(i / 10));
  }
  const std::string v6 = hh.Serialize();
  const std::string v5 = AsOlderVersion(v6, 5, {});
  REQUIRE(Peek<uint32_t>(v5, 106) * 2 == Peek<uint32_t>(v6, 106));
  absl::StatusOr<HeavyHitters> back = Reload(v5);
  INFO(back.status());
  REQUIRE(back.ok());
  CHECK(back->Total() == hh.Total());
  CHECK(back->size() == hh.size());
  for (int i = 0; i < 3000; ++i) {
    const std::string k = KeyFor(i);
    INFO(k);
    REQUIRE(back->UpperBound(k) >= hh.UpperBound(k));
    REQUIRE(back->LowerBound(k) == hh.LowerBound(k));
  }
  // It goes on as a version-6 tracker.
  back->Update("after", Op::kWrite, 2);
  CHECK(Reload(back->Serialize()).ok());
}

TEST_CASE("HeavyHitters: a version-5 buffer whose budget held no counter is refused",
          "[sketch][serialize]") {
  // 16 bytes over 4 rows hold one 4-byte cell a row, but no 8-byte counter: no version-5
  // tracker had that budget, and a buffer claiming one (width 0) is corrupt.
  HeavyHittersOptions o;
  o.candidates = 2;
  o.sketch_bytes = 16;
  o.sketch_depth = 4;
  HeavyHitters hh = MustCreate(o);
  hh.Update("a", Op::kRead);
  const std::string v5 = AsOlderVersion(hh.Serialize(), 5, {});
  REQUIRE(Peek<uint32_t>(v5, 106) == 0);
  CHECK(Reload(v5).status().code() == absl::StatusCode::kDataLoss);
  CHECK(Reload(hh.Serialize()).ok());
}

TEST_CASE("HeavyHitters: a lobby saved by version 3 or 4 is handed to the sketch",
          "[sketch][serialize]") {
  // Versions 3 and 4 kept a keyless lobby: each used way an upper bound on the keys of its
  // hash outside the table. Loaded, the sketch takes each bound over, so UpperBound() of
  // such a key is at least its way's, and keys of the table keep theirs.
  HeavyHittersOptions o;
  o.candidates = 2;
  o.sketch_bytes = 1024;
  o.half_life = absl::InfiniteDuration();
  HeavyHitters hh = MustCreate(o);
  for (int n = 0; n < 10; ++n) {
    hh.Update(KeyFor(0), Op::kRead);
    hh.Update(KeyFor(1), Op::kRead);
  }
  const std::vector<std::pair<uint64_t, double>> ways = {
      {HashKey(KeyFor(7), o.seed), 9}, {0, 0}, {HashKey(KeyFor(8), o.seed), 4}};
  for (uint16_t version : {3, 4}) {
    INFO("version " << version);
    absl::StatusOr<HeavyHitters> back = Reload(AsOlderVersion(hh.Serialize(), version, ways));
    INFO(back.status());
    REQUIRE(back.ok());
    CHECK(back->UpperBound(KeyFor(7)) >= 9);
    CHECK(back->UpperBound(KeyFor(8)) >= 4);
    CHECK(back->LowerBound(KeyFor(7)) == 0);
    // Key 0 is still in the table, with both bounds around its 10 events.
    CHECK(back->UpperBound(KeyFor(0)) >= 10);
    CHECK(back->LowerBound(KeyFor(0)) <= 10);
    CHECK(back->LowerBound(KeyFor(0)) > 0);
    // Saved again, it is version 7: no lobby.
    CHECK(Peek<uint16_t>(back->Serialize(), 4) == 7);
  }
  // A free way (bound 0) that holds a hash, a negative bound, and a lobby of the wrong
  // length are refused.
  for (const auto& bad : std::vector<std::vector<std::pair<uint64_t, double>>>{
           {{1234, 0}}, {{HashKey(KeyFor(7), o.seed), -1}}}) {
    CHECK_FALSE(Reload(AsOlderVersion(hh.Serialize(), 4, bad)).ok());
  }
  std::string short_lobby = AsOlderVersion(hh.Serialize(), 4, ways);
  short_lobby.erase(short_lobby.size() - 8 - 16, 16);
  Rechecksum(&short_lobby);
  CHECK_FALSE(Reload(short_lobby).ok());
}

// Deserialize(b) under a per-allocation limit: "rejected", "accepted", or what it tried to
// allocate beyond the limit.
std::string DeserializeWithinLimit(const std::string& b, size_t limit_bytes) {
  ScopedAllocationLimit limit(limit_bytes);
  try {
    return Reload(b).ok() ? "accepted" : "rejected";
  } catch (const std::bad_alloc&) {
    return "tried to allocate " + std::to_string(limit.largest_refused()) + " bytes";
  }
}

TEST_CASE("HeavyHitters: a buffer claiming a 4 GiB sketch is rejected without allocating it",
          "[sketch][serialize]") {
  // 2^32 sketch bytes over 16 rows is a valid budget (a 2^25 x 16 sketch), but the buffer
  // holds a 2 x 8 sketch: the counters' absence must be seen before they are allocated.
  std::string b = SmallTrackerBytes();
  Patch<uint32_t>(&b, 14, 16);
  Patch<uint64_t>(&b, 18, uint64_t{1} << 32);
  Rechecksum(&b);
  CHECK(DeserializeWithinLimit(b, 64 << 20) == "rejected");
}

TEST_CASE(
    "HeavyHitters: a buffer claiming a 64 GiB key table is rejected without "
    "allocating it",
    "[sketch][serialize]") {
  // 2^20 candidates of 2^16 key bytes each passed HeavyHittersOptions::Validate(), so
  // Create() -- and Deserialize() of a 500-byte buffer -- allocated 64 GiB of key table.
  // Validate() now bounds their product (kMaxTableBytes).
  std::string b = SmallTrackerBytes();
  Patch<uint32_t>(&b, 6, HeavyHitters::kMaxCandidates);
  Patch<uint32_t>(&b, 10, HeavyHitters::kMaxKeyBytes);
  Rechecksum(&b);
  CHECK(DeserializeWithinLimit(b, 256 << 20) == "rejected");
}

TEST_CASE("HeavyHitters: weights beyond float range leave a tracker that still round-trips",
          "[sketch][serialize]") {
  // A weight above FLT_MAX, or DBL_MAX, (or one that the decay factor pushes above it) must
  // not turn a counter or an entry into +inf, which Deserialize() (rightly) refuses.
  // Weights are capped at kMaxWeight.
  HeavyHittersOptions o;
  o.candidates = 2;
  HeavyHitters hh = MustCreate(o);
  hh.Update("a", Op::kRead, 1e39);
  hh.Update("b", Op::kRead, 5);
  hh.Update("c", Op::kRead, 1e300);
  hh.Update("d", Op::kWrite, 1);
  CHECK(std::isfinite(hh.Estimate("a")));
  CHECK(std::isfinite(hh.Estimate("c")));
  CHECK(std::isfinite(hh.Estimate("zzz")));
  CHECK(Reload(hh.Serialize()).ok());
}

}  // namespace
}  // namespace hotkey::sketch

namespace hotkey::sketch {
namespace {

TEST_CASE(
    "HeavyHitters: a state saved more than 40 half-lives after its landmark restores decayed right",
    "[sketch][serialize]") {
  // The saved clock may be far past the landmark (a crafted or very old buffer). Deserialize
  // must load every value against the saved landmark before it moves the clock, or the
  // rescale would act on half-loaded state.
  HeavyHittersOptions o;
  o.half_life = absl::Seconds(1);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  HeavyHitters hh = HeavyHitters::Create(o, t0).value();
  hh.Update("a", Op::kRead, 8);
  hh.Update("b", Op::kWrite, 2);
  std::string b = hh.Serialize();
  // now_ns sits after magic(4) version(2) candidates(4) key bytes(4) depth(4) sketch
  // bytes(8) half-life(8) seed(8) start(8) landmark(8).
  testing::Patch<int64_t>(&b, 58, absl::ToUnixNanos(t0 + absl::Seconds(50)));
  testing::Rechecksum(&b);
  absl::StatusOr<HeavyHitters> back = Reload(b);
  REQUIRE(back.ok());
  const double decay = std::exp2(-50.0);
  CHECK(back->Estimate("a") == Approx(8 * decay).epsilon(1e-6));
  CHECK(back->Total() == Approx(10 * decay).epsilon(1e-6));
  CHECK(back->Total(Op::kWrite) == Approx(2 * decay).epsilon(1e-6));
}

}  // namespace
}  // namespace hotkey::sketch
