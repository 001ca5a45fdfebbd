// hotkey-bench-sketch: throughput and accuracy of hotkey::sketch::HeavyHitters.
//
// Generates every stream in memory before timing (Zipf s = 0.9, 1.0, 1.2 over 1,000,000
// distinct 16-byte keys, 32M updates each, and a drifting hot set), then times the tracker
// on one thread and scores its top-100 against exact decayed counts of the same stream,
// kept by an absl::flat_hash_map on the same clock (printed as structure "exact").
// One JSON object per line per (stream, structure). Rates are per CPU-second of this
// thread (CLOCK_THREAD_CPUTIME_ID), so a busy neighbour on the machine does not skew them.
//
//   hotkey-bench-sketch                      the README's configuration on every stream
//   hotkey-bench-sketch --trace FILE[.gz]    a trace of `<op> <key>` lines instead
//   hotkey-bench-sketch --help               every flag (--updates, --half-life=2s, ...)
// "under_top100" counts reported keys whose estimate is below their exact weight (the
// tracker promises none).

#include <time.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "hotkey/config/flag_parser.h"
#include "hotkey/loadgen/zipf.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace {

using hotkey::loadgen::ZipfDistribution;
using hotkey::sketch::HeavyHitters;
using hotkey::sketch::HeavyHittersOptions;
using hotkey::sketch::Op;

struct Config {
  uint64_t updates = 32'000'000;
  uint64_t keys = 1'000'000;
  uint32_t candidates = 200;
  size_t sketch_bytes = 32 * 1024;  // the daemon's default (--track.sketch-bytes)
  uint32_t depth = 4;
  uint32_t key_bytes = 64;
  double half_life_s = 1.0;
  double rate = 1'000'000;  // simulated events per second: sets how many events a half-life holds
  uint64_t seed = 42;
  double max_weight = 1;
  std::string only_stream;
  std::string trace;
};

// How often the tracker's clock moves: the daemon advances once per receive batch.
constexpr uint64_t kAdvanceEvery = 1024;
constexpr size_t kTop = 100;

// The events laid out as the daemon sees them: key bytes one after another (as in a
// datagram), read sequentially, so the benchmark measures the tracker and not cache misses
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
  std::string_view key(size_t i) const {
    return std::string_view(bytes).substr(offsets[i], offsets[i + 1] - offsets[i]);
  }
  void Add(std::string_view key, bool write) {
    if (offsets.empty()) offsets.push_back(0);
    bytes.append(key);
    offsets.push_back(static_cast<uint32_t>(bytes.size()));
    writes.push_back(write);
  }
};

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

std::vector<std::string> RandomKeys(uint64_t n, std::mt19937_64& gen) {
  std::vector<std::string> keys(n);
  for (auto& k : keys) k = absl::StrFormat("%016x", gen());  // 16 bytes
  return keys;
}

// Zipf ranks mapped to keys through a shuffled table (so rank order is not key order);
// `drift_step` > 0 shifts that mapping every `phase` events, so the hot set moves.
Stream MakeZipf(const std::string& name, double s, const Config& c, uint64_t drift_step) {
  std::mt19937_64 gen(c.seed);
  const std::vector<std::string> keys = RandomKeys(c.keys, gen);
  Stream st;
  st.name = name;
  st.distinct = c.keys;
  st.bytes.reserve(c.updates * 16);
  st.offsets.reserve(c.updates + 1);
  st.writes.reserve(c.updates);
  std::vector<uint32_t> perm(c.keys);
  for (uint32_t i = 0; i < perm.size(); ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), gen);
  ZipfDistribution zipf(c.keys, s);
  std::bernoulli_distribution write(0.1);
  const uint64_t phase = std::max<uint64_t>(1, c.updates / 16);
  for (uint64_t i = 0; i < c.updates; ++i) {
    const uint64_t shift = drift_step ? (i / phase) * drift_step : 0;
    st.Add(keys[perm[(zipf(gen) - 1 + shift) % c.keys]], write(gen));
  }
  if (c.max_weight > 1) {
    std::uniform_real_distribution<double> log_weight(0, std::log(c.max_weight));
    st.weights.reserve(c.updates);
    for (uint64_t i = 0; i < c.updates; ++i) st.weights.push_back(std::exp(log_weight(gen)));
  }
  return st;
}

bool LoadTrace(const std::string& path, Stream* st) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return false;
  absl::flat_hash_map<std::string, bool> seen;
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
    seen.try_emplace(std::string(key), true);
    st->Add(key, op == "w");
  }
  gzclose(f);
  st->distinct = seen.size();
  return st->size() > 0;
}

