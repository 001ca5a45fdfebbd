// The event streams the tracker's benchmarks share: generated Zipf streams (steady, drifting,
// and flat drifting ones shaped like real traces) and traces of `<op> <key>` lines, laid out
// as the daemon sees events. Header-only; benchmarks only. hotkey-bench-sketch and
// hotkey-bench-sketch-peers read the same streams from here, so a figure of one is comparable
// with a figure of the other.

#ifndef HOTKEY_BENCH_STREAMS_H_
#define HOTKEY_BENCH_STREAMS_H_

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "hotkey/loadgen/zipf.h"
#include "hotkey/sketch/op.h"

namespace hotkey::bench {

// The events laid out as the daemon sees them: key bytes one after another (as in a
// datagram), read sequentially, so that a benchmark measures the tracker and not cache misses
// on a table of a million key strings.
struct Stream {
  std::string name;
  size_t distinct = 0;
  std::string bytes;              // every event's key, back to back
  std::vector<uint32_t> offsets;  // event i is bytes[offsets[i], offsets[i + 1])
  std::vector<uint8_t> writes;    // 1 if event i is a write
  std::vector<double> weights;    // event i's weight; empty: every weight is 1
  size_t size() const { return writes.size(); }
  double weight(size_t i) const { return weights.empty() ? 1.0 : weights[i]; }
  // Unchecked: i < size(), so offsets[i + 1] exists and
  // offsets[i] <= offsets[i + 1] <= bytes.size().
  std::string_view key(size_t i) const {
    return std::string_view(bytes.data() + offsets[i], offsets[i + 1] - offsets[i]);
  }
  sketch::Op op(size_t i) const { return static_cast<sketch::Op>(writes[i]); }
  void Add(std::string_view key, bool write) {
    if (offsets.empty()) offsets.push_back(0);
    bytes.append(key);
    offsets.push_back(static_cast<uint32_t>(bytes.size()));
    writes.push_back(write);
  }
};

// A generated stream: Zipf of exponent `s` whose rank-to-key mapping moves by `drift` ranks
// every sixteenth of the stream (0: no drift).
struct StreamSpec {
  const char* name;
  double s;
  uint64_t drift;
};

// The drifting stream moves the Zipf(1.0) rank-to-key mapping by 25 ranks every sixteenth of
// the stream: a quarter of the top 100 is new in each phase. The flat drifting one is shaped
// like the real traces (the README of ../shared/traces): Zipf 0.7 puts about 0.5% of events
// on the top key and 2% on the top 10, neighbours around rank 100 differ by a few percent, and
// 5 ranks move every sixteenth of the stream (half the top 10 is new in each phase). flat-0.6
// and flat-0.8 drift the same way at the two ends of that range: Zipf 0.6 puts about 0.2% of
// events on the top key, and rank 100 and rank 150 differ by a quarter.
inline constexpr StreamSpec kStreams[] = {
    {"zipf-0.9", 0.9, 0},   {"zipf-1.0", 1.0, 0}, {"zipf-1.2", 1.2, 0}, {"drift", 1.0, 25},
    {"flat-drift", 0.7, 5}, {"flat-0.6", 0.6, 5}, {"flat-0.8", 0.8, 5}};

// The spec named `name`, or null.
inline const StreamSpec* FindStream(std::string_view name) {
  for (const StreamSpec& s : kStreams) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

// `n` distinct-looking random keys of 16 hex digits.
inline std::vector<std::string> RandomKeys(uint64_t n, std::mt19937_64& gen) {
  std::vector<std::string> keys(n);
  for (auto& k : keys) k = absl::StrFormat("%016x", gen());  // 16 bytes
  return keys;
}

// `updates` events of the spec over `keys` keys, one in ten a write, drawn with `seed`. Zipf
// ranks map to keys through a shuffled table (so rank order is not key order). With
// max_weight > 1, each event's weight is log-uniform in [1, max_weight].
inline Stream MakeZipf(const StreamSpec& spec, uint64_t updates, uint64_t keys, uint64_t seed,
                       double max_weight) {
  std::mt19937_64 gen(seed);
  const std::vector<std::string> names = RandomKeys(keys, gen);
  Stream st;
  st.name = spec.name;
  st.distinct = keys;
  st.bytes.reserve(updates * 16);
  st.offsets.reserve(updates + 1);
  st.writes.reserve(updates);
  std::vector<uint32_t> perm(keys);
  for (uint32_t i = 0; i < perm.size(); ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), gen);
  loadgen::ZipfDistribution zipf(keys, spec.s);
  std::bernoulli_distribution write(0.1);
  const uint64_t phase = std::max<uint64_t>(1, updates / 16);
  for (uint64_t i = 0; i < updates; ++i) {
    const uint64_t shift = spec.drift ? (i / phase) * spec.drift : 0;
    st.Add(names[perm[(zipf(gen) - 1 + shift) % keys]], write(gen));
  }
  if (max_weight > 1) {
    std::uniform_real_distribution<double> log_weight(0, std::log(max_weight));
    st.weights.reserve(updates);
    for (uint64_t i = 0; i < updates; ++i) st.weights.push_back(std::exp(log_weight(gen)));
  }
  return st;
}

// Reads a trace of `<op> <key>` (or `<ts_ms> <op> <key>`) lines, plain or gzip, into `st`.
// False if the file cannot be read or holds no event.
inline bool LoadTrace(const std::string& path, Stream* st) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return false;
  absl::flat_hash_set<std::string> seen;
  char line[4096];
  while (gzgets(f, line, sizeof line)) {
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) --n;
    std::string_view l(line, n);
    size_t sp = l.find(' ');
    if (sp == std::string_view::npos || sp == 0) continue;
    std::string_view op = l.substr(0, sp), key = l.substr(sp + 1);
    if (sp != 1 && l.size() > sp) {  // `<ts_ms> <op> <key>`
      size_t sp2 = key.find(' ');
      if (sp2 == std::string_view::npos) continue;
      op = key.substr(0, sp2);
      key = key.substr(sp2 + 1);
    }
    seen.emplace(key);
    st->Add(key, op == "w");
  }
  gzclose(f);
  st->distinct = seen.size();
  return st->size() > 0;
}

}  // namespace hotkey::bench

#endif  // HOTKEY_BENCH_STREAMS_H_
