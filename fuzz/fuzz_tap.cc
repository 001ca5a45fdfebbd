// libFuzzer target: the whole tap path after the capture, tap::TapPipeline (daemon/program/daemon/
// daemon/input/tap/pipeline.h): frames decoded, reassembled, parsed as Redis or memcached requests
// (and, with bytes weight, replies matched to them) and counted into a tracker.
//
// Input: fuzz_reassembly's format with one more header byte. Byte 0 picks the link type,
// byte 1 the flow table size (1..8 flows), bytes 2-3 the server port (big-endian), byte 4
// the mode: bit 0 the protocol (Redis, memcached), bit 1 the weight (ops, bytes), bit 2 a
// small per-flow buffer (256 bytes instead of 4 KiB, so requests and reply queues overflow
// it). Then frame records (frame_records.h), the clock against a 1 s idle timeout.
//
// Checked beyond "no crash, no sanitizer report": the memory held never exceeds what
// TapOptions::MemoryBoundBytes() allows for the flows and buffers; keys counted never go
// down; by ops, the keys parsed (reads plus writes) are the keys counted and the tracker's
// raw total is exactly that; with bytes weight no more keys are counted than parsed; the
// flow table's books balance within max_flows; and the tracker stays valid (its size, key
// lengths, finite and ordered bounds).

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frame_records.h"
#include "fuzz_util.h"
#include "hotkey/config/options.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "hotkey/source/report.h"
#include "hotkey/tcp/packet.h"
#include "pipeline.h"

namespace hotkey::fuzz {
namespace {

constexpr uint32_t kMaxFlows = 8;

}  // namespace

int FuzzTap(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  config::TapOptions o;
  o.file = "fuzz";  // no capture ring in the bound
  o.ports = {static_cast<uint16_t>(data[2] << 8 | data[3])};
  if (o.ports[0] == 0) return 0;  // refused by Validate(): no port 0 to capture
  o.max_flows = 1 + data[1] % kMaxFlows;
  o.protocol = (data[4] & 1) ? config::TapProtocol::kMemcached : config::TapProtocol::kRedis;
  o.weight = (data[4] & 2) ? config::TapWeight::kBytes : config::TapWeight::kOps;
  o.flow_buffer_bytes = (data[4] & 4) ? 256 : 4096;
  o.idle_timeout = absl::Seconds(1);
  FUZZ_CHECK_OK(o.Validate());
  const int link = FuzzLink(data[0]);

  const absl::Time start = absl::FromUnixSeconds(1'700'000'000);
  sketch::HeavyHittersOptions t;
  t.candidates = 16;
  t.max_key_bytes = 64;
  absl::StatusOr<sketch::HeavyHitters> tracker = sketch::HeavyHitters::Create(t, start);
  FUZZ_CHECK_OK(tracker);
  tap::TapPipeline pipeline(o, *tracker);
  // The bound without the per-process parts: flows x (buffers + state).
  const uint64_t bound = o.MemoryBoundBytes();

  uint64_t events = 0;
  FrameRecords records(data, size, 5, start);
  std::string_view frame;
  absl::Time now;
  while (records.Next(&frame, &now)) {
    tracker->Advance(now);
    pipeline.Frame(link, frame, now);
    pipeline.ExpireIdle(now);

    FUZZ_CHECK(pipeline.events() >= events);
    events = pipeline.events();
    tap::TapCounters c;
    pipeline.Fill(c);
    FUZZ_CHECK(c.memory_bytes <= bound);
    FUZZ_CHECK(c.flows <= o.max_flows);
    FUZZ_CHECK(c.flows_opened == c.flows_closed + c.flows_expired + c.flows_evicted + c.flows);
    const uint64_t keys = c.read_keys + c.write_keys;
    const double raw = tracker->RawTotal(sketch::Op::kRead) + tracker->RawTotal(sketch::Op::kWrite);
    FUZZ_CHECK(std::isfinite(raw));
    if (o.weight == config::TapWeight::kOps) {
      // Each key is counted as its request is parsed, weighing 1.
      FUZZ_CHECK(keys == events);
      FUZZ_CHECK(raw == static_cast<double>(events));
    } else {
      // Keys wait for their reply (or a flush) to be counted, weighing their bytes.
      FUZZ_CHECK(events <= keys);
    }
  }
  FUZZ_CHECK(tracker->size() <= t.candidates);
  for (const sketch::HeavyHitter& h : tracker->TopK(t.candidates)) {
    FUZZ_CHECK(h.key.size() <= t.max_key_bytes);
    FUZZ_CHECK(std::isfinite(h.estimate) && h.lower_bound <= h.estimate * (1 + 1e-9));
  }
  return 0;
}

}  // namespace hotkey::fuzz

#ifndef HOTKEY_FUZZ_NO_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hotkey::fuzz::FuzzTap(data, size);
}
#endif
