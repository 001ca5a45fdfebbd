// Tests for hotkey::loadgen::Sender (tools/loadgen/sender.cc) against a real loopback UDP
// socket: wire format, sampling header, celebrity shares and windows, pacing, stop, send
// errors and validation.

#include "hotkey/loadgen/sender.h"

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "fake_clock.h"
#include "udp_sink.h"

namespace hotkey::loadgen {
namespace {

using hotkey::testing::FakeClock;
using hotkey::testing::UdpSink;

struct Event {
  char op;
  std::string key;
};

// Splits datagrams into events, checking each line against protocol v1's event syntax
// `r|w <key>`. `header` is the first line every datagram must open with ("" for none).
std::vector<Event> ParseAll(const std::vector<std::string>& datagrams, const std::string& header) {
  std::vector<Event> events;
  for (const std::string& d : datagrams) {
    REQUIRE(!d.empty());
    REQUIRE(d.back() == '\n');
    std::vector<absl::string_view> lines =
        absl::StrSplit(absl::string_view(d.data(), d.size() - 1), '\n');
    size_t first = 0;
    if (!header.empty()) {
      REQUIRE(std::string(lines[0]) == header);
      first = 1;
    }
    REQUIRE(lines.size() > first);  // no datagram without events
    for (size_t i = first; i < lines.size(); ++i) {
      const std::string_view line(lines[i].data(), lines[i].size());
      INFO("line '" << line << "'");
      REQUIRE(line.size() >= 3);
      REQUIRE((line[0] == 'r' || line[0] == 'w'));
      REQUIRE(line[1] == ' ');
      events.push_back({line[0], std::string(line.substr(2))});
    }
  }
  return events;
}

// Runs a sender to completion on `clock` and returns what the sink received.
std::vector<std::string> SendAll(SendOptions o, const clock::Clock& clock, UdpSink& sink,
                                 SendStats* stats_out = nullptr) {
  o.to = sink.address();
  absl::StatusOr<std::unique_ptr<Sender>> sender = Sender::Create(o, clock);
  REQUIRE(sender.ok());
  std::atomic<bool> stop{false};
  REQUIRE((*sender)->Run(stop).ok());
  const SendStats stats = (*sender)->stats();
  CHECK(stats.send_errors == 0);
  if (stats_out != nullptr) *stats_out = stats;
  std::vector<std::string> got = sink.WaitFor(stats.datagrams);
  REQUIRE(got.size() == stats.datagrams);  // loopback with a draining reader loses nothing
  return got;
}

TEST_CASE("Sender: every datagram holds protocol v1 event lines of background keys", "[loadgen]") {
  UdpSink sink;
  FakeClock clock;
  SendOptions o;
  o.rate = 20000;
  o.duration = absl::Seconds(1);
  o.background_keys = 1000;
  SendStats stats;
  const std::vector<std::string> got = SendAll(o, clock, sink, &stats);
  const std::vector<Event> events = ParseAll(got, "");
  CHECK(events.size() == 20000);  // exactly floor(rate * duration)
  CHECK(stats.events == 20000);
  uint64_t bytes = 0;
  for (const std::string& d : got) {
    CHECK(d.size() <= o.datagram_bytes);
    bytes += d.size();
  }
  CHECK(stats.bytes == bytes);
  for (const Event& e : events) {
    REQUIRE(e.key.rfind("key:", 0) == 0);
    uint64_t rank = 0;
    REQUIRE(absl::SimpleAtoi(e.key.substr(4), &rank));
    REQUIRE(rank >= 1);
    REQUIRE(rank <= 1000);
  }
}

TEST_CASE("Sender: sampling below 1 opens every datagram with the v1 header", "[loadgen]") {
  UdpSink sink;
  FakeClock clock;
  SendOptions o;
  o.rate = 5000;
  o.duration = absl::Seconds(1);
  o.sampling = 0.25;
  const std::vector<std::string> got = SendAll(o, clock, sink);
  CHECK(ParseAll(got, "!v1 rate=0.25").size() == 5000);
}

TEST_CASE("Sender: full datagrams come close to the size limit", "[loadgen]") {
  UdpSink sink;
  SendOptions o;
  o.rate = 0;  // as fast as possible: every batch but the last is full
  o.duration = absl::Milliseconds(50);
  o.datagram_bytes = 500;
  o.background_keys = 100;  // keys "key:1".."key:100": lines of at most 11 bytes
  const std::vector<std::string> got = SendAll(o, clock::SteadyClock::Get(), sink);
  REQUIRE(got.size() > 40);
  for (size_t i = 0; i + 1 < got.size(); ++i) {
    INFO("datagram " << i);
    CHECK(got[i].size() <= 500);
    CHECK(got[i].size() > 500 - 11);  // the next line would not have fitted
  }
}

TEST_CASE("Sender: celebrities take their share of events and of writes", "[loadgen]") {
  UdpSink sink;
  FakeClock clock;
  SendOptions o;
  o.rate = 200000;
  o.duration = absl::Seconds(1);
  o.background_write_share = 0.1;
  o.celebrities.push_back({.key = "user:42", .share = 0.3, .write_share = 0.5});
  o.celebrities.push_back({.key = "cart 9", .share = 0.05, .write_share = 1.0});
  const std::vector<Event> events = ParseAll(SendAll(o, clock, sink), "");
  REQUIRE(events.size() == 200000);
  uint64_t user = 0, user_writes = 0, cart = 0, cart_writes = 0, bg = 0, bg_writes = 0;
  for (const Event& e : events) {
    if (e.key == "user:42") {
      ++user;
      user_writes += e.op == 'w';
    } else if (e.key == "cart 9") {
      ++cart;
      cart_writes += e.op == 'w';
    } else {
      ++bg;
      bg_writes += e.op == 'w';
    }
  }
  // Standard deviations: sqrt(.3 * .7 / 200000) ~ 0.001 for user's share; the tolerances
  // below are 5 or more of them, so a correct sender fails about once in a million runs.
  CHECK(static_cast<double>(user) / events.size() == Approx(0.3).margin(0.005));
  CHECK(static_cast<double>(cart) / events.size() == Approx(0.05).margin(0.003));
  CHECK(static_cast<double>(user_writes) / user == Approx(0.5).margin(0.01));
  CHECK(cart_writes == cart);
  CHECK(static_cast<double>(bg_writes) / bg == Approx(0.1).margin(0.005));
}

TEST_CASE("Sender: a celebrity is sent only inside its start/stop window", "[loadgen]") {
  UdpSink sink;
  FakeClock clock;
  SendOptions o;
  o.rate = 10000;
  o.duration = absl::Seconds(1);
  o.celebrities.push_back({.key = "flash",
                           .share = 0.5,
                           .start = absl::Milliseconds(300),
                           .stop = absl::Milliseconds(600)});
  const std::vector<Event> events = ParseAll(SendAll(o, clock, sink), "");
  REQUIRE(events.size() == 10000);
  // Event i is due at (i + 1) / rate; the sender decides the window once per wake-up
  // (every 1 ms on the fake clock, 10 events), so allow one wake-up of slack at each edge.
  uint64_t inside = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].key != "flash") continue;
    INFO("event " << i);
    CHECK(i >= 2990);
    CHECK(i < 6000);
    ++inside;
  }
  CHECK(static_cast<double>(inside) / 3000 == Approx(0.5).margin(0.05));
}

