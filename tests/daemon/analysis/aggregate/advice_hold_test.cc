// Tests of AdviceHold (aggregate/advice_hold.h): hysteresis on the model's projected loads.
//
// The projections come from model::ProjectBusy on one shard serving 20,000 ops/s, a key at
// 30% with 5% writes, default cluster (A = 50, refresh 1 s, target 0.8). With no fix the
// load is the busy fraction b; with cache (B + Hw + A/interval = 14000 + 300 + 50 = 14350
// ops) it is b * 14350 / 20000 = 0.7175 b.

#include "hotkey/aggregate/advice_hold.h"

#include <catch2/catch.hpp>

namespace hotkey::aggregate {
namespace {

using model::Strategy;

constexpr double kTarget = 0.8;
constexpr double kMargin = 0.05;

model::Projection At(double busy, const model::Cluster& c = model::Cluster()) {
  absl::StatusOr<model::Projection> p = model::ProjectBusy(c, busy, 20000, 0.3, 0.05);
  REQUIRE(p.ok());
  return *p;
}

// One tick observing key 1 at `busy`; returns the decision.
AdviceHold::Decision Tick(AdviceHold& hold, double busy, const model::Cluster& c = model::Cluster(),
                          bool settled = true) {
  hold.Begin();
  const AdviceHold::Decision d = hold.Observe(1, At(busy, c), kTarget, settled);
  hold.Finish();
  return d;
}

TEST_CASE("AdviceHold: the first answer is taken at once, and says there was none",
          "[aggregate][advice]") {
  AdviceHold hold(kMargin);
  const AdviceHold::Decision d = Tick(hold, 0.95);
  CHECK(d.fix == Strategy::kCache);
  CHECK(d.changed);
  CHECK_FALSE(d.from.has_value());
  const AdviceHold::Decision again = Tick(hold, 0.95);
  CHECK(again.fix == Strategy::kCache);
  CHECK_FALSE(again.changed);
  CHECK(again.from == Strategy::kCache);
}

TEST_CASE("AdviceHold: a load that wanders around the target within the margin keeps one fix",
          "[aggregate][advice]") {
  AdviceHold hold(kMargin);
  // 0.78 is under the target: none. Then 0.82, 0.79, 0.84, 0.76, ...: each within 0.05 of it.
  CHECK(Tick(hold, 0.78).fix == Strategy::kNone);
  for (double b : {0.82, 0.79, 0.84, 0.76, 0.83, 0.80, 0.849}) {
    INFO("busy " << b);
    const AdviceHold::Decision d = Tick(hold, b);
    CHECK(d.fix == Strategy::kNone);
    CHECK_FALSE(d.changed);
  }
  // The same from cache: a cheaper fix must fit within target - margin to replace it.
  AdviceHold from_cache(kMargin);
  CHECK(Tick(from_cache, 0.82).fix == Strategy::kCache);
  for (double b : {0.78, 0.76, 0.751, 0.84}) {
    INFO("busy " << b);
    CHECK(Tick(from_cache, b).fix == Strategy::kCache);
  }
}

TEST_CASE("AdviceHold: a change past the margin takes effect at the tick that shows it",
          "[aggregate][advice]") {
  AdviceHold hold(kMargin);
  CHECK(Tick(hold, 0.3).fix == Strategy::kNone);
  // A CPU quota: the shard at 0.97. none projects 0.97 > 0.85: cache, at once.
  AdviceHold::Decision d = Tick(hold, 0.97);
  CHECK(d.fix == Strategy::kCache);
  CHECK(d.changed);
  CHECK(d.from == Strategy::kNone);
  // The quota lifted: none projects 0.3 <= 0.75, at once.
  d = Tick(hold, 0.3);
  CHECK(d.fix == Strategy::kNone);
  CHECK(d.changed);
  CHECK(d.from == Strategy::kCache);
}

TEST_CASE("AdviceHold: a load that is not settled changes no held fix, either way",
          "[aggregate][advice]") {
  const model::Cluster c;
  AdviceHold hold(kMargin);
  CHECK(Tick(hold, 0.9).fix == Strategy::kCache);
  // A dip the next answer has not confirmed: none would fit with room, and waits.
  AdviceHold::Decision d = Tick(hold, 0.6, c, false);
  CHECK(d.fix == Strategy::kCache);
  CHECK_FALSE(d.changed);
  // A burst the next answer has not confirmed: cache would no longer fit, and waits.
  CHECK(Tick(hold, 1.5, c, false).fix == Strategy::kCache);
  // Settled, the same figures decide.
  d = Tick(hold, 0.6, c, true);
  CHECK(d.fix == Strategy::kNone);
  CHECK(d.changed);
  CHECK(Tick(hold, 1.5, c, false).fix == Strategy::kNone);
  CHECK(Tick(hold, 1.5, c, true).fix == Strategy::kIsolate);
  // A first answer is taken at once, settled or not.
  AdviceHold fresh(kMargin);
  CHECK(Tick(fresh, 0.9, c, false).fix == Strategy::kCache);
  // A held fix dropped from the order gives way at once, settled or not.
  model::Cluster no_cache;
  no_cache.order = {Strategy::kNone, Strategy::kReplicate, Strategy::kSplit};
  CHECK(Tick(fresh, 0.95, no_cache, false).fix == At(0.95, no_cache).advice);
}

TEST_CASE("AdviceHold: a fix that no longer fits gives way to the model's answer",
          "[aggregate][advice]") {
  AdviceHold hold(kMargin);
  CHECK(Tick(hold, 0.95).fix == Strategy::kCache);
  // cache projects 0.7175 b: over 0.85 from b = 1.185 on. At 1.5 it projects 1.076, and
  // the background alone (14000 ops) projects 1.05: the model answers isolate.
  const AdviceHold::Decision d = Tick(hold, 1.5);
  CHECK(d.fix == Strategy::kIsolate);
  CHECK(d.changed);
}

TEST_CASE("AdviceHold: isolate stays until a strategy fits within the margin",
          "[aggregate][advice]") {
  model::Cluster only_none;
  only_none.order = {Strategy::kNone};
  AdviceHold hold(kMargin);
  CHECK(Tick(hold, 0.9, only_none).fix == Strategy::kIsolate);
  CHECK(Tick(hold, 0.78, only_none).fix == Strategy::kIsolate);  // fits, without the room
  CHECK(Tick(hold, 0.74, only_none).fix == Strategy::kNone);
}

TEST_CASE("AdviceHold: a held fix dropped from the order gives way at once",
          "[aggregate][advice]") {
  AdviceHold hold(kMargin);
  CHECK(Tick(hold, 0.95).fix == Strategy::kCache);
  model::Cluster no_cache;
  no_cache.order = {Strategy::kNone, Strategy::kReplicate, Strategy::kSplit};
  CHECK(Tick(hold, 0.95, no_cache).fix == At(0.95, no_cache).advice);
}

TEST_CASE("AdviceHold: a key not observed at a tick is forgotten", "[aggregate][advice]") {
  AdviceHold hold(kMargin);
  CHECK(Tick(hold, 0.82).fix == Strategy::kCache);
  hold.Begin();
  hold.Finish();  // key 1 not observed
  CHECK(hold.size() == 0);
  const AdviceHold::Decision d = Tick(hold, 0.78);
  CHECK(d.fix == Strategy::kNone);  // a first answer again, at the target
  CHECK_FALSE(d.from.has_value());
}

}  // namespace
}  // namespace hotkey::aggregate
