// hotkey-bench-sketch: throughput and accuracy of hotkey::sketch::HeavyHitters.
//
// Generates every stream in memory before timing (Zipf s = 0.9, 1.0, 1.2 over 1,000,000
// distinct 16-byte keys, 32M updates each, a drifting hot set, and three flat drifting ones,
// Zipf 0.6, 0.7 and 0.8, shaped like real traces), then, in one process
// and on one thread, runs `--repeats` rounds that alternate the tracker with an exact
// baseline: an absl::flat_hash_map<std::string, double> that owns a copy of every key, as
// a real exact counter must, and counts exact decayed weights on the tracker's clock.
// Rates are per CPU-second of this thread (CLOCK_THREAD_CPUTIME_ID), so a busy neighbour
// does not skew them as much as it skews wall time; each is printed as the median with the
// min and max over the rounds, with the per-round ratio tracker / exact. The first line
// names the machine (CPU model, logical CPUs, load average).
//
// Accuracy, from the last round's exact counts (the tracker is deterministic, so every
// round gives the same answers):
//   * precision and recall at 100: a reported key is a hit when its true weight is at
//     least the 100th true weight, so a key tied at rank 100 counts as correct;
//   * ARE: the average of |Estimate(k) - true(k)| / true(k) over the TRUE top 100 (keys
//     the tracker missed count with their sketch estimate);
//   * under_top100: reported keys whose estimate is below their true weight (the tracker
//     promises none);
//   * table_hit_share: the share of events whose key was already in the candidate table,
//     counted in a separate untimed pass that asks LowerBound() before each update.
//
//   hotkey-bench-sketch                      every stream, 5 rounds each
//   hotkey-bench-sketch --trace FILE[.gz]    a trace of `<op> <key>` lines instead
//   hotkey-bench-sketch --shapes=C/S/D,...   accuracy of each tracker shape (candidates,
//                                            sketch bytes, depth) on every stream, the
//                                            exact counts taken once: the shape sweep
//   hotkey-bench-sketch --callgrind ...      a fixed number of updates, no timing, no
//                                            baseline: for instructions per update
//   hotkey-bench-sketch --help               every flag, and the callgrind command

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "bench_util.h"
#include "hash_inline.h"
#include "hotkey/config/flag_parser.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "streams.h"

namespace {

using hotkey::bench::FindStream;
using hotkey::bench::kStreams;
using hotkey::bench::LoadTrace;
using hotkey::bench::MachineJson;
using hotkey::bench::MakeZipf;
using hotkey::bench::SpreadJson;
using hotkey::bench::Stream;
using hotkey::bench::StreamSpec;
using hotkey::bench::ThreadCpuSeconds;
using hotkey::sketch::HeavyHitters;
using hotkey::sketch::HeavyHittersOptions;
using hotkey::sketch::Op;

struct Config {
  uint64_t updates = 32'000'000;
  uint64_t keys = 1'000'000;
  // The daemon's defaults (--track.candidates, --track.sketch-bytes, --track.sketch-depth).
  uint32_t candidates = HeavyHittersOptions{}.candidates;
  size_t sketch_bytes = HeavyHittersOptions{}.sketch_bytes;
  uint32_t depth = HeavyHittersOptions{}.sketch_depth;
  uint32_t key_bytes = 64;
  double half_life_s = 1.0;
  double rate = 1'000'000;  // simulated events per second: sets how many events a half-life holds
  uint64_t seed = 42;
  double max_weight = 1;
  uint32_t repeats = 5;
  bool callgrind = false;
  bool hash_only = false;
  std::string only_stream;
  std::string trace;
  std::string shapes;
};

// How often the tracker's clock moves: the daemon advances once per receive batch.
constexpr uint64_t kAdvanceEvery = 1024;
constexpr size_t kTop = 100;

absl::Time SimTime(uint64_t i, const Config& c) {
  return absl::UnixEpoch() + absl::Seconds(static_cast<double>(i) / c.rate);
}

HeavyHitters MakeTracker(const Config& c) {
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
  return *std::move(hh);
}

// Exact decayed counts on the same clock as the tracker, in forward-decayed units at the
// first landmark: the baseline and the ground truth. The map owns its keys (std::string):
// a key is copied once, when first seen, and looked up by string_view after that.
using ExactCounts = absl::flat_hash_map<std::string, double>;

}  // namespace

