// libFuzzer target: the tap's packet path, DecodeFrame (tcp/packet.h) feeding a small
// Reassembler (tcp/reassembler.h) frame after frame, as the tap does with a capture.
//
// Input: byte 0 picks the link type (kFuzzLinks, the last one unsupported); byte 1 the
// table size (1..8 flows, so eviction happens on short inputs); bytes 2-3 the server port
// (big-endian). Then frame records (frame_records.h), the clock against a 1 s idle timeout,
// so idle expiry happens too.
//
// Checked beyond "no crash, no sanitizer report, no read past a frame": a decoded
// segment's payload lies inside its frame and one of its ports is the server port; every
// flow id is below max_flows; data and gaps come only between a flow's OnOpen and its
// OnClose, and data is never empty; the table never holds more than max_flows flows and
// holds exactly the flows opened and not yet closed; opened = closed + expired + evicted +
// in the table; payload_bytes counts every byte handed over; memory_bytes() never changes.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frame_records.h"
#include "fuzz_util.h"
#include "hotkey/tcp/packet.h"
#include "hotkey/tcp/reassembler.h"

namespace hotkey::fuzz {
namespace {

constexpr size_t kMaxFlows = 8;

class CheckingHandler final : public tcp::StreamHandler {
 public:
  explicit CheckingHandler(size_t max_flows) : max_flows_(max_flows) {}

  void OnOpen(tcp::FlowId flow, const tcp::Segment& first, bool) override {
    FUZZ_CHECK(flow < max_flows_);
    FUZZ_CHECK(!open_[flow]);
    FUZZ_CHECK(first.client == expected_.client && first.server == expected_.server);
    open_[flow] = true;
    ++open_count;
  }
  void OnData(tcp::FlowId flow, tcp::Direction, std::string_view bytes) override {
    FUZZ_CHECK(flow < max_flows_ && open_[flow]);
    FUZZ_CHECK(!bytes.empty());
    // Only the segment being added has data to hand over: its payload, or a suffix of it.
    const std::string_view p = expected_.payload;
    FUZZ_CHECK(bytes.data() >= p.data() && bytes.data() + bytes.size() == p.data() + p.size());
    data_bytes += bytes.size();
  }
  void OnGap(tcp::FlowId flow, tcp::Direction) override {
    FUZZ_CHECK(flow < max_flows_ && open_[flow]);
  }
  void OnClose(tcp::FlowId flow) override {
    FUZZ_CHECK(flow < max_flows_ && open_[flow]);
    open_[flow] = false;
    --open_count;
  }

  tcp::Segment expected_;  // the segment being added
  size_t open_count = 0;
  uint64_t data_bytes = 0;

 private:
  const size_t max_flows_;
  std::array<bool, kMaxFlows> open_ = {};
};

}  // namespace

int FuzzReassembly(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  const int link = FuzzLink(data[0]);
  const size_t max_flows = 1 + data[1] % kMaxFlows;
  const std::array<uint16_t, 1> ports = {static_cast<uint16_t>(data[2] << 8 | data[3])};
  CheckingHandler handler(max_flows);
  tcp::Reassembler reassembler({.max_flows = max_flows, .idle_timeout = absl::Seconds(1)}, handler);
  const size_t memory = reassembler.memory_bytes();
  FrameRecords records(data, size, 4, absl::FromUnixSeconds(1'700'000'000));
  std::string_view frame;
  absl::Time now;
  while (records.Next(&frame, &now)) {
    tcp::Segment s;
    const tcp::DecodeStatus status = tcp::DecodeFrame(link, frame, ports, s);
    FUZZ_CHECK(!tcp::DecodeStatusName(status).empty());
    if (IsUnsupportedFuzzLink(link)) {
      FUZZ_CHECK(status == tcp::DecodeStatus::kUnsupportedLink);
    }
    if (status == tcp::DecodeStatus::kOk) {
      FUZZ_CHECK(s.payload.data() >= frame.data() &&
                 s.payload.data() + s.payload.size() <= frame.data() + frame.size());
      FUZZ_CHECK(s.server.port == ports[0]);
      handler.expected_ = s;
      reassembler.Add(s, now);
    }
    handler.expected_ = tcp::Segment{};
    reassembler.ExpireIdle(now);

    const tcp::Counters& c = reassembler.counters();
    FUZZ_CHECK(reassembler.flows() <= max_flows);
    FUZZ_CHECK(reassembler.flows() == handler.open_count);
    FUZZ_CHECK(c.flows_opened ==
               c.flows_closed + c.flows_expired + c.flows_evicted + reassembler.flows());
    FUZZ_CHECK(c.joined_midstream <= c.flows_opened);
    FUZZ_CHECK(c.payload_bytes == handler.data_bytes);
    FUZZ_CHECK(reassembler.memory_bytes() == memory);
  }
  return 0;
}

}  // namespace hotkey::fuzz

#ifndef HOTKEY_FUZZ_NO_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hotkey::fuzz::FuzzReassembly(data, size);
}
#endif
