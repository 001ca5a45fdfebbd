// Decoding one captured frame down to its TCP segment: link layer (Ethernet with VLAN
// tags, Linux cooked capture v1 and v2 as `any` gives, BSD loopback, raw IP), IPv4 or IPv6,
// then TCP. Pure: no I/O, no allocation, no exception; the segment's payload points into
// the frame, and no byte past the frame is read.
//
// Checksums are not verified: on the sending host the kernel hands the capture a segment
// before the NIC (or nobody, on loopback) fills them in. IP fragments are not reassembled
// (kFragment): TCP avoids them by path MTU discovery, and a tap cannot bound that memory.
//
// Cost: O(header bytes), a few dozen loads per frame; an IPv6 extension-header walk is
// bounded by kMaxIpv6ExtensionHeaders, VLAN tags by kMaxVlanTags.
//
// References: libpcap's link-layer header types (https://www.tcpdump.org/linktypes.html),
// RFC 791 (IPv4), RFC 8200 (IPv6 and its extension headers), RFC 9293 (TCP header).
//
// Thread-safe (no state).

#ifndef HOTKEY_TCP_PACKET_H_
#define HOTKEY_TCP_PACKET_H_

#include <array>
#include <cstdint>
#include <iterator>
#include <span>
#include <string_view>

#include "hotkey/text/enum_names.h"

namespace hotkey::tcp {

// libpcap's DLT_ values (what pcap_datalink() returns on Linux) for the link types
// DecodeFrame() reads; the same numbers as <pcap/dlt.h> (tests/tcp checks them against
// it), defined here so that this library needs no libpcap.
inline constexpr int kDltNull = 0;         // BSD loopback: 4-byte AF_ in the writer's order
inline constexpr int kDltEn10Mb = 1;       // Ethernet, with 802.1Q / 802.1ad tags
inline constexpr int kDltRaw = 12;         // raw IPv4 or IPv6 (DLT_RAW on Linux)
inline constexpr int kLinktypeRaw = 101;   // the same, as LINKTYPE_RAW in a pcap file
inline constexpr int kDltLoop = 108;       // OpenBSD loopback: 4-byte AF_, big-endian
inline constexpr int kDltLinuxSll = 113;   // Linux cooked capture v1 (`any`, old libpcap)
inline constexpr int kDltIpv4 = 228;       // raw IPv4
inline constexpr int kDltIpv6 = 229;       // raw IPv6
inline constexpr int kDltLinuxSll2 = 276;  // Linux cooked capture v2 (`any`, libpcap 1.10)

// Bounds of the header walks: more is kMalformed. Two tags is what 802.1ad (QinQ) stacks;
// a real IPv6 packet carries at most a handful of extension headers (RFC 8200 4.1 orders
// six kinds, each once but destination options twice).
inline constexpr int kMaxVlanTags = 4;
inline constexpr int kMaxIpv6ExtensionHeaders = 8;

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
  std::string_view payload;  // into the frame: BAD use after the frame's buffer is reused
};

enum class DecodeStatus : uint8_t {
  kOk,
  kNotTcp,          // another protocol (ARP, UDP, ICMP, ...): not counted as an error
  kOtherPort,       // TCP, but neither port is a server port
  kFragment,        // a non-first or more-fragments IPv4 fragment (not reassembled)
  kTruncated,       // shorter than its headers say (snap length, or a broken frame)
  kMalformed,       // headers that cannot be valid
  kUnsupportedLink  // a link type this decoder does not know
};
inline constexpr int kDecodeStatusCount = 7;

// A stable name for a metric label.
inline constexpr text::EnumName<DecodeStatus> kDecodeStatusNames[] = {
    {DecodeStatus::kOk, "ok"},
    {DecodeStatus::kNotTcp, "not_tcp"},
    {DecodeStatus::kOtherPort, "other_port"},
    {DecodeStatus::kFragment, "fragment"},
    {DecodeStatus::kTruncated, "truncated"},
    {DecodeStatus::kMalformed, "malformed"},
    {DecodeStatus::kUnsupportedLink, "unsupported_link"}};
static_assert(std::size(kDecodeStatusNames) == kDecodeStatusCount);
constexpr std::string_view DecodeStatusName(DecodeStatus status) {
  return text::NameOf(kDecodeStatusNames, status);
}

// `link_type` is libpcap's DLT_ value (pcap_datalink). `server_ports` are the tapped ports
// (none: every TCP segment is kOtherPort); when both ports are server ports, the
// destination is taken as the server. `out` is written only when kOk is returned.
DecodeStatus DecodeFrame(int link_type, std::string_view frame,
                         std::span<const uint16_t> server_ports, Segment& out);

}  // namespace hotkey::tcp

#endif  // HOTKEY_TCP_PACKET_H_
