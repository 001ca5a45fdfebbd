// Writes the seed corpus of fuzz_deserialize: a few serialised trackers and sketches, each
// prefixed with fuzz_deserialize's mode byte (bit 0: count-min, bit 1: fix the checksum).
// Run once by hand (see CMakeLists.txt) whenever the format changes; the files are
// committed.
//
// Usage: make_deserialize_seeds <output directory>

#include <cstdio>
#include <fstream>
#include <string>

#include "hotkey/sketch/count_min.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace {

using hotkey::sketch::CountMinSketch;
using hotkey::sketch::HeavyHitters;
using hotkey::sketch::HeavyHittersOptions;
using hotkey::sketch::Op;

void Write(const std::string& dir, const std::string& name, char mode, const std::string& s) {
  std::ofstream(dir + "/" + name, std::ios::binary) << mode << s;
}

HeavyHitters Make(uint32_t candidates, uint32_t max_key_bytes, absl::Duration half_life) {
  HeavyHittersOptions o;
  o.candidates = candidates;
  o.sketch_bytes = 256;
  o.sketch_depth = 2;
  o.max_key_bytes = max_key_bytes;
  o.half_life = half_life;
  return *HeavyHitters::Create(o, absl::FromUnixSeconds(1'700'000'000));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output directory>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);

  // Empty tracker, decay off.
  Write(dir, "hh_empty", 2, Make(4, 8, absl::InfiniteDuration()).Serialize());

  // Full table with evictions, a truncated key, an empty key and both ops, decayed.
  HeavyHitters full = Make(4, 8, absl::Seconds(1));
  const char* keys[] = {"a", "bb", "a", "", "a-key-longer-than-8", "c", "d", "a", "e"};
  int i = 0;
  for (const char* k : keys) {
    full.Update(k, i % 3 ? Op::kRead : Op::kWrite, 1 + i);
    full.Advance(t0 + absl::Milliseconds(100 * ++i));
  }
  Write(dir, "hh_full", 2, full.Serialize());

  // Past a rescale (over 40 half-lives since creation).
  HeavyHitters rescaled = Make(3, 16, absl::Milliseconds(10));
  for (int j = 0; j < 60; ++j) {
    rescaled.Update(std::string("key:") + std::to_string(j % 5), Op::kRead, 1);
    rescaled.Advance(t0 + absl::Milliseconds(10 * j));
  }
  Write(dir, "hh_rescaled", 2, rescaled.Serialize());
  // The same with the real checksum kept: the mode that does not fix it.
  Write(dir, "hh_rescaled_checksummed", 0, rescaled.Serialize());

  // Values past 2^53 (weights at kMaxWeight, then unit ones): the counters and bounds that
  // float, or doubles rounded to nearest, lost.
  HeavyHitters large = Make(2, 8, absl::Hours(24));
  for (int j = 0; j < 20; ++j) large.Update("big", Op::kRead, HeavyHitters::kMaxWeight);
  for (int j = 0; j < 20; ++j) large.Update(std::to_string(j), Op::kWrite, 1);
  large.Advance(t0 + absl::Hours(24 * 39));
  large.Update("big", Op::kWrite, 1);
  Write(dir, "hh_large", 2, large.Serialize());

  // Every seed here is in format version 6 (count-min: 3). The older seeds are kept as they
  // were made: hh_full_v2 (version 2: no lobby, no count of roundings), hh_lobby_v3 (version
  // 3: a lobby, no count), hh_lobby, hh_lobby_checksummed (version 4: a lobby of two full
  // buckets, and a count of roundings), hh_full_v5 (version 5: f64 counters, half the width)
  // and cms_counts_v2 (count-min version 2: f64 counters, refused).

  // Count-min sketches: empty and with counts.
  CountMinSketch cms = *CountMinSketch::Create(8, 2);
  Write(dir, "cms_empty", 3, cms.Serialize());
  for (uint64_t h = 1; h < 20; ++h) cms.Update(h * 0x9e3779b97f4a7c15ULL, 1.5f);
  Write(dir, "cms_counts", 3, cms.Serialize());
  Write(dir, "cms_counts_checksummed", 1, cms.Serialize());
  for (uint64_t h = 1; h < 5; ++h) cms.Update(h * 0x9e3779b97f4a7c15ULL, 1e15);
  Write(dir, "cms_large", 3, cms.Serialize());
  return 0;
}