absl::Time SimTime(uint64_t i, const Config& c) {
  return absl::UnixEpoch() + absl::Seconds(static_cast<double>(i) / c.rate);
}

// Exact decayed counts on the same clock as the tracker: the ground truth.
struct Exact {
  absl::flat_hash_map<std::string_view, double> counts;
  double cpu_s = 0;
  size_t bytes = 0;
};

Exact RunExact(const Stream& st, const Config& c) {
  Exact ex;
  ex.counts.reserve(st.distinct);
  const double h = c.half_life_s;
  double factor = 1;
  const double t0 = CpuSeconds();
  for (uint64_t i = 0; i < st.size(); ++i) {
    if (i % kAdvanceEvery == 0 && h > 0) factor = std::exp2(i / c.rate / h);
    ex.counts[st.key(i)] += factor * st.weight(i);
  }
  ex.cpu_s = CpuSeconds() - t0;
  ex.bytes = ex.counts.bucket_count() * (sizeof(std::pair<std::string_view, double>) + 1) +
             ex.counts.size() * 16;
  return ex;
}

struct Result {
  double cpu_s;
  size_t bytes;
  double precision, recall, are;
  size_t under;  // reported keys whose estimate is below the exact weight
};

Result RunSketch(const Stream& st, const Config& c, const Exact& ex) {
  HeavyHittersOptions o;
  o.candidates = c.candidates;
  o.sketch_bytes = c.sketch_bytes;
  o.sketch_depth = c.depth;
  o.max_key_bytes = c.key_bytes;
  o.half_life = c.half_life_s > 0 ? absl::Seconds(c.half_life_s) : absl::InfiniteDuration();
  auto hh = HeavyHitters::Create(o, SimTime(0, c));
  if (!hh.ok()) {
    std::fprintf(stderr, "%s\n", std::string(hh.status().message()).c_str());
    std::exit(2);
  }
  const double t0 = CpuSeconds();
  for (uint64_t i = 0; i < st.size(); ++i) {
    if (i % kAdvanceEvery == 0) hh->Advance(SimTime(i, c));
    hh->Update(st.key(i), st.writes[i] ? Op::kWrite : Op::kRead, st.weight(i));
  }
  const double cpu = CpuSeconds() - t0;

  // Score the reported top-100 against the exact decayed top-100.
  std::vector<std::pair<double, std::string_view>> truth;
  truth.reserve(ex.counts.size());
  for (const auto& [k, v] : ex.counts) truth.emplace_back(v, k);
  const size_t n = std::min(kTop, truth.size());
  std::partial_sort(truth.begin(), truth.begin() + n, truth.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  absl::flat_hash_map<std::string_view, double> top_truth;
  for (size_t i = 0; i < n; ++i) top_truth[truth[i].second] = truth[i].first;
  // Exact counts are in forward-decayed units at the last landmark; the tracker reports
  // weights decayed to its clock. Bring the exact ones to the same units.
  const double last_factor =
      c.half_life_s > 0
          ? std::exp2(((st.size() - 1) / kAdvanceEvery * kAdvanceEvery) / c.rate / c.half_life_s)
          : 1.0;
  const auto top = hh->TopK(n);
  size_t hits = 0, under = 0;
  double are = 0;
  for (const auto& h : top) {
    if (top_truth.contains(h.key)) ++hits;
    auto it = ex.counts.find(h.key);
    const double exact = it == ex.counts.end() ? 0 : it->second / last_factor;
    are += exact > 0 ? std::abs(h.estimate - exact) / exact : 1.0;
    // The exact sums round to nearest too: a relative 1e-9 is far above their error.
    if (h.estimate < exact * (1 - 1e-9)) ++under;
  }
  const double p = top.empty() ? 0 : static_cast<double>(hits) / top.size();
  return {
      cpu,  hh->MemoryBytes(), p, static_cast<double>(hits) / n, top.empty() ? 0 : are / top.size(),
      under};
}

void Report(const Stream& st, const Config& c) {
  const Exact ex = RunExact(st, c);
  const Result r = RunSketch(st, c, ex);
  const double n = static_cast<double>(st.size());
  std::printf(
      "{\"stream\":\"%s\",\"structure\":\"heavy_hitters\",\"bytes\":%zu,\"updates\":%.0f,"
      "\"updates_per_sec\":%.0f,\"precision_at_100\":%.4f,\"recall_at_100\":%.4f,"
      "\"are_top100\":%.3g,\"under_top100\":%zu,\"candidates\":%u,\"sketch_bytes\":%zu,"
      "\"depth\":%u,\"half_life_s\":%g,\"max_weight\":%g,\"distinct_keys\":%zu}\n",
      st.name.c_str(), r.bytes, n, n / r.cpu_s, r.precision, r.recall, r.are, r.under, c.candidates,
      c.sketch_bytes, c.depth, c.half_life_s, c.max_weight, st.distinct);
  std::printf(
      "{\"stream\":\"%s\",\"structure\":\"exact\",\"bytes\":%zu,\"updates\":%.0f,"
      "\"updates_per_sec\":%.0f,\"precision_at_100\":1,\"recall_at_100\":1,\"are_top100\":0,"
      "\"distinct_keys\":%zu}\n",
      st.name.c_str(), ex.bytes, n, n / ex.cpu_s, st.distinct);
  std::fflush(stdout);
}

// The flags, bound to `c`'s fields (whose initial values are the defaults).
void RegisterFlags(hotkey::config::FlagParser& p, Config& c, absl::Duration* half_life) {
  p.AddString("trace", "a trace of `<op> <key>` lines (plain or gzip) instead of the streams",
              &c.trace)
      .Shown("FILE");
  p.AddString("stream", "only this generated stream: zipf-0.9, zipf-1.0, zipf-1.2 or drift",
              &c.only_stream)
      .Shown("NAME");
  p.AddInteger("updates", "updates per generated stream", &c.updates);
  p.AddInteger("keys", "distinct keys of the generated streams", &c.keys);
  p.AddInteger("candidates", "tracker table slots", &c.candidates);
  p.AddSize("sketch-bytes", "count-min sketch memory", &c.sketch_bytes);
  p.AddInteger("depth", "count-min rows", &c.depth);
  p.AddInteger("key-bytes", "key bytes stored per candidate", &c.key_bytes);
  p.AddDuration("half-life", "decay half-life in simulated time (0: no decay)", half_life);
  p.AddNumber("rate", "simulated events per second: how many events a half-life holds", &c.rate);
  p.AddInteger("seed", "random seed of the generated streams", &c.seed);
  p.AddNumber("max-weight", "each event's weight log-uniform in [1, W] (1: unit weights)",
              &c.max_weight)
      .Shown("W");
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  absl::Duration half_life = absl::Seconds(c.half_life_s);
  hotkey::config::FlagParser flags("hotkey-bench-sketch");
  RegisterFlags(flags, c, &half_life);
  absl::StatusOr<hotkey::config::FlagParser::Parsed> parsed = flags.Parse(argc, argv);
  absl::Status bad = parsed.status();
  if (bad.ok() && !(c.keys > 0 && c.updates > 0 && c.rate > 0 && c.max_weight >= 1)) {
    bad = absl::InvalidArgumentError(
        "--keys, --updates and --rate must be positive, --max-weight at least 1");
  }
  if (!bad.ok() || parsed->help) {
    std::fprintf(bad.ok() ? stdout : stderr, "%s%susage: hotkey-bench-sketch [flags]\n\n%s",
                 std::string(bad.message()).c_str(), bad.ok() ? "" : "\n", flags.Help().c_str());
    return bad.ok() ? 0 : 2;
  }
  c.half_life_s = absl::ToDoubleSeconds(half_life);
  if (!c.trace.empty()) {
    Stream st;
    st.name = c.trace.substr(c.trace.find_last_of('/') + 1);
    if (!LoadTrace(c.trace, &st)) {
      std::fprintf(stderr, "cannot read trace %s\n", c.trace.c_str());
      return 1;
    }
    Report(st, c);
    return 0;
  }
  struct Spec {
    const char* name;
    double s;
    uint64_t drift;
  };
  // The drifting stream moves the Zipf(1.0) rank-to-key mapping by 25 ranks every
  // sixteenth of the stream: a quarter of the top 100 is new in each phase.
  const Spec specs[] = {
      {"zipf-0.9", 0.9, 0}, {"zipf-1.0", 1.0, 0}, {"zipf-1.2", 1.2, 0}, {"drift", 1.0, 25}};
  for (const Spec& s : specs) {
    if (!c.only_stream.empty() && c.only_stream != s.name) continue;
    Report(MakeZipf(s.name, s.s, c, s.drift), c);
  }
  return 0;
}
