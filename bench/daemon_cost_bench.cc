// hotkey-bench-daemon-cost: the daemon's own CPU costs, in process, without sockets in the
// timed loops (the daemon library linked directly).
//
//   ingest  a receive batch's user-space work per event, on datagrams recorded once from
//           the loadgen Sender (the stream of hotkey-bench-daemon: 1400-byte datagrams of
//           Zipf 1.0 "key:<rank>" events over a million keys), 64 datagrams a batch with one
//           Advance() each, at a 128-candidate tracker with the daemon's sketch (32 KiB):
//             ceiling   lines split at '\n', the key hashed, one bare count-min update
//             daemon    parsers::ParseDatagram and HeavyHitters::Update for every event, as
//                       source::UdpReceiver::Process does
//           events per CPU-second of this thread (CLOCK_THREAD_CPUTIME_ID), rounds
//           alternating, median, min and max; and daemon/ceiling within each round. The
//           socket's own cost (the kernel's copy) is not in these figures; hotkey-bench-daemon
//           --phase drain measures both together.
//   tick    what a tick and a scrape cost: source::ReportBuffer::Publish (the receiver's copy of
//   its
//           tracker), Aggregator::Build (TopK, rate history, labels, alerter, model) and the
//           /metrics render (SnapshotCollector + RenderText), at top_k 10, 100 and 1000 and
//           candidates 200 to 100,000, with min_share and min_key_ops lowered so that top_k
//           keys are exported, and at the defaults (top_k 10, min_share 0.01) for each
//           table size; and at the defaults, whose tick CPU per second is printed (one Publish and
//           one Build per publish interval, 250 ms, per receiver).
//
// The CPU model is printed first. Run on demand, never by ctest:
//   hotkey-bench-daemon-cost [--mode ingest|tick] [--repeats N] [--candidates N]

#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bench_util.h"
#include "hotkey/aggregate/aggregator.h"
#include "hotkey/aggregate/snapshot_store.h"
#include "hotkey/config/flag_parser.h"
#include "hotkey/config/options.h"
#include "hotkey/loadgen/sender.h"
#include "hotkey/parsers/wire.h"
#include "hotkey/sketch/count_min.h"
#include "hotkey/sketch/hash.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "hotkey/source/report_buffer.h"
#include "hotkey/source/tracker_options.h"
#include "hotkey/web/metrics.h"

namespace {

using namespace hotkey;  // NOLINT: a benchmark's main file

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

using bench::CpuModel;
using bench::SpreadOf;
using bench::ThreadCpuSeconds;
std::string Json(const std::vector<double>& v) { return bench::SpreadJson(v); }

// Datagrams from the loadgen Sender, recorded over loopback once.
std::vector<std::string> Record(size_t n) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  const int rcvbuf = 64 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  loadgen::SendOptions o;
  o.to = absl::StrCat("127.0.0.1:", ntohs(a.sin_port));
  auto sender = loadgen::Sender::Create(o);
  if (!sender.ok()) std::exit(1);
  std::atomic<bool> stop{false};
  std::thread t([&] { (void)(*sender)->Run(stop); });
  std::vector<std::string> out;
  std::vector<char> buf(65536);
  while (out.size() < n) {
    const ssize_t got = recv(fd, buf.data(), buf.size(), 0);
    if (got > 0) out.emplace_back(buf.data(), got);
  }
  stop = true;
  t.join();
  close(fd);
  return out;
}

constexpr size_t kBatch = 64;

sketch::HeavyHitters DefaultTracker(uint32_t candidates = config::TrackOptions{}.candidates) {
  config::TrackOptions t;
  t.candidates = candidates;
  return *sketch::HeavyHitters::Create(source::TrackerOptions(t), kT0);
}

// Events per CPU-second of one pass over the corpus.
template <class PerBatch>
double Pass(const std::vector<std::string>& corpus, size_t events, PerBatch&& per_batch) {
  const double cpu0 = ThreadCpuSeconds();
  for (size_t b = 0; b < corpus.size(); b += kBatch) {
    per_batch(b, std::min(corpus.size(), b + kBatch));
  }
  return events / (ThreadCpuSeconds() - cpu0);
}

