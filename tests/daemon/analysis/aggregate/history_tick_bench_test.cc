// The cost of the history at a tick: Aggregator::Build with the history and episode log on
// or off (HOTKEY_HISTORY=off), on the same traffic. Hidden ([.bench]); run under callgrind
// with --toggle-collect='*TickOnce*' for instructions per tick (docs/benchmarks/history.md).

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "hotkey/aggregate/aggregator.h"

namespace hotkey::aggregate {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// One tick, not inlined so that callgrind can count it alone.
[[gnu::noinline]] std::shared_ptr<const Snapshot> TickOnce(
    Aggregator& agg, const std::vector<std::shared_ptr<const source::ReceiverReport>>& reports,
    absl::Time now) {
  return agg.Build(reports, now, 0);
}

TEST_CASE("History bench: ticks with the history on or off", "[.bench]") {
  const char* env = std::getenv("HOTKEY_HISTORY");
  const bool on = !(env && std::string(env) == "off");
  const char* n = std::getenv("HOTKEY_TICKS");
  const int ticks = n ? std::atoi(n) : 480;
  config::TrackOptions track;  // the daemon's defaults: 250 ms ticks, 10 s rate window
  config::ReloadableOptions reloadable;
  sketch::HeavyHittersOptions o;
  o.half_life = track.half_life;
  sketch::HeavyHitters tracker = *sketch::HeavyHitters::Create(o, kT0);
  Aggregator agg(track, reloadable, "", kT0, nullptr);
  agg.SetHistoryEnabled(on);
  std::mt19937_64 rng(1);
  source::ReceiverCounters counters;
  size_t windows = 0;
  for (int t = 1; t <= ticks; ++t) {
    const absl::Time now = kT0 + t * track.publish_interval;
    // 2,500 events a tick (10,000 ops/s): three hot keys and a long tail.
    for (int i = 0; i < 2500; ++i) {
      const uint64_t r = rng() % 100;
      std::string key = r < 20   ? "user:celebrity"
                        : r < 35 ? "item:flash"
                        : r < 45 ? "post:viral"
                                 : absl::StrCat("key:", rng() % 100'000);
      tracker.Update(key, r % 4 == 0 ? sketch::Op::kWrite : sketch::Op::kRead);
    }
    tracker.Advance(now);
    counters.events += 2500;
    std::vector<std::shared_ptr<const source::ReceiverReport>> reports = {
        std::make_shared<const source::ReceiverReport>(
            source::ReceiverReport{now, tracker, counters, {}})};
    std::shared_ptr<const Snapshot> snap = TickOnce(agg, reports, now);
    windows = snap->history_windows[0];
  }
  // The first tick opens the first window; each closes 40 ticks (10 s) later.
  CHECK(windows == (on ? static_cast<size_t>((ticks - 1) / 40) : 0));
}

}  // namespace
}  // namespace hotkey::aggregate
