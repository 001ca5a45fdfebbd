// DecodeFrame: one captured frame down to its TCP segment, reading every header field
// through a bounds-checked cursor, so no byte past the frame is ever read whatever the
// frame claims.
//
// Layers, each a few fixed-offset loads:
//   link   Ethernet (14 bytes), Linux cooked v1 (16 bytes, protocol at 14) and v2 (20
//          bytes, protocol at 0), each then up to kMaxVlanTags 4-byte 802.1Q/802.1ad tags
//          (libpcap puts back in a cooked header the tag the kernel took off), BSD
//          loopback (4-byte address family, in the capturing host's byte order for DLT_NULL,
//          big-endian for DLT_LOOP), raw IP (the version nibble picks IPv4 or IPv6).
//   IPv4   RFC 791: IHL >= 5 and within the frame; the total length cuts the Ethernet
//          padding off, and a total length past the captured bytes is kTruncated (a snap
//          length cut the frame: its payload would be handed over short). Total length 0
//          is taken as "the captured length": Linux reports segmentation-offloaded
//          packets larger than 64 KiB that way (BIG TCP). MF or a fragment offset is
//          kFragment. Options are skipped by IHL.
//   IPv6   RFC 8200: the payload length likewise (0: a jumbogram or BIG TCP, the captured
//          length); extension headers hop-by-hop (first only), routing, destination
//          options, fragment (offset 0 and no more fragments: an atomic fragment, read on)
//          and AH are walked, at most kMaxIpv6ExtensionHeaders of them.
//   TCP    RFC 9293 3.1: data offset >= 5 and within the segment; flags SYN, FIN, RST.
//
// Checksums are not verified (see packet.h). Cost: O(header bytes); no allocation.

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "hotkey/tcp/packet.h"

namespace hotkey::tcp {
namespace {

// EtherTypes (IEEE 802 numbers, https://www.iana.org/assignments/ieee-802-numbers).
constexpr uint16_t kEtherIpv4 = 0x0800;
constexpr uint16_t kEtherIpv6 = 0x86DD;
constexpr uint16_t kEther8021Q = 0x8100;
constexpr uint16_t kEther8021Ad = 0x88A8;
constexpr uint16_t kEtherQinQ = 0x9100;  // pre-standard QinQ, still seen on switches

// IP protocol numbers (https://www.iana.org/assignments/protocol-numbers).
constexpr uint8_t kProtoHopByHop = 0;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoRouting = 43;
constexpr uint8_t kProtoFragment = 44;
constexpr uint8_t kProtoAh = 51;
constexpr uint8_t kProtoDestOptions = 60;

// Address families in a BSD loopback header: AF_INET is 2 everywhere; AF_INET6 is 24
// (NetBSD, OpenBSD), 28 (FreeBSD) or 30 (macOS), as libpcap's linktypes page lists.
constexpr uint32_t kAfInet = 2;
constexpr uint32_t kAfInet6Bsd = 24;
constexpr uint32_t kAfInet6FreeBsd = 28;
constexpr uint32_t kAfInet6Darwin = 30;

constexpr uint8_t kTcpFin = 0x01;
constexpr uint8_t kTcpSyn = 0x02;
constexpr uint8_t kTcpRst = 0x04;

// The bytes of one layer, and big-endian loads that the caller has bounds-checked.
struct Bytes {
  const uint8_t* p;
  size_t n;

