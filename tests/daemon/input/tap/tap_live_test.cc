// The tap on a live loopback capture of a real redis-server this test starts: needs root
// (CAP_NET_RAW), as CI runs; without it the test says it skipped (a warning), it does not
// pass silently.

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "hotkey/clock/clock.h"
#include "tap_source.h"

namespace hotkey::tap {
namespace {

int FreePort() {
  // A port in 20000-59999 that redis-server then binds; a clash fails the start, not the test's
  // assertions, and is retried.
  return 20000 + static_cast<int>(::getpid() * 7919 + ::time(nullptr)) % 40000;
}

bool Run(const std::string& cmd) { return std::system(cmd.c_str()) == 0; }

TEST_CASE("Tap live: counts a real redis-server's traffic on lo", "[tap][live]") {
  if (::geteuid() != 0) {
    WARN("SKIPPED: capturing on lo needs root (CAP_NET_RAW); CI runs this as root");
    return;
  }
  int port = 0;
  for (int attempt = 0; attempt < 5 && port == 0; ++attempt) {
    const int p = FreePort() + attempt * 13;
    if (Run(absl::StrCat(HOTKEY_REDIS_SERVER, " --port ", p,
                         " --bind 127.0.0.1 --save '' --appendonly no --daemonize yes "
                         "--pidfile /tmp/hotkey-tap-live-",
                         p, ".pid >/dev/null"))) {
      for (int i = 0; i < 50; ++i) {
        if (Run(absl::StrCat(HOTKEY_REDIS_CLI, " -p ", p, " ping >/dev/null 2>&1"))) {
          port = p;
          break;
        }
        ::usleep(100'000);
      }
    }
  }
  REQUIRE(port != 0);
  struct Stop {
    int port;
    ~Stop() {
      std::system(
          absl::StrCat(HOTKEY_REDIS_CLI, " -p ", port, " shutdown nosave >/dev/null 2>&1").c_str());
    }
  } stop{port};

  config::TapOptions o;
  o.interface = "lo";
  o.ports = {static_cast<uint16_t>(port)};
  sketch::HeavyHittersOptions t;
  t.candidates = 1024;
  t.half_life = absl::InfiniteDuration();
  clock::RealClock clock;
  auto tap = TapSource::Create(o, t, clock);
  REQUIRE(tap.ok());
  // The ring libpcap set up: TPACKET_V3, mapped in full, within the bound's allowance
  // (TapOptions::kRingFactor).
  CHECK((*tap)->ring_version() == 2);
  CHECK((*tap)->ring_bytes() >= o.buffer_bytes);
  CHECK((*tap)->ring_bytes() <= config::TapOptions::kRingFactor * o.buffer_bytes);
  // On lo each packet also leaves; the kernel is told to hand over the arriving copy only,
  // and the counts below show nothing is lost by it.
  CHECK((*tap)->ignores_outgoing());
  (*tap)->Start();
  ::usleep(300'000);  // the capture is open before Create returns; let the thread poll

  // 40 GETs of live:hot, 10 SETs, one MGET of three keys; each redis-cli run is a new
  // connection, seen from its SYN.
  const std::string cli = absl::StrCat(HOTKEY_REDIS_CLI, " -p ", port, " ");
  REQUIRE(Run(absl::StrCat(cli, "-r 40 get live:hot >/dev/null")));
  REQUIRE(Run(absl::StrCat(cli, "-r 10 set live:hot v >/dev/null")));
  REQUIRE(Run(absl::StrCat(cli, "mget live:a live:b live:c >/dev/null")));

  // Waits (up to 10 s, for the thread to read and publish) until every key is in.
  std::shared_ptr<const source::SourceReport> r;
  for (int i = 0; i < 200; ++i) {
    (*tap)->RequestPublish();  // as the daemon's tick does
    r = (*tap)->Latest();
    if (r && r->counters.events >= 53) break;
    ::usleep(50'000);
  }
  (*tap)->Stop();
  r = (*tap)->Latest();
  REQUIRE(r != nullptr);
  // What the report carries, as /metrics shows it.
  const source::SourceMetrics& c = r->counters.own;
  auto sample = [&](std::string_view family, std::string_view label) {
    for (size_t i = 0; i < c.schema->samples.size(); ++i) {
      const source::MetricSample& s = c.schema->samples[i];
      if (s.family == family && (s.labels[0].value == label || s.labels[1].value == label)) {
        return c.values[i];
      }
    }
    FAIL("no sample " << family << " " << label);
    return uint64_t{0};
  };
  REQUIRE(c.schema == &TapMetricSchema());
  CHECK(sample("hotkey_tap_capture_drops_total", "kernel") == 0);
  CHECK(r->counters.events == 53);
  CHECK(sample("hotkey_tap_keys_total", "read") == 43);
  CHECK(sample("hotkey_tap_keys_total", "write") == 10);
  CHECK(c.Sum("hotkey_tap_flows_joined_midstream_total") == 0);
  CHECK(sample("hotkey_tap_protocol_errors_total", "request") == 0);
  double hot_r = 0, hot_w = 0;
  for (const sketch::HeavyHitter& h : r->tracker.TopK(r->tracker.size())) {
    if (h.key == "live:hot") hot_r = h.raw_weight[0], hot_w = h.raw_weight[1];
  }
  CHECK(hot_r == 40);
  CHECK(hot_w == 10);
}

}  // namespace
}  // namespace hotkey::tap
