// Tests of the Alerter (aggregate/alerter.h) on explicit times: min dwell, hysteresis, the idle
// guard, keys that vanish, the episode log lines, and thresholds from rules.

#include "hotkey/aggregate/alerter.h"

#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace hotkey::aggregate {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

config::AlertOptions Options() {
  config::AlertOptions o;
  o.default_threshold = 0.10;
  o.min_dwell = absl::Milliseconds(300);
  o.hysteresis = 0.2;  // cools below 0.08
  o.min_ops_per_second = 100;
  return o;
}

struct Harness {
  explicit Harness(const config::AlertOptions& o = Options())
      : alerter(o, [this](std::string_view line) { logs.emplace_back(line); }) {}

  // One tick at kT0 + ms with one key observed at `share` (threshold 0.1) on a shard
  // serving `ops` ops/s; returns whether the key is hot.
  bool Tick(int ms, double share, double ops = 1000, uint64_t id = 1, double threshold = 0.10) {
    alerter.Begin(kT0 + absl::Milliseconds(ms), ops);
    const bool hot = alerter.Observe(id, share, threshold, "k", "cache");
    alerter.Finish();
    return hot;
  }

  size_t Count(std::string_view text) const {
    size_t n = 0;
    for (const std::string& l : logs) n += l.find(text) != std::string::npos;
    return n;
  }

  std::vector<std::string> logs;
  Alerter alerter;
};

TEST_CASE("Alerter: a key is not hot before min_dwell and is hot once it has passed",
          "[daemon][alerter]") {
  Harness h;
  CHECK_FALSE(h.Tick(0, 0.4));
  CHECK(h.alerter.Find(1) != nullptr);  // pending
  CHECK_FALSE(h.alerter.Find(1)->hot);
  CHECK_FALSE(h.Tick(100, 0.4));
  CHECK_FALSE(h.Tick(299, 0.4));
  CHECK(h.alerter.hot_count() == 0);
  CHECK(h.logs.empty());
  CHECK(h.Tick(300, 0.4));
  CHECK(h.alerter.hot_count() == 1);
  REQUIRE(h.alerter.Find(1) != nullptr);
  CHECK(h.alerter.Find(1)->hot_since == kT0 + absl::Milliseconds(300));
  CHECK(h.Count("hot key episode started") == 1);
}