  uint8_t U8(size_t at) const { return p[at]; }
  uint16_t U16(size_t at) const { return static_cast<uint16_t>(p[at] << 8 | p[at + 1]); }
  uint32_t U32(size_t at) const {
    return uint32_t{p[at]} << 24 | uint32_t{p[at + 1]} << 16 | uint32_t{p[at + 2]} << 8 |
           uint32_t{p[at + 3]};
  }
  Bytes From(size_t at) const { return {p + at, n - at}; }  // at <= n
  Bytes Prefix(size_t len) const { return {p, len}; }       // len <= n
};

// Where the TCP header starts, and the network-layer facts the segment needs.
struct Network {
  Bytes tcp;
  std::array<uint8_t, 16> src;
  std::array<uint8_t, 16> dst;
};

std::array<uint8_t, 16> MappedIpv4(const uint8_t* a) {
  std::array<uint8_t, 16> out = {};
  out[10] = 0xff;
  out[11] = 0xff;
  std::memcpy(out.data() + 12, a, 4);
  return out;
}

DecodeStatus DecodeIpv4(Bytes ip, Network& net) {
  if (ip.n < 20) return DecodeStatus::kTruncated;
  if (ip.U8(0) >> 4 != 4) return DecodeStatus::kMalformed;
  const size_t header = static_cast<size_t>(ip.U8(0) & 0x0f) * 4;
  if (header < 20) return DecodeStatus::kMalformed;
  if (header > ip.n) return DecodeStatus::kTruncated;
  size_t total = ip.U16(2);
  if (total == 0) {
    total = ip.n;  // segmentation offload past 64 KiB (see the file comment)
  } else if (total < header) {
    return DecodeStatus::kMalformed;
  } else if (total > ip.n) {
    return DecodeStatus::kTruncated;
  }
  const uint16_t flags_offset = ip.U16(6);
  const bool more_fragments = (flags_offset & 0x2000) != 0;
  const uint16_t fragment_offset = flags_offset & 0x1fff;
  if (ip.U8(9) != kProtoTcp) return DecodeStatus::kNotTcp;
  if (more_fragments || fragment_offset != 0) return DecodeStatus::kFragment;
  net.src = MappedIpv4(ip.p + 12);
  net.dst = MappedIpv4(ip.p + 16);
  net.tcp = ip.Prefix(total).From(header);
  return DecodeStatus::kOk;
}

DecodeStatus DecodeIpv6(Bytes ip, Network& net) {
  if (ip.n < 40) return DecodeStatus::kTruncated;
  if (ip.U8(0) >> 4 != 6) return DecodeStatus::kMalformed;
  size_t total = ip.U16(4);
  if (total == 0) {
    total = ip.n - 40;  // a jumbogram or BIG TCP: the captured length
  } else if (total > ip.n - 40) {
    return DecodeStatus::kTruncated;
  }
  std::memcpy(net.src.data(), ip.p + 8, 16);
  std::memcpy(net.dst.data(), ip.p + 24, 16);
  Bytes rest = ip.From(40).Prefix(total);
  uint8_t next = ip.U8(6);
  for (int i = 0; i <= kMaxIpv6ExtensionHeaders; ++i) {
    size_t len = 0;
    switch (next) {
      case kProtoTcp:
        net.tcp = rest;
        return DecodeStatus::kOk;
      case kProtoHopByHop:
        if (i != 0) return DecodeStatus::kMalformed;  // RFC 8200 4.3: only right after the header
        [[fallthrough]];
      case kProtoRouting:
      case kProtoDestOptions:
        if (rest.n < 8) return DecodeStatus::kMalformed;
        len = (size_t{rest.U8(1)} + 1) * 8;
        break;
      case kProtoFragment:
        if (rest.n < 8) return DecodeStatus::kMalformed;
        // Offset (13 bits) and M: only an atomic fragment (RFC 6946) is a whole packet.
        if ((rest.U16(2) & 0xfff9) != 0) return DecodeStatus::kFragment;
        len = 8;
        break;
      case kProtoAh:  // RFC 4302: length in 4-byte units, minus 2
        if (rest.n < 8) return DecodeStatus::kMalformed;
        len = (size_t{rest.U8(1)} + 2) * 4;
        break;
      default:
        return DecodeStatus::kNotTcp;  // UDP, ICMPv6, ESP, no next header, ...
    }
    if (len > rest.n) return DecodeStatus::kMalformed;  // the payload length was checked
    next = rest.U8(0);
    rest = rest.From(len);
  }
  return DecodeStatus::kMalformed;
}

// Dispatches on the EtherType at `type_at`, whose layer starts at `body_at`, after up to
// kMaxVlanTags tags: a tag's TCI starts its layer and the inner EtherType follows it. In
// Ethernet and Linux cooked v1 the EtherType is just before its layer; in cooked v2 it
// opens the 20-byte header.
DecodeStatus DecodeEtherType(Bytes frame, size_t type_at, size_t body_at, Network& net) {
  for (int tags = 0;; ++tags) {
    if (frame.n < type_at + 2 || frame.n < body_at) return DecodeStatus::kTruncated;
    const uint16_t type = frame.U16(type_at);
    if (type == kEtherIpv4) return DecodeIpv4(frame.From(body_at), net);
    if (type == kEtherIpv6) return DecodeIpv6(frame.From(body_at), net);
    if (type != kEther8021Q && type != kEther8021Ad && type != kEtherQinQ) {
      return DecodeStatus::kNotTcp;  // ARP, LLC lengths, ...
    }
    if (tags == kMaxVlanTags) return DecodeStatus::kMalformed;
    type_at = body_at + 2;  // after the tag's TCI
    body_at += 4;
  }
}

DecodeStatus DecodeIpByVersion(Bytes ip, Network& net) {
  if (ip.n < 1) return DecodeStatus::kTruncated;
  switch (ip.U8(0) >> 4) {
    case 4:
      return DecodeIpv4(ip, net);
    case 6:
      return DecodeIpv6(ip, net);
    default:
      return DecodeStatus::kMalformed;
  }
}

DecodeStatus DecodeBsdLoopback(Bytes frame, bool big_endian_only, Network& net) {
  if (frame.n < 4) return DecodeStatus::kTruncated;
  const uint32_t be = frame.U32(0);
  const uint32_t le = __builtin_bswap32(be);
  auto is = [&](uint32_t af) { return be == af || (!big_endian_only && le == af); };
  if (is(kAfInet)) return DecodeIpv4(frame.From(4), net);
  if (is(kAfInet6Bsd) || is(kAfInet6FreeBsd) || is(kAfInet6Darwin)) {
    return DecodeIpv6(frame.From(4), net);
  }
  return DecodeStatus::kNotTcp;
}

DecodeStatus DecodeNetwork(int link_type, Bytes frame, Network& net) {
  switch (link_type) {
    case kDltEn10Mb:
      return DecodeEtherType(frame, 12, 14, net);
    case kDltLinuxSll:
      return DecodeEtherType(frame, 14, 16, net);
    case kDltLinuxSll2:
      return DecodeEtherType(frame, 0, 20, net);
    case kDltNull:
      return DecodeBsdLoopback(frame, /*big_endian_only=*/false, net);
    case kDltLoop:
      return DecodeBsdLoopback(frame, /*big_endian_only=*/true, net);
    case kDltRaw:
    case kLinktypeRaw:
      return DecodeIpByVersion(frame, net);
    case kDltIpv4:
      return DecodeIpv4(frame, net);
    case kDltIpv6:
      return DecodeIpv6(frame, net);
    default:
      return DecodeStatus::kUnsupportedLink;
  }
}

bool IsServerPort(std::span<const uint16_t> ports, uint16_t port) {
  for (uint16_t p : ports) {
    if (p == port) return true;
  }
  return false;
}

}  // namespace

DecodeStatus DecodeFrame(int link_type, std::string_view frame,
                         std::span<const uint16_t> server_ports, Segment& out) {
  Network net;
  const Bytes bytes{reinterpret_cast<const uint8_t*>(frame.data()), frame.size()};
  if (const DecodeStatus s = DecodeNetwork(link_type, bytes, net); s != DecodeStatus::kOk) {
    return s;
  }
  // The IP length was checked against the captured bytes, so a TCP header that does not
  // fit is one the packet cannot hold: malformed, not truncated.
  const Bytes tcp = net.tcp;
  if (tcp.n < 20) return DecodeStatus::kMalformed;
  const size_t header = static_cast<size_t>(tcp.U8(12) >> 4) * 4;
  if (header < 20 || header > tcp.n) return DecodeStatus::kMalformed;
  const uint16_t src_port = tcp.U16(0);
  const uint16_t dst_port = tcp.U16(2);
  Direction direction;
  if (IsServerPort(server_ports, dst_port)) {
    direction = Direction::kToServer;
  } else if (IsServerPort(server_ports, src_port)) {
    direction = Direction::kToClient;
  } else {
    return DecodeStatus::kOtherPort;
  }
  const Endpoint src{net.src, src_port};
  const Endpoint dst{net.dst, dst_port};
  out.client = direction == Direction::kToServer ? src : dst;
  out.server = direction == Direction::kToServer ? dst : src;
  out.direction = direction;
  out.seq = tcp.U32(4);
  const uint8_t flags = tcp.U8(13);
  out.syn = (flags & kTcpSyn) != 0;
  out.fin = (flags & kTcpFin) != 0;
  out.rst = (flags & kTcpRst) != 0;
  out.payload = std::string_view(reinterpret_cast<const char*>(tcp.p) + header, tcp.n - header);
  return DecodeStatus::kOk;
}

}  // namespace hotkey::tcp