// The measured loops, out of line and outside the anonymous namespace so that callgrind's
// --toggle-collect can name them: the timed rounds and --callgrind run exactly this code.
namespace hotkey_bench {

// One instance for unit weights and one for weighted streams, so that neither pays a
// per-event test for which it is.
// The stream's arrays are read through local pointers and its size is read once: the
// tracker is another object, but the compiler cannot prove that Update() leaves the
// stream's vectors alone, and would reload them for every event.
template <bool kWeighted>
[[gnu::noinline]] void TrackerUpdateLoop(const Stream& st, const Config& c, HeavyHitters& hh) {
  const char* const bytes = st.bytes.data();
  const uint32_t* const offsets = st.offsets.data();
  const uint8_t* const writes = st.writes.data();
  const double* const weights = st.weights.data();
  const uint64_t n = st.size();
  for (uint64_t start = 0; start < n; start += kAdvanceEvery) {
    hh.Advance(SimTime(start, c));
    const uint64_t end = std::min(n, start + kAdvanceEvery);
    for (uint64_t i = start; i < end; ++i) {
      hh.Update(std::string_view(bytes + offsets[i], offsets[i + 1] - offsets[i]),
                static_cast<Op>(writes[i]), kWeighted ? weights[i] : 1.0);
    }
  }
}

void TrackerUpdates(const Stream& st, const Config& c, HeavyHitters& hh) {
  if (st.weights.empty()) {
    TrackerUpdateLoop<false>(st, c, hh);
  } else {
    TrackerUpdateLoop<true>(st, c, hh);
  }
}

// The floor: the same stream read the same way, only hashed (XXH3 inlined, as
// HeavyHitters::Update hashes).
[[gnu::noinline]] uint64_t HashOnlyLoop(const Stream& st, const Config& c) {
  const char* const bytes = st.bytes.data();
  const uint32_t* const offsets = st.offsets.data();
  const uint8_t* const writes = st.writes.data();
  const uint64_t n = st.size();
  uint64_t acc = 0;
  for (uint64_t i = 0; i < n; ++i) {
    acc += hotkey::sketch::internal::HashKeyInline(
               std::string_view(bytes + offsets[i], offsets[i + 1] - offsets[i]),
               hotkey::sketch::kDefaultSeed) ^
           writes[i];
  }
  (void)c;
  return acc;
}

[[gnu::noinline]] void ExactUpdateLoop(const Stream& st, const Config& c, ExactCounts& counts) {
  const double h = c.half_life_s;
  double factor = 1;
  for (uint64_t i = 0; i < st.size(); ++i) {
    if (i % kAdvanceEvery == 0 && h > 0) factor = std::exp2(i / c.rate / h);
    const std::string_view key = st.key(i);
    counts[absl::string_view(key.data(), key.size())] += factor * st.weight(i);
  }
}

}  // namespace hotkey_bench