TEST_CASE("Alerter: a wall clock stepped back an hour moves the log stamps and nothing else",
          "[daemon][alerter]") {
  // Dwell and duration are measured on the monotonic `now`; `wall` only stamps the lines.
  Harness h;
  const absl::Time wall0 = absl::FromUnixSeconds(1'800'000'000);
  auto tick = [&](int ms, double share, absl::Duration wall_step) {
    const absl::Time now = kT0 + absl::Milliseconds(ms);
    h.alerter.Begin(now, 1000, wall0 + absl::Milliseconds(ms) + wall_step);
    const bool hot = h.alerter.Observe(1, share, 0.10, "k", "cache");
    h.alerter.Finish();
    return hot;
  };
  CHECK_FALSE(tick(0, 0.4, absl::ZeroDuration()));
  CHECK_FALSE(tick(200, 0.4, -absl::Hours(1)));  // the wall clock steps back between ticks
  CHECK(tick(300, 0.4, -absl::Hours(1)));        // the dwell counted across the step
  REQUIRE(h.alerter.Find(1) != nullptr);
  CHECK(h.alerter.Find(1)->hot_since == kT0 + absl::Milliseconds(300));
  CHECK_FALSE(tick(500, 0.01, -absl::Hours(1)));
  REQUIRE(h.logs.size() == 2);
  CHECK(h.Count("duration=200ms") == 1);
  // 1'800'000'000 s is 2027-01-15T08:00:00Z; less an hour, plus 300 ms.
  CHECK(h.logs[0].find("ts=2027-01-15T07:00:00.300Z") != std::string::npos);
}

TEST_CASE("Alerter: a dip below the threshold before the dwell passes restarts the dwell",
          "[daemon][alerter]") {
  Harness h;
  CHECK_FALSE(h.Tick(0, 0.4));
  CHECK_FALSE(h.Tick(200, 0.09));  // under the threshold: the pending state is dropped
  CHECK(h.alerter.Find(1) == nullptr);
  CHECK_FALSE(h.Tick(300, 0.4));  // over again from 300
  CHECK_FALSE(h.Tick(500, 0.4));
  CHECK(h.Tick(600, 0.4));
  CHECK(h.logs.size() == 1);
}

TEST_CASE(
    "Alerter: a hot key stays hot between threshold*(1-hysteresis) and the threshold, "
    "and cools below",
    "[daemon][alerter]") {
  Harness h;
  h.Tick(0, 0.4);
  REQUIRE(h.Tick(300, 0.4));
  CHECK(h.Tick(400, 0.09));
  CHECK(h.Tick(500, 0.081));
  CHECK(h.Tick(600, 0.0801));  // not below 0.08 yet
  CHECK(h.Count("episode ended") == 0);
  CHECK_FALSE(h.Tick(700, 0.079));
  CHECK(h.alerter.hot_count() == 0);
  CHECK(h.alerter.Find(1) == nullptr);
  CHECK(h.Count("hot key episode started") == 1);
  CHECK(h.Count("hot key episode ended") == 1);
}

TEST_CASE("Alerter: the idle guard keeps every key cold on a quiet shard", "[daemon][alerter]") {
  Harness h;
  for (int ms = 0; ms <= 2000; ms += 100) CHECK_FALSE(h.Tick(ms, 0.9, /*ops=*/99));
  CHECK(h.alerter.hot_count() == 0);
  CHECK(h.logs.empty());
}

TEST_CASE("Alerter: a hot key cools when its shard goes idle", "[daemon][alerter]") {
  Harness h;
  h.Tick(0, 0.5);
  REQUIRE(h.Tick(300, 0.5));
  CHECK_FALSE(h.Tick(400, 0.5, /*ops=*/10));
  CHECK(h.alerter.hot_count() == 0);
  CHECK(h.Count("episode ended") == 1);
  // Back to busy: a new dwell, a new episode.
  CHECK_FALSE(h.Tick(500, 0.5));
  CHECK(h.Tick(800, 0.5));
  CHECK(h.Count("episode started") == 2);
}

TEST_CASE("Alerter: a hot key that is no longer observed ends its episode", "[daemon][alerter]") {
  Harness h;
  h.Tick(0, 0.5, 1000, /*id=*/7);
  REQUIRE(h.Tick(300, 0.5, 1000, /*id=*/7));
  // A tick in which only another, cold key is tracked.
  h.alerter.Begin(kT0 + absl::Milliseconds(400), 1000);
  CHECK_FALSE(h.alerter.Observe(8, 0.01, 0.1, "other", ""));
  h.alerter.Finish();
  CHECK(h.alerter.Find(7) == nullptr);
  CHECK(h.alerter.hot_count() == 0);
  CHECK(h.Count("episode ended") == 1);
  // A pending key that vanishes leaves no state and no log.
  h.Tick(500, 0.5, 1000, /*id=*/9);
  REQUIRE(h.alerter.Find(9) != nullptr);
  h.alerter.Begin(kT0 + absl::Milliseconds(600), 1000);
  h.alerter.Finish();
  CHECK(h.alerter.Find(9) == nullptr);
  CHECK(h.logs.size() == 2);
}

TEST_CASE(
    "Alerter: one episode logs exactly one start and one end line, with key, peak share "
    "and duration",
    "[daemon][alerter]") {
  Harness h;
  h.Tick(0, 0.3);
  h.Tick(300, 0.3);
  h.Tick(400, 0.45);  // the peak
  h.Tick(1000, 0.2);
  h.Tick(1300, 0.05);  // cools
  h.Tick(1400, 0.05);
  REQUIRE(h.logs.size() == 2);
  const std::string& start = h.logs[0];
  const std::string& end = h.logs[1];
  CHECK(start.find("msg=\"hot key episode started\"") != std::string::npos);
  CHECK(start.find("key=\"k\"") != std::string::npos);
  CHECK(start.find("peak_share=0.3000") != std::string::npos);
  CHECK(start.find("threshold=0.1000") != std::string::npos);
  CHECK(start.find("strategy=cache") != std::string::npos);
  CHECK(end.find("msg=\"hot key episode ended\"") != std::string::npos);
  CHECK(end.find("key=\"k\"") != std::string::npos);
  CHECK(end.find("peak_share=0.4500") != std::string::npos);
  CHECK(end.find("duration=1s") != std::string::npos);  // hot from 300 ms to 1300 ms
}

TEST_CASE("Alerter: an episode's end names the fix it had, though the cooling tick advises none",
          "[daemon][alerter]") {
  Harness h;
  h.alerter.Begin(kT0, 1000);
  h.alerter.Observe(1, 0.3, 0.1, "k", "");  // no advice yet
  h.alerter.Finish();
  h.alerter.Begin(kT0 + absl::Milliseconds(300), 1000);
  h.alerter.Observe(1, 0.3, 0.1, "k", "replicate");
  h.alerter.Finish();
  // Cooling: the key is under the line, and is advised on no more.
  h.alerter.Begin(kT0 + absl::Milliseconds(600), 1000);
  h.alerter.Observe(1, 0.01, 0.1, "k", "");
  h.alerter.Finish();
  REQUIRE(h.logs.size() == 2);
  CHECK(h.logs[1].find("msg=\"hot key episode ended\"") != std::string::npos);
  CHECK(h.logs[1].find("strategy=replicate") != std::string::npos);
}

TEST_CASE(
    "Alerter: the episode's lines name the fix in force beside the fix advised, the start "
    "line one noted while the key was pending",
    "[daemon][alerter]") {
  Harness h;
  h.alerter.Begin(kT0, 1000);
  h.alerter.NoteInForce(1, "cache");  // neither hot nor pending: left alone
  h.alerter.Observe(1, 0.3, 0.1, "k", "");
  h.alerter.Finish();
  CHECK(h.alerter.Find(1)->in_force.empty());
  h.alerter.Begin(kT0 + absl::Milliseconds(300), 1000);
  h.alerter.NoteInForce(1, "cache");  // pending: the kits still apply the last episode's fix
  h.alerter.Observe(1, 0.3, 0.1, "k", "");
  h.alerter.Finish();
  REQUIRE(h.logs.size() == 1);
  CHECK(h.logs[0].find("in_force=cache") != std::string::npos);
  // A fix noted while the key was pending was in force before its episode: no change. Nor
  // is the same one noted again.
  CHECK(h.alerter.fixes_changed() == 0);
  h.alerter.Begin(kT0 + absl::Milliseconds(450), 1000);
  h.alerter.NoteInForce(1, "cache");
  h.alerter.Observe(1, 0.3, 0.1, "k", "cache");
  h.alerter.Finish();
  CHECK(h.alerter.fixes_changed() == 0);
  // The fix works: the advice turns to none, the fix stays in force, then split_cache.
  h.alerter.Begin(kT0 + absl::Milliseconds(600), 1000);
  h.alerter.NoteInForce(1, "split_cache");
  h.alerter.Observe(1, 0.3, 0.1, "k", "none");
  h.alerter.Finish();
  CHECK(h.alerter.fixes_changed() == 1);  // a new fix while hot
  h.alerter.Begin(kT0 + absl::Milliseconds(900), 1000);
  h.alerter.NoteInForce(1, "");  // the entry left: the last one stands
  h.alerter.Observe(1, 0.01, 0.1, "k", "");
  h.alerter.Finish();
  CHECK(h.alerter.fixes_changed() == 1);
  REQUIRE(h.logs.size() == 2);
  CHECK(h.logs[1].find("strategy=none in_force=split_cache") != std::string::npos);
}

TEST_CASE("Alerter: the log line quotes labels holding quotes and backslashes",
          "[daemon][alerter]") {
  config::AlertOptions o = Options();
  o.min_dwell = absl::ZeroDuration();
  std::vector<std::string> logs;
  Alerter a(o, [&](std::string_view l) { logs.emplace_back(l); });
  a.Begin(kT0, 1000);
  CHECK(a.Observe(1, 0.5, 0.1, "say \"hi\" \\x00", ""));
  a.Finish();
  REQUIRE(logs.size() == 1);
  CHECK(logs[0].find("key=\"say \\\"hi\\\" \\\\x00\"") != std::string::npos);
}

TEST_CASE("Alerter: thresholds come from the rules, and an ignored key is never hot",
          "[daemon][alerter]") {
  config::AlertOptions o = Options();
  o.min_dwell = absl::ZeroDuration();
  config::ThresholdRule ignore;
  ignore.kind = config::ThresholdRule::kPrefix;
  ignore.pattern = "health";
  ignore.ignore = true;
  config::ThresholdRule session;
  session.kind = config::ThresholdRule::kGlob;
  session.pattern = "session:*";
  session.share = 0.5;
  o.rules = {ignore, session};
  REQUIRE(o.Validate().ok());
  CHECK(std::isinf(o.ThresholdFor("healthcheck")));
  CHECK(o.ThresholdFor("session:1") == 0.5);
  CHECK(o.ThresholdFor("user:1") == 0.1);

  Harness h(o);
  CHECK_FALSE(h.Tick(0, 0.99, 1000, 1, o.ThresholdFor("healthcheck")));
  CHECK_FALSE(h.Tick(0, 0.4, 1000, 2, o.ThresholdFor("session:1")));  // under its 0.5
  CHECK(h.Tick(0, 0.4, 1000, 3, o.ThresholdFor("user:1")));
}

TEST_CASE("Alerter: new options apply at the next tick", "[daemon][alerter]") {
  Harness h;
  h.Tick(0, 0.3);
  REQUIRE(h.Tick(300, 0.3));
  config::AlertOptions o = Options();
  o.min_ops_per_second = 1e9;  // every shard is idle now
  h.alerter.SetOptions(o);
  CHECK_FALSE(h.Tick(400, 0.3));
  CHECK(h.Count("episode ended") == 1);
}

}  // namespace
}  // namespace hotkey::aggregate