void Ingest(int repeats) {
  const std::vector<std::string> corpus = Record(8192);
  size_t events = 0;
  for (const auto& d : corpus) {
    events += parsers::ParseDatagram(d, 1 << 16, [](const parsers::Event&) {}).events;
  }
  auto cms = *sketch::CountMinSketch::FromBytes(32 * 1024, 4);
  sketch::HeavyHitters tracker = DefaultTracker();
  absl::Time now = kT0;
  std::vector<double> ceiling_v, daemon_v, ratio_v;
  for (int round = 0; round < repeats; ++round) {
    const double ce = Pass(corpus, events, [&](size_t from, size_t to) {
      for (size_t i = from; i < to; ++i) {
        const char* p = corpus[i].data();
        const char* end = p + corpus[i].size();
        while (p < end) {
          const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
          if (!nl) nl = end;
          const char* sp = static_cast<const char*>(std::memchr(p, ' ', nl - p));
          if (sp) {
            cms.Update(
                sketch::HashKey({sp + 1, static_cast<size_t>(nl - sp - 1)}, sketch::kDefaultSeed),
                1.0);
          }
          p = nl + 1;
        }
      }
    });
    const double da = Pass(corpus, events, [&](size_t from, size_t to) {
      now += absl::Microseconds(100);
      tracker.Advance(now);
      for (size_t i = from; i < to; ++i) {
        parsers::ParseDatagram(corpus[i], 1 << 16, [&](const parsers::Event& e) {
          tracker.Update(e.key, e.op, e.weight);
        });
      }
    });
    ceiling_v.push_back(ce);
    daemon_v.push_back(da);
    ratio_v.push_back(da / ce);
  }
  if (cms.Estimate(1) < 0 || tracker.size() == 0) std::printf("?");
  std::printf(
      "{\"mode\":\"ingest\",\"cpu\":\"%s\",\"rounds\":%d,\"datagrams\":%zu,\"events\":%zu,"
      "\"ceiling_events_per_cpu_second\":%s,\"daemon_events_per_cpu_second\":%s,"
      "\"daemon_over_ceiling\":%s}\n",
      CpuModel().c_str(), repeats, corpus.size(), events, Json(ceiling_v).c_str(),
      Json(daemon_v).c_str(), Json(ratio_v).c_str());
}

// A tracker of `candidates` slots filled from the corpus until its table is full.
sketch::HeavyHitters Filled(const std::vector<std::string>& corpus, uint32_t candidates) {
  sketch::HeavyHitters t = DefaultTracker(candidates);
  absl::Time now = kT0;
  for (int pass = 0; pass < 8 && t.size() < candidates; ++pass) {
    for (const std::string& d : corpus) {
      now += absl::Microseconds(10);
      t.Advance(now);
      parsers::ParseDatagram(d, 1 << 16,
                             [&](const parsers::Event& e) { t.Update(e.key, e.op, e.weight); });
    }
  }
  return t;
}

