// hotkey-bench-tap: the tap's own ceiling, without a socket. Reads a capture file into
// memory, then replays it through the tap's whole path (daemon/input/tap/pipeline.h: frame
// decoding, TCP reassembly, the request parser, with bytes weight the reply parser and
// matching, and the tracker) `--loops` times per repeat, and prints commands per
// CPU-second of this process (median, min and max over `--repeats`), with the CPU model.
//
//   hotkey-bench-tap --file=tests/daemon/input/tap/testdata/redis_benchmark.pcap --port=<server
//   port>
//                    [--protocol=redis|memcached] [--weight=ops|bytes] [--loops=200]
//                    [--repeats=5]
// With no --port, the first frame's destination port is taken (record.sh's captures open
// with a probe SYN to the server).

#include <pcap/pcap.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "bench_util.h"
#include "hotkey/config/flag_parser.h"
#include "hotkey/config/options.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "pipeline.h"

namespace {

struct Frame {
  std::string bytes;
  absl::Time time;
};

}  // namespace

int main(int argc, char** argv) {
  std::string file, protocol = "redis", weight = "ops";
  int port = 0, loops = 200, repeats = 5;
  hotkey::config::FlagParser p("hotkey-bench-tap");
  p.AddString("file", "Capture file to replay.", &file);
  p.AddInteger("port", "The server port (0: the first frame's destination port).", &port);
  p.AddString("protocol", "redis or memcached.", &protocol);
  p.AddString("weight", "ops or bytes.", &weight);
  p.AddInteger("loops", "Replays of the file per repeat.", &loops);
  p.AddInteger("repeats", "Repeats (median, min, max are over these).", &repeats);
  if (auto parsed = p.Parse(argc, argv); !parsed.ok() || file.empty()) {
    std::fprintf(
        stderr, "%s\n%s",
        parsed.ok() ? "--file is required" : std::string(parsed.status().message()).c_str(),
        p.Help().c_str());
    return 2;
  }
  char err[PCAP_ERRBUF_SIZE];
  pcap_t* pc = pcap_open_offline(file.c_str(), err);
  if (!pc) {
    std::fprintf(stderr, "%s: %s\n", file.c_str(), err);
    return 1;
  }
  const int link = pcap_datalink(pc);
  std::vector<Frame> frames;
  size_t bytes = 0;
  pcap_pkthdr* h;
  const u_char* data;
  while (pcap_next_ex(pc, &h, &data) == 1) {
    frames.push_back({std::string(reinterpret_cast<const char*>(data), h->caplen),
                      absl::TimeFromTimeval(h->ts)});
    bytes += h->caplen;
  }
  pcap_close(pc);
  if (frames.empty()) return 1;
  if (port == 0 && frames[0].bytes.size() >= 14 + 20 + 4) {
    const auto* tcp = reinterpret_cast<const unsigned char*>(frames[0].bytes.data()) + 14 + 20;
    port = tcp[2] << 8 | tcp[3];
  }
  hotkey::config::TapOptions o;
  o.file = file;
  o.ports = {static_cast<uint16_t>(port)};
  o.protocol = protocol == "memcached" ? hotkey::config::TapProtocol::kMemcached
                                       : hotkey::config::TapProtocol::kRedis;
  o.weight =
      weight == "bytes" ? hotkey::config::TapWeight::kBytes : hotkey::config::TapWeight::kOps;
  hotkey::sketch::HeavyHittersOptions t;  // the daemon's defaults (--track.*)
  t.candidates = 128;
  t.sketch_bytes = 32 << 10;
  t.max_key_bytes = 128;
  t.half_life = absl::Milliseconds(500);

  std::vector<double> rates;
  uint64_t commands = 0;
  for (int r = 0; r < repeats; ++r) {
    auto tracker = hotkey::sketch::HeavyHitters::Create(t, frames[0].time);
    hotkey::tap::TapPipeline pipe(o, *tracker);
    hotkey::tap::TapCounters c;
    const double start = hotkey::bench::ProcessCpuSeconds();
    absl::Duration shift;
    const absl::Duration span = frames.back().time - frames[0].time + absl::Milliseconds(1);
    for (int l = 0; l < loops; ++l) {
      for (const Frame& f : frames) pipe.Frame(link, f.bytes, f.time + shift);
      tracker->Advance(frames.back().time + shift);  // once per replay, as once per batch
      shift += span;
    }
    const double cpu = hotkey::bench::ProcessCpuSeconds() - start;
    pipe.Fill(c);
    commands = c.commands;
    rates.push_back(commands / cpu);
  }
  const hotkey::bench::Spread spread = hotkey::bench::SpreadOf(rates);
  std::printf("hotkey-bench-tap: %s (%zu frames, %zu bytes), protocol=%s weight=%s\n", file.c_str(),
              frames.size(), bytes, protocol.c_str(), weight.c_str());
  std::printf("cpu: %s, load average %s\n", hotkey::bench::CpuModel().c_str(),
              hotkey::bench::LoadAvg().c_str());
  std::printf("commands per repeat: %llu (%d replays)\n", static_cast<unsigned long long>(commands),
              loops);
  std::printf("commands per CPU-second: median %.3g, min %.3g, max %.3g (%d repeats)\n",
              spread.median, spread.min, spread.max, repeats);
  std::printf("bytes per CPU-second (median): %.3g\n",
              spread.median / commands * loops * static_cast<double>(bytes));
  return 0;
}
