// Helpers for the tcp tests: frames built by hand, byte by byte from the header layouts of
// RFC 791, RFC 8200, RFC 9293 and libpcap's link-layer header types (not from the decoder's
// code), segments for the reassembler, a handler that records what it is told, and the
// allocation count of alloc_count.cc.
//
// Thread-compatible.

#ifndef HOTKEY_TESTS_TCP_TEST_UTIL_H_
#define HOTKEY_TESTS_TCP_TEST_UTIL_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hotkey/tcp/packet.h"
#include "hotkey/tcp/reassembler.h"

#include "alloc_count.h"

namespace hotkey::tcp::testing {

using ::hotkey::testing::AllocationsOnThisThread;  // tests/lib/alloc_count.h

inline constexpr uint8_t kFin = 0x01;
inline constexpr uint8_t kSyn = 0x02;
inline constexpr uint8_t kRst = 0x04;
inline constexpr uint8_t kPsh = 0x08;
inline constexpr uint8_t kAck = 0x10;

// A TCP header (20 bytes plus `options_bytes` of NOPs, a multiple of 4) and its payload.
struct TcpSpec {
  uint16_t src_port = 40000;
  uint16_t dst_port = 6379;
  uint32_t seq = 1;
  uint8_t flags = kAck | kPsh;
  std::string payload;
  size_t options_bytes = 0;
};
std::string TcpBytes(const TcpSpec& t);

// An IPv4 header (`options_bytes` of NOP options, a multiple of 4) around `l4`.
struct Ipv4Spec {
  std::array<uint8_t, 4> src = {10, 0, 0, 1};
  std::array<uint8_t, 4> dst = {10, 0, 0, 2};
  uint8_t protocol = 6;
  uint16_t flags_offset = 0x4000;  // DF, offset 0
  size_t options_bytes = 0;
};
std::string Ipv4(const Ipv4Spec& ip, std::string_view l4);
inline std::string Ipv4Tcp(const TcpSpec& t) { return Ipv4({}, TcpBytes(t)); }

// An IPv6 header around `rest` (extension headers and the upper layer); `next` is the
// header's next-header field.
std::array<uint8_t, 16> Ipv6Address(uint8_t last);  // 2001:db8::last
std::string Ipv6(uint8_t next, std::string_view rest, std::array<uint8_t, 16> src = Ipv6Address(1),
                 std::array<uint8_t, 16> dst = Ipv6Address(2));
// An extension header of `total_bytes` (a multiple of 8, >= 8) in the hop-by-hop,
// routing and destination-options format: next header, length in 8-byte units minus 1.
std::string Ipv6Extension(uint8_t next, size_t total_bytes);
// A fragment header.
std::string Ipv6Fragment(uint8_t next, uint16_t offset_units, bool more);
inline std::string Ipv6Tcp(const TcpSpec& t) { return Ipv6(6, TcpBytes(t)); }

// Link layers.
std::string Ethernet(uint16_t ether_type, std::string_view payload,
                     const std::vector<uint16_t>& tag_types = {});
std::string LinuxSll(uint16_t protocol, std::string_view payload);
std::string LinuxSll2(uint16_t protocol, std::string_view payload);
std::string BsdLoopback(uint32_t family, bool big_endian, std::string_view payload);

// A segment for the reassembler: client 10.0.0.1:client_port, server 10.0.0.2:6379.
Segment MakeSegment(uint16_t client_port, Direction d, uint32_t seq, std::string_view payload,
                    uint8_t flags = kAck);

// Records every call as a line ("open 0 start", "open 1 midstream", "data 0 > abc",
// "data 0 < +OK", "gap 0 >", "close 0") and each connection's two streams (a connection
// begins at OnOpen; ">" is to the server).
class RecordingHandler final : public StreamHandler {
 public:
  struct Connection {
    FlowId flow;
    bool from_start;
    Segment first;
    std::string to_server;
    std::string to_client;
    int gaps[2] = {0, 0};
    bool closed = false;
  };

  void OnOpen(FlowId flow, const Segment& first, bool from_start) override;
  void OnData(FlowId flow, Direction direction, std::string_view bytes) override;
  void OnGap(FlowId flow, Direction direction) override;
  void OnClose(FlowId flow) override;

  std::vector<std::string> events;
  std::vector<Connection> connections;
  // Where each open flow's connection is in `connections`.
  std::map<FlowId, size_t> open;
  // A call for a flow that is not open, or data that comes between a close and an open.
  int errors = 0;
};

}  // namespace hotkey::tcp::testing

#endif  // HOTKEY_TESTS_TCP_TEST_UTIL_H_