void TickCase(const std::vector<std::string>& corpus, uint32_t candidates, uint32_t top_k,
              bool defaults, int repeats) {
  sketch::HeavyHitters tracker = Filled(corpus, candidates);
  config::TrackOptions track;
  track.candidates = candidates;
  config::ReloadableOptions reloadable;
  if (!defaults) {
    reloadable.exporter.top_k = top_k;
    reloadable.exporter.min_share = 1e-9;
    reloadable.exporter.min_key_ops_per_second = 0;
  }
  aggregate::Aggregator agg(track, reloadable, "", tracker.now(), nullptr);
  source::ReportBuffer buffer(tracker);
  source::SourceCounters counters;
  std::shared_ptr<const aggregate::Snapshot> snap;
  aggregate::SnapshotStore store(reloadable.cluster, nullptr, nullptr, nullptr);
  web::SnapshotCollector collector(store);
  absl::Time now = tracker.now();
  size_t next = 0;
  // One tick: a datagram of traffic (untimed, so the shard is not idle), then the timed
  // steps. Returns their CPU seconds through the pointers.
  auto tick = [&](double* publish, double* build, double* render, size_t* bytes) {
    now += absl::Milliseconds(250);
    tracker.Advance(now);
    for (int d = 0; d < 16; ++d) {
      parsers::ParseDatagram(corpus[next++ % corpus.size()], 1 << 16, [&](const parsers::Event& e) {
        tracker.Update(e.key, e.op, e.weight);
      });
    }
    double c0 = ThreadCpuSeconds();
    buffer.Publish(now, tracker, nullptr, counters);
    double c1 = ThreadCpuSeconds();
    std::shared_ptr<const source::ReceiverReport> r = buffer.Latest();
    snap = agg.Build(std::span(&r, 1), now, 0);
    store.Publish(snap);
    double c2 = ThreadCpuSeconds();
    *bytes = web::RenderText(collector).size();
    double c3 = ThreadCpuSeconds();
    *publish += c1 - c0;
    *build += c2 - c1;
    *render += c3 - c2;
  };
  double p = 0, b = 0, re = 0;
  size_t bytes = 0;
  // A rate window of ticks first: the rate history and the alerter warm up, as in a running
  // daemon.
  for (int i = 0; i < 21; ++i) tick(&p, &b, &re, &bytes);
  std::vector<double> publish_us, build_us, render_us;
  const int iters = candidates >= 10000 ? 3 : 20;
  for (int round = 0; round < repeats; ++round) {
    p = b = re = 0;
    for (int i = 0; i < iters; ++i) tick(&p, &b, &re, &bytes);
    publish_us.push_back(p / iters * 1e6);
    build_us.push_back(b / iters * 1e6);
    render_us.push_back(re / iters * 1e6);
  }
  const double tick_us = SpreadOf(publish_us).median + SpreadOf(build_us).median;
  std::printf(
      "{\"mode\":\"tick\",\"defaults\":%s,\"candidates\":%u,\"tracked\":%zu,\"top_k\":%u,"
      "\"exported\":%zu,\"publish_us\":%s,\"build_us\":%s,\"render_us\":%s,"
      "\"metrics_bytes\":%zu,\"tick_cpu_ms_per_second_per_receiver\":%.3f}\n",
      defaults ? "true" : "false", candidates, tracker.size(),
      defaults ? reloadable.exporter.top_k : top_k, snap->keys.size(), Json(publish_us).c_str(),
      Json(build_us).c_str(), Json(render_us).c_str(), bytes,
      tick_us * 4 / 1000);  // 4 ticks a second at the 250 ms default
  std::fflush(stdout);
}

void Tick(int repeats, uint32_t only) {
  const std::vector<std::string> corpus = Record(8192);
  std::printf("{\"mode\":\"tick\",\"cpu\":\"%s\",\"rounds\":%d}\n", CpuModel().c_str(), repeats);
  TickCase(corpus, 128, 10, true, repeats);
  for (uint32_t candidates : {200u, 1000u, 10000u, 100000u}) {
    if (only != 0 && candidates != only) continue;
    // The defaults but for the table: min_share 0.01 passes over nearly every key.
    TickCase(corpus, candidates, 0, true, repeats);
    for (uint32_t top_k : {10u, 100u, 1000u}) TickCase(corpus, candidates, top_k, false, repeats);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode;
  int repeats = 5;
  uint32_t only = 0;
  config::FlagParser flags("hotkey-bench-daemon-cost");
  flags.AddString("mode", "only this mode: ingest or tick", &mode).Shown("NAME");
  flags.AddInteger("candidates", "tick: only this table size (200, 1000, 10000 or 100000)", &only);
  flags.AddInteger("repeats", "rounds (median, min and max are printed)", &repeats);
  auto parsed = flags.Parse(std::vector<std::string_view>(argv + 1, argv + argc));
  if (!parsed.ok() || parsed->help || repeats < 1) {
    std::fprintf(parsed.ok() ? stdout : stderr, "usage: hotkey-bench-daemon-cost [flags]\n\n%s",
                 flags.Help().c_str());
    return parsed.ok() && parsed->help ? 0 : 2;
  }
  if (mode.empty() || mode == "ingest") Ingest(repeats);
  if (mode.empty() || mode == "tick") Tick(repeats, only);
  return 0;
}
