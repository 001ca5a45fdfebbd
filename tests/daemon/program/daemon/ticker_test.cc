// Tests of clock::Ticker (clock/ticker.h), the daemon's periodic jobs, on a FakeClock: jobs
// run at origin + k * interval and not before, a jump over several times runs a job once,
// jobs due together run in the order added, and Stop() ends the thread while it waits; and
// a Waker keeps a notification made before the wait.

#include "hotkey/clock/ticker.h"

#include <mutex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "checkers.h"
#include "fake_clock.h"

namespace hotkey::clock {
namespace {

using ::hotkey::testing::FakeClock;
using ::hotkey::testing::WaitFor;

// What the jobs ran, and when, as the ticker's thread saw it.
struct Log {
  void Add(const std::string& job, absl::Time t) {
    std::lock_guard<std::mutex> l(mu);
    runs.push_back({job, t});
  }
  size_t size() {
    std::lock_guard<std::mutex> l(mu);
    return runs.size();
  }
  std::mutex mu;
  std::vector<std::pair<std::string, absl::Time>> runs;
};

TEST_CASE("Ticker: jobs run on the clock's schedule, once after a jump, in the order added",
          "[daemon][ticker]") {
  FakeClock clock;
  const absl::Time t0 = clock.Now();
  Log log;
  Ticker ticker(clock);
  ticker.Every(absl::Milliseconds(500), [&](absl::Time t) { log.Add("poll", t); });
  ticker.Every(absl::Milliseconds(250), [&](absl::Time t) { log.Add("tick", t); });
  ticker.Start(t0);
  REQUIRE(WaitFor([&] { return clock.waiters() == 1; }));

  clock.Advance(absl::Milliseconds(249));  // not yet due: the thread waits on
  REQUIRE(WaitFor([&] { return clock.waiters() == 1; }));
  CHECK(log.size() == 0);
  clock.Advance(absl::Milliseconds(1));  // 250 ms: the tick
  REQUIRE(WaitFor([&] { return log.size() == 1; }));
  clock.Advance(absl::Milliseconds(250));  // 500 ms: both, the poll first (added first)
  REQUIRE(WaitFor([&] { return log.size() == 3; }));
  clock.Advance(absl::Milliseconds(1100));  // 1600 ms: past four ticks and two polls: once each
  REQUIRE(WaitFor([&] { return log.size() == 5; }));
  clock.Advance(absl::Milliseconds(150));  // 1750 ms: the schedule went on from 1500
  REQUIRE(WaitFor([&] { return log.size() == 6; }));
  ticker.Stop();
  ticker.Stop();  // idempotent

  const std::vector<std::pair<std::string, absl::Time>> want = {
      {"tick", t0 + absl::Milliseconds(250)},  {"poll", t0 + absl::Milliseconds(500)},
      {"tick", t0 + absl::Milliseconds(500)},  {"poll", t0 + absl::Milliseconds(1600)},
      {"tick", t0 + absl::Milliseconds(1600)}, {"tick", t0 + absl::Milliseconds(1750)}};
  CHECK(log.runs == want);
  CHECK(clock.waiters() == 0);
}

TEST_CASE("Ticker: Stop() ends a thread that waits for a time far off", "[daemon][ticker]") {
  FakeClock clock;
  Ticker ticker(clock);
  int runs = 0;
  ticker.Every(absl::Hours(24), [&](absl::Time) { ++runs; });
  ticker.Start(clock.Now());
  REQUIRE(WaitFor([&] { return clock.waiters() == 1; }));
  ticker.Stop();
  CHECK(runs == 0);
  CHECK(clock.waiters() == 0);
}

TEST_CASE("Waker: a Notify() made before the wait ends the next wait at once, once",
          "[daemon][ticker]") {
  FakeClock fake;
  const SteadyClock& steady = SteadyClock::Get();
  for (const Clock* c : {static_cast<const Clock*>(&fake), static_cast<const Clock*>(&steady)}) {
    Waker w;
    w.Notify();
    CHECK_FALSE(c->WaitUntil(c->Now() + absl::Hours(1), w));  // woken, not timed out
    CHECK(c->WaitUntil(c->Now(), w));                         // used up: the deadline passed
  }
}

}  // namespace
}  // namespace hotkey::clock