TEST_CASE("Sender: a paced run keeps the schedule on the clock", "[loadgen]") {
  UdpSink sink;
  FakeClock clock;
  SendOptions o;
  o.rate = 1000;
  o.duration = absl::Seconds(2);
  SendStats stats;
  const std::vector<std::string> got = SendAll(o, clock, sink, &stats);
  CHECK(stats.events == 2000);
  CHECK(stats.elapsed >= absl::Seconds(2));
  CHECK(stats.elapsed <= absl::Seconds(2) + absl::Milliseconds(2));
  // At 1 event per ms and 1 ms wake-ups, events go out as they fall due, not in bulk.
  CHECK(got.size() >= 1900);
}

TEST_CASE("Sender: the same seed sends the same events", "[loadgen]") {
  SendOptions o;
  o.rate = 3000;
  o.duration = absl::Seconds(1);
  o.celebrities.push_back({.key = "k", .share = 0.1});
  o.seed = 7;
  UdpSink sink_a, sink_b, sink_c;
  FakeClock clock_a, clock_b, clock_c;
  const std::vector<std::string> a = SendAll(o, clock_a, sink_a);
  const std::vector<std::string> b = SendAll(o, clock_b, sink_b);
  o.seed = 8;
  const std::vector<std::string> c = SendAll(o, clock_c, sink_c);
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("Sender: stop ends an endless run and stats are readable meanwhile", "[loadgen]") {
  UdpSink sink;
  SendOptions o;
  o.to = sink.address();
  o.rate = 0;
  absl::StatusOr<std::unique_ptr<Sender>> sender = Sender::Create(o);
  REQUIRE(sender.ok());
  std::atomic<bool> stop{false};
  std::thread runner([&] { CHECK((*sender)->Run(stop).ok()); });
  uint64_t seen = 0;
  for (int i = 0; i < 200 && seen == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    seen = (*sender)->stats().events;
  }
  CHECK(seen > 0);
  const auto t0 = std::chrono::steady_clock::now();
  stop = true;
  runner.join();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
  const SendStats end = (*sender)->stats();
  CHECK(end.events >= seen);
  CHECK(end.elapsed > absl::ZeroDuration());
  // A second Run is refused.
  CHECK((*sender)->Run(stop).code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("Sender: sending where nobody listens counts errors and goes on", "[loadgen]") {
  // A port that was just free: bind, read it, close.
  int port = 0;
  {
    UdpSink probe;
    port = std::stoi(probe.address().substr(probe.address().rfind(':') + 1));
  }
  SendOptions o;
  o.to = "127.0.0.1:" + std::to_string(port);
  o.rate = 0;
  o.duration = absl::Milliseconds(100);
  absl::StatusOr<std::unique_ptr<Sender>> sender = Sender::Create(o);
  REQUIRE(sender.ok());
  std::atomic<bool> stop{false};
  CHECK((*sender)->Run(stop).ok());
  const SendStats s = (*sender)->stats();
  CHECK(s.send_errors > 0);
  CHECK(s.events_dropped > 0);
  CHECK(s.last_errno == ECONNREFUSED);
  CHECK(s.datagrams > 0);  // each ICMP error fails one send; the others go out
}

TEST_CASE("Sender: IPv6 loopback addresses work", "[loadgen]") {
  const int fd = socket(AF_INET6, SOCK_DGRAM, 0);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    if (fd >= 0) close(fd);
    WARN("IPv6 loopback unavailable; skipped");
    return;
  }
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  SendOptions o;
  o.to = "[::1]:" + std::to_string(ntohs(a.sin6_port));
  o.rate = 100;
  o.duration = absl::Milliseconds(100);
  FakeClock clock;
  absl::StatusOr<std::unique_ptr<Sender>> sender = Sender::Create(o, clock);
  REQUIRE(sender.ok());
  std::atomic<bool> stop{false};
  REQUIRE((*sender)->Run(stop).ok());
  char buf[2000];
  timeval tv{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  CHECK(recv(fd, buf, sizeof(buf), 0) > 0);
  CHECK((*sender)->stats().events == 10);
  close(fd);
}

TEST_CASE("Sender: invalid options are rejected with a message", "[loadgen]") {
  auto error = [](const SendOptions& o) {
    absl::StatusOr<std::unique_ptr<Sender>> s = Sender::Create(o);
    REQUIRE_FALSE(s.ok());
    return std::string(s.status().message());
  };
  using Catch::Matchers::Contains;
  SendOptions o;
  o.sampling = 0;
  CHECK_THAT(error(o), Contains("sampling"));
  o = SendOptions{};
  o.rate = -1;
  CHECK_THAT(error(o), Contains("rate"));
  o = SendOptions{};
  o.zipf_s = 0;
  CHECK_THAT(error(o), Contains("zipf_s"));
  o = SendOptions{};
  o.background_keys = 0;
  CHECK_THAT(error(o), Contains("background_keys"));
  o = SendOptions{};
  o.duration = absl::ZeroDuration();
  CHECK_THAT(error(o), Contains("duration"));
  o = SendOptions{};
  o.datagram_bytes = 10;
  CHECK_THAT(error(o), Contains("datagram_bytes"));
  o = SendOptions{};
  o.celebrities = {{.key = "a", .share = 0.7}, {.key = "b", .share = 0.4}};
  CHECK_THAT(error(o), Contains("add up to"));
  // Shares over 1 in total are fine when the windows do not overlap.
  o.celebrities[1].start = absl::Seconds(10);
  o.celebrities[0].stop = absl::Seconds(10);
  CHECK(o.Validate().ok());
  o = SendOptions{};
  o.celebrities = {{.key = "a\nb", .share = 0.1}};
  CHECK_THAT(error(o), Contains("newline"));
  o.celebrities = {{.key = std::string(2000, 'x'), .share = 0.1}};
  CHECK_THAT(error(o), Contains("too long"));
  o.celebrities = {{.key = "", .share = 0.1}};
  CHECK_THAT(error(o), Contains("empty"));
  o.celebrities = {{.key = "a", .share = 0.1, .start = absl::Seconds(2), .stop = absl::Seconds(1)}};
  CHECK_THAT(error(o), Contains("start < stop"));
  o = SendOptions{};
  o.to = "127.0.0.1";
  CHECK_THAT(error(o), Contains("HOST:PORT"));
  o.to = "127.0.0.1:0";
  CHECK_THAT(error(o), Contains("port"));
  o.to = "127.0.0.1:http";
  CHECK_THAT(error(o), Contains("port"));
}

}  // namespace
}  // namespace hotkey::loadgen