namespace {

using hotkey_bench::ExactUpdateLoop;
using hotkey_bench::HashOnlyLoop;
using hotkey_bench::TrackerUpdates;

size_t ExactBytes(const ExactCounts& counts) {
  size_t bytes = counts.bucket_count() * (sizeof(ExactCounts::slot_type) + 1);
  for (const auto& [k, v] : counts) {
    if (k.capacity() > 15) bytes += k.capacity() + 1;  // beyond libstdc++'s inline buffer
  }
  return bytes;
}

struct Accuracy {
  double precision, recall, are;
  size_t under;  // reported keys whose estimate is below the exact weight
  // Precision at 100 of the table ranked by weight since admission (the lower bound), the
  // upper bound breaking ties, instead of by upper bound (TopK()): a ranking tried for
  // issue 36, scored beside the tracker's own.
  double precision_by_lower;
};

Accuracy Score(const Stream& st, const Config& c, const ExactCounts& ex, const HeavyHitters& hh) {
  std::vector<std::pair<double, std::string_view>> truth;
  truth.reserve(ex.size());
  for (const auto& [k, v] : ex) truth.emplace_back(v, k);
  const size_t n = std::min(kTop, truth.size());
  std::partial_sort(truth.begin(), truth.begin() + n, truth.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  // Exact counts are in forward-decayed units at the first landmark; the tracker reports
  // weights decayed to its clock. Bring the exact ones to the same units.
  const double last_factor =
      c.half_life_s > 0
          ? std::exp2(((st.size() - 1) / kAdvanceEvery * kAdvanceEvery) / c.rate / c.half_life_s)
          : 1.0;
  // A key tied with the 100th is as correct as the 100th. Equal event histories give equal
  // sums bit for bit; the 1e-12 only absorbs a different summation order.
  const double threshold = truth[n - 1].first * (1 - 1e-12);
  const auto top = hh.TopK(n);
  size_t hits = 0, under = 0;
  for (const auto& h : top) {
    auto it = ex.find(absl::string_view(h.key));
    const double exact = it == ex.end() ? 0 : it->second;
    if (exact >= threshold) ++hits;
    // The exact sums round to nearest too: a relative 1e-9 is far above their error.
    if (h.estimate < exact / last_factor * (1 - 1e-9)) ++under;
  }
  std::vector<std::pair<std::pair<double, double>, std::string>> by_lower;
  hh.ForEach([&](const hotkey::sketch::HeavyHitter& h) {
    by_lower.push_back({{h.lower_bound, h.estimate}, h.key});
  });
  const size_t m = std::min(n, by_lower.size());
  std::partial_sort(by_lower.begin(), by_lower.begin() + m, by_lower.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
  size_t lower_hits = 0;
  for (size_t i = 0; i < m; ++i) {
    auto it = ex.find(absl::string_view(by_lower[i].second));
    lower_hits += it != ex.end() && it->second >= threshold;
  }
  double are = 0;
  for (size_t i = 0; i < n; ++i) {
    const double exact = truth[i].first / last_factor;
    are += std::abs(hh.Estimate(truth[i].second) - exact) / exact;
  }
  return {top.empty() ? 0 : static_cast<double>(hits) / top.size(), static_cast<double>(hits) / n,
          are / n, under, m == 0 ? 0 : static_cast<double>(lower_hits) / m};
}

// The share of events whose key is in the table when the event arrives. A key in the
// table has a positive lower bound (its admitting event's weight); a key outside has 0.
double TableHitShare(const Stream& st, const Config& c) {
  HeavyHitters hh = MakeTracker(c);
  uint64_t hits = 0;
  for (uint64_t i = 0; i < st.size(); ++i) {
    if (i % kAdvanceEvery == 0) hh.Advance(SimTime(i, c));
    const std::string_view key = st.key(i);
    hits += hh.LowerBound(key) > 0;
    hh.Update(key, st.op(i), st.weight(i));
  }
  return static_cast<double>(hits) / st.size();
}

void Report(const Stream& st, const Config& c) {
  const double n = static_cast<double>(st.size());
  std::vector<double> hotkey_rate, exact_rate, ratio;
  // The last round's tracker and exact counts, kept for scoring.
  std::optional<HeavyHitters> last;
  ExactCounts truth;
  for (uint32_t r = 0; r < c.repeats; ++r) {
    double hk = 0, ex = 0;
    // Alternate which runs first, so a slow phase of the machine does not always fall on
    // the same structure.
    for (int which = 0; which < 2; ++which) {
      if ((which == 0) == (r % 2 == 0)) {
        HeavyHitters hh = MakeTracker(c);
        const double t0 = ThreadCpuSeconds();
        TrackerUpdates(st, c, hh);
        hk = n / (ThreadCpuSeconds() - t0);
        last.emplace(std::move(hh));
      } else {
        ExactCounts counts;
        const double t0 = ThreadCpuSeconds();
        ExactUpdateLoop(st, c, counts);
        ex = n / (ThreadCpuSeconds() - t0);
        truth = std::move(counts);
      }
    }
    hotkey_rate.push_back(hk);
    exact_rate.push_back(ex);
    ratio.push_back(hk / ex);
  }
  const Accuracy a = Score(st, c, truth, *last);
  const double hit_share = TableHitShare(st, c);
  absl::PrintF(
      "{\"stream\":\"%s\",\"structure\":\"heavy_hitters\",\"bytes\":%zu,\"updates\":%.0f,"
      "\"repeats\":%u,\"updates_per_cpu_sec\":%s,\"ratio_to_exact\":%s,"
      "\"precision_at_100\":%.4f,\"recall_at_100\":%.4f,\"are_true_top100\":%.3g,"
      "\"under_top100\":%zu,\"table_hit_share\":%.4f,"
      "\"candidates\":%u,\"sketch_bytes\":%zu,"
      "\"depth\":%u,\"half_life_s\":%g,\"max_weight\":%g,\"distinct_keys\":%zu}\n",
      st.name, last->MemoryBytes(), n, c.repeats, SpreadJson(hotkey_rate, 4), SpreadJson(ratio, 3),
      a.precision, a.recall, a.are, a.under, hit_share, c.candidates, c.sketch_bytes, c.depth,
      c.half_life_s, c.max_weight, st.distinct);
  absl::PrintF(
      "{\"stream\":\"%s\",\"structure\":\"exact\",\"bytes\":%zu,\"updates\":%.0f,"
      "\"repeats\":%u,\"updates_per_cpu_sec\":%s,\"distinct_keys\":%zu}\n",
      st.name, ExactBytes(truth), n, c.repeats, SpreadJson(exact_rate, 4), st.distinct);
  std::fflush(stdout);
}

// --shapes: the exact counts once, untimed, then one tracker of each shape over the same
// stream, scored against them; accuracy only. Returns false on a malformed list.
bool Sweep(const Stream& st, const Config& base) {
  ExactCounts truth;
  ExactUpdateLoop(st, base, truth);
  for (std::string_view rest = base.shapes; !rest.empty();) {
    const size_t comma = rest.find(',');
    const std::string_view shape = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    Config c = base;
    unsigned long long candidates, sketch_bytes;
    unsigned depth;
    if (std::sscanf(std::string(shape).c_str(), "%llu/%llu/%u", &candidates, &sketch_bytes,
                    &depth) != 3) {
      return false;
    }
    c.candidates = static_cast<uint32_t>(candidates);
    c.sketch_bytes = sketch_bytes;
    c.depth = depth;
    HeavyHitters hh = MakeTracker(c);
    TrackerUpdates(st, c, hh);
    const Accuracy a = Score(st, c, truth, hh);
    absl::PrintF(
        "{\"stream\":\"%s\",\"mode\":\"shapes\",\"bytes\":%zu,\"candidates\":%u,"
        "\"sketch_bytes\":%zu,\"depth\":%u,\"key_bytes\":%u,\"precision_at_100\":%.4f,"
        "\"recall_at_100\":%.4f,\"are_true_top100\":%.3g,\"under_top100\":%zu,"
        "\"precision_at_100_by_lower\":%.4f}\n",
        st.name, hh.MemoryBytes(), c.candidates, c.sketch_bytes, c.depth, c.key_bytes, a.precision,
        a.recall, a.are, a.under, a.precision_by_lower);
    std::fflush(stdout);
  }
  return true;
}

// --callgrind: one pass of a fixed number of updates, no timing and no baseline.
void Callgrind(const Stream& st, const Config& c) {
  uint64_t checksum = 0;
  size_t bytes = 0;
  if (c.hash_only) {
    checksum = HashOnlyLoop(st, c);
  } else {
    HeavyHitters hh = MakeTracker(c);
    TrackerUpdates(st, c, hh);
    checksum = hh.size();
    bytes = hh.MemoryBytes();
  }
  absl::PrintF(
      "{\"stream\":\"%s\",\"mode\":\"callgrind\",\"loop\":\"%s\",\"updates\":%zu,"
      "\"bytes\":%zu,\"candidates\":%u,\"sketch_bytes\":%zu,\"checksum\":%u}\n",
      st.name, c.hash_only ? "hotkey_bench::HashOnlyLoop" : "hotkey_bench::TrackerUpdateLoop",
      st.size(), bytes, c.candidates, c.sketch_bytes, static_cast<unsigned>(checksum & 0xffff));
  std::fflush(stdout);
}

// The flags, bound to `c`'s fields (whose initial values are the defaults).
void RegisterFlags(hotkey::config::FlagParser& p, Config& c, absl::Duration* half_life) {
  p.AddString("trace", "a trace of `<op> <key>` lines (plain or gzip) instead of the streams",
              &c.trace)
      .Shown("FILE");
  p.AddString("stream",
              "only this generated stream: zipf-0.9, zipf-1.0, zipf-1.2, drift, flat-drift, "
              "flat-0.6 or flat-0.8",
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
  p.AddInteger("repeats", "rounds per stream, tracker and exact baseline alternating", &c.repeats);
  p.AddBool("callgrind",
            "one pass of --updates updates of one stream (--stream, default zipf-1.0, or "
            "--trace): no timing, no baseline, no scoring",
            &c.callgrind);
  p.AddString("shapes",
              "accuracy only, of one tracker per shape (CANDIDATES/SKETCH_BYTES/DEPTH, comma "
              "separated) against one exact count of each stream; no timing",
              &c.shapes)
      .Shown("LIST");
  p.AddBool("hash-only", "with --callgrind: only hash the keys (XXH3), the floor", &c.hash_only);
  p.AddNumber("max-weight", "each event's weight log-uniform in [1, W] (1: unit weights)",
              &c.max_weight)
      .Shown("W");
}

}  // namespace

// Shown after the flags in --help.
constexpr char kCallgrindHelp[] = R"(
Instructions per update, counted by callgrind over the update loop only:
  valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    --toggle-collect='*hotkey_bench::TrackerUpdateLoop*' \
    hotkey-bench-sketch --callgrind --stream=zipf-1.0 --updates=8000000
  then divide the "Collected" count valgrind prints by 8000000. The hash alone (the floor):
  --toggle-collect='*hotkey_bench::HashOnlyLoop*' and --callgrind --hash-only.
  bench/callgrind.sh runs both and prints the quotients.
)";

int main(int argc, char** argv) {
  Config c;
  absl::Duration half_life = absl::Seconds(c.half_life_s);
  hotkey::config::FlagParser flags("hotkey-bench-sketch");
  RegisterFlags(flags, c, &half_life);
  absl::StatusOr<hotkey::config::FlagParser::Parsed> parsed = flags.Parse(argc, argv);
  absl::Status bad = parsed.status();
  if (bad.ok() &&
      !(c.keys > 0 && c.updates > 0 && c.rate > 0 && c.max_weight >= 1 && c.repeats > 0)) {
    bad = absl::InvalidArgumentError(
        "--keys, --updates, --rate and --repeats must be positive, --max-weight at least 1");
  }
  if (bad.ok() && !c.only_stream.empty() && FindStream(c.only_stream) == nullptr) {
    bad = absl::InvalidArgumentError(
        "--stream must be zipf-0.9, zipf-1.0, zipf-1.2, drift, flat-drift, flat-0.6 or flat-0.8");
  }
  if (bad.ok() && c.hash_only && !c.callgrind) {
    bad = absl::InvalidArgumentError("--hash-only needs --callgrind");
  }
  if (bad.ok() && c.updates >= (uint64_t{1} << 32) / 16) {
    bad = absl::InvalidArgumentError(
        "--updates must be below 2^28 (32-bit offsets into 16-byte keys)");
  }
  if (!bad.ok() || parsed->help) {
    std::fprintf(bad.ok() ? stdout : stderr, "%s%susage: hotkey-bench-sketch [flags]\n\n%s%s",
                 std::string(bad.message()).c_str(), bad.ok() ? "" : "\n", flags.Help().c_str(),
                 bad.ok() ? kCallgrindHelp : "");
    return bad.ok() ? 0 : 2;
  }
  c.half_life_s = absl::ToDoubleSeconds(half_life);
  if (!c.callgrind && c.shapes.empty()) std::printf("{\"machine\":%s}\n", MachineJson().c_str());
  bool shapes_ok = true;
  const auto run = [&c, &shapes_ok](const Stream& st) {
    if (!c.shapes.empty()) {
      shapes_ok = shapes_ok && Sweep(st, c);
    } else if (c.callgrind) {
      Callgrind(st, c);
    } else {
      Report(st, c);
    }
  };
  if (!c.trace.empty()) {
    Stream st;
    st.name = c.trace.substr(c.trace.find_last_of('/') + 1);
    if (!LoadTrace(c.trace, &st)) {
      std::fprintf(stderr, "cannot read trace %s\n", c.trace.c_str());
      return 1;
    }
    run(st);
    return shapes_ok ? 0 : 2;
  }
  if (c.callgrind && c.only_stream.empty()) c.only_stream = "zipf-1.0";
  for (const StreamSpec& s : kStreams) {
    if (!c.only_stream.empty() && c.only_stream != s.name) continue;
    run(MakeZipf(s, c.updates, c.keys, c.seed, c.max_weight));
  }
  if (!shapes_ok) std::fprintf(stderr, "--shapes: each shape is CANDIDATES/SKETCH_BYTES/DEPTH\n");
  return shapes_ok ? 0 : 2;
}
