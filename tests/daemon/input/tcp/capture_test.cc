// Decoding and reassembly of real traffic: redis-cli against redis-server 7.0 on loopback,
// recorded with tcpdump (testdata/README.md), read back with libpcap. Six connections:
// SET, GET, MGET, a 40000-byte SET in two segments, STRLEN, and INCR over IPv6; each
// from its SYN to both FINs. The streams must be exactly what redis-cli sent and what
// Redis replied, with no gap and no retransmission.

#include <pcap/pcap.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/time/time.h"
#include "hotkey/tcp/packet.h"
#include "hotkey/tcp/reassembler.h"
#include "test_util.h"

namespace hotkey::tcp {
namespace {

constexpr std::array<uint16_t, 1> kServerPort = {42835};  // the recording's redis-server

struct Frame {
  absl::Time time;
  std::string bytes;
};

struct Capture {
  int link_type = -1;
  std::vector<Frame> frames;
};

Capture Read(const std::string& name) {
  char error[PCAP_ERRBUF_SIZE];
  const std::string path = std::string(HOTKEY_TCP_TESTDATA) + "/" + name;
  pcap_t* p = pcap_open_offline(path.c_str(), error);
  INFO(path << ": " << error);
  REQUIRE(p != nullptr);
  Capture c;
  c.link_type = pcap_datalink(p);
  pcap_pkthdr* header;
  const u_char* data;
  while (pcap_next_ex(p, &header, &data) == 1) {
    REQUIRE(header->caplen == header->len);  // recorded without a snap length cut
    c.frames.push_back(
        {absl::FromUnixMicros(int64_t{header->ts.tv_sec} * 1'000'000 + header->ts.tv_usec),
         std::string(reinterpret_cast<const char*>(data), header->caplen)});
  }
  pcap_close(p);
  return c;
}

std::string Bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}
std::string Command(std::initializer_list<std::string_view> args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (std::string_view a : args) out += Bulk(a);
  return out;
}

struct Expected {
  std::string request;
  std::string reply;
};

std::vector<Expected> ExpectedConnections() {
  const std::string big(40000, 'v');
  return {
      {Command({"SET", "greeting", "hello"}), "+OK\r\n"},
      {Command({"GET", "greeting"}), "$5\r\nhello\r\n"},
      {Command({"MGET", "greeting", "missing"}), "*2\r\n$5\r\nhello\r\n$-1\r\n"},
      {Command({"SET", "big", big}), "+OK\r\n"},
      {Command({"STRLEN", "big"}), ":40000\r\n"},
      {Command({"INCR", "counter"}), ":1\r\n"},
  };
}

// Decodes every frame and feeds the reassembler; `keep(i)` false drops data frame i.
template <class Keep>
void Replay(const Capture& c, Reassembler& r, Keep keep, int copies = 1) {
  size_t data_frames = 0;
  for (const Frame& f : c.frames) {
    Segment s;
    REQUIRE(DecodeFrame(c.link_type, f.bytes, kServerPort, s) == DecodeStatus::kOk);
    if (!s.payload.empty() && !keep(data_frames++)) continue;
    for (int i = 0; i < copies; ++i) r.Add(s, f.time);
  }
}

void CheckStreams(const testing::RecordingHandler& h) {
  const std::vector<Expected> expected = ExpectedConnections();
  REQUIRE(h.connections.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("connection " << i);
    const auto& got = h.connections[i];
    CHECK(got.from_start);
    CHECK(got.closed);
    CHECK(got.to_server == expected[i].request);
    CHECK(got.to_client == expected[i].reply);
    CHECK(got.gaps[0] + got.gaps[1] == 0);
    CHECK(got.first.server.port == kServerPort[0]);
  }
  const std::array<uint8_t, 16> v4_loopback = {0, 0, 0,    0,    0,   0, 0, 0,
                                               0, 0, 0xff, 0xff, 127, 0, 0, 1};
  const std::array<uint8_t, 16> v6_loopback = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  CHECK(h.connections[0].first.client.address == v4_loopback);
  CHECK(h.connections[5].first.client.address == v6_loopback);
  CHECK(h.errors == 0);
}

TEST_CASE("Capture: redis-cli on lo (Ethernet) and on any (Linux cooked v2) reassembles exactly",
          "[tcp][capture]") {
  for (const char* name : {"redis_lo.pcap", "redis_any.pcap"}) {
    INFO(name);
    const Capture c = Read(name);
    CHECK(c.link_type == (std::string(name) == "redis_lo.pcap" ? kDltEn10Mb : kDltLinuxSll2));
    testing::RecordingHandler h;
    Reassembler r({.max_flows = 16}, h);
    Replay(c, r, [](size_t) { return true; });
    CheckStreams(h);
    const Counters& k = r.counters();
    CHECK(k.segments == c.frames.size());
    CHECK(k.flows_opened == 6);
    CHECK(k.flows_closed == 6);
    CHECK(k.gaps == 0);
    CHECK(k.joined_midstream == 0);
    CHECK(k.retransmitted_bytes == 0);
    CHECK(r.flows() == 0);
  }
}

TEST_CASE("Capture: every data segment twice gives the same streams, the copies counted",
          "[tcp][capture]") {
  const Capture c = Read("redis_lo.pcap");
  testing::RecordingHandler h;
  Reassembler r({.max_flows = 16}, h);
  Replay(
      c, r, [](size_t) { return true; }, /*copies=*/2);
  CheckStreams(h);
  CHECK(r.counters().retransmitted_bytes == r.counters().payload_bytes);
  CHECK(r.counters().gaps == 0);
}

TEST_CASE("Capture: a lost data segment is one gap in its stream, the rest handed over",
          "[tcp][capture]") {
  const Capture c = Read("redis_any.pcap");
  // Data frames 0-5 are the first three requests and replies; 6 and 7 are the large SET's
  // two segments (32741 and 7291 bytes). Losing 6 makes 7 start past the expected byte.
  testing::RecordingHandler h;
  Reassembler r({.max_flows = 16}, h);
  Replay(c, r, [](size_t i) { return i != 6; });
  REQUIRE(h.connections.size() == 6);
  const auto& big = h.connections[3];
  CHECK(big.gaps[0] == 1);
  CHECK(big.gaps[1] == 0);
  const std::string request = ExpectedConnections()[3].request;
  CHECK(big.to_server == request.substr(32741));
  CHECK(big.to_client == "+OK\r\n");
  CHECK(r.counters().gaps == 1);
  for (size_t i : {0, 1, 2, 4, 5}) CHECK(h.connections[i].gaps[0] == 0);
}

}  // namespace
}  // namespace hotkey::tcp
