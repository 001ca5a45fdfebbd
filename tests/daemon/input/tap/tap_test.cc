#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include <catch2/catch.hpp>

#include <pcap/pcap.h>

#include "fake_clock.h"
#include "tap_source.h"
#include "test_util.h"

namespace hotkey::tap {
namespace {

struct Counts {
  double reads = 0;
  double writes = 0;
};

config::TapOptions FileOptions(const std::string& name, std::vector<uint16_t> ports = {}) {
  config::TapOptions o;
  o.file = std::string(HOTKEY_TAP_TESTDATA) + "/" + name;
  o.ports = std::move(ports);
  return o;
}

sketch::HeavyHittersOptions ExactTracker() {
  sketch::HeavyHittersOptions t;
  t.candidates = 4096;  // more than the captures' keys: every key is tracked exactly
  t.half_life = absl::InfiniteDuration();
  t.max_key_bytes = 128;
  return t;
}

// Reads the whole file; returns the source (for its counters) after the end.
std::unique_ptr<TapSource> ReadAll(const config::TapOptions& o, testing::FakeClock& clock) {
  auto s = TapSource::Create(o, ExactTracker(), clock);
  REQUIRE(s.ok());
  int steps = 0;
  while ((*s)->Step(absl::ZeroDuration())) REQUIRE(++steps < 100000);
  return *std::move(s);
}

std::map<std::string, Counts> KeyCounts(const TapSource& s) {
  std::map<std::string, Counts> out;
  for (const sketch::HeavyHitter& h : s.tracker().TopK(s.tracker().size())) {
    out[h.key] = {h.raw_weight[0], h.raw_weight[1]};
  }
  return out;
}

// The port each capture's server listened on (testdata/record.sh picks a free one).
uint16_t ServerPort(const std::string& file) {
  // The first frame is the probe's SYN to the server: pcap header (24), record header
  // (16), Ethernet (14), IPv4 (20), then TCP's source and destination ports.
  FILE* fp = std::fopen(file.c_str(), "rb");
  REQUIRE(fp != nullptr);
  unsigned char buf[128] = {};
  const size_t n = std::fread(buf, 1, sizeof buf, fp);
  std::fclose(fp);
  REQUIRE(n >= 24 + 16 + 14 + 20 + 4);
  const unsigned char* tcp = buf + 24 + 16 + 14 + 20;
  return static_cast<uint16_t>(tcp[2] << 8 | tcp[3]);
}

config::TapOptions Capture(const std::string& name) {
  config::TapOptions o = FileOptions(name);
  o.ports = {ServerPort(o.file)};
  return o;
}

void CheckKey(const std::map<std::string, Counts>& got, const std::string& key, double reads,
              double writes) {
  INFO("key " << key);
  auto it = got.find(key);
  REQUIRE(it != got.end());
  CHECK(it->second.reads == reads);
  CHECK(it->second.writes == writes);
}

// By ops the tap's filter keeps only the client-to-server packets (TapFilter), in files as
// live: these counts are made from the requests alone.
TEST_CASE("Tap: a redis-py mix counts every key it touched, by read and write", "[tap]") {
  testing::FakeClock clock;
  std::unique_ptr<TapSource> s = ReadAll(Capture("redis_mix.pcap"), clock);
  const std::map<std::string, Counts> got = KeyCounts(*s);
  // record.sh's workload, key by key.
  CheckKey(got, "hot", 30, 10);  // GET x30, SET x10
  CheckKey(got, "a", 5, 0);      // MGET a b c x5: three reads each time
  CheckKey(got, "b", 5, 0);
  CheckKey(got, "c", 5, 0);
  CheckKey(got, "x", 0, 2);  // MSET x 1 y 2 x2
  CheckKey(got, "y", 0, 2);
  CheckKey(got, "h", 4, 3);         // HSET x3, HGET x4
  CheckKey(got, "counter", 0, 20);  // a pipeline of 20 INCR
  CheckKey(got, "m1", 1, 1);        // inside MULTI/EXEC: SET m1, GET m1
  CheckKey(got, "src", 0, 1);       // SMOVE: source and destination are writes
  CheckKey(got, "dst", 0, 1);
  CheckKey(got, "gd", 0, 1);  // GETDEL is a write
  CHECK(got.size() == 12);
  const TapCounters& t = s->tap_counters();
  // 30 + 10 + 5 + 2 + 3 + 4 + 20 + MULTI, SET, GET, EXEC + SMOVE, GETDEL, the unknown, PING
  CHECK(t.protocol == config::TapProtocol::kRedis);
  CHECK(t.commands == 82);
  CHECK(t.read_keys == 50);
  CHECK(t.write_keys == 41);
  CHECK(t.unknown_commands == 1);
  CHECK(t.protocol_errors == 0);
  CHECK(t.resyncs == 0);
  CHECK(t.gaps == 0);
  CHECK(t.joined_midstream == 0);
  // The probe connection and the client's, both from their SYN, both closed.
  CHECK(t.flows_opened == 2);
  CHECK(t.flows == 0);
  CHECK(t.file_done == 1);
  CHECK(s->counters().events == 91);
  CHECK(t.packets > 0);
  CHECK(t.kernel_drops == 0);
}

TEST_CASE("Tap: the capture file's counts are kept and published after its end", "[tap]") {
  testing::FakeClock clock;
  std::unique_ptr<TapSource> s = ReadAll(Capture("redis_mix.pcap"), clock);
  std::shared_ptr<const source::SourceReport> r = s->Latest();
  REQUIRE(r != nullptr);
  CHECK(r->counters.own.Sum("hotkey_tap_capture_file_done") == 1);
  CHECK(r->counters.own.Sum("hotkey_tap_commands_total") == 82);
  clock.Advance(absl::Seconds(1));
  s->RequestPublish();  // the daemon's tick
  CHECK_FALSE(s->Step(absl::ZeroDuration()));
  std::shared_ptr<const source::SourceReport> later = s->Latest();
  CHECK(later->time > r->time);
  CHECK(later->counters.own.Sum("hotkey_tap_commands_total") == 82);
  CHECK(later->counters.events == r->counters.events);
}

TEST_CASE("Tap: redis-benchmark -P 16 with random keys matches the server's commandstats",
          "[tap]") {
  testing::FakeClock clock;
  std::unique_ptr<TapSource> s = ReadAll(Capture("redis_benchmark.pcap"), clock);
  // testdata/redis_benchmark.txt: cmdstat_get:calls=2000 and cmdstat_set:calls=2000.
  FILE* fp = std::fopen(HOTKEY_TAP_TESTDATA "/redis_benchmark.txt", "r");
  REQUIRE(fp != nullptr);
  std::map<std::string, uint64_t> calls;
  char line[256];
  while (std::fgets(line, sizeof line, fp)) {
    char name[32];
    unsigned long long n = 0;
    if (std::sscanf(line, "cmdstat_%31[^:]:calls=%llu", name, &n) == 2) calls[name] = n;
  }
  std::fclose(fp);
  REQUIRE(calls.count("get") == 1);
  REQUIRE(calls.count("set") == 1);
  const TapCounters& t = s->tap_counters();
  CHECK(t.read_keys == calls["get"]);
  CHECK(t.write_keys == calls["set"]);
  // Its two CONFIG GETs at start carry no key.
  CHECK(t.commands == calls["get"] + calls["set"] + 2);
  CHECK(t.protocol_errors == 0);
  CHECK(t.gaps == 0);
  double reads = 0, writes = 0;
  for (const auto& [key, c] : KeyCounts(*s)) {
    CHECK(key.rfind("key:", 0) == 0);
    reads += c.reads;
    writes += c.writes;
  }
  CHECK(reads == calls["get"]);
  CHECK(writes == calls["set"]);
}

TEST_CASE("Tap: a connection open before the capture resyncs and counts what follows", "[tap]") {
  testing::FakeClock clock;
  std::unique_ptr<TapSource> s = ReadAll(Capture("redis_midstream.pcap"), clock);
  const TapCounters& t = s->tap_counters();
  CHECK(t.joined_midstream == 1);
  CHECK(t.resyncs >= 1);
  CHECK(t.protocol_errors == 0);
  const std::map<std::string, Counts> got = KeyCounts(*s);
  // 50 GETs of "after" were sent after the capture started, each at a request boundary
  // since the client waits for each reply; nothing else is counted, nothing is misparsed.
  CheckKey(got, "after", 50, 0);
  CHECK(got.size() == 1);
}

TEST_CASE("Tap: memcached text and meta commands, multi-key gets included", "[tap]") {
  testing::FakeClock clock;
  config::TapOptions o = Capture("memcached.pcap");
  o.protocol = config::TapProtocol::kMemcached;
  std::unique_ptr<TapSource> s = ReadAll(o, clock);
  const std::map<std::string, Counts> got = KeyCounts(*s);
  // set a, b, c; get_many([a, b, c]) x4; get a; gets a; cas a; touch a; delete b.
  CheckKey(got, "a", 6, 3);
  CheckKey(got, "b", 4, 2);
  CheckKey(got, "c", 4, 1);
  CheckKey(got, "n", 0, 6);    // add, replace, append, prepend, incr, decr
  CheckKey(got, "q", 0, 1);    // set noreply
  CheckKey(got, "m", 1, 2);    // ms, mg, md
  CheckKey(got, "cnt", 0, 1);  // ma
  CHECK(got.size() == 7);
  const TapCounters& t = s->tap_counters();
  CHECK(t.protocol == config::TapProtocol::kMemcached);
  CHECK(t.commands == 24);  // 19 text commands and ms, mg, ma, md, mn
  CHECK(t.protocol_errors == 0);
}

TEST_CASE("Tap: bytes weight charges request plus reply bytes, split over the keys", "[tap]") {
  testing::FakeClock clock;
  config::TapOptions o = Capture("redis_bytes.pcap");
  o.weight = config::TapWeight::kBytes;
  std::unique_ptr<TapSource> s = ReadAll(o, clock);
  const std::map<std::string, Counts> got = KeyCounts(*s);
  // SET big <100,000 bytes>: "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$100000\r\n" + value + "\r\n"
  // is 4 + 9 + 9 + 9 + 100000 + 2 = 100033 bytes, its reply "+OK\r\n" 5.
  // GET big: "*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n" 22 bytes, its reply "$100000\r\n" + value +
  // "\r\n" 100011; twice. GET small: 24 bytes, reply "$-1\r\n" 5.
  CheckKey(got, "big", 2 * (22 + 100011), 100033 + 5);
  CheckKey(got, "small", 24 + 5, 0);
  const TapCounters& t = s->tap_counters();
  CHECK(t.replies == 4);
  CHECK(t.replies_unmatched == 0);
  CHECK(t.unanswered_queue_full + t.unanswered_gap + t.unanswered_closed == 0);
  // The same capture by ops: the 100 KB value is one unit.
  std::unique_ptr<TapSource> ops = ReadAll(Capture("redis_bytes.pcap"), clock);
  CheckKey(KeyCounts(*ops), "big", 2, 1);
}

TEST_CASE("Tap: bytes weight on a pipeline and a transaction keeps replies in step", "[tap]") {
  testing::FakeClock clock;
  config::TapOptions o = Capture("redis_mix.pcap");
  o.weight = config::TapWeight::kBytes;
  std::unique_ptr<TapSource> s = ReadAll(o, clock);
  const std::map<std::string, Counts> got = KeyCounts(*s);
  // GET hot: "*2\r\n$3\r\nGET\r\n$3\r\nhot\r\n" 22 bytes, x30, all before the SETs, so
  // each a miss, "$-1\r\n" 5 bytes: 30 x 27.
  // SET hot <100 bytes>: 4 + 9 + 9 + 6 + 100 + 2 = 130 bytes, "+OK\r\n" 5: 10 x 135.
  CheckKey(got, "hot", 30 * 27, 10 * 135);
  // redis-py's incr is INCRBY counter 1, pipelined: "*3\r\n$6\r\nINCRBY\r\n$7\r\ncounter\r\n
  // $1\r\n1\r\n" 36 bytes, reply ":n\r\n" 4 bytes for n < 10, 5 for n in 10..20.
  CheckKey(got, "counter", 0, 20 * 36 + 9 * 4 + 11 * 5);
  const TapCounters& t = s->tap_counters();
  CHECK(t.replies == 82);
  CHECK(t.replies_unmatched == 0);
  CHECK(t.unanswered_queue_full + t.unanswered_gap + t.unanswered_closed == 0);
}

TEST_CASE("Tap: a reply queue too small charges request bytes at once and counts it", "[tap]") {
  testing::FakeClock clock;
  config::TapOptions o = Capture("redis_mix.pcap");
  o.weight = config::TapWeight::kBytes;
  // The 20 pipelined INCRBYs' records (16 + 5 + 7 bytes each): 9 fit.
  o.flow_buffer_bytes = 256;
  std::unique_ptr<TapSource> s = ReadAll(o, clock);
  const TapCounters& t = s->tap_counters();
  CHECK(t.unanswered_queue_full > 0);
  CHECK(t.replies_unmatched == 0);  // placeholders kept the replies in step
  const std::map<std::string, Counts> got = KeyCounts(*s);
  CheckKey(got, "hot", 30 * 27, 10 * 135);  // not pipelined: unaffected
  // The 9 queued get their replies (":1\r\n" .. ":9\r\n"), the other 11 request bytes only.
  CHECK(t.unanswered_queue_full == 11);
  CheckKey(got, "counter", 0, 20 * 36 + 9 * 4);
}

TEST_CASE("Tap: a full flow table evicts and counts, and memory stays within its bound", "[tap]") {
  testing::FakeClock clock;
  config::TapOptions o = Capture("redis_benchmark.pcap");
  o.weight = config::TapWeight::kBytes;
  o.max_flows = 2;  // redis-benchmark opens 4 connections at once, and 6 more
  std::unique_ptr<TapSource> s = ReadAll(o, clock);
  const TapCounters& t = s->tap_counters();
  CHECK(t.flows_evicted > 0);
  CHECK(t.flows <= 2);
  CHECK(t.memory_bytes <= t.memory_bound_bytes);
  CHECK(t.memory_bound_bytes == o.MemoryBoundBytes());
}

TEST_CASE("Tap: one flow's state fits TapOptions::kFlowStateBytes", "[tap]") {
  config::TapOptions o = Capture("redis_mix.pcap");
  for (uint32_t flows : {1u, 1000u, 100000u}) {
    o.max_flows = flows;
    sketch::HeavyHitters tracker = *sketch::HeavyHitters::Create(ExactTracker(), absl::Now());
    TapPipeline p(o, tracker);
    INFO("max_flows " << flows);
    CHECK(p.FlowStateBytes() <= config::TapOptions::kFlowStateBytes);
    // Empty, it holds the table, the sessions and the client hosts table only.
    CHECK(p.memory_bytes() <=
          flows * config::TapOptions::kFlowStateBytes + config::TapOptions::kClientHostsBytes);
  }
}

// Frames of a capture file, read with libpcap before anything is measured.
struct Frames {
  int link_type = 0;
  std::vector<std::pair<std::string, absl::Time>> frames;
};

Frames ReadFrames(const std::string& file) {
  char err[PCAP_ERRBUF_SIZE] = {};
  pcap_t* p = pcap_open_offline(file.c_str(), err);
  REQUIRE(p != nullptr);
  Frames out;
  out.link_type = pcap_datalink(p);
  pcap_pkthdr* h = nullptr;
  const u_char* data = nullptr;
  while (pcap_next_ex(p, &h, &data) == 1) {
    out.frames.emplace_back(
        std::string(reinterpret_cast<const char*>(data), h->caplen),
        absl::FromUnixMicros(int64_t{h->ts.tv_sec} * 1'000'000 + h->ts.tv_usec));
  }
  pcap_close(p);
  return out;
}

TEST_CASE("Tap: a flow allocates while it warms up, never per packet or request after", "[tap]") {
  // redis-benchmark -P 16, one run of connections per command tested. Every frame is fed
  // alone: the frames that allocate are bounded by the flows (each flow's session, parsers
  // and their buffers' growth to what its requests need), not by the requests.
  const config::TapOptions o = Capture("redis_benchmark.pcap");
  const Frames f = ReadFrames(o.file);
  sketch::HeavyHitters tracker = *sketch::HeavyHitters::Create(ExactTracker(), absl::Now());
  TapPipeline p(o, tracker);
  size_t allocating_frames = 0;
  size_t frames_with_keys = 0;
  for (const auto& [frame, time] : f.frames) {
    const uint64_t events_before = p.events();
    const uint64_t allocations = testing::AllocationsOnThisThread();
    p.Frame(f.link_type, frame, time);
    if (testing::AllocationsOnThisThread() != allocations) ++allocating_frames;
    if (p.events() > events_before) ++frames_with_keys;
  }
  TapCounters c;
  p.Fill(c);
  INFO("flows " << c.flows_opened << ", frames with keys " << frames_with_keys
                << ", frames that allocated " << allocating_frames);
  REQUIRE(c.flows_opened > 0);
  CHECK(p.events() > 1000);
  CHECK(allocating_frames <= 5 * c.flows_opened);
  CHECK(allocating_frames * 10 < frames_with_keys);
}

TEST_CASE("Tap: at the smallest flow buffer, each open flow stays within its share of the bound",
          "[tap]") {
  // The bound (TapOptions::MemoryBoundBytes) gives each flow flow_buffer_bytes x
  // BuffersPerFlow() + kFlowStateBytes: kFlowStateBytes must cover the session, the flow
  // table's share and the parsers' own objects, whatever their buffers. Checked after
  // every frame, for each protocol and weight, at the smallest flow buffer allowed and
  // with the flow table full.
  for (const char* file : {"redis_mix.pcap", "redis_bytes.pcap", "memcached.pcap"}) {
    for (config::TapWeight weight : {config::TapWeight::kOps, config::TapWeight::kBytes}) {
      config::TapOptions o = Capture(file);
      if (std::string(file) == "memcached.pcap") o.protocol = config::TapProtocol::kMemcached;
      o.weight = weight;
      o.flow_buffer_bytes = 256;
      o.max_flows = 1;  // the captures hold one flow at a time: the table is full
      REQUIRE(o.Validate().ok());
      const Frames f = ReadFrames(o.file);
      sketch::HeavyHitters tracker = *sketch::HeavyHitters::Create(ExactTracker(), absl::Now());
      TapPipeline p(o, tracker);
      const uint64_t per_flow =
          uint64_t{o.flow_buffer_bytes} * o.BuffersPerFlow() + config::TapOptions::kFlowStateBytes;
      const uint64_t bound = o.MemoryBoundBytes();
      // A file has no capture ring.
      REQUIRE(bound == o.max_flows * per_flow + config::TapOptions::kClientHostsBytes);
      uint64_t most_flows = 0;
      for (const auto& [frame, time] : f.frames) {
        p.Frame(f.link_type, frame, time);
        TapCounters c;
        p.Fill(c);
        most_flows = std::max(most_flows, c.flows);
        INFO(file << " weight " << config::TapWeightName(weight) << ", flows " << c.flows);
        REQUIRE(p.memory_bytes() <= bound);
      }
      CHECK(most_flows == o.max_flows);
    }
  }
}

TEST_CASE("Tap: a capture's client hosts are counted from its frames", "[tap]") {
  testing::FakeClock clock;
  // Every connection of the recorded captures comes from 127.0.0.1.
  for (const char* file : {"redis_mix.pcap", "memcached.pcap", "redis_benchmark.pcap"}) {
    config::TapOptions o = Capture(file);
    if (std::string(file) == "memcached.pcap") o.protocol = config::TapProtocol::kMemcached;
    std::unique_ptr<TapSource> s = ReadAll(o, clock);
    INFO(file);
    CHECK(s->tap_counters().flows_opened >= 1);
    CHECK(s->counters().client_hosts == 1);
    CHECK_FALSE(s->counters().client_hosts_capped);
  }
}

TEST_CASE(
    "Tap: client hosts are the peers of the tapped port, kept while their connection sends, "
    "forgotten a window after",
    "[tap]") {
  namespace t = tcp::testing;
  config::TapOptions o;
  o.file = "unused";
  o.ports = {6379};
  sketch::HeavyHitters tracker = *sketch::HeavyHitters::Create(ExactTracker(), absl::Now());
  TapPipeline p(o, tracker);
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  // A request from `src`:`port` to the server 10.0.0.100:6379 (or the reply, the other way).
  const auto frame = [](std::array<uint8_t, 4> src, uint16_t port, uint32_t seq, bool reply) {
    t::TcpSpec tcp;
    tcp.src_port = reply ? 6379 : port;
    tcp.dst_port = reply ? port : 6379;
    tcp.seq = seq;
    tcp.payload = reply ? "+OK\r\n" : "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    t::Ipv4Spec ip;
    ip.src = reply ? std::array<uint8_t, 4>{10, 0, 0, 100} : src;
    ip.dst = reply ? src : std::array<uint8_t, 4>{10, 0, 0, 100};
    return t::Ethernet(0x0800, t::Ipv4(ip, t::TcpBytes(tcp)));
  };
  const std::array<uint8_t, 4> a = {10, 0, 0, 1}, b = {10, 0, 0, 2}, c = {10, 0, 0, 3};
  p.Frame(tcp::kDltEn10Mb, frame(a, 40000, 1, false), t0);
  p.Frame(tcp::kDltEn10Mb, frame(a, 40001, 1, false), t0);  // a second connection of host a
  p.Frame(tcp::kDltEn10Mb, frame(b, 40000, 1, false), t0);
  p.Frame(tcp::kDltEn10Mb, frame(c, 40000, 1, false), t0);
  // The server is never a client, even when its replies open the flow.
  p.Frame(tcp::kDltEn10Mb, frame({10, 0, 0, 4}, 40000, 1, true), t0);
  CHECK(p.client_hosts().count() == 4);  // a, b, c, and the client the reply went to
  // Host a goes on sending on its first connection; b and c fall silent.
  p.Frame(tcp::kDltEn10Mb, frame(a, 40000, 24, false), t0 + absl::Minutes(9));
  p.ExpireIdle(t0 + absl::Minutes(10));
  CHECK(p.client_hosts().count() == 1);
  p.ExpireIdle(t0 + absl::Minutes(19));
  CHECK(p.client_hosts().count() == 0);
}

TEST_CASE("Tap: the filter names the server's port", "[tap]") {
  config::TapOptions o;
  o.ports = {6379};
  CHECK(TapFilter(o) ==
        "tcp and ((dst port 6379) or ((src port 6379) and (tcp[tcpflags] & (tcp-fin|tcp-rst) "
        "!= 0 or (ip6 and ip6[6] == 6 and ip6[53] & 5 != 0))))");
  o.weight = config::TapWeight::kBytes;  // the replies too
  CHECK(TapFilter(o) == "tcp and (port 6379)");
}

// The filter as the kernel runs it (libpcap's compiler, over Ethernet frames built by hand):
// by ops, requests pass and replies do not, but the server's FIN and RST do, over IPv4
// and IPv6 alike.
TEST_CASE("Tap: by ops the filter passes requests and the server's FIN and RST only", "[tap]") {
  namespace t = tcp::testing;
  config::TapOptions o;
  o.ports = {6379};
  pcap_t* dead = pcap_open_dead(DLT_EN10MB, 65535);
  REQUIRE(dead != nullptr);
  struct bpf_program prog;
  REQUIRE(pcap_compile(dead, &prog, TapFilter(o).c_str(), 1, PCAP_NETMASK_UNKNOWN) == 0);
  const auto passes = [&](const std::string& frame) {
    struct pcap_pkthdr h = {};
    h.caplen = h.len = static_cast<bpf_u_int32>(frame.size());
    return pcap_offline_filter(&prog, &h, reinterpret_cast<const u_char*>(frame.data())) != 0;
  };
  const auto v4 = [](const t::TcpSpec& s) { return t::Ethernet(0x0800, t::Ipv4Tcp(s)); };
  const auto v6 = [](const t::TcpSpec& s) { return t::Ethernet(0x86dd, t::Ipv6Tcp(s)); };
  const auto spec = [](uint16_t src, uint16_t dst, uint8_t flags, std::string payload) {
    t::TcpSpec s;
    s.src_port = src;
    s.dst_port = dst;
    s.flags = flags;
    s.payload = std::move(payload);
    return s;
  };
  const t::TcpSpec request = spec(40000, 6379, t::kAck | t::kPsh, "*1\r\n$4\r\nPING\r\n");
  const t::TcpSpec reply = spec(6379, 40000, t::kAck | t::kPsh, "+PONG\r\n");
  const t::TcpSpec ack = spec(6379, 40000, t::kAck, "");
  const t::TcpSpec fin = spec(6379, 40000, t::kFin | t::kAck, "");
  const t::TcpSpec rst = spec(6379, 40000, t::kRst, "");
  const t::TcpSpec other = spec(6380, 40000, t::kFin | t::kAck, "");  // another port's FIN
  for (const bool ipv6 : {false, true}) {
    INFO((ipv6 ? "IPv6" : "IPv4"));
    const auto frame = ipv6 ? v6 : v4;
    CHECK(passes(frame(request)));
    CHECK_FALSE(passes(frame(reply)));
    CHECK_FALSE(passes(frame(ack)));
    CHECK(passes(frame(fin)));
    CHECK(passes(frame(rst)));
    CHECK_FALSE(passes(frame(other)));
  }
  // libpcap's "tcp" matches an IPv6 packet by its fixed header's next header: behind an
  // extension header nothing passes, requests included (the filter's documented limit).
  const std::string hop_fin =
      t::Ethernet(0x86dd, t::Ipv6(0, t::Ipv6Extension(6, 8) + t::TcpBytes(fin)));
  const std::string hop_request =
      t::Ethernet(0x86dd, t::Ipv6(0, t::Ipv6Extension(6, 8) + t::TcpBytes(request)));
  CHECK_FALSE(passes(hop_fin));
  CHECK_FALSE(passes(hop_request));
  pcap_freecode(&prog);
  pcap_close(dead);
}

TEST_CASE("Tap: a missing file is a clear error", "[tap]") {
  testing::FakeClock clock;
  config::TapOptions o = FileOptions("no-such.pcap", {6379});
  auto s = TapSource::Create(o, ExactTracker(), clock);
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(std::string(s.status().message()), Catch::Contains("--tap.file="));
  CHECK_THAT(std::string(s.status().message()), Catch::Contains("no-such.pcap"));
}

}  // namespace
}  // namespace hotkey::tap
