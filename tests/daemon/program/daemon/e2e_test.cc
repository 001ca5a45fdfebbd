// End-to-end tests of hotkeyd in-process (daemon/daemon.h): a Daemon on loopback sockets
// (UDP and HTTP on port 0), fed datagrams from a test socket and read back over HTTP
// exactly as Prometheus and the UI would. Time is a FakeClock (monotonic and wall) that
// the test advances: each advance fires the daemon's publish tick and file polls, each
// receiver drains its socket before it publishes, so a tick's snapshot holds exactly what
// was sent before it, and expectations are exact. One smoke test runs on real clocks.
// Waits poll a condition with a deadline (for the daemon's threads), never fixed sleeps.

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "checkers.h"
#include "fake_clock.h"
#include "hotkey/clock/clock.h"
#include "hotkey/config/measured_loads.h"
#include "hotkey/config/rules_file.h"
#include "hotkey/daemon/daemon.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "hotkey/source/demo.h"
#include "hotkey/source/tracker_options.h"

namespace hotkey::daemon {
namespace {

using clock::Clock;
using clock::RealClock;
using ::hotkey::testing::FakeClock;
using testing::Exposition;
using testing::HttpCall;
using testing::HttpReply;
using testing::Json;
using testing::UdpClient;
using testing::WaitFor;
using namespace std::chrono_literals;

config::DaemonOptions Options() {
  config::DaemonOptions o;
  o.udp.listen_address = "127.0.0.1:0";
  o.web.listen_addresses = {"127.0.0.1:0"};
  o.track.publish_interval = absl::Milliseconds(25);
  o.track.half_life = absl::Milliseconds(200);
  o.track.rate_window = absl::Seconds(1);
  o.track.candidates = 128;
  return o;
}

// What main gives the daemon for `options`: here the rules file loader and the
// measured-loads watcher (no test sets a hash secret or a web config file).
Daemon::Inputs InputsFor(const config::DaemonOptions& options) {
  Daemon::Inputs inputs;
  inputs.load_rules = [options] { return config::LoadReloadable(options); };
  if (!options.measured_loads.file.empty()) {
    auto watcher = std::make_shared<config::MeasuredLoadsWatcher>(options.measured_loads.file);
    inputs.poll_measured_loads = [watcher] { return watcher->Poll(); };
  }
  return inputs;
}

// The daemon keeps a reference to its clock: it must outlive every daemon.
const RealClock kRealClock;

enum class Clocks { kFake, kReal };

// A Daemon running on its own thread, with its log lines captured.
class TestDaemon {
 public:
  // On the test daemon's own FakeClock (monotonic and wall at once), or on real clocks.
  explicit TestDaemon(const config::DaemonOptions& options, Clocks clocks = Clocks::kFake)
      : TestDaemon(options, clocks == Clocks::kFake ? &own_ : nullptr, nullptr) {}
  // On its own FakeClock, with the demo load as a source beside the UDP receivers (as main
  // gives it with --demo).
  struct WithDemo {};
  TestDaemon(const config::DaemonOptions& options, WithDemo)
      : TestDaemon(options, &own_, nullptr, /*demo=*/true) {}
  // On two FakeClocks the test moves: `mono` times durations, `wall` stamps output.
  TestDaemon(const config::DaemonOptions& options, FakeClock& mono, FakeClock& wall)
      : TestDaemon(options, &mono, &wall) {}
  ~TestDaemon() { Stop(); }

  // Moves the fake clocks `d` on (both, or the one), and waits for the snapshot built then:
  // the publish tick (and any file poll) due by then has run, and every datagram sent
  // before is counted.
  void Tick(absl::Duration d) const {
    REQUIRE(mono_ != nullptr);
    if (wall_ != mono_) wall_->Advance(d);  // first: the monotonic clock fires the tick
    mono_->Advance(d);
    const bool ticked = WaitTick();
    INFO("tick at " << Stamp(wall_->Now()) << "; snapshot at " << TopTime());
    REQUIRE(ticked);
  }
  void Tick() const { Tick(interval_); }

  // Shuts down and joins; returns how long Run() took to return.
  std::chrono::steady_clock::duration Stop() {
    const auto start = std::chrono::steady_clock::now();
    if (thread_.joinable()) {
      daemon_->Shutdown();
      thread_.join();
    }
    return std::chrono::steady_clock::now() - start;
  }

  HttpReply Get(const std::string& target) const { return HttpCall(web_port_, "GET", target); }
  HttpReply Post(const std::string& target) const { return HttpCall(web_port_, "POST", target); }

