// libFuzzer target: HeavyHitters::Deserialize and CountMinSketch::Deserialize
// (sketch/heavy_hitters.h, count_min.h) over arbitrary bytes.
//
// Input: byte 0 is a mode. Bit 0 picks the structure (0 heavy hitters, 1 count-min). Bit 1
// rewrites the last 8 bytes as the right checksum first: without it nearly every mutation
// stops at the checksum, and the parser behind it is what needs fuzzing. The rest is the
// buffer. Seeds: fuzz/corpus/fuzz_deserialize/, made by fuzz/make_deserialize_seeds.cc.
//
// When a buffer is accepted, the result is exercised: TopK bounds are ordered and finite;
// Serialize() then Deserialize() then Serialize() is a fixed point (a count-min sketch
// re-serialises to exactly the input); updates, a decay rescale, a reload placed on an
// earlier clock and a merge with a copy keep the tracker valid and serialisable. A tracker
// is first placed at the clock it was saved with (the i64 at offset 58 of its buffer).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "hotkey/sketch/count_min.h"
#include "hotkey/sketch/hash.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace hotkey::fuzz {

namespace {

// The seed of byte_io.cc's checksum ("checksum" in ASCII): a format constant.
constexpr uint64_t kChecksumSeed = 0x636865636b73756dULL;

void FixChecksum(std::string& buf) {
  if (buf.size() < sizeof(uint64_t)) return;
  const size_t body = buf.size() - sizeof(uint64_t);
  const uint64_t sum = sketch::HashKey(std::string_view(buf).substr(0, body), kChecksumSeed);
  std::memcpy(buf.data() + body, &sum, sizeof sum);
}

// The clock saved in a heavy-hitters buffer (offset 58: magic, version, options, start and
// landmark before it), or the Unix epoch for a buffer too short to hold one.
absl::Time SavedClock(std::string_view buf) {
  int64_t ns = 0;
  if (buf.size() >= 58 + sizeof ns) std::memcpy(&ns, buf.data() + 58, sizeof ns);
  return absl::FromUnixNanos(ns);
}

void CheckTopK(const sketch::HeavyHitters& hh) {
  FUZZ_CHECK(hh.size() <= hh.options().candidates);
  FUZZ_CHECK(std::isfinite(hh.Total()) && hh.Total() >= 0);
  const std::vector<sketch::HeavyHitter> top = hh.TopK(hh.size() + 1);
  FUZZ_CHECK(top.size() == hh.size());
  for (size_t i = 0; i < top.size(); ++i) {
    const sketch::HeavyHitter& h = top[i];
    FUZZ_CHECK(h.key.size() <= hh.options().max_key_bytes);
    FUZZ_CHECK(std::isfinite(h.estimate) && h.estimate >= 0);
    FUZZ_CHECK(std::isfinite(h.lower_bound) && h.lower_bound >= 0);
    FUZZ_CHECK(h.lower_bound <= h.estimate * (1 + 1e-6) + 1e-300);
    if (i > 0) FUZZ_CHECK(top[i - 1].estimate >= h.estimate);
  }
}

// Serialize -> Deserialize -> Serialize gives the same bytes.
void CheckRoundTrip(const sketch::HeavyHitters& hh) {
  const std::string once = hh.Serialize();
  absl::StatusOr<sketch::HeavyHitters> back = sketch::HeavyHitters::Deserialize(once, hh.now());
  FUZZ_CHECK_OK(back);
  FUZZ_CHECK(back->Serialize() == once);
}

void FuzzHeavyHitters(std::string_view buf) {
  absl::StatusOr<sketch::HeavyHitters> hh = sketch::HeavyHitters::Deserialize(buf, SavedClock(buf));
  if (!hh.ok()) return;
  CheckTopK(*hh);
  CheckRoundTrip(*hh);
  // Deserialize takes values up to 1e250, which no stream reaches (an event adds at most
  // about 1.1e27). A hostile total or bound near that limit can pass it after the updates
  // and the merge below (whose sums round up), and would then be refused on reload: stop.
  double largest = hh->Total();
  for (const sketch::HeavyHitter& h : hh->TopK(hh->size())) largest = std::max(largest, h.estimate);
  if (largest > 1e240) return;

  // Another tracker of the same options, fed small weights: merging it exercises the
  // union of tables and the landmark scaling. (Merging the input with itself would double
  // hostile counters near FLT_MAX into inf, which no real stream reaches: event weights are
  // capped at kMaxWeight and counters rescale every kRescaleExponent half-lives.)
  absl::StatusOr<sketch::HeavyHitters> other =
      sketch::HeavyHitters::Create(hh->options(), hh->now());
  FUZZ_CHECK_OK(other);
  const std::string long_key(hh->options().max_key_bytes + 5, 'k');
  for (const std::string_view key :
       {std::string_view("a"), std::string_view(""), std::string_view(long_key)}) {
    hh->Update(key, sketch::Op::kWrite, 2.5);
    other->Update(key, sketch::Op::kRead, 1.5);
    FUZZ_CHECK(hh->UpperBound(key) >= hh->LowerBound(key));
  }
  for (const sketch::HeavyHitter& h : hh->TopK(4)) {
    hh->Update(h.key, sketch::Op::kRead);
    other->Update(h.key, sketch::Op::kWrite, 0.5);
  }
  CheckTopK(*hh);
  // Forty-one half-lives later (capped, so the clock stays inside int64 nanoseconds):
  // the rescale path.
  const absl::Duration step = std::min(hh->options().half_life * 41, absl::Hours(1));
  if (hh->now() < absl::FromUnixSeconds(int64_t{1} << 32)) hh->Advance(hh->now() + step);
  CheckTopK(*hh);
  // Then it is saved and loaded by a process whose clock reads half that step less: the
  // whole time line moves (an error only if it would leave int64 nanoseconds).
  absl::StatusOr<sketch::HeavyHitters> placed =
      sketch::HeavyHitters::Deserialize(hh->Serialize(), hh->now() - step / 2);
  if (!placed.ok()) return;
  FUZZ_CHECK(placed->now() == hh->now() - step / 2);
  FUZZ_CHECK(placed->Total() == hh->Total());
  hh = std::move(placed);
  CheckTopK(*hh);
  CheckRoundTrip(*hh);
  FUZZ_CHECK_OK(hh->Merge(*other));
  CheckTopK(*hh);
  CheckRoundTrip(*hh);
}

void FuzzCountMin(std::string_view buf) {
  absl::StatusOr<sketch::CountMinSketch> cms = sketch::CountMinSketch::Deserialize(buf);
  if (!cms.ok()) return;
  // The format has one encoding per sketch: what is accepted re-serialises to itself.
  FUZZ_CHECK(cms->Serialize() == buf);
  const double before = cms->Estimate(42);
  FUZZ_CHECK(std::isfinite(before) && before >= 0);
  // Counters are doubles, and a real sketch's never exceed the total weight fed to it.
  // Adding to a hostile counter at DBL_MAX rounds up to inf, which no stream reaches: skip
  // the updates for such buffers rather than assert on an overflow the format allows.
  const double largest = *std::max_element(cms->counters().begin(), cms->counters().end());
  if (largest > 1e300) return;
  const double after = cms->Update(42, 3.0);
  FUZZ_CHECK(after >= before);
  FUZZ_CHECK(cms->Estimate(42) >= 3.0);
  absl::StatusOr<sketch::CountMinSketch> other =
      sketch::CountMinSketch::Create(cms->width(), cms->depth());
  FUZZ_CHECK_OK(other);
  other->Update(7, 1.0);
  FUZZ_CHECK_OK(cms->Merge(*other, 0.5));
  cms->Scale(0.5);
  FUZZ_CHECK(cms->Estimate(7) >= 0.25);
  FUZZ_CHECK_OK(sketch::CountMinSketch::Deserialize(cms->Serialize()));
}

}  // namespace

int FuzzDeserialize(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  std::string buf(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (mode & 2) FixChecksum(buf);
  if (mode & 1) {
    FuzzCountMin(buf);
  } else {
    FuzzHeavyHitters(buf);
  }
  return 0;
}

}  // namespace hotkey::fuzz

#ifndef HOTKEY_FUZZ_NO_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hotkey::fuzz::FuzzDeserialize(data, size);
}
#endif
