// Reassembler: in-order delivery, retransmission, gaps, sequence wraparound at 2^32, joins
// mid-stream, the ends of a flow (FIN, RST, idle expiry, eviction), slot reuse, and the
// memory bound under 100k concurrent flows with no allocation after construction.

#include <array>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/time/time.h"
#include "hotkey/tcp/reassembler.h"
#include "test_util.h"

namespace hotkey::tcp {
namespace {

using testing::kAck;
using testing::kFin;
using testing::kRst;
using testing::kSyn;
using testing::MakeSegment;
using testing::RecordingHandler;

constexpr Direction kUp = Direction::kToServer;
constexpr Direction kDown = Direction::kToClient;
const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// A client on `port` that opened with ISN `c` against a server with ISN `s`.
struct Conn {
  Reassembler& r;
  uint16_t port;
  uint32_t c;  // next client sequence number
  uint32_t s;  // next server sequence number
  absl::Time now = kT0;

  void Handshake() {
    r.Add(MakeSegment(port, kUp, c, "", kSyn), now);
    r.Add(MakeSegment(port, kDown, s, "", kSyn | kAck), now);
    ++c;
    ++s;
    r.Add(MakeSegment(port, kUp, c, ""), now);
  }
  void Up(std::string_view bytes, uint8_t flags = kAck) {
    r.Add(MakeSegment(port, kUp, c, bytes, flags), now);
    c += static_cast<uint32_t>(bytes.size());
  }
  void Down(std::string_view bytes, uint8_t flags = kAck) {
    r.Add(MakeSegment(port, kDown, s, bytes, flags), now);
    s += static_cast<uint32_t>(bytes.size());
  }
};

TEST_CASE("Reassembler: a connection from its SYN is handed over in order, both ways",
          "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler r({.max_flows = 4}, h);
  Conn c{r, 40000, 1000, 5000};
  c.Handshake();
  c.Up("*1\r\n$4\r\nPING\r\n");
  c.Down("+PONG\r\n");
  c.Up("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
  c.Down("$-1\r\n");
  CHECK(h.events == std::vector<std::string>{
                        "open 0 start",
                        "data 0 > *1\r\n$4\r\nPING\r\n",
                        "data 0 < +PONG\r\n",
                        "data 0 > *2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
                        "data 0 < $-1\r\n",
                    });
  CHECK(r.flows() == 1);
  CHECK(r.counters().segments == 7);
  CHECK(r.counters().flows_opened == 1);
  CHECK(r.counters().gaps == 0);
  CHECK(r.counters().joined_midstream == 0);
  CHECK(r.counters().retransmitted_bytes == 0);
  CHECK(r.counters().payload_bytes == 14 + 7 + 20 + 5);
  CHECK(h.errors == 0);
}

TEST_CASE("Reassembler: a request one byte per segment arrives whole", "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler r({.max_flows = 4}, h);
  Conn c{r, 40000, 7, 9};
  c.Handshake();
  const std::string request = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
  for (char ch : request) c.Up(std::string_view(&ch, 1));
  REQUIRE(h.connections.size() == 1);
  CHECK(h.connections[0].to_server == request);
  CHECK(h.events.size() == 1 + request.size());
  CHECK(r.counters().gaps == 0);
}

TEST_CASE("Reassembler: retransmitted bytes are trimmed and counted", "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler r({.max_flows = 4}, h);
  Conn c{r, 40000, 100, 200};
  c.Handshake();  // client data starts at 101
  r.Add(MakeSegment(40000, kUp, 101, "0123456789"), kT0);
  r.Add(MakeSegment(40000, kUp, 106, "56789abcde"), kT0);  // 5 old, 5 new
  r.Add(MakeSegment(40000, kUp, 101, "0123456789"), kT0);  // all old
  r.Add(MakeSegment(40000, kUp, 111, "abcde"), kT0);       // all old, ends at the edge
  r.Add(MakeSegment(40000, kUp, 116, "f"), kT0);
  REQUIRE(h.connections.size() == 1);
  CHECK(h.connections[0].to_server == "0123456789abcdef");
  CHECK(r.counters().retransmitted_bytes == 5 + 10 + 5);
  CHECK(r.counters().payload_bytes == 16);
  CHECK(r.counters().gaps == 0);
  // A retransmitted SYN changes nothing either.
  r.Add(MakeSegment(40000, kUp, 100, "", kSyn), kT0);
  r.Add(MakeSegment(40000, kUp, 117, "g"), kT0);
  CHECK(h.connections[0].to_server == "0123456789abcdefg");
  CHECK(r.counters().flows_opened == 1);
  CHECK(r.counters().gaps == 0);
}

TEST_CASE("Reassembler: a segment past the expected byte is a gap, then handed over",
          "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler r({.max_flows = 4}, h);
  Conn c{r, 40000, 0, 0};
  c.Handshake();
  r.Add(MakeSegment(40000, kUp, 1, "aaaa"), kT0);
  r.Add(MakeSegment(40000, kUp, 9, "cccc"), kT0);  // 5..8 lost
  r.Add(MakeSegment(40000, kUp, 13, "dd"), kT0);   // contiguous with the resynced stream
  r.Add(MakeSegment(40000, kUp, 5, "bbbb"), kT0);  // the late one: behind, trimmed
  CHECK(h.events == std::vector<std::string>{"open 0 start", "data 0 > aaaa", "gap 0 >",
                                             "data 0 > cccc", "data 0 > dd"});
  CHECK(r.counters().gaps == 1);
  CHECK(r.counters().retransmitted_bytes == 4);
  // Zero-length segments (ACKs) past the edge are not gaps: only data shows one.
  r.Add(MakeSegment(40000, kDown, 1000, ""), kT0);
  CHECK(r.counters().gaps == 1);
}

TEST_CASE("Reassembler: sequence numbers wrap at 2^32", "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler r({.max_flows = 4}, h);
  const uint32_t isn = 0xfffffffa;  // data starts at 2^32 - 5
  r.Add(MakeSegment(40000, kUp, isn, "", kSyn), kT0);
  r.Add(MakeSegment(40000, kUp, 0xfffffffb, "0123456789"), kT0);  // crosses 2^32
  r.Add(MakeSegment(40000, kUp, 5, "abc"), kT0);                  // 2^32 - 5 + 10 = 5
  r.Add(MakeSegment(40000, kUp, 0xfffffffe, "34567"), kT0);       // old, across the wrap
  r.Add(MakeSegment(40000, kUp, 3, "89abcd"), kT0);               // 5 old, "d" new
  r.Add(MakeSegment(40000, kUp, 0x7fffffff, "x"), kT0);           // far ahead: a gap
  REQUIRE(h.connections.size() == 1);
  CHECK(h.connections[0].to_server == "0123456789abcdx");
  CHECK(r.counters().retransmitted_bytes == 5 + 5);
  CHECK(r.counters().gaps == 1);
  // The ISN itself at the very top: SYN at 2^32 - 1, data at 0.
  RecordingHandler h2;
  Reassembler r2({.max_flows = 4}, h2);
  r2.Add(MakeSegment(40000, kUp, 0xffffffff, "", kSyn), kT0);
  r2.Add(MakeSegment(40000, kUp, 0, "ab"), kT0);
  r2.Add(MakeSegment(40000, kUp, 2, "cd"), kT0);
  CHECK(h2.connections[0].to_server == "abcd");
  CHECK(r2.counters().gaps == 0);
}

TEST_CASE("Reassembler: a flow joined mid-stream opens with a gap on each direction",
          "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler r({.max_flows = 4}, h);
  r.Add(MakeSegment(40000, kUp, 123456, "t\r\n$3\r\nGET\r\n"), kT0);
  r.Add(MakeSegment(40000, kDown, 999, "+OK\r\n"), kT0);
  r.Add(MakeSegment(40000, kUp, 123456 + 12, "*1\r\n"), kT0);
  CHECK(h.events == std::vector<std::string>{"open 0 midstream", "gap 0 >", "gap 0 <",
                                             "data 0 > t\r\n$3\r\nGET\r\n", "data 0 < +OK\r\n",
                                             "data 0 > *1\r\n"});
  REQUIRE(h.connections.size() == 1);
  CHECK_FALSE(h.connections[0].from_start);
  CHECK(r.counters().joined_midstream == 1);
  CHECK(r.counters().gaps == 0);  // the join is counted apart from losses
}

TEST_CASE("Reassembler: a first-seen SYN-ACK is a join: the client's SYN was missed",
          "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler r({.max_flows = 4}, h);
  r.Add(MakeSegment(40000, kDown, 50, "", kSyn | kAck), kT0);
  r.Add(MakeSegment(40000, kUp, 11, "ping"), kT0);
  r.Add(MakeSegment(40000, kDown, 51, "pong"), kT0);
  CHECK(h.events == std::vector<std::string>{"open 0 midstream", "gap 0 >", "gap 0 <",
                                             "data 0 > ping", "data 0 < pong"});
  CHECK(r.counters().joined_midstream == 1);
}

TEST_CASE("Reassembler: a missed SYN-ACK makes the reply stream start with a counted gap",
          "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler r({.max_flows = 4}, h);
  r.Add(MakeSegment(40000, kUp, 10, "", kSyn), kT0);
  r.Add(MakeSegment(40000, kUp, 11, "ping"), kT0);
  r.Add(MakeSegment(40000, kDown, 77, "pong"), kT0);
  CHECK(h.events ==
        std::vector<std::string>{"open 0 start", "data 0 > ping", "gap 0 <", "data 0 < pong"});
  CHECK(r.counters().gaps == 1);
  CHECK(r.counters().joined_midstream == 0);
}

TEST_CASE("Reassembler: a FIN ends one direction; the flow closes after both",
          "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler r({.max_flows = 4}, h);
  Conn c{r, 40000, 0, 0};
  c.Handshake();
  c.Up("QUIT\r\n", kAck | kFin);
  ++c.c;
  CHECK(r.flows() == 1);
  c.Down("+OK\r\n");  // the reply after the client's FIN still counts
  c.Down("", kAck | kFin);
  CHECK(h.events == std::vector<std::string>{"open 0 start", "data 0 > QUIT\r\n",
                                             "data 0 < +OK\r\n", "close 0"});
  CHECK(r.flows() == 0);
  CHECK(r.counters().flows_closed == 1);
  // The last ACK, and a retransmitted FIN, open nothing.
  c.Up("");
  r.Add(MakeSegment(40000, kDown, c.s, "", kAck | kFin), kT0);
  CHECK(r.flows() == 0);
  CHECK(r.counters().flows_opened == 1);
}

TEST_CASE("Reassembler: a RST closes at once; a RST of an unknown flow opens nothing",
          "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler r({.max_flows = 4}, h);
  Conn c{r, 40000, 0, 0};
  c.Handshake();
  c.Up("GET");
  r.Add(MakeSegment(40000, kDown, c.s, "", kRst), kT0);
  CHECK(h.events == std::vector<std::string>{"open 0 start", "data 0 > GET", "close 0"});
  CHECK(r.flows() == 0);
  CHECK(r.counters().flows_closed == 1);
  r.Add(MakeSegment(40001, kUp, 5, "", kRst), kT0);
  r.Add(MakeSegment(40001, kUp, 5, "ignored", kRst | kAck), kT0);
  CHECK(r.flows() == 0);
  CHECK(r.counters().flows_opened == 1);
}

TEST_CASE("Reassembler: a new SYN on a tracked 4-tuple closes the old flow and opens anew",
          "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler r({.max_flows = 4}, h);
  Conn c{r, 40000, 100, 200};
  c.Handshake();
  c.Up("old");
  Conn d{r, 40000, 90000, 7000};  // the same ports, another ISN: the FINs went unseen
  d.Handshake();
  d.Up("new");
  CHECK(h.events == std::vector<std::string>{"open 0 start", "data 0 > old", "close 0",
                                             "open 0 start", "data 0 > new"});
  CHECK(r.counters().flows_opened == 2);
  CHECK(r.counters().flows_closed == 1);
  CHECK(r.counters().gaps == 0);
}

TEST_CASE("Reassembler: ExpireIdle closes the flows idle past the timeout, oldest first",
          "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler r({.max_flows = 8, .idle_timeout = absl::Seconds(30)}, h);
  r.Add(MakeSegment(1, kUp, 0, "a"), kT0);                      // flow 0
  r.Add(MakeSegment(2, kUp, 0, "b"), kT0 + absl::Seconds(10));  // flow 1
  r.Add(MakeSegment(3, kUp, 0, "c"), kT0 + absl::Seconds(20));  // flow 2
  r.Add(MakeSegment(1, kUp, 1, "a"), kT0 + absl::Seconds(25));  // flow 0 active again
  h.events.clear();
  r.ExpireIdle(kT0 + absl::Seconds(40));  // cutoff 10 s: flow 1's last activity is not before
  CHECK(h.events.empty());
  r.ExpireIdle(kT0 + absl::Seconds(50));  // cutoff 20 s
  CHECK(h.events == std::vector<std::string>{"close 1"});
  r.ExpireIdle(kT0 + absl::Seconds(56));  // cutoff 26 s
  CHECK(h.events == std::vector<std::string>{"close 1", "close 2", "close 0"});
  CHECK(r.flows() == 0);
  CHECK(r.counters().flows_expired == 3);
  CHECK(r.counters().flows_closed == 0);
}

TEST_CASE("Reassembler: a clock that steps back counts as the newest time seen",
          "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler r({.max_flows = 8, .idle_timeout = absl::Seconds(30)}, h);
  r.Add(MakeSegment(1, kUp, 0, "a"), kT0 + absl::Seconds(100));
  r.Add(MakeSegment(2, kUp, 0, "b"), kT0);  // earlier than the last segment
  r.ExpireIdle(kT0 + absl::Seconds(120));
  CHECK(r.flows() == 2);  // flow 1 was stamped 100 s, not 0 s
  r.ExpireIdle(kT0 + absl::Seconds(131));
  CHECK(h.events == std::vector<std::string>{"open 0 midstream", "gap 0 >", "gap 0 <", "data 0 > a",
                                             "open 1 midstream", "gap 1 >", "gap 1 <", "data 1 > b",
                                             "close 0", "close 1"});
}

TEST_CASE("Reassembler: a full table evicts the least recently active flow", "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler r({.max_flows = 3}, h);
  r.Add(MakeSegment(1, kUp, 0, "a"), kT0);  // flow 0
  r.Add(MakeSegment(2, kUp, 0, "b"), kT0);  // flow 1
  r.Add(MakeSegment(3, kUp, 0, "c"), kT0);  // flow 2
  r.Add(MakeSegment(1, kUp, 1, "a"), kT0);  // flow 0 is now the most recent; 1 the least
  h.events.clear();
  r.Add(MakeSegment(4, kUp, 0, "d"), kT0);
  CHECK(h.events == std::vector<std::string>{"close 1", "open 1 midstream", "gap 1 >", "gap 1 <",
                                             "data 1 > d"});
  CHECK(r.counters().flows_evicted == 1);
  CHECK(r.flows() == 3);
  h.events.clear();
  r.Add(MakeSegment(5, kUp, 0, "e"), kT0);  // now flow 2 (port 3) is the least recent
  CHECK(h.events.front() == "close 2");
  r.Add(MakeSegment(1, kUp, 2, "a"), kT0);  // port 1 is still flow 0, in order
  CHECK(h.events.back() == "data 0 > a");
  CHECK(r.counters().flows_evicted == 2);
  CHECK(h.errors == 0);
}

TEST_CASE("Reassembler: a freed slot is the next one taken", "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler r({.max_flows = 4}, h);
  for (uint16_t port = 1; port <= 3; ++port) r.Add(MakeSegment(port, kUp, 0, "x"), kT0);
  r.Add(MakeSegment(2, kUp, 1, "", kRst), kT0);  // frees slot 1
  h.events.clear();
  r.Add(MakeSegment(9, kUp, 0, "y"), kT0);
  CHECK(h.events.front() == "open 1 midstream");
  r.Add(MakeSegment(9, kUp, 1, "z"), kT0);
  CHECK(h.events.back() == "data 1 > z");
  r.Add(MakeSegment(10, kUp, 0, "w"), kT0);  // slot 3 was never used
  CHECK(h.events.back() == "data 3 > w");
  CHECK(h.errors == 0);
}

TEST_CASE("Reassembler: through churn, every tracked flow is found again under its id",
          "[tcp][reassembler]") {
  // Random opens, RSTs and evictions over 300 ports in a 16-flow table (a 32-bucket
  // index, so probe runs wrap and deletions shift entries back); after each step a
  // segment of every flow still open must reach that flow, never open another.
  RecordingHandler h;
  Reassembler r({.max_flows = 16}, h);
  std::mt19937 rng(12345);
  for (int step = 0; step < 5000; ++step) {
    const uint16_t port = static_cast<uint16_t>(1 + rng() % 300);
    const uint32_t what = rng() % 4;
    r.Add(MakeSegment(port, kUp, rng(), "x", what == 0 ? kRst : kAck), kT0);
    if (step % 50 != 0) continue;
    const std::map<FlowId, size_t> open = h.open;
    REQUIRE(open.size() == r.flows());
    const uint64_t opened = r.counters().flows_opened;
    for (const auto& [flow, at] : open) {
      const uint16_t p = h.connections[at].first.client.port;
      h.events.clear();
      r.Add(MakeSegment(p, kDown, rng(), "y"), kT0);
      REQUIRE(!h.events.empty());
      CHECK(h.events.back() == "data " + std::to_string(flow) + " < y");
    }
    CHECK(r.counters().flows_opened == opened);
  }
  CHECK(r.counters().flows_evicted > 0);
  CHECK(r.counters().flows_closed > 0);
  CHECK(h.errors == 0);
}

// Counts without allocating: fixed arrays indexed by flow id.
class CountingHandler final : public StreamHandler {
 public:
  explicit CountingHandler(size_t max_flows) : open_(max_flows, false) {}
  void OnOpen(FlowId flow, const Segment&, bool) override {
    if (flow >= open_.size() || open_[flow])
      ++errors;
    else
      open_[flow] = true;
    ++opens;
  }
  void OnData(FlowId flow, Direction, std::string_view bytes) override {
    if (flow >= open_.size() || !open_[flow]) ++errors;
    bytes_ += bytes.size();
  }
  void OnGap(FlowId flow, Direction) override {
    if (flow >= open_.size() || !open_[flow]) ++errors;
  }
  void OnClose(FlowId flow) override {
    if (flow >= open_.size() || !open_[flow])
      ++errors;
    else
      open_[flow] = false;
    ++closes;
  }
  uint64_t opens = 0, closes = 0, errors = 0, bytes_ = 0;

 private:
  std::vector<bool> open_;
};

TEST_CASE("Reassembler: 100k concurrent flows in a 1000-flow table stay bounded, no allocation",
          "[tcp][reassembler]") {
  CountingHandler h(1000);
  Reassembler r({.max_flows = 1000, .idle_timeout = absl::Seconds(60)}, h);
  const size_t memory = r.memory_bytes();
  CHECK(memory >= 1000 * (2 * sizeof(Endpoint)));
  const uint64_t allocations = testing::AllocationsOnThisThread();
  absl::Time now = kT0;
  constexpr uint32_t kFlows = 100'000;
  size_t most = 0;
  // Each flow: SYN, a request, a reply, in two rounds, so every flow is seen twice while
  // 99% of them have been evicted in between.
  for (int round = 0; round < 2; ++round) {
    for (uint32_t i = 0; i < kFlows; ++i) {
      Segment s = MakeSegment(static_cast<uint16_t>(i), kUp, 1000, "", kSyn);
      s.client.address[13] = static_cast<uint8_t>(i >> 16);
      if (round == 0) r.Add(s, now);
      s.syn = false;
      s.seq = 1001 + round * 4;
      s.payload = "PING";
      r.Add(s, now);
      s.direction = kDown;
      s.seq = 5000 + round * 4;
      s.payload = "PONG";
      r.Add(s, now);
      most = std::max(most, r.flows());
      now += absl::Microseconds(1);
    }
  }
  CHECK(testing::AllocationsOnThisThread() == allocations);
  CHECK(r.memory_bytes() == memory);
  CHECK(most == 1000);
  CHECK(r.flows() == 1000);
  const Counters& c = r.counters();
  CHECK(c.flows_opened == 2 * kFlows);
  CHECK(c.flows_evicted == 2 * kFlows - 1000);
  CHECK(c.joined_midstream == kFlows);  // the second round finds every flow evicted
  CHECK(h.errors == 0);
  CHECK(h.opens - h.closes == 1000);
  // Idle expiry empties the table, still without allocating.
  r.ExpireIdle(now + absl::Seconds(61));
  CHECK(r.flows() == 0);
  CHECK(c.flows_expired == 1000);
  CHECK(testing::AllocationsOnThisThread() == allocations);
}

TEST_CASE("Reassembler: memory_bytes is fixed by max_flows alone", "[tcp][reassembler]") {
  RecordingHandler h;
  Reassembler small({.max_flows = 10}, h);
  Reassembler large({.max_flows = 10'000}, h);
  CHECK(small.memory_bytes() < large.memory_bytes());
  // As reassembler.h states: at most 128 bytes per flow, plus under 1 KiB.
  for (size_t n : {1, 10, 1000, 1024, 1025, 10'000, 100'000}) {
    Reassembler r({.max_flows = n}, h);
    INFO(n << " flows: " << r.memory_bytes() << " bytes");
    CHECK(r.memory_bytes() <= 128 * n + 1024);
    CHECK(r.memory_bytes() >= n * (2 * sizeof(Endpoint) + 8));
  }
  Reassembler one({.max_flows = 1}, h);
  one.Add(MakeSegment(1, kUp, 0, "a"), kT0);
  one.Add(MakeSegment(2, kUp, 0, "b"), kT0);
  CHECK(one.flows() == 1);
  CHECK(one.counters().flows_evicted == 1);
  Reassembler none({.max_flows = 0}, h);  // taken as 1
  none.Add(MakeSegment(1, kUp, 0, "a"), kT0);
  none.Add(MakeSegment(2, kUp, 0, "b"), kT0);
  CHECK(none.flows() == 1);
  CHECK(none.memory_bytes() == one.memory_bytes());
}

}  // namespace
}  // namespace hotkey::tcp