  Exposition Metrics() const {
    const HttpReply r = Get("/metrics");
    REQUIRE(r.status == 200);
    std::string error;
    std::optional<Exposition> e = testing::ParseExposition(r.body, &error);
    INFO(error);
    REQUIRE(e.has_value());
    return *e;
  }
  Json Top() const {
    const HttpReply r = Get("/api/v1/top");
    REQUIRE(r.status == 200);
    std::string error;
    std::optional<Json> j = testing::ParseJson(r.body, &error);
    INFO(error);
    REQUIRE(j.has_value());
    return *j;
  }
  // The exported key with this label in /api/v1/top, or null.
  std::optional<Json> TopKey(const std::string& label) const {
    const Json top = Top();
    for (const Json& k : top["keys"].array) {
      if (k["key"].string == label) return k;
    }
    return std::nullopt;
  }
  // Waits until the daemon has counted `n` events (they are then in the snapshot).
  bool WaitEvents(double n) const {
    return WaitFor([&] { return Top()["events_received"].number >= n; });
  }
  // Waits for a snapshot built at the wall clock's present time.
  bool WaitTick() const {
    const std::string now = Stamp(wall_->Now());
    return WaitFor([&] {
      const HttpReply r = Get("/api/v1/top");  // 503 before the first snapshot
      if (r.status != 200) return false;
      std::string error;
      const std::optional<Json> j = testing::ParseJson(r.body, &error);
      return j && (*j)["time"].string == now;
    });
  }
  std::string TopTime() const {
    const HttpReply r = Get("/api/v1/top");
    std::string error;
    if (r.status != 200) return absl::StrCat("none (", r.status, ")");
    const std::optional<Json> j = testing::ParseJson(r.body, &error);
    return j ? (*j)["time"].string : "none";
  }
  static std::string Stamp(absl::Time t) {
    return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
  }
  // The wall clock's present time in seconds since the epoch.
  double WallSeconds() const {
    return absl::ToDoubleSeconds((wall_ ? wall_->Now() : absl::Now()) - absl::UnixEpoch());
  }

  std::vector<std::string> Logs() const {
    std::lock_guard<std::mutex> l(mu_);
    return logs_;
  }
  size_t CountLogs(std::string_view a, std::string_view b) const {
    size_t n = 0;
    for (const std::string& line : Logs()) {
      n += line.find(a) != std::string::npos && line.find(b) != std::string::npos;
    }
    return n;
  }

  boost::asio::ip::udp::endpoint udp() const { return udp_; }
  uint16_t web_port() const { return web_port_; }
  bool returned() const { return returned_; }

 private:
  TestDaemon(const config::DaemonOptions& options, FakeClock* mono, FakeClock* wall,
             bool demo = false)
      : mono_(mono), wall_(wall ? wall : mono), interval_(options.track.publish_interval) {
    const Clock& m = mono_ ? static_cast<const Clock&>(*mono_) : clock::SteadyClock::Get();
    const Clock& w = wall_ ? static_cast<const Clock&>(*wall_) : kRealClock;
    std::vector<std::unique_ptr<source::EventSource>> sources;
    if (demo) {
      absl::StatusOr<std::unique_ptr<source::EventSource>> s = source::NewDemoSource(options, m);
      REQUIRE(s.ok());
      sources.push_back(*std::move(s));
    }
    absl::StatusOr<std::unique_ptr<Daemon>> d = Daemon::Create(
        options, InputsFor(options), m, w,
        [this](std::string_view line) {
          std::lock_guard<std::mutex> l(mu_);
          logs_.emplace_back(line);
        },
        std::move(sources));
    INFO(d.status().ToString());
    REQUIRE(d.ok());
    daemon_ = *std::move(d);
    web_port_ = daemon_->web_endpoint().port();
    udp_ = daemon_->udp_endpoint();
    thread_ = std::thread([this] {
      daemon_->Run(/*handle_signals=*/false);
      returned_ = true;
    });
    // Ready once the first snapshot is published: from then on /api/v1/top answers 200.
    if (mono_) Tick();
    REQUIRE(WaitFor([this] { return Get("/-/ready").status == 200; }));
  }

