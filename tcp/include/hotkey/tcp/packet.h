// Decoding one captured frame down to its TCP segment: link layer (Ethernet with VLAN
// tags, Linux cooked capture v1 and v2 as `any` gives, BSD loopback, raw IP), IPv4 or IPv6,
// then TCP. Pure: no I/O, no allocation; the segment's payload points into the frame.
//
// Thread-safe (no state).

#ifndef HOTKEY_TCP_PACKET_H_
#define HOTKEY_TCP_PACKET_H_

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace hotkey::tcp {

// One end of a connection. IPv4 addresses are stored as IPv4-mapped IPv6 (::ffff:a.b.c.d).
struct Endpoint {
  std::array<uint8_t, 16> address = {};
  uint16_t port = 0;

  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

enum class Direction : uint8_t { kToServer = 0, kToClient = 1 };

struct Segment {
  Endpoint client;
  Endpoint server;  // the end whose port is one of the server ports
  Direction direction = Direction::kToServer;
  uint32_t seq = 0;
  bool syn = false;
  bool fin = false;
  bool rst = false;
  std::string_view payload;  // into the frame
};

enum class DecodeStatus : uint8_t {
  kOk,
  kNotTcp,         // another protocol (ARP, UDP, ICMP, ...): not counted as an error
  kOtherPort,      // TCP, but neither port is a server port
  kFragment,       // a non-first or more-fragments IPv4 fragment (not reassembled)
  kTruncated,      // shorter than its headers say (snap length, or a broken frame)
  kMalformed,      // headers that cannot be valid
  kUnsupportedLink // a link type this decoder does not know
};

// `link_type` is libpcap's DLT_ value (pcap_datalink). `server_ports` are the tapped ports;
// when both ports are server ports, the destination is taken as the server.
DecodeStatus DecodeFrame(int link_type, std::string_view frame,
                         std::span<const uint16_t> server_ports, Segment& out);

}  // namespace hotkey::tcp

#endif  // HOTKEY_TCP_PACKET_H_
