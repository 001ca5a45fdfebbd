#include "test_util.h"

#include <string>

namespace hotkey::tcp::testing {
namespace {

void Put16(std::string& s, uint16_t v) {
  s.push_back(static_cast<char>(v >> 8));
  s.push_back(static_cast<char>(v & 0xff));
}
void Put32(std::string& s, uint32_t v) {
  Put16(s, static_cast<uint16_t>(v >> 16));
  Put16(s, static_cast<uint16_t>(v & 0xffff));
}
void PutBytes(std::string& s, const uint8_t* p, size_t n) {
  s.append(reinterpret_cast<const char*>(p), n);
}

}  // namespace

std::string TcpBytes(const TcpSpec& t) {
  std::string s;
  Put16(s, t.src_port);
  Put16(s, t.dst_port);
  Put32(s, t.seq);
  Put32(s, 0);  // ack
  const size_t words = (20 + t.options_bytes) / 4;
  s.push_back(static_cast<char>(words << 4));
  s.push_back(static_cast<char>(t.flags));
  Put16(s, 65535);                    // window
  Put16(s, 0);                        // checksum (not verified)
  Put16(s, 0);                        // urgent pointer
  s.append(t.options_bytes, '\x01');  // NOP
  s += t.payload;
  return s;
}

std::string Ipv4(const Ipv4Spec& ip, std::string_view l4) {
  std::string s;
  const size_t header = 20 + ip.options_bytes;
  s.push_back(static_cast<char>(0x40 | header / 4));
  s.push_back(0);  // DSCP/ECN
  Put16(s, static_cast<uint16_t>(header + l4.size()));
  Put16(s, 0x1234);  // identification
  Put16(s, ip.flags_offset);
  s.push_back(64);  // TTL
  s.push_back(static_cast<char>(ip.protocol));
  Put16(s, 0);  // checksum (not verified)
  PutBytes(s, ip.src.data(), 4);
  PutBytes(s, ip.dst.data(), 4);
  s.append(ip.options_bytes, '\x01');  // NOP
  s += l4;
  return s;
}

std::array<uint8_t, 16> Ipv6Address(uint8_t last) {
  std::array<uint8_t, 16> a = {0x20, 0x01, 0x0d, 0xb8};
  a[15] = last;
  return a;
}

std::string Ipv6(uint8_t next, std::string_view rest, std::array<uint8_t, 16> src,
                 std::array<uint8_t, 16> dst) {
  std::string s;
  Put32(s, 0x60000000);  // version 6, traffic class, flow label
  Put16(s, static_cast<uint16_t>(rest.size()));
  s.push_back(static_cast<char>(next));
  s.push_back(64);  // hop limit
  PutBytes(s, src.data(), 16);
  PutBytes(s, dst.data(), 16);
  s += rest;
  return s;
}

std::string Ipv6Extension(uint8_t next, size_t total_bytes) {
  std::string s;
  s.push_back(static_cast<char>(next));
  s.push_back(static_cast<char>(total_bytes / 8 - 1));
  s.push_back(1);  // a PadN option filling the rest
  s.push_back(static_cast<char>(total_bytes - 4));
  s.append(total_bytes - 4, '\0');
  return s;
}

std::string Ipv6Fragment(uint8_t next, uint16_t offset_units, bool more) {
  std::string s;
  s.push_back(static_cast<char>(next));
  s.push_back(0);
  Put16(s, static_cast<uint16_t>(offset_units << 3 | (more ? 1 : 0)));
  Put32(s, 0xabcd);  // identification
  return s;
}

std::string Ethernet(uint16_t ether_type, std::string_view payload,
                     const std::vector<uint16_t>& tag_types) {
  std::string s("\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);  // dst, src
  for (uint16_t tpid : tag_types) {
    Put16(s, tpid);
    Put16(s, 100);  // TCI: VLAN 100
  }
  Put16(s, ether_type);
  s += payload;
  return s;
}

std::string LinuxSll(uint16_t protocol, std::string_view payload) {
  std::string s;
  Put16(s, 0);  // packet type: to us
  Put16(s, 1);  // ARPHRD_ETHER
  Put16(s, 6);  // address length
  s.append("\x02\x00\x00\x00\x00\x01\x00\x00", 8);
  Put16(s, protocol);
  s += payload;
  return s;
}

std::string LinuxSll2(uint16_t protocol, std::string_view payload) {
  std::string s;
  Put16(s, protocol);
  Put16(s, 0);     // reserved
  Put32(s, 1);     // interface index
  Put16(s, 772);   // ARPHRD_LOOPBACK
  s.push_back(0);  // packet type
  s.push_back(6);  // address length
  s.append("\x00\x00\x00\x00\x00\x00\x00\x00", 8);
  s += payload;
  return s;
}

std::string BsdLoopback(uint32_t family, bool big_endian, std::string_view payload) {
  std::string s;
  if (big_endian) {
    Put32(s, family);
  } else {
    for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(family >> (8 * i)));
  }
  s += payload;
  return s;
}

Segment MakeSegment(uint16_t client_port, Direction d, uint32_t seq, std::string_view payload,
                    uint8_t flags) {
  Segment s;
  s.client.address = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
  s.client.port = client_port;
  s.server.address = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
  s.server.port = 6379;
  s.direction = d;
  s.seq = seq;
  s.syn = (flags & kSyn) != 0;
  s.fin = (flags & kFin) != 0;
  s.rst = (flags & kRst) != 0;
  s.payload = payload;
  return s;
}

namespace {
const char* Arrow(Direction d) { return d == Direction::kToServer ? ">" : "<"; }
}  // namespace

void RecordingHandler::OnOpen(FlowId flow, const Segment& first, bool from_start) {
  events.push_back("open " + std::to_string(flow) + (from_start ? " start" : " midstream"));
  if (open.count(flow) != 0) ++errors;
  open[flow] = connections.size();
  connections.push_back(Connection{flow, from_start, first, {}, {}, {0, 0}, false});
}

void RecordingHandler::OnData(FlowId flow, Direction direction, std::string_view bytes) {
  events.push_back("data " + std::to_string(flow) + " " + Arrow(direction) + " " +
                   std::string(bytes));
  auto it = open.find(flow);
  if (it == open.end() || bytes.empty()) {
    ++errors;
    return;
  }
  Connection& c = connections[it->second];
  (direction == Direction::kToServer ? c.to_server : c.to_client) += bytes;
}

void RecordingHandler::OnGap(FlowId flow, Direction direction) {
  events.push_back("gap " + std::to_string(flow) + " " + Arrow(direction));
  auto it = open.find(flow);
  if (it == open.end()) {
    ++errors;
    return;
  }
  ++connections[it->second].gaps[static_cast<int>(direction)];
}

void RecordingHandler::OnClose(FlowId flow) {
  events.push_back("close " + std::to_string(flow));
  auto it = open.find(flow);
  if (it == open.end()) {
    ++errors;
    return;
  }
  connections[it->second].closed = true;
  open.erase(it);
}

}  // namespace hotkey::tcp::testing