  FakeClock own_;          // the clocks of Clocks::kFake
  FakeClock* const mono_;  // null: real clocks
  FakeClock* const wall_;
  const absl::Duration interval_;
  mutable std::mutex mu_;
  std::vector<std::string> logs_;
  std::unique_ptr<Daemon> daemon_;
  uint16_t web_port_ = 0;
  boost::asio::ip::udp::endpoint udp_;
  std::thread thread_;
  std::atomic<bool> returned_{false};
};

// Sends datagrams with a tick after every 16, whose publish drains the socket, so the
// kernel buffer never overflows; and a tick at the end.
void SendAll(const TestDaemon& d, UdpClient& c, const std::vector<std::string>& datagrams) {
  for (size_t i = 0; i < datagrams.size(); ++i) {
    c.Send(datagrams[i]);
    if (i % 16 == 15) d.Tick();
  }
  d.Tick();
}

TEST_CASE(
    "E2E smoke, on real clocks: the daemon is ready, counts an event, serves its landing "
    "page, and /api/v1/top parses",
    "[daemon][e2e]") {
  TestDaemon d(Options(), Clocks::kReal);
  REQUIRE(WaitFor([&] { return d.Get("/-/ready").status == 200; }));
  UdpClient c(d.udp());
  c.Send("r a\nw b");
  REQUIRE(d.WaitEvents(2));  // published on the real publish tick
  CHECK(d.Get("/-/healthy").status == 200);
  const HttpReply page = d.Get("/");
  CHECK(page.status == 200);
  CHECK(page.content_type.starts_with("text/html"));
  CHECK(page.body.find("hotkeyd") != std::string::npos);
  const Json top = d.Top();
  CHECK(top["receivers"].number == 1);
  CHECK(top["keys"].kind == Json::kArray);
  CHECK(d.Get("/nope").status == 404);
  CHECK(d.CountLogs("hotkeyd started", "udp=127.0.0.1:") == 1);
}

TEST_CASE(
    "E2E: the measured-loads file is followed as it changes; a bad one is logged and "
    "counted",
    "[daemon][e2e][load_comparison]") {
  char tmpl[] = "/tmp/hotkey-e2e-loads-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string path = dir + "/loads.json";
  auto write = [&](const std::string& text) {
    std::ofstream(path + ".tmp") << text;
    std::filesystem::rename(path + ".tmp", path);
  };
  config::DaemonOptions o = Options();
  o.measured_loads.file = path;
  o.cluster.capacity = 1000;
  o.cluster_given.capacity = true;  // as --cluster.capacity=1000: no shard is asked
  {
    TestDaemon d(o);
    auto measured = [&] {
      const HttpReply r = d.Get("/api/v1/measured");
      REQUIRE(r.status == 200);
      std::string error;
      std::optional<Json> j = testing::ParseJson(r.body, &error);
      INFO(error);
      REQUIRE(j.has_value());
      return *j;
    };
    // Missing at start: one error (the feed may start later), not one per poll.
    const absl::Duration poll = Daemon::kMeasuredLoadsPollInterval;
    d.Tick(poll);
    CHECK(d.CountLogs("measured loads file unusable", "No such file") == 1);
    CHECK(measured()["measurement"].kind == Json::kNull);
    const double now = d.WallSeconds();
    write(absl::StrCat(R"({"timestamp": )", std::to_string(now),
                       R"(, "strategy": "cache", "ops_per_second": [520, 437]})"));
    d.Tick(poll);  // the poll runs before the tick's snapshot
    Json j = measured();
    REQUIRE(j["measurement"].kind == Json::kObject);
    CHECK(j["measurement"]["busiest"].number == Approx(0.52));
    CHECK(j["measurement"]["strategy"].string == "cache");
    CHECK_FALSE(j["measurement"]["stale"].boolean);
    CHECK(j["last_read_successful"].boolean);
    CHECK(d.CountLogs("measured loads file read", "shards=2") == 1);
    // Broken: logged once, counted, shown; the last measurement stays.
    write("{\"timestamp\": ");
    d.Tick(poll);
    j = measured();
    CHECK_FALSE(j["last_read_successful"].boolean);
    CHECK_THAT(j["last_error"].string, Catch::Matchers::Contains("not JSON"));
    CHECK(j["measurement"]["busiest"].number == Approx(0.52));
    const Exposition e = d.Metrics();
    CHECK(e.Value("hotkey_measured_loads_last_read_successful") == 0);
    CHECK(e.Value("hotkey_measured_loads_read_errors_total") == 2);  // missing, then broken
    d.Tick(poll);  // two more polls of the same broken file
    d.Tick(poll);
    CHECK(d.CountLogs("measured loads file unusable", "not JSON") == 1);
    write(absl::StrCat(R"({"timestamp": )", std::to_string(now + 1),
                       R"(, "ops_per_second": [1940, 437]})"));
    d.Tick(poll);
    CHECK(measured()["last_read_successful"].boolean);
    CHECK(measured()["measurement"]["busiest"].number == Approx(1.94));
    CHECK(d.Metrics().Value("hotkey_measured_loads_timestamp_seconds") == Approx(now + 1));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("E2E: without --model.measured-loads-file, /api/v1/measured is 404 and no such metric",
          "[daemon][e2e][load_comparison]") {
  TestDaemon d(Options());
  CHECK(d.Get("/api/v1/measured").status == 404);
  CHECK(d.Metrics().Find("hotkey_measured_loads_read_errors_total").empty());
}

TEST_CASE("E2E: shares and write ratio of known streams are exported within 0.02",
          "[daemon][e2e]") {
  TestDaemon d(Options());
  UdpClient c(d.udp());
  // Per datagram of 100 events: A 30 (a quarter writes), B 10, 60 over 1000 other keys.
  std::vector<std::string> datagrams;
  int bg = 0;
  for (int n = 0; n < 200; ++n) {
    std::string dg;
    for (int i = 0; i < 100; ++i) {
      const int slot = i % 10;
      if (slot < 3) {
        dg += ((n * 30 + (i / 10) * 3 + slot) % 4 == 3) ? "w A\n" : "r A\n";
      } else if (slot == 3) {
        dg += "r B\n";
      } else {
        dg += absl::StrCat(bg % 7 == 0 ? "w" : "r", " user:", bg % 1000, "\n");
        ++bg;
      }
    }
    datagrams.push_back(std::move(dg));
  }
  SendAll(d, c, datagrams);
  const Exposition e = d.Metrics();
  CHECK(e.Value("hotkey_events_received_total") == 20000);
  CHECK(e.Value("hotkey_datagrams_received_total") == 200);
  const std::optional<double> a = e.Value("hotkey_key_share_ratio", {{"key", "A"}});
  const std::optional<double> b = e.Value("hotkey_key_share_ratio", {{"key", "B"}});
  REQUIRE(a);
  REQUIRE(b);
  CHECK(*a == Approx(0.30).margin(0.02));
  CHECK(*b == Approx(0.10).margin(0.02));
  const std::optional<double> wa = e.Value("hotkey_key_write_ratio", {{"key", "A"}});
  REQUIRE(wa);
  CHECK(*wa == Approx(0.25).margin(0.03));
  CHECK(e.Value("hotkey_key_write_ratio", {{"key", "B"}}) == 0);
  // No background key (0.1% each) is exported, and the error bounds are small.
  CHECK(e.Find("hotkey_key_share_ratio").size() == 2);
  CHECK(e.Value("hotkey_key_share_error_ratio", {{"key", "A"}}).value_or(1) < 0.02);
  CHECK(e.Value("hotkey_key_share_threshold_ratio", {{"key", "A"}}) == 0.1);
}

TEST_CASE("E2E: events sampled at rate=0.01 count as 100 ops each in every ops/s figure",
          "[daemon][e2e]") {
  config::DaemonOptions o = Options();
  o.exporter.min_share = 0.001;  // "plain" has 0.5% of the ops
  o.exporter.top_k = 100;
  TestDaemon d(o);
  // Every 25 ms tick: 5 events of "hot" and 5 of other keys sampled at 1%, and 5 unsampled
  // events of "plain" (@1 overrides the header): 400 sampled events/s, 200 plain ones.
  UdpClient c(d.udp());
  // 1.5 s of ticks: the 1 s window is full, its base exactly 40 ticks back.
  for (int tick = 0; tick < 60; ++tick) {
    std::string dg = "!v1 rate=0.01\n";
    for (int i = 0; i < 5; ++i) {
      absl::StrAppend(&dg, "r hot\nr other:", (tick * 5 + i) % 50, "\nr@1 plain\n");
    }
    c.Send(dg);
    d.Tick();
  }
  const Exposition e = d.Metrics();
  // 40 datagrams in the window: 40 * 10 * 100 sampled ops and 40 * 5 plain ones.
  CHECK(e.Value("hotkey_ops_per_second", {{"op", "write"}}) == 0);
  CHECK(e.Value("hotkey_ops_per_second", {{"op", "read"}}).value_or(0) == Approx(40200));
  CHECK(e.Value("hotkey_key_ops_per_second", {{"key", "hot"}, {"op", "read"}}).value_or(0) ==
        Approx(20000));
  CHECK(e.Value("hotkey_key_ops_per_second", {{"key", "plain"}, {"op", "read"}}).value_or(0) ==
        Approx(200));
  // Shares are of ops, not of events: hot is 500 of 1005 ops.
  CHECK(e.Value("hotkey_key_share_ratio", {{"key", "hot"}}).value_or(0) ==
        Approx(500.0 / 1005).margin(0.001));
}

TEST_CASE(
    "E2E: rejection counters count exactly what was sent, and good lines beside bad ones "
    "are counted",
    "[daemon][e2e]") {
  TestDaemon d(Options());
  UdpClient c(d.udp());
  const std::string mixed = "r a\nx b\nw c\n\nr\nr@2 d\nr " + std::string(2000, 'k') + "\nw*2 e";
  for (int i = 0; i < 3; ++i) {
    c.Send(mixed);            // 4 events; one line of each of four reasons
    c.Send("!v2\nr a\nr b");  // whole datagram: bad_header
    c.Send("");               // an empty datagram: counted, nothing in it
  }
  d.Tick();
  const Exposition e = d.Metrics();
  CHECK(e.Value("hotkey_datagrams_received_total") == 9);
  CHECK(e.Value("hotkey_events_received_total") == 12);
  for (const char* reason : {"unknown_op", "empty_line", "missing_key", "bad_number"}) {
    INFO(reason);
    CHECK(e.Value("hotkey_events_rejected_total", {{"reason", reason}}) == 3);
  }
  // A key longer than --key.max-bytes is tracked as its prefix plus a hash, not rejected.
  CHECK(e.Value("hotkey_events_rejected_total", {{"reason", "key_too_long"}}) == 0);
  CHECK(e.Value("hotkey_datagrams_rejected_total", {{"reason", "bad_header"}}) == 3);
  CHECK(e.Value("hotkey_datagrams_rejected_total", {{"reason", "source_denied"}}) == 0);
  // The good lines' keys are tracked.
  CHECK(e.Value("hotkey_tracked_keys") == 4);  // a, c, the long key, e
  CHECK(e.Value("hotkey_key_share_ratio", {{"key", "e"}}).value_or(0) == Approx(0.4).margin(0.01));
}

TEST_CASE(
    "E2E: keys with quotes, backslashes, control bytes and invalid UTF-8 give a scrape "
    "that parses line by line",
    "[daemon][e2e]") {
  TestDaemon d(Options());
  UdpClient c(d.udp());
  const std::vector<std::string> keys = {"quo\"te", "back\\slash", "ctl\x01\x02\x7f\ttab",
                                         "bad\xff\xfe utf8 \xc3", std::string("nul\0byte", 8)};
  std::string dg;
  for (const std::string& k : keys) dg += "r " + k + "\n";
  for (int i = 0; i < 20; ++i) c.Send(dg);
  d.Tick();
  const HttpReply r = d.Get("/metrics");
  REQUIRE(r.status == 200);
  CHECK(testing::IsValidUtf8(r.body));
  std::string error;
  const std::optional<Exposition> e = testing::ParseExposition(r.body, &error);
  INFO(error);
  REQUIRE(e.has_value());
  CHECK(e->Find("hotkey_key_share_ratio").size() == keys.size());
  CHECK(e->Value("hotkey_key_share_ratio", {{"key", "quo\"te"}}) == Approx(0.2));
  CHECK(e->Value("hotkey_key_share_ratio", {{"key", "back\\x5cslash"}}) == Approx(0.2));
  CHECK(e->Value("hotkey_key_share_ratio", {{"key", "ctl\\x01\\x02\\x7f\\x09tab"}}) == Approx(0.2));
  CHECK(e->Value("hotkey_key_share_ratio", {{"key", "bad\\xff\\xfe utf8 \\xc3"}}) == Approx(0.2));
  CHECK(e->Value("hotkey_key_share_ratio", {{"key", "nul\\x00byte"}}) == Approx(0.2));
  // The same labels in the JSON API.
  CHECK(d.TopKey("quo\"te").has_value());
  CHECK(d.TopKey("bad\\xff\\xfe utf8 \\xc3").has_value());
}

TEST_CASE("E2E: hotkey_last_event_timestamp_seconds is when the last event was counted",
          "[daemon][e2e]") {
  TestDaemon d(Options());
  UdpClient c(d.udp());
  CHECK(d.Metrics().Value("hotkey_last_event_timestamp_seconds") == 0);
  // An event is stamped with its batch's clock reading: before or after the tick's advance,
  // as the receiver thread happens to read the datagram.
  const double tick = absl::ToDoubleSeconds(Options().track.publish_interval);
  const auto last_event_within = [&](double from) {
    const double v = d.Metrics().Value("hotkey_last_event_timestamp_seconds").value_or(0);
    // (1 ms: what the exposition's decimal form of a Unix time keeps)
    if (std::abs(v - from) < 1e-3 || std::abs(v - from - tick) < 1e-3) return true;
    FAIL_CHECK(absl::StrFormat("last event %.6f, sent at %.6f", v, from));
    return false;
  };
  const double t0 = d.WallSeconds();
  c.Send("r a\nw b");
  d.Tick();
  CHECK(last_event_within(t0));
  // Time passes with no event: the timestamp stays where the feed went silent. A datagram of
  // rejected lines only is no event.
  d.Tick(absl::Seconds(30));
  c.Send("x bad\n\nr");
  d.Tick();
  CHECK(d.Metrics().Value("hotkey_events_rejected_total", {{"reason", "unknown_op"}}) == 1);
  CHECK(last_event_within(t0));
  const double t1 = d.WallSeconds();
  c.Send("r c");
  d.Tick();
  CHECK(last_event_within(t1));
}

TEST_CASE(
    "E2E: a hot key's episode starts after min_dwell and ends with hysteresis, logged once "
    "each",
    "[daemon][e2e]") {
  config::DaemonOptions o = Options();
  o.alert.default_threshold = 0.1;
  o.alert.hysteresis = 0.2;  // a hot key cools below 0.08
  o.alert.min_dwell = absl::Milliseconds(300);
  // The clock jumps 2 s at a time, with a tick at each jump before the datagrams after it.
  // With a rate window shorter than the jump, that tick sees a window with no traffic and
  // rightly ends the episode as a stopped feed; this test is about hysteresis, so the
  // window spans the jumps.
  o.track.rate_window = absl::Seconds(10);
  TestDaemon d(o);  // ticked once, at 25 ms
  UdpClient c(d.udp());
  // `n` events of which `hot` are of the key "hot", the rest over `n / 10` other keys.
  const auto send = [&](int n, int hot) {
    std::string dg;
    for (int i = 0; i < n; ++i) {
      dg += i < hot ? "r hot\n" : absl::StrCat("r other:", i % (n / 10), "\n");
      if (dg.size() > 8000) {
        c.Send(dg);
        dg.clear();
      }
    }
    if (!dg.empty()) c.Send(dg);
  };

  send(100, 40);  // 40%
  for (int step = 0; step < 2; ++step) {
    d.Tick(absl::Milliseconds(100));  // over since 125 ms
    std::optional<Json> k = d.TopKey("hot");
    REQUIRE(k);
    CHECK((*k)["share"].number == Approx(0.4).margin(0.01));
    CHECK_FALSE((*k)["hot"].boolean);  // 0 and 100 ms < min_dwell
  }
  d.Tick(absl::Milliseconds(200));  // 425 ms: over for 300 ms
  std::optional<Json> k = d.TopKey("hot");
  REQUIRE(k);
  CHECK((*k)["hot"].boolean);
  {
    const Exposition e = d.Metrics();
    CHECK(e.Find("hotkey_key_hot", {{"key", "hot"}}).size() == 1);
    CHECK(e.Value("hotkey_hot_keys") == 1);
  }
  CHECK(d.CountLogs("episode started", "key=\"hot\"") == 1);

  // Ten half-lives later the old traffic weighs 1/1024: now 9% (the decayed share, which
  // detection reads), under the threshold but over 0.08, so the key stays hot.
  d.Tick(absl::Seconds(2));
  send(1000, 90);
  d.Tick();
  k = d.TopKey("hot");
  REQUIRE(k);
  CHECK((*k)["decayed_share"].number == Approx(0.09).margin(0.01));
  CHECK((*k)["hot"].boolean);
  CHECK(d.CountLogs("episode ended", "key=\"hot\"") == 0);

  // Then 5%: it cools.
  d.Tick(absl::Seconds(2));
  send(1000, 50);
  d.Tick();
  k = d.TopKey("hot");
  REQUIRE(k);
  CHECK_FALSE((*k)["hot"].boolean);
  CHECK((*k)["decayed_share"].number == Approx(0.05).margin(0.01));
  CHECK(d.Metrics().Find("hotkey_key_hot").empty());
  CHECK(d.CountLogs("episode started", "key=\"hot\"") == 1);
  CHECK(d.CountLogs("episode ended", "key=\"hot\"") == 1);
  CHECK(d.CountLogs("hot key episode ended", "duration=4.05s") == 1);  // hot from 425 ms to 4.475 s
}

TEST_CASE("E2E: a wall clock stepped back an hour moves the stamps; decay goes on",
          "[daemon][e2e]") {
  config::DaemonOptions o = Options();  // half-life 200 ms
  o.track.rate_window = absl::Seconds(10);
  FakeClock mono;
  FakeClock wall(absl::FromUnixSeconds(1'800'000'000));
  TestDaemon d(o, mono, wall);
  UdpClient c(d.udp());
  const auto send = [&](const std::string& key, int n) {
    std::string dg;
    for (int i = 0; i < n; ++i) absl::StrAppend(&dg, "r ", key, "\n");
    c.Send(dg);
  };
  send("old", 100);
  d.Tick();
  // The wall clock steps back an hour; then five half-lives pass on both clocks: "old"
  // weighs 100 / 32 against 100 new events, as if the wall clock had never moved (each
  // counted at its send or one tick later: within the margin).
  wall.Set(wall.Now() - absl::Hours(1));
  d.Tick(absl::Seconds(1));
  send("new", 100);
  d.Tick();
  const std::optional<Json> fresh = d.TopKey("new");
  REQUIRE(fresh);
  CHECK((*fresh)["decayed_share"].number == Approx(32.0 / 33).margin(0.01));
  const std::optional<Json> stale = d.TopKey("old");
  REQUIRE(stale);
  CHECK((*stale)["decayed_share"].number == Approx(1.0 / 33).margin(0.01));
  // The stamps show the step: the snapshot's time is the wall clock's (25 ms at start, 25,
  // 1000 and 25 since).
  CHECK(d.Top()["time"].string == "2027-01-15T07:00:01.075Z");
}

TEST_CASE("E2E: POST /-/reload applies a good rules file and keeps the old one on a bad file",
          "[daemon][e2e]") {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     absl::StrCat("hotkeyd_e2e_rules_", ::getpid(), ".yml");
  const auto write = [&](const std::string& text) {
    std::ofstream f(path, std::ios::trunc);
    f << text;
  };
  write("alert:\n  share_threshold: 0.2\n");
  config::DaemonOptions o = Options();
  o.config_file = path.string();
  o.web.enable_lifecycle = true;
  TestDaemon d(o);
  UdpClient c(d.udp());
  std::string dg;
  for (int i = 0; i < 100; ++i) dg += i % 2 ? "r k\n" : absl::StrCat("r other:", i, "\n");
  c.Send(dg);
  d.Tick();
  const auto threshold = [&] {
    return d.Metrics().Value("hotkey_key_share_threshold_ratio", {{"key", "k"}});
  };
  CHECK(threshold() == 0.2);
  const double first_success =
      d.Metrics().Value("hotkey_config_last_reload_success_timestamp_seconds").value_or(0);
  CHECK(first_success > 0);

  write("alert:\n  share_threshold: 0.3\n");
  HttpReply r = d.Post("/-/reload");
  CHECK(r.status == 200);
  d.Tick();  // the new rules take effect at the next snapshot
  CHECK(threshold() == 0.3);
  CHECK(d.Metrics().Value("hotkey_config_last_reload_successful") == 1);

  write("alert:\n  share_threshold: [0.4\n");
  r = d.Post("/-/reload");
  CHECK(r.status == 500);
  CHECK(r.body.find("reload failed") != std::string::npos);
  CHECK(r.body.find(path.filename().string()) != std::string::npos);
  const Exposition e = d.Metrics();
  CHECK(e.Value("hotkey_config_last_reload_successful") == 0);
  CHECK(e.Value("hotkey_config_last_reload_success_timestamp_seconds") >= first_success);
  // Several publishes later the old threshold is still in force.
  for (int i = 0; i < 3; ++i) d.Tick();
  CHECK(threshold() == 0.3);
  CHECK(d.CountLogs("level=error", "reload failed") == 1);

  // Fixing the file makes the next reload succeed again.
  write("alert:\n  share_threshold: 0.25\n");
  CHECK(d.Post("/-/reload").status == 200);
  d.Tick();
  CHECK(threshold() == 0.25);
  CHECK(d.Metrics().Value("hotkey_config_last_reload_successful") == 1);
  std::filesystem::remove(path);
}

TEST_CASE("E2E: a bad rules file at start is an error from Create, not a crash", "[daemon][e2e]") {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / absl::StrCat("hotkeyd_e2e_bad_", ::getpid(), ".yml");
  std::ofstream(path) << "alert:\n  sahre_threshold: 0.2\n";
  config::DaemonOptions o = Options();
  o.config_file = path.string();
  FakeClock clock;
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(o, InputsFor(o), clock, clock, nullptr);
  CHECK_FALSE(d.ok());
  CHECK(d.status().message().find("sahre_threshold") != absl::string_view::npos);
  std::filesystem::remove(path);
}

TEST_CASE("E2E: Run() returns within a second of Shutdown() under a flood of datagrams",
          "[daemon][e2e]") {
  auto d = std::make_unique<TestDaemon>(Options());
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> sent{0};
  std::thread blaster([&] {
    UdpClient c(d->udp());
    std::string dg;
    for (int i = 0; i < 100; ++i) absl::StrAppend(&dg, "r flood:", i % 37, "\n");
    while (!stop) {
      try {
        c.Send(dg);
        ++sent;
      } catch (const std::exception&) {
        // ECONNREFUSED once the daemon's socket is closed: keep blasting until told.
      }
    }
  });
  REQUIRE(WaitFor([&] { return sent > 2000; }));
  REQUIRE(WaitFor([&] {
    d->Tick();
    return d->Top()["events_received"].number >= 1000;
  }));
  const auto took = d->Stop();
  CHECK(d->returned());
  // The daemon's promise is "well under a second"; ThreadSanitizer (the hardening stage sets
  // HOTKEY_SANITIZER) runs this code 5 to 15 times slower, so there only a hang fails.
  const bool sanitized = std::getenv("HOTKEY_SANITIZER") != nullptr;
  CHECK(took < (sanitized ? 10s : 1s));
  stop = true;
  blaster.join();
  d.reset();  // destruction after Run() returned must be clean too
}

TEST_CASE("E2E: Create fails cleanly when the web port is taken", "[daemon][e2e]") {
  TestDaemon first(Options());
  config::DaemonOptions o = Options();
  o.web.listen_addresses = {absl::StrCat("127.0.0.1:", first.web_port())};
  FakeClock clock;
  absl::StatusOr<std::unique_ptr<Daemon>> second =
      Daemon::Create(o, InputsFor(o), clock, clock, nullptr);
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().message().find("cannot listen on http") != absl::string_view::npos);
  CHECK(first.Get("/-/healthy").status == 200);  // the first one is unharmed
}

TEST_CASE("E2E: datagrams from outside --udp.allowed-sources are counted as denied, not parsed",
          "[daemon][e2e]") {
  config::DaemonOptions o = Options();
  o.udp.allowed_sources = {"10.0.0.0/8"};
  TestDaemon denied(o);
  UdpClient c(denied.udp());
  for (int i = 0; i < 5; ++i) c.Send("r a\nr b");
  denied.Tick();
  const Exposition e = denied.Metrics();
  CHECK(e.Value("hotkey_datagrams_rejected_total", {{"reason", "source_denied"}}) == 5);
  CHECK(e.Value("hotkey_datagrams_received_total") == 5);
  CHECK(e.Value("hotkey_events_received_total") == 0);
  CHECK(e.Value("hotkey_tracked_keys") == 0);

  o.udp.allowed_sources = {"10.0.0.0/8", "127.0.0.1"};
  TestDaemon allowed(o);
  UdpClient c2(allowed.udp());
  for (int i = 0; i < 5; ++i) c2.Send("r a\nr b");
  allowed.Tick();
  CHECK(allowed.Top()["events_received"].number == 10);
  CHECK(allowed.Metrics().Value("hotkey_datagrams_rejected_total", {{"reason", "source_denied"}}) ==
        0);
}

TEST_CASE("E2E: with two receivers on one port, counts add up and shares merge", "[daemon][e2e]") {
  config::DaemonOptions o = Options();
  o.udp.receivers = 2;
  TestDaemon d(o);
  // Many source ports, so the kernel's flow hash spreads them over both sockets (all 32 on
  // one socket has odds of 2^-31).
  std::vector<std::unique_ptr<UdpClient>> clients;
  for (int i = 0; i < 32; ++i) clients.push_back(std::make_unique<UdpClient>(d.udp()));
  std::string dg;
  for (int i = 0; i < 100; ++i) dg += i % 10 < 3 ? "r A\n" : absl::StrCat("r bg:", i, "\n");
  for (int n = 0; n < 80; ++n) {
    clients[n % clients.size()]->Send(dg);
    if (n % 16 == 15) d.Tick();  // both receivers drain their sockets
  }
  d.Tick();
  // The tick's snapshot may be built before the second receiver's report: wait for it.
  REQUIRE(d.WaitEvents(8000));
  const Json top = d.Top();
  CHECK(top["receivers"].number == 2);
  CHECK(top["events_received"].number == 8000);
  // Both sockets really got traffic, and their counts add up to the total.
  REQUIRE(top["sources"].array.size() == 2);
  double sum = 0;
  for (const Json& s : top["sources"].array) {
    CHECK(s["events_received"].number > 0);
    sum += s["events_received"].number;
  }
  CHECK(sum == 8000);
  const Exposition e = d.Metrics();
  CHECK(e.Value("hotkey_key_share_ratio", {{"key", "A"}}).value_or(0) == Approx(0.3).margin(0.02));
  // A key held by both receivers has the ops/s of both: never more than the shard's.
  const double key_ops =
      e.Value("hotkey_key_ops_per_second", {{"key", "A"}, {"op", "read"}}).value_or(-1);
  const double shard_ops = e.Value("hotkey_ops_per_second", {{"op", "read"}}).value_or(0);
  CHECK(key_ops > 0);
  CHECK(key_ops <= shard_ops);
}

TEST_CASE(
    "E2E: with UDP off (an empty --udp.listen-address) the daemon binds no UDP socket, "
    "counts its other source, and /metrics has no UDP families",
    "[daemon][e2e]") {
  config::DaemonOptions o = Options();
  o.udp.listen_address.clear();
  o.demo = true;
  o.demo_rate = 1000;
  TestDaemon d(o, TestDaemon::WithDemo{});
  CHECK(d.udp().port() == 0);
  CHECK(d.CountLogs("hotkeyd started", "udp=off") == 1);
  for (int i = 0; i < 8; ++i) d.Tick();
  REQUIRE(d.WaitEvents(1));
  const Json top = d.Top();
  CHECK(top["sources"].array.size() == 1);  // the demo alone
  const Exposition e = d.Metrics();
  CHECK(e.Value("hotkey_events_received_total", {}).value_or(0) > 0);
  // The UDP receiver's own families come with a UDP source only; the kernel's drop counter
  // stays, at 0, with no socket to drop for.
  CHECK_FALSE(e.Value("hotkey_datagrams_received_total", {}).has_value());
  CHECK_FALSE(e.Value("hotkey_udp_receive_errors_total", {}).has_value());
  CHECK(e.Value("hotkey_udp_kernel_drops_total", {}).value_or(-1) == 0);
}

TEST_CASE("E2E: Create refuses a daemon with no source at all", "[daemon][e2e]") {
  config::DaemonOptions o = Options();
  o.udp.listen_address.clear();
  const FakeClock clock;
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(o, InputsFor(o), clock, clock, nullptr);
  REQUIRE_FALSE(d.ok());
  CHECK_THAT(std::string(d.status().message()), Catch::Matchers::Contains("no event source"));
}

}  // namespace
}  // namespace hotkey::daemon
