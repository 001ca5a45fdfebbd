// Tests for HeavyHitters' exponential time decay (forward decay with rescale) on a fake
// clock: every figure is compared with the exact decayed sum
//   weight(k, now) = sum over k's events at t_i of w_i * 2^-((now - t_i) / half_life),
// computed here in double. Relative tolerance 1e-6 (the tracker's weights for keys in its
// table are doubles; the 1e-6 leaves room for the rescale's and the report's divisions).

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "test_util.h"

namespace hotkey::sketch {
namespace {

using testing::KeyFor;
using testing::Peek;

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);
constexpr double kRel = 1e-6;

HeavyHitters MustCreate(absl::Duration half_life, uint32_t candidates = 64) {
  HeavyHittersOptions o;
  o.half_life = half_life;
  o.candidates = candidates;
  absl::StatusOr<HeavyHitters> hh = HeavyHitters::Create(o, kT0);
  REQUIRE(hh.ok());
  return *std::move(hh);
}

// An exact decayed counter: decays by 2^-(dt/h) as the clock moves, adds events at "now".
struct Exact {
  double h;
  double value = 0;
  void Advance(double dt) { value *= std::exp2(-dt / h); }
};

// The landmark of a tracker, read from its serialised header (offset 50: magic 4, version
// 2, candidates 4, max_key_bytes 4, depth 4, sketch_bytes 8, half_life 8, seed 8, start 8).
absl::Time Landmark(const HeavyHitters& hh) {
  return absl::FromUnixNanos(Peek<int64_t>(hh.Serialize(), 50));
}

TEST_CASE("Decay: a stopped key's estimate halves with every half-life", "[sketch][decay]") {
  HeavyHitters hh = MustCreate(absl::Seconds(10));
  absl::Time t = kT0;
  Exact exact{10};
  for (int i = 0; i < 3000; ++i) {  // 100 events/s for 30 s, in 10 ms steps
    t += absl::Milliseconds(10);
    hh.Advance(t);
    exact.Advance(0.01);
    hh.Update("k", Op::kRead);
    exact.value += 1;
  }
  const double before = hh.Estimate("k");
  REQUIRE(before == Approx(exact.value).epsilon(kRel));
  CHECK(hh.LowerBound("k") == Approx(before).epsilon(kRel));
  for (int n = 1; n <= 12; ++n) {
    INFO(n << " half-lives after the stop");
    hh.Advance(t + n * absl::Seconds(10));
    CHECK(hh.Estimate("k") == Approx(before * std::exp2(-n)).epsilon(kRel));
    CHECK(hh.LowerBound("k") == Approx(before * std::exp2(-n)).epsilon(kRel));
    CHECK(hh.Total() == Approx(before * std::exp2(-n)).epsilon(kRel));
    CHECK(hh.RawTotal(Op::kRead) == 3000);  // raw totals never decay
  }
}

TEST_CASE("Decay: a stopped key's share after n half-lives matches the exact decayed counts",
          "[sketch][decay]") {
  // A and B at 50 events/s for 10 half-lives (h = 2 s); then only B.
  HeavyHitters hh = MustCreate(absl::Seconds(2));
  Exact a{2}, b{2};
  absl::Time t = kT0;
  auto step = [&](bool feed_a) {
    t += absl::Milliseconds(20);
    hh.Advance(t);
    a.Advance(0.02);
    b.Advance(0.02);
    if (feed_a) {
      hh.Update("a", Op::kRead);
      a.value += 1;
    }
    hh.Update("b", Op::kWrite);
    b.value += 1;
  };
  for (int i = 0; i < 1000; ++i) step(true);
  CHECK(hh.Estimate("a") / hh.Total() == Approx(0.5).epsilon(kRel));
  for (int n = 1; n <= 6; ++n) {
    for (int i = 0; i < 100; ++i) step(false);  // one half-life
    INFO(n << " half-lives after A stopped");
    const double share_a = a.value / (a.value + b.value);
    CHECK(hh.Estimate("a") / hh.Total() == Approx(share_a).epsilon(kRel));
    CHECK(hh.Estimate("b") / hh.Total() == Approx(1 - share_a).epsilon(kRel));
    CHECK(hh.Estimate("a") == Approx(a.value).epsilon(kRel));
    CHECK(hh.Total(Op::kWrite) == Approx(b.value).epsilon(kRel));
  }
  // After n half-lives, A keeps 2^-n of its steady weight while B stays at steady state.
  const double steady = 50 * hh.DecayedWindowSeconds();
  CHECK(hh.Estimate("a") == Approx(steady * std::exp2(-6)).epsilon(0.01));
}

TEST_CASE("Decay: DecayedWindowSeconds times a steady rate is the decayed weight",
          "[sketch][decay]") {
  const double h = 10;
  HeavyHitters hh = MustCreate(absl::Seconds(10));
  HeavyHitters flat = MustCreate(absl::InfiniteDuration());
  CHECK(hh.DecayedWindowSeconds() == 0);
  absl::Time t = kT0;
  const double rate = 200;  // events per second, one every 5 ms
  int ms = 0;
  for (double age : {1.0, 5.0, 10.0, 30.0, 100.0, 300.0}) {
    while (ms < age * 1000) {
      ms += 5;
      t = kT0 + absl::Milliseconds(ms);
      hh.Advance(t);
      flat.Advance(t);
      hh.Update("steady", Op::kRead);
      flat.Update("steady", Op::kRead);
    }
    INFO("age " << age << " s");
    // The window runs from the first event (at 5 ms), not from the tracker's creation.
    const double since_first = age - 0.005;
    const double window = h / std::numbers::ln2 * (1 - std::exp2(-since_first / h));
    CHECK(hh.DecayedWindowSeconds() == Approx(window).epsilon(1e-9));
    // The events are discrete (every 5 ms, both ends of the window holding one): a Riemann
    // sum of the integral, off by at most one event in the first second's 200.
    CHECK(hh.Estimate("steady") == Approx(rate * window).epsilon(0.006));
    CHECK(flat.DecayedWindowSeconds() == Approx(since_first).epsilon(1e-9));
    CHECK(flat.Estimate("steady") == Approx(rate * age).epsilon(1e-9));
  }
  // Long after the start the window tends to h / ln 2.
  CHECK(hh.DecayedWindowSeconds() == Approx(h / std::numbers::ln2).epsilon(1e-6));
}

TEST_CASE("Decay: a rescale after more than 40 half-lives keeps weights, shares and order",
          "[sketch][decay]") {
  const double h = 1;
  HeavyHitters hh = MustCreate(absl::Seconds(1), 16);
  Exact a{h}, b{h}, c{h}, total{h};
  absl::Time t = kT0;
  bool rescaled = false;
  for (int i = 0; i < 400; ++i) {  // 0.25 s steps: 100 half-lives, two rescales
    t += absl::Milliseconds(250);
    hh.Advance(t);
    for (Exact* e : {&a, &b, &c, &total}) e->Advance(0.25);
    for (int n = 0; n < 3; ++n) hh.Update("a", Op::kRead);
    for (int n = 0; n < 2; ++n) hh.Update("b", Op::kRead);
    hh.Update("c", Op::kWrite);
    a.value += 3;
    b.value += 2;
    c.value += 1;
    total.value += 6;
    if (Landmark(hh) != kT0) rescaled = true;
    if (i % 20 == 19) {
      INFO("step " << i);
      CHECK(hh.Estimate("a") == Approx(a.value).epsilon(kRel));
      CHECK(hh.Estimate("c") == Approx(c.value).epsilon(kRel));
      CHECK(hh.Total() == Approx(total.value).epsilon(kRel));
      CHECK(hh.Estimate("a") / hh.Total() == Approx(0.5).epsilon(kRel));
      CHECK(hh.Estimate("b") / hh.Total() == Approx(1.0 / 3).epsilon(kRel));
      CHECK(hh.Total(Op::kWrite) / hh.Total() == Approx(1.0 / 6).epsilon(kRel));
    }
  }
  CHECK(rescaled);  // the landmark moved: a rescale really happened
  const std::vector<HeavyHitter> top = hh.TopK(3);
  REQUIRE(top.size() == 3);
  CHECK(top[0].key == "a");
  CHECK(top[1].key == "b");
  CHECK(top[2].key == "c");
}

TEST_CASE("Decay: one jump of thousands of half-lives decays old weight to zero",
          "[sketch][decay]") {
  // Far beyond float and double range (2^-2000): the rescale factor underflows to 0.
  HeavyHitters hh = MustCreate(absl::Seconds(1), 4);
  for (int i = 0; i < 100; ++i) hh.Update(KeyFor(i), Op::kRead);  // most go to the sketch
  hh.Advance(kT0 + absl::Seconds(2000));
  CHECK(hh.Total() == 0);
  CHECK(hh.Estimate(KeyFor(1)) == 0);
  CHECK(hh.Estimate(KeyFor(99)) == 0);
  // The tracker keeps working: fresh events count in full.
  hh.Update("fresh", Op::kRead);
  hh.Update("fresh", Op::kRead);
  CHECK(hh.Estimate("fresh") == Approx(2));
  CHECK(hh.Total() == Approx(2));
  CHECK(hh.TopK(1).at(0).key == "fresh");
}

TEST_CASE("Decay: Advance backwards is ignored", "[sketch][decay]") {
  HeavyHitters hh = MustCreate(absl::Seconds(10));
  hh.Advance(kT0 + absl::Seconds(10));
  hh.Update("k", Op::kRead);
  const double at10 = hh.Estimate("k");
  hh.Advance(kT0 + absl::Seconds(5));  // backwards
  CHECK(hh.now() == kT0 + absl::Seconds(10));
  CHECK(hh.Estimate("k") == at10);
  hh.Update("k", Op::kRead);  // counts at t = 10 s, not 5 s
  CHECK(hh.Estimate("k") == Approx(2 * at10).epsilon(kRel));
  hh.Advance(kT0 + absl::Seconds(20));
  CHECK(hh.Estimate("k") == Approx(1.0).epsilon(kRel));  // 2 events, one half-life old
  hh.Advance(kT0);
  CHECK(hh.Estimate("k") == Approx(1.0).epsilon(kRel));
}

TEST_CASE("Decay: a tracker loaded at another clock decays on from where it is placed",
          "[sketch][decay]") {
  HeavyHitters hh = MustCreate(absl::Seconds(10));
  const absl::Time t1 = kT0 + absl::Hours(2);
  hh.Advance(t1);
  for (int i = 0; i < 100; ++i) hh.Update("old", Op::kRead);
  const absl::Time admitted = hh.TopK(1).at(0).admitted;
  CHECK(admitted == t1);
  const double window = hh.DecayedWindowSeconds();
  const double landmark_to_now = absl::ToDoubleSeconds(hh.now() - Landmark(hh));
  const std::string saved = hh.Serialize();
  // The loading process's clock reads an hour less (another process's monotonic clock, say),
  // and one a day more: nothing changes but the time line.
  for (const absl::Duration shift : {-absl::Hours(1), absl::Hours(24)}) {
    INFO("shift " << absl::FormatDuration(shift));
    const absl::Time placed = t1 + shift;
    absl::StatusOr<HeavyHitters> loaded = HeavyHitters::Deserialize(saved, placed);
    REQUIRE(loaded.ok());
    CHECK(loaded->now() == placed);
    CHECK(loaded->Estimate("old") == hh.Estimate("old"));
    CHECK(loaded->LowerBound("old") == hh.LowerBound("old"));
    CHECK(loaded->Total() == hh.Total());
    CHECK(loaded->DecayedWindowSeconds() == window);
    CHECK(absl::ToDoubleSeconds(loaded->now() - Landmark(*loaded)) == landmark_to_now);
    CHECK(loaded->TopK(1).at(0).admitted == admitted + shift);
    // Two half-lives on the new clock decay the old traffic by 4, as they would have on the
    // old one (had the clock stayed, Advance() to an earlier reading would hold it at 100).
    loaded->Advance(placed + absl::Seconds(20));
    CHECK(loaded->Estimate("old") == Approx(25).epsilon(kRel));
    CHECK(loaded->LowerBound("old") == Approx(25).epsilon(kRel));
    for (int i = 0; i < 100; ++i) loaded->Update("new", Op::kRead);
    CHECK(loaded->Estimate("new") == Approx(100).epsilon(kRel));
    CHECK(loaded->Total() == Approx(125).epsilon(kRel));
    CHECK(loaded->TopK(2).at(0).key == "new");
    loaded->Advance(placed + absl::Seconds(30));
    CHECK(loaded->Estimate("new") == Approx(50).epsilon(kRel));
    // The placed time line survives a round trip, and the tracker merges with another on
    // the same clock.
    absl::StatusOr<HeavyHitters> copy =
        HeavyHitters::Deserialize(loaded->Serialize(), loaded->now());
    REQUIRE(copy.ok());
    CHECK(copy->Serialize() == loaded->Serialize());
    HeavyHitters other = MustCreate(absl::Seconds(10));
    other.Advance(placed + absl::Seconds(30));
    for (int i = 0; i < 10; ++i) other.Update("new", Op::kRead);
    REQUIRE(other.Merge(*loaded).ok());
    CHECK(other.Estimate("new") == Approx(60).epsilon(kRel));
  }
}

TEST_CASE("Decay: a tracker cannot be placed at an infinite time or out of range",
          "[sketch][decay]") {
  HeavyHitters hh = MustCreate(absl::Seconds(10));
  hh.Update("k", Op::kRead);
  const std::string saved = hh.Serialize();
  CHECK(HeavyHitters::Deserialize(saved, absl::InfiniteFuture()).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(HeavyHitters::Deserialize(saved, absl::InfinitePast()).status().code() ==
        absl::StatusCode::kInvalidArgument);
  // Past the last int64 nanosecond (year 2262), or with the start moved before the first.
  CHECK(HeavyHitters::Deserialize(saved, absl::FromUnixSeconds(int64_t{1} << 40)).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(HeavyHitters::Deserialize(saved, absl::FromUnixSeconds(-(int64_t{1} << 40)))
            .status()
            .code() == absl::StatusCode::kInvalidArgument);
  CHECK(HeavyHitters::Deserialize(saved, absl::UnixEpoch()).ok());
}

TEST_CASE("Decay: the top-K follows a drifting hot set within a few half-lives",
          "[sketch][decay]") {
  // Hot set A (10 keys, half the traffic) for 10 half-lives, then hot set B; background is
  // uniform over 100k keys. After 4 half-lives of B, A keeps 2^-4 of its weight.
  HeavyHitters hh = MustCreate(absl::Seconds(1), 64);
  std::mt19937_64 gen(41);
  std::uniform_int_distribution<uint64_t> background(1000, 101000);
  std::uniform_int_distribution<int> member(0, 9);
  absl::Time t = kT0;
  auto run = [&](const std::string& set, int half_lives) {
    for (int step = 0; step < half_lives * 10; ++step) {  // 100 ms steps, 2000 events each
      t += absl::Milliseconds(100);
      hh.Advance(t);
      for (int i = 0; i < 1000; ++i) {
        hh.Update(set + std::to_string(member(gen)), Op::kRead);
        hh.Update(KeyFor(background(gen)), Op::kRead);
      }
    }
  };
  auto top_set = [&]() {
    std::vector<std::string> keys;
    for (const HeavyHitter& h : hh.TopK(10)) keys.push_back(h.key.substr(0, 2));
    return keys;
  };
  run("A:", 10);
  CHECK(top_set() == std::vector<std::string>(10, "A:"));
  run("B:", 3);
  CHECK(top_set() == std::vector<std::string>(10, "B:"));  // after 3 half-lives it is
  // A's keys keep a small decayed weight: about 2^-3 of B's.
  const double a = hh.Estimate("A:0"), b = hh.Estimate("B:0");
  CHECK(a / b == Approx(std::exp2(-3) / (1 - std::exp2(-3))).epsilon(0.1));
}

}  // namespace
}  // namespace hotkey::sketch

namespace hotkey::sketch {
namespace {

TEST_CASE("Decay: idle time before the first event does not dilute the window", "[sketch][decay]") {
  // A daemon may start long before its first event; its rates must not read low for it.
  HeavyHittersOptions o;
  o.half_life = absl::Seconds(1);
  const absl::Time t0 = absl::FromUnixSeconds(5000);
  HeavyHitters idle_first = HeavyHitters::Create(o, t0).value();
  HeavyHitters busy_from_start = HeavyHitters::Create(o, t0 + absl::Seconds(60)).value();
  for (int ms = 0; ms < 3000; ms += 10) {
    const absl::Time t = t0 + absl::Seconds(60) + absl::Milliseconds(ms);
    idle_first.Advance(t);
    busy_from_start.Advance(t);
    idle_first.Update("k", Op::kRead);
    busy_from_start.Update("k", Op::kRead);
  }
  CHECK(idle_first.DecayedWindowSeconds() ==
        Approx(busy_from_start.DecayedWindowSeconds()).epsilon(1e-12));
  // 100 events/s: the rate estimate weight / window is 100, not diluted by the idle minute.
  CHECK(idle_first.Total() / idle_first.DecayedWindowSeconds() == Approx(100).epsilon(0.01));
}

}  // namespace
}  // namespace hotkey::sketch
