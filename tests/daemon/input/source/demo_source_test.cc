// Tests for DemoSource (daemon/input/source/demo_source.h) on a FakeClock: it makes exactly
// floor(t * rate) events by time t, with the documented mix of celebrities, writes and
// Zipf background; publishes when asked, with the events due by then; drops a backlog
// beyond kMaxBacklog; the same seed gives the same stream; and its thread paces on the
// clock, publishes on request and leaves a last report at Stop.

#include "demo_source.h"

#include <atomic>
#include <cmath>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "checkers.h"
#include "fake_clock.h"

namespace hotkey::source {
namespace {

using ::hotkey::testing::FakeClock;

sketch::HeavyHittersOptions Tracker() {
  sketch::HeavyHittersOptions o;
  o.candidates = 256;
  o.half_life = absl::InfiniteDuration();  // shares over all events, for exact checks
  return o;
}

std::unique_ptr<DemoSource> Make(const FakeClock& clock, double rate, uint64_t seed = 1) {
  absl::StatusOr<std::unique_ptr<DemoSource>> s = DemoSource::Create(rate, Tracker(), clock, seed);
  REQUIRE(s.ok());
  return *std::move(s);
}

TEST_CASE("DemoSource: makes floor(t * rate) events by time t and publishes when asked",
          "[daemon][demo]") {
  FakeClock clock;
  std::unique_ptr<DemoSource> s = Make(clock, 1000);
  CHECK(s->kind() == "demo");
  int published = 0;
  s->SetPublishCallback([&](auto) { ++published; });
  CHECK(s->Step() == absl::Milliseconds(1));  // the first event is due 1 ms after the start
  CHECK(s->Latest() == nullptr);
  clock.Advance(absl::Milliseconds(99));
  s->Step();
  CHECK(published == 0);  // not asked
  clock.Advance(absl::Milliseconds(1));
  s->RequestPublish();
  s->RequestPublish();  // asked twice before it got to it: one report
  s->Step();
  REQUIRE(published == 1);
  CHECK(s->Latest()->counters.events == 100);
  CHECK(s->Latest()->time == clock.Now());
  for (int i = 0; i < 5; ++i) {  // 550 ms more, in steps shorter than kMaxBacklog
    clock.Advance(absl::Milliseconds(110));
    s->Step();
  }
  s->RequestPublish();
  s->Step();
  CHECK(published == 2);
  CHECK(s->Latest()->counters.events == 650);
  CHECK(s->Latest()->counters.own.schema == nullptr);  // no metrics of its own
}

TEST_CASE("DemoSource: the mix has the celebrities' shares and write shares", "[daemon][demo]") {
  FakeClock clock;
  std::unique_ptr<DemoSource> s = Make(clock, 100000);
  s->Step();
  clock.Advance(absl::Seconds(1));  // 100,000 events, within kMaxBacklog
  s->RequestPublish();
  s->Step();
  const std::shared_ptr<const SourceReport> r = s->Latest();
  REQUIRE(r);
  REQUIRE(r->counters.events == 100000);
  const sketch::HeavyHitters& t = r->tracker;
  const double total = t.Total();
  REQUIRE(total == Approx(100000));
  // Binomial standard deviation of a 25% share over 100,000 events: 0.14%.
  for (const DemoSource::Celebrity& c : DemoSource::kCelebrities) {
    INFO(c.key);
    const double share = t.Estimate(c.key) / total;
    CHECK(share == Approx(c.share).margin(0.01));
    for (const sketch::HeavyHitter& h : t.TopK(t.size())) {
      if (h.key != c.key) continue;
      CHECK(h.weight[1] / (h.weight[0] + h.weight[1]) == Approx(c.write_share).margin(0.02));
    }
  }
  // Background: Zipf s = 1 over 100,000 ranks gives rank 1 a share 1 / H(100000) of it.
  double h_n = 0;
  for (int k = 1; k <= 100000; ++k) h_n += 1.0 / k;
  const double background = 0.28 * total;
  CHECK(t.Estimate("key:1") / background == Approx(1 / h_n).margin(0.01));
  CHECK(t.Estimate("key:2") / background == Approx(0.5 / h_n).margin(0.01));
}

TEST_CASE("DemoSource: the same seed makes the same stream, another seed another",
          "[daemon][demo]") {
  FakeClock clock;
  std::unique_ptr<DemoSource> a = Make(clock, 5000, 7), b = Make(clock, 5000, 7),
                              c = Make(clock, 5000, 8);
  for (DemoSource* s : {a.get(), b.get(), c.get()}) s->Step();
  clock.Advance(absl::Milliseconds(500));
  for (DemoSource* s : {a.get(), b.get(), c.get()}) {
    s->RequestPublish();
    s->Step();
  }
  const auto top = [](const DemoSource& s) { return s.Latest()->tracker.TopK(20); };
  const auto ta = top(*a), tb = top(*b), tc = top(*c);
  REQUIRE(ta.size() == tb.size());
  bool differ = ta.size() != tc.size();
  for (size_t i = 0; i < ta.size(); ++i) {
    CHECK(ta[i].key == tb[i].key);
    CHECK(ta[i].estimate == tb[i].estimate);
    if (i < tc.size() && ta[i].estimate != tc[i].estimate) differ = true;
  }
  CHECK(differ);
}

TEST_CASE("DemoSource: a clock jump beyond kMaxBacklog drops the backlog", "[daemon][demo]") {
  FakeClock clock;
  std::unique_ptr<DemoSource> s = Make(clock, 1000);
  s->Step();
  clock.Advance(absl::Hours(1));
  s->RequestPublish();
  s->Step();
  CHECK(s->Latest()->counters.events ==
        static_cast<uint64_t>(absl::ToDoubleSeconds(DemoSource::kMaxBacklog) * 1000));
}

TEST_CASE("DemoSource: Create rejects a rate that is not positive", "[daemon][demo]") {
  FakeClock clock;
  for (double rate : {0.0, -1.0, std::nan("")}) {
    CHECK_FALSE(DemoSource::Create(rate, Tracker(), clock).ok());
  }
}

TEST_CASE(
    "DemoSource: its thread paces on the clock, publishes when asked, and Stop "
    "publishes a last report",
    "[daemon][demo]") {
  FakeClock clock;  // the thread waits on it (WaitUntil): time moves only when told
  std::unique_ptr<DemoSource> s = Make(clock, 1000);
  std::atomic<int> published{0};
  s->SetPublishCallback([&](auto) { ++published; });
  s->Start();
  REQUIRE(testing::WaitFor([&] { return clock.waiters() == 1; }));  // started, waiting
  clock.Advance(absl::Milliseconds(250));
  s->RequestPublish();
  REQUIRE(testing::WaitFor([&] { return published == 1; }));
  CHECK(s->Latest()->counters.events == 250);
  CHECK(s->Latest()->time == clock.Now());
  clock.Advance(absl::Milliseconds(250));
  s->Stop();  // wakes the thread at once: no need to wait for its next event
  const std::shared_ptr<const SourceReport> last = s->Latest();
  CHECK(published == 2);
  CHECK(last->counters.events == 500);
  s->Stop();  // idempotent
  CHECK(s->Latest() == last);
  CHECK(last->time == clock.Now());
}

}  // namespace
}  // namespace hotkey::source
