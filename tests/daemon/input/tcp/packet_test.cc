// DecodeFrame: every link type and IP version from hand-built frames, and the frames that
// must be rejected (truncated, malformed, fragments, other protocols and ports).

#include <pcap/dlt.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "enum_table_check.h"
#include "hotkey/tcp/packet.h"
#include "test_util.h"

namespace hotkey::tcp {
namespace {

using testing::BsdLoopback;
using testing::Ethernet;
using testing::Ipv4;
using testing::Ipv4Spec;
using testing::Ipv4Tcp;
using testing::Ipv6;
using testing::Ipv6Address;
using testing::Ipv6Extension;
using testing::Ipv6Fragment;
using testing::Ipv6Tcp;
using testing::LinuxSll;
using testing::LinuxSll2;
using testing::TcpBytes;
using testing::TcpSpec;

constexpr uint16_t kIpv4 = 0x0800;
constexpr uint16_t kIpv6 = 0x86DD;
constexpr std::array<uint16_t, 1> kRedisPort = {6379};

// The DLT_ numbers packet.h defines are libpcap's (on Linux; OpenBSD numbers two of them
// differently, see <pcap/dlt.h>).
static_assert(kDltNull == DLT_NULL);
static_assert(kDltEn10Mb == DLT_EN10MB);
static_assert(kDltRaw == DLT_RAW);
static_assert(kDltLoop == DLT_LOOP);
static_assert(kDltLinuxSll == DLT_LINUX_SLL);
static_assert(kDltLinuxSll2 == DLT_LINUX_SLL2);
static_assert(kDltIpv4 == DLT_IPV4);
static_assert(kDltIpv6 == DLT_IPV6);

// Decodes a copy of `frame` in a buffer of exactly its size, so that AddressSanitizer
// reports any read past its end. The copy lives until the next call, so the payload may
// be checked after a frame built in the call's own expression.
DecodeStatus Decode(int link, std::string_view frame, Segment& out,
                    std::span<const uint16_t> ports = kRedisPort) {
  static std::unique_ptr<char[]> copy;
  copy = std::make_unique<char[]>(frame.size() + (frame.empty() ? 1 : 0));
  std::copy(frame.begin(), frame.end(), copy.get());
  const std::string_view exact(copy.get(), frame.size());
  const DecodeStatus s = DecodeFrame(link, exact, ports, out);
  if (s == DecodeStatus::kOk) {  // the payload points into the frame
    REQUIRE(out.payload.data() >= exact.data());
    REQUIRE(out.payload.data() + out.payload.size() <= exact.data() + exact.size());
  }
  return s;
}

std::array<uint8_t, 16> Mapped(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}

TcpSpec Request() {
  TcpSpec t;
  t.src_port = 40000;
  t.dst_port = 6379;
  t.seq = 0xdeadbeef;
  t.flags = testing::kAck | testing::kPsh;
  t.payload = "*1\r\n$4\r\nPING\r\n";
  return t;
}

void CheckRequest(const Segment& s) {
  CHECK(s.direction == Direction::kToServer);
  CHECK(s.client.port == 40000);
  CHECK(s.server.port == 6379);
  CHECK(s.seq == 0xdeadbeef);
  CHECK_FALSE(s.syn);
  CHECK_FALSE(s.fin);
  CHECK_FALSE(s.rst);
  CHECK(s.payload == "*1\r\n$4\r\nPING\r\n");
}

TEST_CASE("DecodeFrame: Ethernet IPv4 gives the endpoints, sequence number and payload",
          "[tcp][packet]") {
  Segment s;
  REQUIRE(Decode(kDltEn10Mb, Ethernet(kIpv4, Ipv4Tcp(Request())), s) == DecodeStatus::kOk);
  CheckRequest(s);
  CHECK(s.client.address == Mapped(10, 0, 0, 1));
  CHECK(s.server.address == Mapped(10, 0, 0, 2));
}

TEST_CASE("DecodeFrame: a reply's client is its destination", "[tcp][packet]") {
  TcpSpec t = Request();
  t.src_port = 6379;
  t.dst_port = 40000;
  t.payload = "+PONG\r\n";
  Segment s;
  REQUIRE(Decode(kDltEn10Mb, Ethernet(kIpv4, Ipv4Tcp(t)), s) == DecodeStatus::kOk);
  CHECK(s.direction == Direction::kToClient);
  CHECK(s.client.port == 40000);
  CHECK(s.client.address == Mapped(10, 0, 0, 2));
  CHECK(s.server.port == 6379);
  CHECK(s.server.address == Mapped(10, 0, 0, 1));
  CHECK(s.payload == "+PONG\r\n");
}

TEST_CASE("DecodeFrame: when both ports are server ports the destination is the server",
          "[tcp][packet]") {
  TcpSpec t = Request();
  t.src_port = 6380;
  const std::array<uint16_t, 2> ports = {6380, 6379};
  Segment s;
  REQUIRE(Decode(kDltEn10Mb, Ethernet(kIpv4, Ipv4Tcp(t)), s, ports) == DecodeStatus::kOk);
  CHECK(s.direction == Direction::kToServer);
  CHECK(s.server.port == 6379);
  CHECK(s.client.port == 6380);
}

TEST_CASE("DecodeFrame: other ports, and no server port at all, are kOtherPort", "[tcp][packet]") {
  TcpSpec t = Request();
  t.dst_port = 11211;
  Segment s;
  CHECK(Decode(kDltEn10Mb, Ethernet(kIpv4, Ipv4Tcp(t)), s) == DecodeStatus::kOtherPort);
  CHECK(Decode(kDltEn10Mb, Ethernet(kIpv4, Ipv4Tcp(Request())), s, {}) == DecodeStatus::kOtherPort);
}

TEST_CASE("DecodeFrame: SYN, FIN and RST flags", "[tcp][packet]") {
  for (uint8_t flags : {testing::kSyn, testing::kFin, testing::kRst,
                        static_cast<uint8_t>(testing::kSyn | testing::kAck)}) {
    TcpSpec t = Request();
    t.flags = flags;
    t.payload.clear();
    Segment s;
    REQUIRE(Decode(kDltEn10Mb, Ethernet(kIpv4, Ipv4Tcp(t)), s) == DecodeStatus::kOk);
    CHECK(s.syn == ((flags & testing::kSyn) != 0));
    CHECK(s.fin == ((flags & testing::kFin) != 0));
    CHECK(s.rst == ((flags & testing::kRst) != 0));
    CHECK(s.payload.empty());
  }
}

TEST_CASE("DecodeFrame: Ethernet padding past the IPv4 total length is not payload",
          "[tcp][packet]") {
  TcpSpec t = Request();
  t.payload = "+OK";  // 43-byte IP packet: an Ethernet frame pads it to 46
  std::string frame = Ethernet(kIpv4, Ipv4Tcp(t));
  frame.append(6, '\0');
  Segment s;
  REQUIRE(Decode(kDltEn10Mb, frame, s) == DecodeStatus::kOk);
  CHECK(s.payload == "+OK");
}

TEST_CASE("DecodeFrame: 802.1Q and 802.1ad tags are skipped, up to kMaxVlanTags", "[tcp][packet]") {
  Segment s;
  for (const std::vector<uint16_t>& tags : std::vector<std::vector<uint16_t>>{
           {0x8100}, {0x88A8, 0x8100}, {0x9100, 0x8100}, {0x88A8, 0x8100, 0x8100, 0x8100}}) {
    INFO(tags.size() << " tags");
    REQUIRE(Decode(kDltEn10Mb, Ethernet(kIpv4, Ipv4Tcp(Request()), tags), s) == DecodeStatus::kOk);
    CheckRequest(s);
    REQUIRE(Decode(kDltEn10Mb, Ethernet(kIpv6, Ipv6Tcp(Request()), tags), s) == DecodeStatus::kOk);
    CheckRequest(s);
  }
  const std::vector<uint16_t> five(kMaxVlanTags + 1, 0x8100);
  CHECK(Decode(kDltEn10Mb, Ethernet(kIpv4, Ipv4Tcp(Request()), five), s) ==
        DecodeStatus::kMalformed);
}

TEST_CASE("DecodeFrame: Linux cooked capture v1 and v2, IPv4 and IPv6", "[tcp][packet]") {
  Segment s;
  REQUIRE(Decode(kDltLinuxSll, LinuxSll(kIpv4, Ipv4Tcp(Request())), s) == DecodeStatus::kOk);
  CheckRequest(s);
  REQUIRE(Decode(kDltLinuxSll, LinuxSll(kIpv6, Ipv6Tcp(Request())), s) == DecodeStatus::kOk);
  CheckRequest(s);
  CHECK(s.client.address == Ipv6Address(1));
  REQUIRE(Decode(kDltLinuxSll2, LinuxSll2(kIpv4, Ipv4Tcp(Request())), s) == DecodeStatus::kOk);
  CheckRequest(s);
  REQUIRE(Decode(kDltLinuxSll2, LinuxSll2(kIpv6, Ipv6Tcp(Request())), s) == DecodeStatus::kOk);
  CheckRequest(s);
  CHECK(s.server.address == Ipv6Address(2));
  // A VLAN tag libpcap put back: the TCI, then the inner protocol, after the cooked header.
  std::string tagged_v4 = std::string("\x00\x64\x08\x00", 4) + Ipv4Tcp(Request());
  REQUIRE(Decode(kDltLinuxSll, LinuxSll(0x8100, tagged_v4), s) == DecodeStatus::kOk);
  CheckRequest(s);
  REQUIRE(Decode(kDltLinuxSll2, LinuxSll2(0x8100, tagged_v4), s) == DecodeStatus::kOk);
  CheckRequest(s);
  // ARP over a cooked header is another protocol.
  CHECK(Decode(kDltLinuxSll, LinuxSll(0x0806, std::string(28, '\0')), s) == DecodeStatus::kNotTcp);
  CHECK(Decode(kDltLinuxSll2, LinuxSll2(0x0806, std::string(28, '\0')), s) ==
        DecodeStatus::kNotTcp);
}

TEST_CASE("DecodeFrame: BSD loopback in either byte order, and OpenBSD's big-endian one",
          "[tcp][packet]") {
  Segment s;
  for (bool big : {false, true}) {
    REQUIRE(Decode(kDltNull, BsdLoopback(2, big, Ipv4Tcp(Request())), s) == DecodeStatus::kOk);
    CheckRequest(s);
    for (uint32_t af6 : {24u, 28u, 30u}) {
      REQUIRE(Decode(kDltNull, BsdLoopback(af6, big, Ipv6Tcp(Request())), s) == DecodeStatus::kOk);
      CheckRequest(s);
    }
    CHECK(Decode(kDltNull, BsdLoopback(7, big, Ipv4Tcp(Request())), s) == DecodeStatus::kNotTcp);
  }
  REQUIRE(Decode(kDltLoop, BsdLoopback(2, true, Ipv4Tcp(Request())), s) == DecodeStatus::kOk);
  CheckRequest(s);
  REQUIRE(Decode(kDltLoop, BsdLoopback(24, true, Ipv6Tcp(Request())), s) == DecodeStatus::kOk);
  CHECK(Decode(kDltLoop, BsdLoopback(2, false, Ipv4Tcp(Request())), s) == DecodeStatus::kNotTcp);
}

TEST_CASE("DecodeFrame: raw IP by its version nibble (DLT_RAW, LINKTYPE_RAW, DLT_IPV4/6)",
          "[tcp][packet]") {
  Segment s;
  for (int link : {kDltRaw, kLinktypeRaw}) {
    REQUIRE(Decode(link, Ipv4Tcp(Request()), s) == DecodeStatus::kOk);
    CheckRequest(s);
    REQUIRE(Decode(link, Ipv6Tcp(Request()), s) == DecodeStatus::kOk);
    CheckRequest(s);
    std::string bad = Ipv4Tcp(Request());
    bad[0] = 0x55;
    CHECK(Decode(link, bad, s) == DecodeStatus::kMalformed);
  }
  REQUIRE(Decode(kDltIpv4, Ipv4Tcp(Request()), s) == DecodeStatus::kOk);
  CheckRequest(s);
  REQUIRE(Decode(kDltIpv6, Ipv6Tcp(Request()), s) == DecodeStatus::kOk);
  CheckRequest(s);
  CHECK(Decode(kDltIpv4, Ipv6Tcp(Request()), s) == DecodeStatus::kMalformed);
  CHECK(Decode(kDltIpv6, Ipv4Tcp(Request()), s) == DecodeStatus::kMalformed);
}

TEST_CASE("DecodeFrame: an unknown link type is kUnsupportedLink", "[tcp][packet]") {
  Segment s;
  CHECK(Decode(DLT_IEEE802_11, Ipv4Tcp(Request()), s) == DecodeStatus::kUnsupportedLink);
  CHECK(Decode(-1, Ipv4Tcp(Request()), s) == DecodeStatus::kUnsupportedLink);
}

TEST_CASE("DecodeFrame: other protocols are kNotTcp", "[tcp][packet]") {
  Segment s;
  CHECK(Decode(kDltEn10Mb, Ethernet(0x0806, std::string(28, '\0')), s) == DecodeStatus::kNotTcp);
  CHECK(Decode(kDltEn10Mb, Ethernet(0x0030, std::string(46, '\0')), s) ==
        DecodeStatus::kNotTcp);  // an 802.3 length, LLC follows
  Ipv4Spec udp;
  udp.protocol = 17;
  CHECK(Decode(kDltEn10Mb, Ethernet(kIpv4, Ipv4(udp, std::string(8, '\0'))), s) ==
        DecodeStatus::kNotTcp);
  CHECK(Decode(kDltRaw, Ipv6(17, std::string(8, '\0')), s) == DecodeStatus::kNotTcp);
  CHECK(Decode(kDltRaw, Ipv6(58, std::string(8, '\0')), s) == DecodeStatus::kNotTcp);  // ICMPv6
  CHECK(Decode(kDltRaw, Ipv6(59, ""), s) == DecodeStatus::kNotTcp);  // no next header
}

TEST_CASE("DecodeFrame: IPv4 options are skipped; a header length under 5 words is malformed",
          "[tcp][packet]") {
  Segment s;
  Ipv4Spec ip;
  ip.options_bytes = 12;
  REQUIRE(Decode(kDltRaw, Ipv4(ip, TcpBytes(Request())), s) == DecodeStatus::kOk);
  CheckRequest(s);
  ip.options_bytes = 40;  // the most IHL allows
  REQUIRE(Decode(kDltRaw, Ipv4(ip, TcpBytes(Request())), s) == DecodeStatus::kOk);
  CheckRequest(s);
  for (int ihl = 0; ihl < 5; ++ihl) {
    std::string frame = Ipv4Tcp(Request());
    frame[0] = static_cast<char>(0x40 | ihl);
    CHECK(Decode(kDltRaw, frame, s) == DecodeStatus::kMalformed);
  }
}

TEST_CASE("DecodeFrame: IPv4 total length against the header and the captured bytes",
          "[tcp][packet]") {
  Segment s;
  const std::string good = Ipv4Tcp(Request());
  auto with_total = [&](uint16_t total) {
    std::string f = good;
    f[2] = static_cast<char>(total >> 8);
    f[3] = static_cast<char>(total & 0xff);
    return f;
  };
  CHECK(Decode(kDltRaw, with_total(19), s) == DecodeStatus::kMalformed);
  CHECK(Decode(kDltRaw, with_total(static_cast<uint16_t>(good.size() + 1)), s) ==
        DecodeStatus::kTruncated);
  // A total length that ends inside the TCP header leaves no room for it.
  CHECK(Decode(kDltRaw, with_total(30), s) == DecodeStatus::kMalformed);
  // Shorter than captured: the rest is padding.
  const std::string padded = with_total(static_cast<uint16_t>(good.size() - 4));
  REQUIRE(Decode(kDltRaw, padded, s) == DecodeStatus::kOk);
  CHECK(s.payload == "*1\r\n$4\r\nPI");
  // Total length 0: a segmentation-offloaded packet; the captured length counts.
  const std::string zero = with_total(0);
  REQUIRE(Decode(kDltRaw, zero, s) == DecodeStatus::kOk);
  CheckRequest(s);
}

TEST_CASE("DecodeFrame: IPv4 fragments are kFragment, a don't-fragment packet is whole",
          "[tcp][packet]") {
  Segment s;
  Ipv4Spec ip;
  for (uint16_t flags_offset :
       {uint16_t{0x2000}, uint16_t{0x0001}, uint16_t{0x2010}, uint16_t{0x1fff}}) {
    ip.flags_offset = flags_offset;
    CHECK(Decode(kDltRaw, Ipv4(ip, TcpBytes(Request())), s) == DecodeStatus::kFragment);
  }
  ip.flags_offset = 0;
  CHECK(Decode(kDltRaw, Ipv4(ip, TcpBytes(Request())), s) == DecodeStatus::kOk);
  ip.flags_offset = 0x4000;
  CHECK(Decode(kDltRaw, Ipv4(ip, TcpBytes(Request())), s) == DecodeStatus::kOk);
}

TEST_CASE("DecodeFrame: IPv6 extension headers are walked to TCP", "[tcp][packet]") {
  Segment s;
  const std::string tcp = TcpBytes(Request());
  // Hop-by-hop, destination options, routing, an atomic fragment, AH, then TCP.
  std::string ah = {6, 4, 0, 0};  // next TCP, (4 + 2) * 4 = 24 bytes
  ah.append(20, '\0');
  const std::string chain = Ipv6Extension(60, 8) + Ipv6Extension(43, 16) + Ipv6Extension(44, 24) +
                            Ipv6Fragment(51, 0, false) + ah + tcp;
  REQUIRE(Decode(kDltRaw, Ipv6(0, chain), s) == DecodeStatus::kOk);
  CheckRequest(s);
}

TEST_CASE("DecodeFrame: IPv6 fragments, misplaced or endless extension headers", "[tcp][packet]") {
  Segment s;
  const std::string tcp = TcpBytes(Request());
  CHECK(Decode(kDltRaw, Ipv6(44, Ipv6Fragment(6, 0, true) + tcp), s) == DecodeStatus::kFragment);
  CHECK(Decode(kDltRaw, Ipv6(44, Ipv6Fragment(6, 185, false) + tcp), s) == DecodeStatus::kFragment);
  // Hop-by-hop only right after the fixed header.
  CHECK(Decode(kDltRaw, Ipv6(60, Ipv6Extension(0, 8) + Ipv6Extension(6, 8) + tcp), s) ==
        DecodeStatus::kMalformed);
  // kMaxIpv6ExtensionHeaders destination options are walked, one more is not.
  std::string chain;
  for (int i = 0; i < kMaxIpv6ExtensionHeaders - 1; ++i) chain += Ipv6Extension(60, 8);
  CHECK(Decode(kDltRaw, Ipv6(60, chain + Ipv6Extension(6, 8) + tcp), s) == DecodeStatus::kOk);
  CHECK(Decode(kDltRaw, Ipv6(60, chain + Ipv6Extension(60, 8) + Ipv6Extension(6, 8) + tcp), s) ==
        DecodeStatus::kMalformed);
  // An extension header longer than the payload.
  std::string long_ext = Ipv6Extension(6, 8);
  long_ext[1] = 10;
  CHECK(Decode(kDltRaw, Ipv6(60, long_ext + tcp), s) == DecodeStatus::kMalformed);
  // Too short for an extension header at all.
  CHECK(Decode(kDltRaw, Ipv6(60, "\x06\x00\x00"), s) == DecodeStatus::kMalformed);
}

TEST_CASE("DecodeFrame: IPv6 payload length against the captured bytes", "[tcp][packet]") {
  Segment s;
  const std::string good = Ipv6Tcp(Request());
  auto with_length = [&](uint16_t len) {
    std::string f = good;
    f[4] = static_cast<char>(len >> 8);
    f[5] = static_cast<char>(len & 0xff);
    return f;
  };
  CHECK(Decode(kDltRaw, with_length(static_cast<uint16_t>(good.size() - 39)), s) ==
        DecodeStatus::kTruncated);
  const std::string padded = with_length(static_cast<uint16_t>(good.size() - 42));
  REQUIRE(Decode(kDltRaw, padded, s) == DecodeStatus::kOk);
  CHECK(s.payload == "*1\r\n$4\r\nPING");
  const std::string zero = with_length(0);  // a jumbogram, or BIG TCP
  REQUIRE(Decode(kDltRaw, zero, s) == DecodeStatus::kOk);
  CheckRequest(s);
}

TEST_CASE("DecodeFrame: TCP options are skipped; a data offset out of range is malformed",
          "[tcp][packet]") {
  Segment s;
  TcpSpec t = Request();
  t.options_bytes = 12;
  REQUIRE(Decode(kDltRaw, Ipv4Tcp(t), s) == DecodeStatus::kOk);
  CheckRequest(s);
  t.options_bytes = 40;
  REQUIRE(Decode(kDltRaw, Ipv6Tcp(t), s) == DecodeStatus::kOk);
  CheckRequest(s);
  for (int offset : {0, 4}) {
    std::string f = Ipv4Tcp(Request());
    f[20 + 12] = static_cast<char>(offset << 4);
    CHECK(Decode(kDltRaw, f, s) == DecodeStatus::kMalformed);
  }
  // A data offset of 15 words (60 bytes) in a 34-byte segment.
  TcpSpec empty = Request();
  empty.payload = "ab";
  std::string f = Ipv4Tcp(empty);
  f[20 + 12] = static_cast<char>(15 << 4);
  CHECK(Decode(kDltRaw, f, s) == DecodeStatus::kMalformed);
}

TEST_CASE("DecodeFrame: every strict prefix of a frame is rejected without a read past it",
          "[tcp][packet]") {
  TcpSpec t = Request();
  t.options_bytes = 8;
  std::string ah = {6, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};  // (1 + 2) * 4 = 12 bytes
  const std::string v6 =
      Ipv6(0, Ipv6Extension(44, 8) + Ipv6Fragment(51, 0, false) + ah + TcpBytes(t));
  Ipv4Spec ip;
  ip.options_bytes = 8;
  const std::string v4 = Ipv4(ip, TcpBytes(t));
  const std::vector<std::pair<int, std::string>> frames = {
      {kDltEn10Mb, Ethernet(kIpv4, v4, {0x88A8, 0x8100})},
      {kDltEn10Mb, Ethernet(kIpv6, v6)},
      {kDltLinuxSll, LinuxSll(kIpv4, v4)},
      {kDltLinuxSll2, LinuxSll2(kIpv6, v6)},
      {kDltLinuxSll2, LinuxSll2(0x88A8, std::string("\x00\x64\x81\x00\x00\x65\x86\xdd", 8) + v6)},
      {kDltNull, BsdLoopback(2, false, v4)},
      {kDltLoop, BsdLoopback(24, true, v6)},
      {kDltRaw, v4},
      {kDltRaw, v6},
      {kDltIpv4, v4},
      {kDltIpv6, v6},
  };
  for (const auto& [link, frame] : frames) {
    Segment s;
    REQUIRE(Decode(link, frame, s) == DecodeStatus::kOk);
    CheckRequest(s);
    for (size_t n = 0; n < frame.size(); ++n) {
      INFO("link " << link << ", " << n << " of " << frame.size() << " bytes");
      const DecodeStatus status = Decode(link, std::string_view(frame).substr(0, n), s);
      CHECK(status != DecodeStatus::kOk);
      // The headers and length fields promise more than was captured.
      CHECK(status == DecodeStatus::kTruncated);
    }
  }
}

TEST_CASE("DecodeStatusName: a stable label for each status", "[tcp][packet]") {
  CHECK(DecodeStatusName(DecodeStatus::kOk) == "ok");
  CHECK(DecodeStatusName(DecodeStatus::kNotTcp) == "not_tcp");
  CHECK(DecodeStatusName(DecodeStatus::kOtherPort) == "other_port");
  CHECK(DecodeStatusName(DecodeStatus::kFragment) == "fragment");
  CHECK(DecodeStatusName(DecodeStatus::kTruncated) == "truncated");
  CHECK(DecodeStatusName(DecodeStatus::kMalformed) == "malformed");
  CHECK(DecodeStatusName(DecodeStatus::kUnsupportedLink) == "unsupported_link");
  ::hotkey::testing::CheckEnumTable(
      kDecodeStatusNames, +[](DecodeStatus d) {
        switch (d) {
          case DecodeStatus::kOk:
          case DecodeStatus::kNotTcp:
          case DecodeStatus::kOtherPort:
          case DecodeStatus::kFragment:
          case DecodeStatus::kTruncated:
          case DecodeStatus::kMalformed:
          case DecodeStatus::kUnsupportedLink:
            return true;
        }
        return false;
      });
}

}  // namespace
}  // namespace hotkey::tcp
