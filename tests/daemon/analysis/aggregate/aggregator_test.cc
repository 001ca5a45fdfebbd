// Tests of the Aggregator (aggregate/aggregator.h): snapshots built from hand-made receiver
// reports whose trackers were fed known streams on a fake time line.

#include "hotkey/aggregate/aggregator.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "checkers.h"
#include "hotkey/parsers/wire.h"

namespace hotkey::aggregate {
namespace {

// Counts the allocations made on this thread since it was made (alloc_count.cc).
class AllocationCounter {
 public:
  AllocationCounter() : start_(testing::AllocationsOnThisThread()) {}
  uint64_t count() const { return testing::AllocationsOnThisThread() - start_; }

 private:
  const uint64_t start_;
};

using sketch::Op;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// One receiver's tracker on a fake time line.
class Stream {
 public:
  explicit Stream(absl::Duration half_life = absl::InfiniteDuration(), uint32_t candidates = 64)
      : tracker_(Make(half_life, candidates)) {}

  void Feed(std::string_view key, Op op = Op::kRead, double weight = 1, int n = 1) {
    for (int i = 0; i < n; ++i) tracker_.Update(key, op, weight);
    counters_.events += n;
  }
  // Parses a datagram of the wire protocol into the tracker, as a receiver does.
  void FeedDatagram(std::string_view datagram) {
    const parsers::ParseStats st = parsers::ParseDatagram(
        datagram, 1024,
        [this](const parsers::Event& e) { tracker_.Update(e.key, e.op, e.weight); });
    counters_.events += st.events;
  }
  void AdvanceTo(absl::Time t) { tracker_.Advance(t); }

  std::shared_ptr<const source::ReceiverReport> Report() const {
    return std::make_shared<const source::ReceiverReport>(
        source::ReceiverReport{tracker_.now(), tracker_, counters_, {}});
  }

 private:
  static sketch::HeavyHitters Make(absl::Duration half_life, uint32_t candidates) {
    sketch::HeavyHittersOptions o;
    o.candidates = candidates;
    o.sketch_bytes = 32 << 10;
    o.max_key_bytes = 64;
    o.half_life = half_life;
    absl::StatusOr<sketch::HeavyHitters> h = sketch::HeavyHitters::Create(o, kT0);
    REQUIRE(h.ok());
    return *std::move(h);
  }

  sketch::HeavyHitters tracker_;
  source::ReceiverCounters counters_;
};

config::TrackOptions Track() {
  config::TrackOptions t;
  // The tests tick every 100 ms or more: the history keeps every tick.
  t.publish_interval = absl::Milliseconds(100);
  t.rate_window = absl::Seconds(2);
  t.half_life = absl::Seconds(1);
  return t;
}

config::ReloadableOptions Reloadable() {
  config::ReloadableOptions r;
  r.exporter.top_k = 10;
  r.exporter.min_share = 0.01;
  r.exporter.hysteresis = 0.2;
  r.alert.default_threshold = 0.1;
  r.alert.min_dwell = absl::Milliseconds(250);
  return r;
}

std::shared_ptr<const Snapshot> BuildOne(Aggregator& agg, const Stream& s, absl::Time now) {
  std::vector<std::shared_ptr<const source::ReceiverReport>> reports = {s.Report()};
  return agg.Build(reports, now, 0);
}

const KeySnapshot* FindKey(const Snapshot& snap, std::string_view key) {
  for (const KeySnapshot& k : snap.keys) {
    if (k.key == key) return &k;
  }
  return nullptr;
}

// 1000 events: A 30% (a quarter of them writes), B 10%, the rest spread over 300 keys,
// interleaved as real traffic would be.
void FeedKnownMix(Stream& s, int rounds = 1) {
  int a = 0;
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < 1000; ++i) {
      const int slot = i % 10;
      if (slot < 3) {
        s.Feed("A", a++ % 4 == 3 ? Op::kWrite : Op::kRead);
      } else if (slot == 3) {
        s.Feed("B");
      } else {
        s.Feed(absl::StrCat("bg:", (i * 7 + r) % 300));
      }
    }
  }
}

TEST_CASE("Aggregator: no report gives an empty snapshot", "[daemon][aggregator]") {
  Aggregator agg(Track(), Reloadable(), "secret", kT0, nullptr);
  std::vector<std::shared_ptr<const source::ReceiverReport>> none = {nullptr};
  auto snap = agg.Build(none, kT0 + absl::Seconds(1), 5);
  REQUIRE(snap);
  CHECK(snap->receivers == 0);
  CHECK(snap->keys.empty());
  CHECK(snap->kernel_drops == 5);
}

TEST_CASE("Aggregator: shares and write ratio follow a known stream", "[daemon][aggregator]") {
  Stream s;
  FeedKnownMix(s);
  s.AdvanceTo(kT0 + absl::Seconds(1));
  Aggregator agg(Track(), Reloadable(), "secret", kT0, nullptr);
  auto snap = BuildOne(agg, s, kT0 + absl::Seconds(1));
  CHECK(snap->receivers == 1);
  CHECK(snap->counters.events == 1000);
  const KeySnapshot* a = FindKey(*snap, "A");
  const KeySnapshot* b = FindKey(*snap, "B");
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->share == Approx(0.30).margin(0.005));
  CHECK(b->share == Approx(0.10).margin(0.005));
  CHECK(a->write_ratio == Approx(0.25).margin(0.001));
  CHECK(b->write_ratio == 0);
  CHECK(a->share_error >= 0);
  CHECK(a->share_error < 0.01);
  CHECK(a->label == "A");
  // Largest share first; background keys (0.2% each) stay under min_share.
  REQUIRE(snap->keys.size() == 2);
  CHECK(snap->keys[0].key == "A");
  // Decay is off, so decayed ops/s are the counts over the tracker's one-second life.
  CHECK(snap->decayed_ops_per_second[0] + snap->decayed_ops_per_second[1] == Approx(1000));
  CHECK(snap->decayed_ops_per_second[1] == Approx(75));
}

TEST_CASE("Aggregator: window ops/s are the raw counts over the rate window",
          "[daemon][aggregator]") {
  // 1000 events/s for 3 s in 100 ms steps, a snapshot per step; window 2 s.
  Stream s(absl::Seconds(1));
  Aggregator agg(Track(), Reloadable(), "secret", kT0, nullptr);
  std::shared_ptr<const Snapshot> snap;
  for (int step = 1; step <= 30; ++step) {
    const absl::Time t = kT0 + absl::Milliseconds(100 * step);
    s.AdvanceTo(t);
    for (int i = 0; i < 100; ++i) {
      s.Feed(i % 10 < 3 ? "A" : absl::StrCat("bg:", i), i % 10 == 0 ? Op::kWrite : Op::kRead);
    }
    snap = BuildOne(agg, s, t);
    if (step == 5) {
      // Before the window fills: since the oldest snapshot (100 ms).
      CHECK(snap->rate_window_seconds == Approx(0.4));
      CHECK(snap->ops_per_second[0] + snap->ops_per_second[1] == Approx(1000));
    }
  }
  CHECK(snap->rate_window_seconds == Approx(2.0));
  CHECK(snap->ops_per_second[0] == Approx(900));  // 90% reads
  CHECK(snap->ops_per_second[1] == Approx(100));
  const KeySnapshot* a = FindKey(*snap, "A");
  REQUIRE(a);
  CHECK(a->ops_per_second[0] == Approx(200));  // 2 reads and 1 write per 10 events
  CHECK(a->ops_per_second[1] == Approx(100));
  // The decayed rate of a steady stream converges to the same figure.
  CHECK(snap->decayed_ops_per_second[0] + snap->decayed_ops_per_second[1] ==
        Approx(1000).epsilon(0.05));
}

TEST_CASE("Aggregator: sampled events count as 1/p ops in every rate", "[daemon][aggregator]") {
  // Per 100 ms: 10 events of s sampled at 0.1 (100 ops) and 10 unsampled events of u.
  Stream s(absl::Seconds(1));
  Aggregator agg(Track(), Reloadable(), "secret", kT0, nullptr);
  std::shared_ptr<const Snapshot> snap;
  std::string sampled = "!v1 rate=0.1\n", plain;
  for (int i = 0; i < 10; ++i) {
    sampled += "r s\n";
    plain += "r u\n";
  }
  for (int step = 1; step <= 30; ++step) {
    const absl::Time t = kT0 + absl::Milliseconds(100 * step);
    s.AdvanceTo(t);
    s.FeedDatagram(sampled);
    s.FeedDatagram(plain);
    snap = BuildOne(agg, s, t);
  }
  CHECK(snap->counters.events == 600);
  CHECK(snap->ops_per_second[0] == Approx(1100));
  const KeySnapshot* ks = FindKey(*snap, "s");
  const KeySnapshot* ku = FindKey(*snap, "u");
  REQUIRE(ks);
  REQUIRE(ku);
  CHECK(ks->ops_per_second[0] == Approx(1000));
  CHECK(ku->ops_per_second[0] == Approx(100));
  CHECK(ks->share == Approx(1000.0 / 1100).margin(0.002));
}

TEST_CASE("Aggregator: the exported set keeps at most top_k keys over min_share",
          "[daemon][aggregator]") {
  // Key k<i> gets 100 - 4i events: shares from 0.1 down, all known exactly.
  Stream s(absl::InfiniteDuration(), 64);
  double total = 0;
  for (int i = 0; i < 20; ++i) {
    s.Feed(absl::StrCat("k", i), Op::kRead, 1, 100 - 4 * i);
    total += 100 - 4 * i;
  }
  s.AdvanceTo(kT0 + absl::Seconds(1));
  config::ReloadableOptions r = Reloadable();
  r.alert.default_threshold = 1.0;  // nobody is hot: only the export rules decide
  SECTION("top_k bounds the set, largest first") {
    r.exporter.top_k = 5;
    r.exporter.min_share = 0.001;
    Aggregator agg(Track(), r, "secret", kT0, nullptr);
    auto snap = BuildOne(agg, s, kT0 + absl::Seconds(1));
    REQUIRE(snap->keys.size() == 5);
    for (int i = 0; i < 5; ++i) {
      CHECK(snap->keys[i].key == absl::StrCat("k", i));
      CHECK(snap->keys[i].share == Approx((100 - 4 * i) / total));
    }
    CHECK(snap->tracked_keys == 20);
  }
  SECTION("min_share drops the small keys") {
    r.exporter.top_k = 100;
    r.exporter.min_share = 58 / total;  // k0..k10 have >= 60 events, k11 has 56
    Aggregator agg(Track(), r, "secret", kT0, nullptr);
    auto snap = BuildOne(agg, s, kT0 + absl::Seconds(1));
    CHECK(snap->keys.size() == 11);
    for (const KeySnapshot& k : snap->keys) CHECK(k.share >= r.exporter.min_share);
  }
}

TEST_CASE("Aggregator: past top_k, hot keys are exported first, then the largest shares",
          "[daemon][aggregator]") {
  // Key k<i> gets 100 - 4i events a second; only k15 (share 0.028) is hot, by its rule.
  Stream s(absl::InfiniteDuration(), 64);
  auto feed = [&s] {
    for (int i = 0; i < 20; ++i) s.Feed(absl::StrCat("k", i), Op::kRead, 1, 100 - 4 * i);
  };
  config::ReloadableOptions r = Reloadable();
  r.alert.default_threshold = 1.0;
  r.alert.rules = {config::ThresholdRule{config::ThresholdRule::kPrefix, "k15", 0.01, false}};
  r.exporter.top_k = 5;
  r.exporter.min_share = 0.001;
  Aggregator agg(Track(), r, "secret", kT0, nullptr);
  std::shared_ptr<const Snapshot> snap;
  for (int t = 1; t <= 3; ++t) {  // past the alert's min_dwell
    feed();
    s.AdvanceTo(kT0 + absl::Seconds(t));
    snap = BuildOne(agg, s, kT0 + absl::Seconds(t));
  }
  REQUIRE(snap->keys.size() == 5);
  const char* want[] = {"k0", "k1", "k2", "k3", "k15"};  // by share, largest first
  for (int i = 0; i < 5; ++i) CHECK(snap->keys[i].key == want[i]);
  CHECK(snap->keys[4].hot);
  for (int i = 0; i < 4; ++i) CHECK_FALSE(snap->keys[i].hot);
}

TEST_CASE(
    "Aggregator: export hysteresis keeps a key between min_share*(1-h) and min_share "
    "and drops it below",
    "[daemon][aggregator]") {
  config::ReloadableOptions r = Reloadable();
  r.exporter.min_share = 0.04;
  r.exporter.hysteresis = 0.5;  // stays down to 0.02
  r.alert.default_threshold = 1.0;
  Aggregator agg(Track(), r, "secret", kT0, nullptr);
  Stream s;
  s.Feed("X", Op::kRead, 1, 5);
  s.Feed("bg", Op::kRead, 1, 95);  // X: 5/100 = 0.05
  s.AdvanceTo(kT0 + absl::Seconds(1));
  auto snap = BuildOne(agg, s, kT0 + absl::Seconds(1));
  REQUIRE(FindKey(*snap, "X"));

  s.Feed("Y", Op::kRead, 1, 5);
  s.Feed("bg", Op::kRead, 1, 95);  // X and Y: 5/200 = 0.025, in [0.02, 0.04)
  s.AdvanceTo(kT0 + absl::Seconds(2));
  snap = BuildOne(agg, s, kT0 + absl::Seconds(2));
  const KeySnapshot* x = FindKey(*snap, "X");
  REQUIRE(x);
  CHECK(x->decayed_share == Approx(0.025));  // what the export rules read
  CHECK(FindKey(*snap, "Y") == nullptr);     // never exported, so not kept

  s.Feed("bg", Op::kRead, 1, 100);  // X: 5/300 < 0.02
  s.AdvanceTo(kT0 + absl::Seconds(3));
  snap = BuildOne(agg, s, kT0 + absl::Seconds(3));
  CHECK(FindKey(*snap, "X") == nullptr);
  CHECK(FindKey(*snap, "bg") != nullptr);
}

TEST_CASE(
    "Aggregator: two receivers' reports merge to what one receiver of both streams "
    "reports",
    "[daemon][aggregator]") {
  Stream one, left, right;
  // The same events, split between two receivers by a flow hash stand-in (i % 2).
  int a = 0;
  for (int i = 0; i < 6000; ++i) {
    std::string key;
    Op op = Op::kRead;
    if (i % 10 < 3) {
      key = "A";
      op = a++ % 4 == 0 ? Op::kWrite : Op::kRead;
    } else if (i % 10 < 5) {
      key = "B";
    } else {
      key = absl::StrCat("bg:", (i * 13) % 500);
    }
    one.Feed(key, op);
    (i % 3 == 0 ? left : right).Feed(key, op);
  }
  for (Stream* s : {&one, &left, &right}) s->AdvanceTo(kT0 + absl::Seconds(1));
  Aggregator agg1(Track(), Reloadable(), "secret", kT0, nullptr);
  Aggregator agg2(Track(), Reloadable(), "secret", kT0, nullptr);
  auto single = BuildOne(agg1, one, kT0 + absl::Seconds(1));
  std::vector<std::shared_ptr<const source::ReceiverReport>> both = {left.Report(), right.Report()};
  auto merged = agg2.Build(both, kT0 + absl::Seconds(1), 0);
  CHECK(merged->receivers == 2);
  CHECK(merged->counters.events == 6000);
  CHECK(merged->sketch_bytes == 2 * single->sketch_bytes);
  REQUIRE(single->keys.size() == merged->keys.size());
  for (const KeySnapshot& k : single->keys) {
    const KeySnapshot* m = FindKey(*merged, k.key);
    INFO(k.key);
    REQUIRE(m);
    CHECK(m->share == Approx(k.share).margin(0.01));
    CHECK(m->write_ratio == Approx(k.write_ratio).margin(0.01));
  }
  const KeySnapshot* a_key = FindKey(*merged, "A");
  REQUIRE(a_key);
  CHECK(a_key->share == Approx(0.3).margin(0.01));
  CHECK(a_key->write_ratio == Approx(0.25).margin(0.01));
}

// The advice scenario, computed by hand with the model of shard_model.h.
//
// Cluster: N = 8 shards of C = 10000 ops/s, A = 10 app servers refreshing every 1 s,
// R = 4 replicas, S = 4 sub-keys, target 0.8 (8000 ops/s). The shard measures 20000 ops/s
// (20000 events a second, ticks every 100 ms, a 1 s rate window), the key taking 90%:
// H = 18000, B = 2000. The key is hot from the first ticks, so at 2 s its advice is read
// over the last whole second.
//   reads 95% (Hw = 900, Hr = 17100):
//     none 20000 > 8000; cache B + Hw + A = 2000 + 900 + 10 = 2910 <= 8000  -> cache
//   writes 95% (Hw = 17100, Hr = 900):
//     cache 2000 + 17100 + 10 = 19110; replicate 2000 + 900/4 + 17100 = 19325;
//     split B + Hw/S + Hr = 2000 + 4275 + 900 = 7175 <= 8000              -> split
//   50/50 (Hw = Hr = 9000):
//     cache 2000 + 9000 + 10 = 11010; replicate 2000 + 2250 + 9000 = 13250;
//     split 2000 + 2250 + 9000 = 13250;
//     split_cache B + Hw/S + A = 2000 + 2250 + 10 = 4260 <= 8000          -> split_cache
TEST_CASE("Aggregator: advice per key follows the shard model", "[daemon][aggregator]") {
  struct Case {
    double write_share;
    model::Strategy advice;
    double advised_load;  // busiest / C under the advised strategy
  };
  for (const Case& c :
       {Case{0.05, model::Strategy::kCache, 0.2910}, Case{0.95, model::Strategy::kSplit, 0.7175},
        Case{0.50, model::Strategy::kSplitCache, 0.4260}}) {
    INFO("write share " << c.write_share);
    config::ReloadableOptions r = Reloadable();
    r.cluster.shards = 8;
    r.cluster.capacity = 10000;
    r.cluster.app_servers = 10;
    r.cluster.refresh_seconds = 1;
    r.cluster.replicas = 4;
    r.cluster.split = 4;
    r.cluster.target = 0.8;
    REQUIRE(r.cluster.Validate().ok());
    Stream s(absl::InfiniteDuration(), 256);
    const int writes = static_cast<int>(std::lround(1800 * c.write_share));
    config::TrackOptions track = Track();
    track.rate_window = absl::Seconds(1);
    Aggregator agg(track, r, "secret", kT0, nullptr);
    std::shared_ptr<const Snapshot> snap;
    for (int tick = 1; tick <= 20; ++tick) {
      for (int i = 0; i < 1800; ++i) {
        // Spread the writes evenly through the stream.
        const bool w =
            (static_cast<long>(i) * writes) / 1800 != (static_cast<long>(i + 1) * writes) / 1800;
        s.Feed("celebrity", w ? Op::kWrite : Op::kRead);
        if (i % 9 == 0) s.Feed(absl::StrCat("bg:", i % 200));  // 200 background events
      }
      s.AdvanceTo(kT0 + absl::Milliseconds(100 * tick));
      snap = BuildOne(agg, s, kT0 + absl::Milliseconds(100 * tick));
    }
    CHECK(snap->ops_per_second[0] + snap->ops_per_second[1] == Approx(20000));
    const KeySnapshot* k = FindKey(*snap, "celebrity");
    REQUIRE(k);
    CHECK(k->share == Approx(0.9).margin(0.001));
    CHECK(k->write_ratio == Approx(c.write_share).margin(0.001));
    CHECK(k->advice == c.advice);
    std::map<model::Strategy, double> loads(k->projected_load.begin(), k->projected_load.end());
    REQUIRE(loads.size() == 5);
    CHECK(loads[model::Strategy::kNone] == Approx(2.0).margin(0.002));
    CHECK(loads[c.advice] == Approx(c.advised_load).margin(0.002));
  }
}

TEST_CASE(
    "Aggregator: a hot key is marked hot after min_dwell, and reload changes the "
    "threshold",
    "[daemon][aggregator]") {
  std::vector<std::string> logs;
  Aggregator agg(Track(), Reloadable(), "secret", kT0,
                 [&](std::string_view l) { logs.emplace_back(l); });
  Stream s(absl::Seconds(1));
  std::shared_ptr<const Snapshot> snap;
  for (int step = 1; step <= 5; ++step) {
    const absl::Time t = kT0 + absl::Milliseconds(100 * step);
    s.AdvanceTo(t);
    for (int i = 0; i < 100; ++i) s.Feed(i % 5 == 0 ? "hot" : absl::StrCat("bg:", i));
    snap = BuildOne(agg, s, t);
    const KeySnapshot* k = FindKey(*snap, "hot");
    REQUIRE(k);
    // Over 0.1 from 100 ms on; hot once 250 ms have passed.
    CHECK(k->hot == (step >= 4));
  }
  CHECK(snap->hot_keys == 1);
  REQUIRE(logs.size() == 1);
  CHECK(logs[0].find("episode started") != std::string::npos);
  // A reload that raises the threshold to 0.5 (cooling below 0.4) ends the episode.
  config::ReloadableOptions r = Reloadable();
  r.alert.default_threshold = 0.5;
  agg.SetReloadable(r);
  s.AdvanceTo(kT0 + absl::Milliseconds(600));
  snap = BuildOne(agg, s, kT0 + absl::Milliseconds(600));
  const KeySnapshot* k = FindKey(*snap, "hot");
  REQUIRE(k);
  CHECK_FALSE(k->hot);
  CHECK(k->threshold == 0.5);
  CHECK(snap->hot_keys == 0);
  CHECK(logs.size() == 2);
}

TEST_CASE("Aggregator: when traffic stops, hot keys end and the shares stop being exported",
          "[daemon][aggregator]") {
  // The default alert.min_ops (rules file); rate window 2 s, half-life 1 s.
  const config::ReloadableOptions r = Reloadable();
  REQUIRE(r.alert.min_ops_per_second == config::AlertOptions{}.min_ops_per_second);
  Aggregator agg(Track(), r, "secret", kT0, nullptr);
  Stream s(absl::Seconds(1));
  // 3 s of traffic, 400 events per 100 ms tick, 40% on "hot:1".
  absl::Time t = kT0;
  std::shared_ptr<const Snapshot> snap;
  for (int step = 1; step <= 30; ++step) {
    t = kT0 + absl::Milliseconds(100 * step);
    s.AdvanceTo(t);
    for (int i = 0; i < 400; ++i) s.Feed(i % 5 < 2 ? "hot:1" : absl::StrCat("bg:", i % 97));
    snap = BuildOne(agg, s, t);
  }
  REQUIRE(snap->hot_keys == 1);
  const KeySnapshot* hot = FindKey(*snap, "hot:1");
  REQUIRE(hot);
  CHECK(hot->hot);
  CHECK(hot->share == Approx(0.4).margin(0.02));
  const absl::Time stop = t;

  // No traffic: the tracker's clock moves on every tick (as a source's publish does), each
  // tick 1 ms late as real timers are, so the window's oldest point is a little under a
  // whole window old.
  auto idle_tick = [&](absl::Time at) {
    s.AdvanceTo(at);
    return BuildOne(agg, s, at);
  };
  for (int k = 1; k <= 80; ++k) {
    t = stop + absl::Milliseconds(251 * k);
    snap = idle_tick(t);
    INFO("idle for " << absl::FormatDuration(t - stop));
    // Once the window holds no traffic, the shard is idle: nothing is hot, and the frozen
    // 0.40 share at 0 ops/s is not exported.
    if (t - stop >= Track().rate_window) {
      CHECK(snap->ops_per_second[0] + snap->ops_per_second[1] == 0);
      CHECK(snap->hot_keys == 0);
      CHECK(snap->keys.empty());
    }
    if (k == 20 || k == 80) {  // after about 5 s and 20 s
      CHECK(snap->hot_keys == 0);
      CHECK(FindKey(*snap, "hot:1") == nullptr);
      CHECK(snap->tracked_keys > 0);  // the tracker still holds the keys
    }
  }

  // Traffic again: the key is hot again after min_dwell.
  for (int step = 1; step <= 10; ++step) {
    t = stop + absl::Seconds(21) + absl::Milliseconds(100 * step);
    s.AdvanceTo(t);
    for (int i = 0; i < 400; ++i) s.Feed(i % 5 < 2 ? "hot:1" : absl::StrCat("bg:", i % 97));
    snap = BuildOne(agg, s, t);
  }
  CHECK(snap->hot_keys == 1);
}

TEST_CASE("Aggregator: a wall clock stepped back an hour changes nothing but the stamps",
          "[daemon][aggregator]") {
  // Two aggregators see the same reports at the same monotonic times; the second's wall
  // clock steps back an hour after 3 s. Every figure must agree; only the stamps move.
  // The episodes' lines only (the advice's own lines come after the step).
  std::vector<std::string> logs_a, logs_b;
  Aggregator a(Track(), Reloadable(), "secret", kT0, [&](std::string_view l) {
    if (l.find("episode") != std::string_view::npos) logs_a.emplace_back(l);
  });
  Aggregator b(Track(), Reloadable(), "secret", kT0, [&](std::string_view l) {
    if (l.find("episode") != std::string_view::npos) logs_b.emplace_back(l);
  });
  const absl::Time wall0 = absl::FromUnixSeconds(1'800'000'000);
  Stream s(absl::Seconds(1));
  std::shared_ptr<const Snapshot> last;
  for (int step = 1; step <= 60; ++step) {
    const absl::Duration since = absl::Milliseconds(100 * step);
    const absl::Time t = kT0 + since;
    s.AdvanceTo(t);
    for (int i = 0; i < 400; ++i) s.Feed(i % 5 < 2 ? "hot:1" : absl::StrCat("bg:", i % 97));
    std::vector<std::shared_ptr<const source::ReceiverReport>> reports = {s.Report()};
    const absl::Duration step_back = step > 30 ? -absl::Hours(1) : absl::ZeroDuration();
    auto x = a.Build(reports, t, wall0 + since, 0);
    auto y = b.Build(reports, t, wall0 + since + step_back, 0);
    last = x;
    INFO("step " << step);
    CHECK(y->time - x->time == step_back);
    CHECK(y->start_time - x->start_time == step_back);
    CHECK(x->start_time == wall0);
    CHECK(y->ops_per_second[0] == x->ops_per_second[0]);
    CHECK(y->rate_window_seconds == x->rate_window_seconds);
    CHECK(y->decayed_ops_per_second[0] == x->decayed_ops_per_second[0]);
    CHECK(y->hot_keys == x->hot_keys);
    REQUIRE(y->keys.size() == x->keys.size());
    for (size_t k = 0; k < x->keys.size(); ++k) {
      CHECK(y->keys[k].key == x->keys[k].key);
      CHECK(y->keys[k].share == x->keys[k].share);
      CHECK(y->keys[k].ops_per_second[0] == x->keys[k].ops_per_second[0]);
      CHECK(y->keys[k].hot == x->keys[k].hot);
      if (x->keys[k].hot) {
        CHECK(y->keys[k].hot_since - x->keys[k].hot_since == step_back);
      } else {
        CHECK(y->keys[k].hot_since == absl::InfiniteFuture());
      }
    }
  }
  CHECK(last->hot_keys == 1);
  CHECK(last->ops_per_second[0] == Approx(4000));
  // One episode each, started at the same monotonic time (the third tick plus min_dwell).
  REQUIRE(logs_a.size() == 1);
  REQUIRE(logs_b.size() == 1);
  CHECK(logs_a[0] == logs_b[0]);  // logged before the step: the same line
}

TEST_CASE("Aggregator: a shard under alert.min_ops has no hot keys", "[daemon][aggregator]") {
  config::ReloadableOptions r = Reloadable();
  r.alert.min_ops_per_second = 100;
  Aggregator agg(Track(), r, "secret", kT0, nullptr);
  Stream s(absl::Seconds(1));
  std::shared_ptr<const Snapshot> snap;
  // 50 ops/s (5 events per 100 ms), 40% on one key: a large share of very little.
  for (int step = 1; step <= 30; ++step) {
    const absl::Time t = kT0 + absl::Milliseconds(100 * step);
    s.AdvanceTo(t);
    for (int i = 0; i < 5; ++i) s.Feed(i < 2 ? "hot:1" : absl::StrCat("bg:", step * 5 + i));
    snap = BuildOne(agg, s, t);
  }
  CHECK(snap->ops_per_second[0] == Approx(50));
  CHECK(snap->hot_keys == 0);
}

TEST_CASE("Aggregator: a key's threshold is worked out once per key and configuration",
          "[daemon][aggregator]") {
  config::ReloadableOptions r = Reloadable();
  r.alert.rules = {config::ThresholdRule{config::ThresholdRule::kGlob, "*:[0-9]*", 0.5, false}};
  r.exporter.min_share = 0.001;  // every key is exported, to read its threshold
  r.exporter.top_k = 100;
  Aggregator agg(Track(), r, "secret", kT0, nullptr);
  Stream s(absl::Seconds(1));
  std::shared_ptr<const Snapshot> snap;
  auto tick = [&](int step, int keys) {
    const absl::Time t = kT0 + absl::Milliseconds(100 * step);
    s.AdvanceTo(t);
    for (int i = 0; i < keys; ++i) s.Feed(absl::StrCat("k:", i), Op::kRead, 1, 10 + i);
    snap = BuildOne(agg, s, t);
  };
  for (int step = 1; step <= 10; ++step) tick(step, 20);
  CHECK(snap->tracked_keys == 20);
  CHECK(agg.threshold_lookups() == 20);  // not 10 ticks * 20 keys
  tick(11, 21);                          // one new key
  CHECK(agg.threshold_lookups() == 21);
  const KeySnapshot* k = FindKey(*snap, "k:20");
  REQUIRE(k);
  CHECK(k->threshold == 0.5);
  // A reload forgets every threshold: the new rule applies from the next tick.
  r.alert.rules[0].share = 0.25;
  agg.SetReloadable(r);
  tick(12, 21);
  CHECK(agg.threshold_lookups() == 42);
  k = FindKey(*snap, "k:20");
  REQUIRE(k);
  CHECK(k->threshold == 0.25);
}

TEST_CASE("Aggregator: keys under every threshold and the export floor are passed over",
          "[daemon][aggregator]") {
  // Threshold 0.1, min_share 0.01 with hysteresis 0.2: keys at or under 0.008 of the
  // traffic, and unknown to the alerter, get no threshold lookup and no snapshot.
  std::vector<std::string> logs;  // the episodes' lines
  Aggregator agg(Track(), Reloadable(), "secret", kT0, [&](std::string_view l) {
    if (l.find("episode") != std::string_view::npos) logs.emplace_back(l);
  });
  Stream s(absl::Seconds(1), 256);
  std::shared_ptr<const Snapshot> snap;
  int step = 0;
  // 1000 events a tick: "hot" takes `hot` of them, "rise" `rise`, and 200 background keys
  // share the rest (under 0.5% each).
  auto tick = [&](int hot, int rise) {
    const absl::Time t = kT0 + absl::Milliseconds(100 * ++step);
    s.AdvanceTo(t);
    for (int i = 0; i < 1000; ++i) {
      if (i < hot) {
        s.Feed("hot");
      } else if (i < hot + rise) {
        s.Feed("rise");
      } else {
        s.Feed(absl::StrCat("bg:", i % 200));
      }
    }
    snap = BuildOne(agg, s, t);
  };
  for (int i = 0; i < 10; ++i) tick(300, 0);
  CHECK(snap->tracked_keys == 201);
  CHECK(agg.threshold_lookups() == 1);  // "hot" only, not the 200 background keys
  REQUIRE(snap->keys.size() == 1);
  CHECK(snap->keys[0].key == "hot");
  CHECK(snap->keys[0].hot);
  // A background key that rises over the export floor is looked at again, and exported.
  for (int i = 0; i < 30; ++i) tick(300, 50);  // 3 half-lives: the share nears 0.05
  CHECK(agg.threshold_lookups() == 2);
  const KeySnapshot* r = FindKey(*snap, "rise");
  REQUIRE(r);
  CHECK(r->share == Approx(0.05).margin(0.01));
  CHECK_FALSE(r->hot);
  // A hot key that a reload puts under everything (threshold 0.5, floor 0.4) is still
  // observed while the alerter holds it: its episode ends with its share and threshold,
  // not as a key that left the tracker (share 0, no threshold).
  REQUIRE(logs.size() == 1);
  config::ReloadableOptions raised = Reloadable();
  raised.alert.default_threshold = 0.5;
  raised.exporter.min_share = 0.5;
  agg.SetReloadable(raised);
  tick(300, 50);
  CHECK(snap->hot_keys == 0);
  CHECK(snap->keys.empty());
  REQUIRE(logs.size() == 2);
  CHECK(logs[1].find("episode ended") != std::string::npos);
  CHECK(logs[1].find("threshold=0.5000") != std::string::npos);
  CHECK(logs[1].find("share=0.0000") == std::string::npos);
}

TEST_CASE("Aggregator: after a restore the restored lifetime counts are a baseline, not traffic",
          "[daemon][aggregator]") {
  // A day of traffic before the restart: 1e9 events, a third of them on "big".
  const absl::Time before = kT0 - absl::Hours(24);
  sketch::HeavyHittersOptions o;
  o.candidates = 64;
  o.sketch_bytes = 32 << 10;
  o.half_life = absl::InfiniteDuration();  // shares of the whole day
  absl::StatusOr<sketch::HeavyHitters> old = sketch::HeavyHitters::Create(o, before);
  REQUIRE(old.ok());
  for (int i = 0; i < 3000; ++i) {
    old->Advance(before + absl::Seconds(i * 28));
    old->Update(i % 3 == 0 ? "big" : absl::StrCat("bg:", i % 40), Op::kRead, 1e9 / 3000);
  }
  absl::StatusOr<sketch::HeavyHitters> restored =
      sketch::HeavyHitters::Deserialize(old->Serialize(), old->now());
  REQUIRE(restored.ok());
  REQUIRE(restored->RawTotal(Op::kRead) == Approx(1e9));

  // The daemon starts at kT0 with the restored tracker; no traffic for three ticks.
  config::ReloadableOptions r = Reloadable();
  r.exporter.min_share = 0.001;
  r.exporter.min_key_ops_per_second = 0;  // "big" is exported by its restored share alone
  Aggregator agg(Track(), r, "secret", kT0, nullptr);
  auto build = [&](absl::Time t) {
    std::vector<std::shared_ptr<const source::ReceiverReport>> reports = {
        std::make_shared<const source::ReceiverReport>(
            source::ReceiverReport{t, *restored, {}, {}})};
    return agg.Build(reports, t, 0);
  };
  for (int step = 1; step <= 3; ++step) {
    auto snap = build(kT0 + absl::Milliseconds(250 * step));
    INFO("tick " << step);
    CHECK(snap->ops_per_second[0] == 0);
    CHECK(snap->ops_per_second[1] == 0);
    const KeySnapshot* big = FindKey(*snap, "big");
    REQUIRE(big);  // still exported by its (restored) share
    CHECK(big->ops_per_second[0] == 0);
  }
  // Traffic again: 100 events per 250 ms, a quarter on "big", counted from the baseline.
  for (int step = 4; step <= 12; ++step) {
    const absl::Time t = kT0 + absl::Milliseconds(250 * step);
    restored->Advance(t);
    for (int i = 0; i < 100; ++i) restored->Update(i % 4 == 0 ? "big" : "new", Op::kRead);
    auto snap = build(t);
    if (step == 12) {
      CHECK(snap->rate_window_seconds == Approx(2));
      CHECK(snap->ops_per_second[0] == Approx(400));
      const KeySnapshot* big = FindKey(*snap, "big");
      REQUIRE(big);
      CHECK(big->ops_per_second[0] == Approx(100));
    }
  }
}

std::shared_ptr<const Snapshot> BuildAll(Aggregator& agg, const std::vector<Stream*>& streams,
                                         absl::Time now) {
  std::vector<std::shared_ptr<const source::ReceiverReport>> reports;
  for (const Stream* s : streams) reports.push_back(s->Report());
  return agg.Build(reports, now, 0);
}

// No exported key serves more ops/s than its shard, by op.
void CheckKeysWithinShard(const Snapshot& snap) {
  for (const KeySnapshot& k : snap.keys) {
    INFO("key " << k.key);
    for (int o = 0; o < sketch::kNumOps; ++o) CHECK(k.ops_per_second[o] <= snap.ops_per_second[o]);
  }
}

// Two receivers on 100 ms ticks over 3 s, window 2 s: per tick, `left` and `right` say how
// many events of each key each receiver gets.
struct TwoReceivers {
  Stream left{absl::Seconds(1), 16}, right{absl::Seconds(1), 16};
  Aggregator agg{Track(),
                 [] {
                   config::ReloadableOptions r = Reloadable();
                   r.exporter.min_share = 0.001;
                   r.exporter.top_k = 100;
                   return r;
                 }(),
                 "secret", kT0, nullptr};
  std::shared_ptr<const Snapshot> snap;

  template <class F>
  void Run(F per_tick) {
    for (int step = 1; step <= 30; ++step) {
      const absl::Time t = kT0 + absl::Milliseconds(100 * step);
      left.AdvanceTo(t);
      right.AdvanceTo(t);
      per_tick(step);
      snap = BuildAll(agg, {&left, &right}, t);
      CheckKeysWithinShard(*snap);
    }
    REQUIRE(snap->rate_window_seconds == Approx(2));
  }
};

TEST_CASE("Aggregator: a key both receivers carry gets the sum of their window rates",
          "[daemon][aggregator]") {
  TwoReceivers rx;
  rx.Run([&](int) {
    rx.left.Feed("K", Op::kRead, 1, 30);
    rx.left.Feed("a", Op::kRead, 1, 70);
    rx.right.Feed("K", Op::kRead, 1, 10);
    rx.right.Feed("K", Op::kWrite, 1, 5);
    rx.right.Feed("b", Op::kRead, 1, 85);
  });
  CHECK(rx.snap->ops_per_second[0] == Approx(1950));
  CHECK(rx.snap->ops_per_second[1] == Approx(50));
  const KeySnapshot* k = FindKey(*rx.snap, "K");
  REQUIRE(k);
  CHECK(k->ops_per_second[0] == Approx(400));
  CHECK(k->ops_per_second[1] == Approx(50));
}

TEST_CASE(
    "Aggregator: a key one receiver evicts keeps the other receiver's rate, not 0 or "
    "less",
    "[daemon][aggregator]") {
  // K: 200 events a tick on the left throughout; 20 a tick on the right until 1.5 s,
  // when 16 heavier keys push it out of the right's 16-slot table.
  TwoReceivers rx;
  rx.Run([&](int step) {
    rx.left.Feed("K", Op::kRead, 1, 200);
    rx.left.Feed("a", Op::kRead, 1, 50);
    if (step <= 15) {
      rx.right.Feed("K", Op::kRead, 1, 20);
    } else {
      for (int i = 0; i < 16; ++i) rx.right.Feed(absl::StrCat("h", i), Op::kRead, 1, 100);
    }
  });
  const KeySnapshot* k = FindKey(*rx.snap, "K");
  REQUIRE(k);
  // Truth over (1 s, 3 s]: 2000 ops/s on the left and 50 on the right (20 a tick from
  // 1.1 s to 1.5 s). The right's part is gone with its entry; the left's is exact.
  CHECK(k->ops_per_second[0] >= Approx(2000));
  CHECK(k->ops_per_second[0] <= Approx(2050));
}

TEST_CASE("Aggregator: a key only one receiver holds gets that receiver's rate",
          "[daemon][aggregator]") {
  TwoReceivers rx;
  rx.Run([&](int step) {
    rx.left.Feed("K", Op::kRead, 1, 40);
    rx.left.Feed("a", Op::kRead, 1, 60);
    rx.right.Feed(absl::StrCat("r", step % 4), Op::kRead, 1, 100);
  });
  const KeySnapshot* k = FindKey(*rx.snap, "K");
  REQUIRE(k);
  CHECK(k->ops_per_second[0] == Approx(400));
  CHECK(rx.snap->ops_per_second[0] == Approx(2000));
}

TEST_CASE("Aggregator: a key admitted inside the window never shows more ops/s than the shard",
          "[daemon][aggregator]") {
  // A quiet shard (100 ops/s), then a burst of a new key in the last two ticks.
  Stream s(absl::Seconds(1));
  Aggregator agg(Track(), Reloadable(), "secret", kT0, nullptr);
  std::shared_ptr<const Snapshot> snap;
  for (int step = 1; step <= 30; ++step) {
    const absl::Time t = kT0 + absl::Milliseconds(100 * step);
    s.AdvanceTo(t);
    s.Feed("bg", Op::kRead, 1, 10);
    if (step >= 29) s.Feed("burst", Op::kRead, 1, 200);
    snap = BuildOne(agg, s, t);
    CheckKeysWithinShard(*snap);
  }
  const KeySnapshot* k = FindKey(*snap, "burst");
  REQUIRE(k);
  // Over the 2 s window: 200 events of bg and 400 of burst.
  CHECK(snap->ops_per_second[0] == Approx(300));
  CHECK(k->ops_per_second[0] == Approx(200));
}

// A quiet shard: 21 ops/s over 6 minutes on 250 ms ticks, half-life 500 ms: 5 requests a
// tick of 500 random keys plus a 6th every fourth tick, and "steady" at 4 ops/s (19%).
// Returns how many distinct keys were ever exported.
size_t DistinctExportedOnQuietShard(double min_key_ops, bool* steady_exported) {
  config::TrackOptions track;  // the defaults: 500 ms half-life, 5 s window
  config::ReloadableOptions r;
  r.exporter.min_key_ops_per_second = min_key_ops;
  r.alert.default_threshold = 1.0;  // only the export rules decide
  Aggregator agg(track, r, "secret", kT0, nullptr);
  Stream s(track.half_life, track.candidates);
  std::mt19937 rng(11);
  std::set<std::string> seen;
  *steady_exported = true;
  for (int tick = 1; tick <= 6 * 60 * 4; ++tick) {
    const absl::Time t = kT0 + absl::Milliseconds(250 * tick);
    s.AdvanceTo(t);
    for (int i = 0; i < 5 + (tick % 4 == 0); ++i) s.Feed(absl::StrCat("k:", rng() % 500));
    s.Feed("steady");
    auto snap = BuildOne(agg, s, t);
    bool steady = false;
    for (const KeySnapshot& k : snap->keys) {
      seen.insert(k.key);
      steady |= k.key == "steady";
    }
    if (tick > 40) *steady_exported &= steady;
  }
  return seen.size();
}

TEST_CASE("Aggregator: on a quiet shard a key needs evidence before it is exported",
          "[daemon][aggregator]") {
  bool steady_off = false, steady_on = false;
  const size_t off = DistinctExportedOnQuietShard(0, &steady_off);
  const size_t on =
      DistinctExportedOnQuietShard(config::ExportOptions{}.min_key_ops_per_second, &steady_on);
  INFO("distinct keys exported in 6 minutes: " << off << " without, " << on << " with");
  CHECK(off > 100);  // every stray request is a large share
  CHECK(on <= 2);
  CHECK(steady_on);  // the 4 ops/s key stays exported all along
}

TEST_CASE(
    "Aggregator: the tracking state stays under its computed bound, however many keys and "
    "ticks",
    "[daemon][aggregator]") {
  // Two sources with the default --track.candidates each, fed far more distinct keys than
  // candidates, and built far more often than the publish interval (each source's publish
  // asks for one).
  config::TrackOptions track = Track();  // 100 ms interval, 2 s window: 44 points at most
  std::vector<Stream> streams(2, Stream(absl::Seconds(1), track.candidates));
  Aggregator agg(track, Reloadable(), "secret", kT0, nullptr);
  const size_t history_bound = Aggregator::RateHistoryBound(track, 2);
  size_t most = 0;
  uint64_t n = 0;
  std::shared_ptr<const Snapshot> snap;
  for (int step = 1; step <= 400; ++step) {  // 10 s at 25 ms: 4 builds per interval
    const absl::Time t = kT0 + absl::Milliseconds(25 * step);
    for (Stream& s : streams) {
      s.AdvanceTo(t);
      for (int i = 0; i < 200; ++i) s.Feed(absl::StrCat("k:", n++));  // every key new
    }
    std::vector<std::shared_ptr<const source::ReceiverReport>> reports;
    for (const Stream& s : streams) reports.push_back(s.Report());
    snap = agg.Build(reports, t, 0);
    most = std::max(most, agg.RateHistoryBytes());
    REQUIRE(agg.RateHistoryBytes() == snap->rate_history_bytes);
  }
  INFO("rate history: at most " << most << " bytes, bound " << history_bound);
  CHECK(most > 0);
  CHECK(most <= history_bound);
  const size_t tracker_bytes = streams[0].Report()->tracker.MemoryBytes();
  CHECK(snap->merged_tracker_bytes == tracker_bytes);  // the merge target has their shape
  CHECK(snap->memory_budget_bytes == Aggregator::MemoryBudget(track, 2, tracker_bytes));
  // Two trackers and their 6 copies each, the merged one, and the history.
  CHECK(snap->memory_budget_bytes == 15 * tracker_bytes + history_bound);
  CHECK(snap->sketch_bytes + snap->merged_tracker_bytes + snap->rate_history_bytes <=
        snap->memory_budget_bytes);
}

// Feeds `keys` keys (key i gets keys - i events) and builds a snapshot per 100 ms step;
// returns the allocations of the last Build(), at steady state.
uint64_t AllocationsPerTick(int receivers, config::ReloadableOptions r, int keys) {
  std::vector<Stream> streams(receivers, Stream(absl::Seconds(1), 256));
  Aggregator agg(Track(), r, "secret", kT0, nullptr);
  uint64_t last = 0;
  for (int step = 1; step <= 30; ++step) {  // past the 2 s window: history points are reused
    const absl::Time t = kT0 + absl::Milliseconds(100 * step);
    for (Stream& s : streams) {
      s.AdvanceTo(t);
      for (int i = 0; i < keys; ++i) s.Feed(absl::StrCat("k", i), Op::kRead, 1, keys - i);
    }
    std::vector<std::shared_ptr<const source::ReceiverReport>> reports;
    for (const Stream& s : streams) reports.push_back(s.Report());
    AllocationCounter count;
    auto snap = agg.Build(reports, t, 0);
    last = count.count();
    REQUIRE(snap->tracked_keys == static_cast<size_t>(keys));
    REQUIRE(agg.merged_tracker() != nullptr);
    CHECK(agg.merged_tracker()->size() == static_cast<size_t>(keys));
  }
  return last;
}

TEST_CASE("Aggregator: a tick labels only what it exports and merges into a reused tracker",
          "[daemon][aggregator]") {
  config::ReloadableOptions r = Reloadable();
  r.exporter.label = config::KeyLabelMode::kHash;  // "h:" + 16 hex digits: allocated labels
  r.exporter.top_k = 5;
  r.exporter.min_share = 0.001;
  r.alert.default_threshold = 1.0;
  const int keys = 200;
  const uint64_t one = AllocationsPerTick(1, r, keys);
  const uint64_t two = AllocationsPerTick(2, r, keys);
  INFO("allocations per tick: one receiver " << one << ", two receivers " << two);
  // Labelling every tracked key would cost at least one allocation per key.
  CHECK(one < keys / 2);
  // The second receiver adds Merge()'s scratch (one vector) and a table read per source
  // for the window rates (two vectors each), not a tracker copy (five buffers: counters,
  // entries, keys, heap, index).
  CHECK(two <= one + 1 + 2 * 2);
  // Copy-assigning a tracker into one of the same shape, as the merge does, allocates
  // nothing.
  Stream a(absl::Seconds(1), 256), b(absl::Seconds(1), 256);
  a.Feed("x", Op::kRead, 1, 10);
  b.Feed("y", Op::kRead, 1, 10);
  sketch::HeavyHitters target = a.Report()->tracker;
  const std::shared_ptr<const source::ReceiverReport> source = b.Report();
  AllocationCounter count;
  target = source->tracker;
  CHECK(count.count() == 0);
}

TEST_CASE("Aggregator: sources' own metrics are summed per kind, and each source is kept",
          "[daemon][aggregator]") {
  static constexpr source::MetricSample kSamples[] = {{"hotkey_x_total", "X.", true, {}, "x"}};
  static const source::MetricSchema kX = {"x", kSamples};
  static const source::MetricSchema kY = {"y", kSamples};
  Aggregator agg(Track(), Reloadable(), "secret", kT0, nullptr);
  std::vector<std::shared_ptr<const source::ReceiverReport>> reports;
  const uint64_t values[] = {3, 4, 5};
  const source::MetricSchema* schemas[] = {&kX, &kY, &kX};
  for (int i = 0; i < 3; ++i) {
    Stream s;
    s.Feed("k", Op::kRead, 1, i + 1);
    s.AdvanceTo(kT0 + absl::Milliseconds(100));
    source::SourceCounters c;
    c.events = i + 1;
    c.memory_bound_bytes = 1000;
    c.own.schema = schemas[i];
    c.own.values[0] = values[i];
    reports.push_back(std::make_shared<const source::ReceiverReport>(
        source::ReceiverReport{kT0 + absl::Milliseconds(100), s.Report()->tracker, c, {}}));
  }
  reports.push_back(Stream().Report());  // a source with no metrics of its own
  const auto snap = agg.Build(reports, kT0 + absl::Milliseconds(100), 0);
  REQUIRE(snap->sources.size() == 4);
  CHECK(snap->sources[1].own.values[0] == 4);
  CHECK(snap->counters.events == 6);
  CHECK(snap->counters.memory_bound_bytes == 3000);
  REQUIRE(snap->source_metrics.size() == 2);
  CHECK(snap->source_metrics[0].schema == &kX);
  CHECK(snap->source_metrics[0].values[0] == 8);
  CHECK(snap->source_metrics[1].schema == &kY);
  CHECK(snap->source_metrics[1].values[0] == 4);
}

}  // namespace
}  // namespace hotkey::aggregate

namespace hotkey::aggregate {
namespace {

// A shard at 2,000 ops/s on average, bursty within the 5 s rate window (1 s at 3,000 ops/s,
// then 1 s at 1,000), whose key takes 30% (5% writes), against a capacity of 2,000 ops/s
// and 8 app servers. Over the window it is steady: cache fits (about 0.72 of capacity);
// at the burst's peak nothing but isolate would, and in its trough no fix is needed.
TEST_CASE("Aggregator: a load steady over the rate window gets one fix, however bursty",
          "[daemon][aggregator]") {
  config::TrackOptions track;
  track.publish_interval = absl::Milliseconds(250);
  track.rate_window = absl::Seconds(5);
  track.half_life = absl::Milliseconds(500);
  config::ReloadableOptions r = Reloadable();
  r.cluster.capacity = 2000;
  r.cluster.app_servers = 8;
  r.alert.default_threshold = 0.1;
  REQUIRE(r.cluster.Validate().ok());
  Aggregator agg(track, r, "secret", kT0, nullptr);
  Stream s(track.half_life, 128);
  std::vector<model::Strategy> advice;
  std::vector<double> none_loads, shares;
  int fed = 0;
  for (int tick = 1; tick <= 4 * 70; ++tick) {  // 70 s of 250 ms ticks
    const absl::Time t = kT0 + absl::Milliseconds(250 * tick);
    const bool high = ((tick - 1) / 4) % 2 == 0;
    const int events = high ? 750 : 250;
    for (int i = 0; i < events; ++i, ++fed) {
      if (fed % 10 < 3) {
        s.Feed("item:flash", fed % 200 == 0 ? Op::kWrite : Op::kRead);  // 30%: 5% of them writes
      } else {
        s.Feed(absl::StrCat("bg:", fed % 5000));
      }
    }
    s.AdvanceTo(t);
    auto snap = BuildOne(agg, s, t);
    const KeySnapshot* k = FindKey(*snap, "item:flash");
    REQUIRE(k);
    if (tick <= 4 * 10) continue;  // the first 10 s: the window fills
    REQUIRE(k->hot);
    REQUIRE_FALSE(k->projected_load.empty());
    advice.push_back(k->advice);
    shares.push_back(k->share);
    for (const auto& [strategy, load] : k->projected_load) {
      if (strategy == model::Strategy::kNone) none_loads.push_back(load);
    }
  }
  REQUIRE(advice.size() == 4 * 60);
  for (size_t i = 0; i < advice.size(); ++i) {
    INFO(i << " share " << shares[i] << " none " << none_loads[i]);
    CHECK(advice[i] == model::Strategy::kCache);
  }
  std::vector<double> sorted = none_loads;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  CHECK(median == Approx(1.0).margin(0.01));
  for (double l : none_loads) CHECK(std::abs(l - median) <= 0.1 * median + 1e-9);
  for (double share : shares) CHECK(share == Approx(0.3).margin(0.005));
}

TEST_CASE("Aggregator: a hot key gets advice once its episode spans the rate window (2 s here)",
          "[daemon][aggregator]") {
  config::ReloadableOptions r = Reloadable();
  Aggregator agg(Track(), r, "secret", kT0, nullptr);  // rate window 2 s
  Stream s(absl::Seconds(1));
  for (int i = 0; i < 2000; ++i) s.Feed(absl::StrCat("bg:", i % 400));
  s.AdvanceTo(kT0 + absl::Seconds(1));
  BuildOne(agg, s, kT0 + absl::Seconds(1));
  // "new" appears at 1 s and takes half the traffic from then on.
  for (int step = 1; step <= 40; ++step) {
    const absl::Time t = kT0 + absl::Seconds(1) + absl::Milliseconds(100 * step);
    for (int i = 0; i < 200; ++i) s.Feed(i % 2 ? "new" : absl::StrCat("bg:", i % 400));
    s.AdvanceTo(t);
    auto snap = BuildOne(agg, s, t);
    const KeySnapshot* k = FindKey(*snap, "new");
    REQUIRE(k);
    INFO("step " << step);
    // Hot within detection's speed (its decayed share), advised once its episode (from
    // about 1.1 s) spans the 2 s window (shorter than the shortest advice span, 5 s).
    if (step >= 5) CHECK(k->hot);
    if (step <= 20) {
      CHECK(k->projected_load.empty());
      CHECK(k->share < 0.5);
    }
    if (step >= 22) {
      CHECK_FALSE(k->projected_load.empty());
      CHECK(k->share == Approx(0.5).margin(0.01));
    }
  }
}

// Ticks every 100 ms, each feeding 1,000 events of FeedKnownMix (10,000 ops/s, A 30%).
struct Ticker {
  Aggregator& agg;
  Stream& s;
  int tick = 0;
  std::shared_ptr<const Snapshot> Next() {
    const absl::Time t = Now() + absl::Milliseconds(100);
    ++tick;
    FeedKnownMix(s);
    s.AdvanceTo(t);
    return BuildOne(agg, s, t);
  }
  absl::Time Now() const { return kT0 + absl::Milliseconds(100 * tick); }
};

// A shard that answers with `busy` over (start, end] seconds from kT0.
ModelInputs Answered(const config::ReloadableOptions& r, uint64_t answers, double busy,
                     double start, double end) {
  ModelInputs in;
  in.cluster = r.cluster;
  in.capacity = InputOrigin::kUnknown;
  in.measure_capacity = true;
  in.shard_asked = true;
  in.shard_up = true;
  in.shard_answers = answers;
  in.shard_busy = busy;
  in.shard_load_start = kT0 + absl::Seconds(start);
  in.shard_load_end = kT0 + absl::Seconds(end);
  return in;
}

std::map<model::Strategy, double> Loads(const KeySnapshot& k) {
  return {k.projected_load.begin(), k.projected_load.end()};
}

TEST_CASE("Aggregator: a configured capacity gives hot keys advice, and the snapshot says so",
          "[daemon][aggregator]") {
  config::ReloadableOptions r = Reloadable();
  r.cluster.capacity = 100000;       // configured: the key fits with no fix
  r.alert.default_threshold = 0.15;  // A (30%) is hot, B (10%) is not
  Aggregator agg(Track(), r, "secret", kT0, nullptr);
  Stream s;
  Ticker ticks{agg, s};
  std::shared_ptr<const Snapshot> snap;
  while (ticks.tick < 30) snap = ticks.Next();
  const KeySnapshot* a = FindKey(*snap, "A");
  REQUIRE(a);
  REQUIRE(a->hot);
  CHECK(a->advice == model::Strategy::kNone);
  CHECK(Loads(*a)[model::Strategy::kNone] == Approx(0.1).margin(0.001));
  CHECK(snap->model.capacity == InputOrigin::kConfigured);
  CHECK(snap->model.cluster.capacity == 100000);
  // B (10%, under the 10% threshold) is exported, not hot: no advice, no projection.
  const KeySnapshot* b = FindKey(*snap, "B");
  REQUIRE(b);
  CHECK_FALSE(b->hot);
  CHECK(b->projected_load.empty());
}

TEST_CASE("Aggregator: an unknown headroom advises no key", "[daemon][aggregator]") {
  config::ReloadableOptions r = Reloadable();
  Aggregator agg(Track(), r, "secret", kT0, nullptr);
  ModelInputs in;
  in.cluster = r.cluster;
  in.cluster.capacity = std::numeric_limits<double>::quiet_NaN();
  in.capacity = InputOrigin::kUnknown;
  in.capacity_reason = "no shard is asked";
  agg.SetModelInputs(in);
  Stream s;
  Ticker ticks{agg, s};
  std::shared_ptr<const Snapshot> snap;
  while (ticks.tick < 40) snap = ticks.Next();
  const KeySnapshot* a = FindKey(*snap, "A");
  REQUIRE(a);
  CHECK(a->hot);
  CHECK(a->projected_load.empty());
  CHECK(snap->model.capacity == InputOrigin::kUnknown);
  CHECK(snap->model.capacity_reason == "no shard is asked");
}

// The Redis with headroom: at 2% busy its capacity is 10,000 / 0.02 = 500,000
// ops/s, measured, and A (30%) projects 0.02 with no fix: none, not the configured
// capacity's isolate.
TEST_CASE("Aggregator: the load with no fix is the shard's busy fraction, however small",
          "[daemon][aggregator]") {
  config::ReloadableOptions r = Reloadable();
  r.cluster.capacity = 1000;  // configured, and never used: the shard is measured
  Aggregator agg(Track(), r, "secret", kT0, nullptr);  // 2 s window
  Stream s;
  Ticker ticks{agg, s};
  std::shared_ptr<const Snapshot> snap;
  agg.SetModelInputs(Answered(r, 0, NAN, 0, 0));
  while (ticks.tick < 20) snap = ticks.Next();
  CHECK(snap->model.capacity == InputOrigin::kUnknown);  // no answer with a load yet
  REQUIRE(FindKey(*snap, "A"));
  CHECK(FindKey(*snap, "A")->projected_load.empty());
  // The shard's answer over 1-2 s: A's episode began at 0.1 s, so 1-2 s is its own time.
  agg.SetModelInputs(Answered(r, 1, 0.02, 1, 2));
  snap = ticks.Next();
  CHECK(snap->model.capacity == InputOrigin::kMeasured);
  CHECK(snap->model.cluster.capacity == Approx(10000 / 0.02).epsilon(0.02));
  const KeySnapshot* a = FindKey(*snap, "A");
  REQUIRE(a);
  REQUIRE(a->hot);
  REQUIRE_FALSE(a->projected_load.empty());
  CHECK(a->advice == model::Strategy::kNone);
  CHECK(Loads(*a)[model::Strategy::kNone] == Approx(0.02));
  // A change of load: 0.45 differs from 0.02 by more than a tenth and is averaged in; 0.5
  // differs from 0.02 the same way and starts the window afresh (busy_window.h).
  while (ticks.Now() < kT0 + absl::Seconds(3)) snap = ticks.Next();
  agg.SetModelInputs(Answered(r, 2, 0.45, 2, 3));
  snap = ticks.Next();
  a = FindKey(*snap, "A");
  REQUIRE(a);
  CHECK(Loads(*a)[model::Strategy::kNone] == Approx((0.02 * 1 + 0.45 * 1) / 2));
  while (ticks.Now() < kT0 + absl::Seconds(3.5)) snap = ticks.Next();
  agg.SetModelInputs(Answered(r, 3, 0.5, 3, 3.5));
  snap = ticks.Next();
  a = FindKey(*snap, "A");
  REQUIRE(a);
  CHECK(Loads(*a)[model::Strategy::kNone] == Approx(0.5));
  // Answers within a tenth of each other average over the window, each by its span.
  while (ticks.Now() < kT0 + absl::Seconds(4)) snap = ticks.Next();
  agg.SetModelInputs(Answered(r, 4, 0.56, 3.5, 4));
  snap = ticks.Next();
  a = FindKey(*snap, "A");
  REQUIRE(a);
  REQUIRE_FALSE(a->projected_load.empty());
  CHECK(Loads(*a)[model::Strategy::kNone] == Approx((0.5 * 0.5 + 0.56 * 0.5) / 1.0));
  // The shard stops answering: once its last answer is older than the window, the headroom
  // is unknown again and no stale load is advised on.
  while (ticks.Now() < kT0 + absl::Seconds(6.5)) snap = ticks.Next();
  CHECK(snap->model.capacity == InputOrigin::kUnknown);
  CHECK(snap->model.capacity_reason.find("older than the rate window") != std::string::npos);
  a = FindKey(*snap, "A");
  REQUIRE(a);
  CHECK(a->projected_load.empty());
  // A flag given (measure_capacity off) wins.
  ModelInputs given = Answered(r, 4, 0.5, 5, 6);
  given.measure_capacity = false;
  given.capacity = InputOrigin::kConfigured;
  agg.SetModelInputs(given);
  snap = ticks.Next();
  CHECK(snap->model.capacity == InputOrigin::kConfigured);
  CHECK(snap->model.cluster.capacity == 1000);
}

// A shard near 0.9 busy with cache advised gets one answer at 0.5 (a neighbour took the
// CPU for a while). Averaged in, the window reads about 0.7, where none fits with room: the
// fix is held while that answer is in the window unconfirmed, and a drop the next answer
// confirms withdraws it (busy_window.h, advice_hold.h).
TEST_CASE("Aggregator: one answer's dip withdraws no fix; a confirmed drop does",
          "[daemon][aggregator]") {
  config::ReloadableOptions r = Reloadable();
  Aggregator agg(Track(), r, "secret", kT0, nullptr);  // 2 s window
  Stream s;
  Ticker ticks{agg, s};
  std::shared_ptr<const Snapshot> snap;
  agg.SetModelInputs(Answered(r, 0, NAN, 0, 0));
  while (ticks.tick < 10) snap = ticks.Next();
  uint64_t answers = 0;
  // The shard's answer over (end - 1, end] s; returns A at the next tick.
  auto answer = [&](double busy, double end) {
    while (ticks.Now() < kT0 + absl::Seconds(end)) snap = ticks.Next();
    agg.SetModelInputs(Answered(r, ++answers, busy, end - 1, end));
    snap = ticks.Next();
    const KeySnapshot* a = FindKey(*snap, "A");
    REQUIRE(a);
    REQUIRE_FALSE(a->projected_load.empty());
    return *a;
  };
  KeySnapshot a = answer(0.9, 2);
  const model::Strategy fix = a.advice;
  REQUIRE(fix != model::Strategy::kNone);
  CHECK(answer(0.92, 3).advice == fix);
  a = answer(0.5, 4);
  CHECK(Loads(a)[model::Strategy::kNone] == Approx(0.71));
  CHECK(a.advice == fix);  // none fits with room, but on an answer not confirmed
  a = answer(0.9, 5);      // back: the dip was not a change, and is still in the window
  CHECK(Loads(a)[model::Strategy::kNone] == Approx(0.7));
  CHECK(a.advice == fix);
  CHECK(answer(0.9, 6).advice == fix);
  // A real drop: the first answer waits, the second confirms it and the window starts
  // afresh there.
  CHECK(answer(0.4, 7).advice == fix);
  a = answer(0.4, 8);
  CHECK(Loads(a)[model::Strategy::kNone] == Approx(0.4));
  CHECK(a.advice == model::Strategy::kNone);
}

// A key the tracker knows at 5% turns hot (30%) at 3 s on a shard that was at 30% busy
// before and is at 95% after. The window before onset says "none"; the episode's own
// figures say cache, and its first advice is cache, logged with the loads that decided it.
TEST_CASE(
    "Aggregator: an episode's first advice comes from its own traffic, not the quiet "
    "before it",
    "[daemon][aggregator]") {
  std::vector<std::string> logs;
  config::ReloadableOptions r = Reloadable();
  config::TrackOptions track = Track();
  track.rate_window = absl::Seconds(10);  // the default window: mostly before onset at first
  Aggregator agg(track, r, "secret", kT0, [&](std::string_view l) { logs.emplace_back(l); });
  Stream s(absl::Milliseconds(500), 128);
  std::shared_ptr<const Snapshot> snap;
  std::optional<absl::Time> first_advice;
  model::Strategy first = model::Strategy::kIsolate;
  uint64_t answers = 0;
  for (int tick = 1; tick <= 150; ++tick) {  // 15 s of 100 ms ticks
    const absl::Time t = kT0 + absl::Milliseconds(100 * tick);
    const bool hot = t > kT0 + absl::Seconds(3);
    for (int i = 0; i < 1000; ++i) {
      s.Feed(i % 20 < (hot ? 6 : 1) ? "item" : absl::StrCat("bg:", i % 400),
             i % 40 == 0 ? Op::kWrite : Op::kRead);
    }
    s.AdvanceTo(t);
    // The shard answers every 2 s: 30% busy over 0-2 s, then 95% once the key is hot (the
    // 2-4 s answer straddles the onset: 0.6).
    if (tick % 20 == 0) {
      const double end = tick / 10.0;
      const double busy = end <= 2 ? 0.3 : end <= 4 ? 0.6 : 0.95;
      agg.SetModelInputs(Answered(r, ++answers, busy, end - 2, end));
    }
    snap = BuildOne(agg, s, t);
    const KeySnapshot* k = FindKey(*snap, "item");
    if (k && !k->projected_load.empty() && !first_advice) {
      first_advice = t;
      first = k->advice;
    }
  }
  REQUIRE(first_advice);
  CHECK(first == model::Strategy::kCache);
  // The first answer begun after the onset ends at 6 s.
  CHECK(*first_advice == kT0 + absl::Seconds(6));
  std::string changed;
  for (const std::string& l : logs) {
    if (l.find("advised fix changed") != std::string::npos) changed += l + "\n";
  }
  INFO(changed);
  CHECK(changed.find("key=\"item\" from=pending to=cache") != std::string::npos);
  CHECK(changed.find("load_none=0.950") != std::string::npos);
  CHECK(changed.find("busy=0.950") != std::string::npos);
  CHECK(std::count(changed.begin(), changed.end(), '\n') == 1);  // one fix since
}

// The same key on a saturated shard, advised cache at 6 s; the kits apply it at once and the
// shard, whose other clients were held back, falls only to 88% busy: it now sees only the
// key's writes, and cache is no longer enough. Told the fix
// in force (the feed's entry, SetFixesInForce), the aggregator reads the key's next advice
// from the shard's answers begun since the change (the daemon asks the shard then, and
// again soon after: here the answer over 6.2-8.2 s), and cache, which relieves nothing
// more, gives way at 8.2 s, though the answer differs from the one before by more than a
// burst may (busy_window.h: a known change needs no confirming). Not told, the window since
// the onset holds the reads before the fix, where cache fits, and the answer waits for a
// second to confirm it: cache is held.
TEST_CASE("Aggregator: after a key's fix in force changed, its advice reads the shard since",
          "[daemon][aggregator]") {
  for (const bool told : {true, false}) {
    INFO("told the fix in force: " << told);
    std::vector<std::string> logs;
    config::ReloadableOptions r = Reloadable();
    config::TrackOptions track = Track();
    track.rate_window = absl::Seconds(10);
    Aggregator agg(track, r, "secret", kT0, [&](std::string_view l) { logs.emplace_back(l); });
    DemandLedger ledger(track.rate_window, 16);  // the kits' reports keep the key hot
    agg.SetDemand(&ledger);
    Stream s(absl::Milliseconds(500), 128);
    std::shared_ptr<const Snapshot> snap;
    uint64_t answers = 0;
    std::vector<std::pair<double, model::Strategy>> advice;  // (seconds, fix) at each change
    for (int tick = 1; tick <= 100; ++tick) {                // 10 s of 100 ms ticks
      const double now = tick / 10.0;
      const absl::Time t = kT0 + absl::Seconds(now);
      const bool hot = now > 3;
      const bool cached = now > 6.05;  // the kits serve the key's reads
      for (int i = 0; i < 1000; ++i) {
        const bool key = i % 20 < (hot ? 6 : 1);
        const bool write = i % 40 == 0;
        if (key && cached && !write) continue;
        s.Feed(key ? "item" : absl::StrCat("bg:", i % 400), write ? Op::kWrite : Op::kRead);
      }
      s.AdvanceTo(t);
      if (tick == 20 || tick == 40 || tick == 60) {  // every 2 s until the fix
        const double busy = tick == 20 ? 0.3 : tick == 40 ? 0.6 : 1.0;
        agg.SetModelInputs(Answered(r, ++answers, busy, now - 2, now));
      } else if (tick == 82) {  // asked at the change (6.2 s), and again
        agg.SetModelInputs(Answered(r, ++answers, 0.88, 6.2, 8.2));
      }
      if (cached && tick % 10 == 0) ledger.Add(t, "item", 2750, 0, absl::Seconds(1));
      snap = BuildOne(agg, s, t);
      if (told && tick == 61) agg.SetFixesInForce({{"item", false, model::Strategy::kCache}});
      const KeySnapshot* k = FindKey(*snap, "item");
      if (k && !k->projected_load.empty() && (advice.empty() || advice.back().second != k->advice))
        advice.emplace_back(now, k->advice);
    }
    REQUIRE_FALSE(advice.empty());
    CHECK(advice[0] == std::pair{6.0, model::Strategy::kCache});
    if (!told) {
      CHECK(advice.size() == 1);
      continue;
    }
    REQUIRE(advice.size() == 2);
    CHECK(advice[1].first == Approx(8.2));
    CHECK(advice[1].second != model::Strategy::kCache);
    std::string changed;
    for (const std::string& l : logs) {
      if (absl::StrContains(l, "advised fix changed") && absl::StrContains(l, "from=cache"))
        changed = l;
    }
    INFO(changed);
    CHECK(absl::StrContains(changed, "span=2s"));
    CHECK(absl::StrContains(changed, "busy=0.880"));
  }
}

}  // namespace
}  // namespace hotkey::aggregate

namespace hotkey::aggregate {
namespace {

TEST_CASE(
    "Aggregator: a hot key's episode goes into the episode log with its fix, its end "
    "line names that fix, and the ticks fill the history's windows",
    "[daemon][aggregator]") {
  std::vector<std::string> logs;
  Aggregator agg(Track(), Reloadable(), "", kT0, [&](std::string_view l) { logs.emplace_back(l); });
  Stream s(absl::Seconds(1));
  std::shared_ptr<const Snapshot> snap;
  int step = 0;
  // The fix in force at the key's last advised tick: while it cools its projections move
  // (the background grows), and the end line names the fix it had then.
  std::string advised;
  auto tick = [&](int hot) {
    const absl::Time t = kT0 + absl::Milliseconds(100 * ++step);
    s.AdvanceTo(t);
    for (int i = 0; i < 1000; ++i) s.Feed(i < hot ? "hot" : absl::StrCat("bg:", i % 200));
    snap = BuildOne(agg, s, t);
    if (!snap->keys.empty() && snap->keys[0].hot && !snap->keys[0].projected_load.empty()) {
      advised = model::StrategyName(snap->keys[0].advice);
    }
  };
  for (int i = 0; i < 50; ++i) tick(300);  // 5 s: hot, advised once its episode spans 2 s
  REQUIRE(snap->hot_keys == 1);
  REQUIRE(snap->keys[0].hot);
  CHECK(advised == "cache");
  CHECK(agg.episodes().open_count() == 1);
  for (int i = 0; i < 60; ++i) tick(0);  // cools
  CHECK(agg.episodes().open_count() == 0);
  CHECK(snap->episodes == 1);
  const std::string json = agg.episodes().Json(10);
  CHECK(json.find("\"key\":\"hot\"") != std::string::npos);
  CHECK(json.find(absl::StrCat("\"strategy\":\"", advised, "\"")) != std::string::npos);
  std::string ended;
  for (const std::string& l : logs) {
    if (l.find("hot key episode ended") != std::string::npos) ended = l;
  }
  INFO(ended);
  CHECK(ended.find(absl::StrCat("strategy=", advised)) != std::string::npos);
  // 11 s of ticks: one 10 s window closed, with the hot key on top.
  CHECK(snap->history_windows[0] == 1);
  CHECK(agg.history().fine_count() == 1);
  CHECK(snap->history_bytes == snap->history_bound_bytes);
}

TEST_CASE(
    "Aggregator: the fixes the kits apply are the fix in force in a hot key's episode lines "
    "and history, by exact key or by prefix",
    "[daemon][aggregator]") {
  const bool by_prefix = GENERATE(false, true);
  std::vector<std::string> logs;
  Aggregator agg(Track(), Reloadable(), "", kT0, [&](std::string_view l) { logs.emplace_back(l); });
  Stream s(absl::Seconds(1));
  std::shared_ptr<const Snapshot> snap;
  int step = 0;
  auto tick = [&](int hot) {
    const absl::Time t = kT0 + absl::Milliseconds(100 * ++step);
    s.AdvanceTo(t);
    for (int i = 0; i < 1000; ++i) s.Feed(i < hot ? "hot" : absl::StrCat("bg:", i % 200));
    snap = BuildOne(agg, s, t);
  };
  // A background key's fix, and one of a key never seen: neither is hot, neither is named.
  agg.SetFixesInForce({{"bg:1", false, model::Strategy::kSplit},
                       {"gone", false, model::Strategy::kReplicate},
                       {by_prefix ? "ho" : "hot", by_prefix, model::Strategy::kSplitCache}});
  for (int i = 0; i < 50; ++i) tick(300);
  REQUIRE(snap->keys[0].hot);
  agg.SetFixesInForce({});  // the entry left: the episode keeps the last fix seen in force
  for (int i = 0; i < 60; ++i) tick(0);
  REQUIRE(agg.episodes().open_count() == 0);
  std::string started, ended;
  for (const std::string& l : logs) {
    if (l.find("hot key episode started") != std::string::npos) started += l + "\n";
    if (l.find("hot key episode ended") != std::string::npos) ended += l + "\n";
  }
  INFO(started << ended);
  CHECK(started.find("key=\"hot\"") != std::string::npos);
  CHECK(started.find("in_force=split_cache") != std::string::npos);
  CHECK(ended.find("in_force=split_cache") != std::string::npos);
  CHECK(absl::StrContains(started + ended, "in_force=split ") == false);
  CHECK(absl::StrContains(started + ended, "replicate") == false);
  const boost::json::value e = boost::json::parse(agg.episodes().Json(10)).at("episodes").at(0);
  CHECK(e.at("key").as_string() == "hot");
  CHECK(e.at("in_force").at("strategy").as_string() == "split_cache");
  CHECK(e.at("in_force").at("by").as_string() == "feed");
}

// A read-mostly key the kits cache: 3,000 of the shard's 10,000 ops/s (5% writes) on a shard
// 90% busy, until the kits take its reads (2,850 ops/s) off the shard at 2 s. The shard then
// serves 7,150 ops/s at the same cost per op (0.9 / 10,000): 64.35% busy. What the kits
// report keeps the key hot; the projections stay the shard's own figures (64.35% with no
// further fix, so the advice is none and a page on the load resolves), with the absorbed ops
// beside them. Without reports the key cools (its writes are 15 / 715 = 2.1% of the shard);
// reports ended, it cools within seconds.
TEST_CASE("Aggregator: the kits' absorbed demand keeps a key hot, not in the shard's load",
          "[daemon][aggregator][demand]") {
  for (const bool report : {true, false}) {
    INFO("reports " << report);
    config::ReloadableOptions r = Reloadable();
    Aggregator agg(Track(), r, "secret", kT0, nullptr);  // 2 s window
    DemandLedger ledger(Track().rate_window, 16);
    agg.SetDemand(&ledger);
    Stream s(absl::Milliseconds(500));
    std::shared_ptr<const Snapshot> snap;
    uint64_t answers = 0;
    const absl::Time fix = kT0 + absl::Seconds(2);
    const absl::Time stop = kT0 + absl::Seconds(8);
    for (int tick = 1; tick <= 150; ++tick) {
      const absl::Time t = kT0 + absl::Milliseconds(100 * tick);
      const bool fixed = t > fix;
      for (int i = 0; i < 100; ++i) {
        if (!fixed) {
          for (int j = 0; j < 3; ++j) s.Feed("A", i % 20 == 0 ? Op::kWrite : Op::kRead);
        } else if (i % 20 == 0) {
          s.Feed("A", Op::kWrite);
          s.Feed("A", Op::kWrite);
          s.Feed("A", Op::kWrite);
        }
        s.Feed("B");
        for (int j = 0; j < 6; ++j) s.Feed(absl::StrCat("bg:", (tick * 600 + i * 6 + j) % 300));
      }
      s.AdvanceTo(t);
      if (tick % 10 == 0) {
        // The shard's answer over the last second, and the kits' report of it.
        const double busy = fixed ? 0.9 * 0.715 : 0.9;
        agg.SetModelInputs(Answered(r, ++answers, busy, tick / 10 - 1, tick / 10));
        if (report && fixed && t <= stop) ledger.Add(t, "A", 2850, 0, absl::Seconds(1));
      }
      snap = BuildOne(agg, s, t);
      const KeySnapshot* a = FindKey(*snap, "A");
      INFO("t " << absl::FormatDuration(t - kT0));
      // Without reports the key cools once its decayed share has been under the cooling
      // line (8%) for 2 s (a fix in force: aggregator.cc's kFixCoolGrace): from about 1 s
      // after the fix.
      if (!report && t > fix + absl::Seconds(3.5) && t <= stop) CHECK((a == nullptr || !a->hot));
      if (report && t > fix && t <= stop) {
        REQUIRE(a);
        CHECK(a->hot);
        if (t > fix + absl::Seconds(1)) CHECK(a->demand_share > 0.2);
        if (t > fix + absl::Seconds(2.5)) CHECK(a->share < 0.03);  // what the shard sees
        if (t > fix + absl::Seconds(3)) {
          CHECK(a->absorbed_ops_per_second[0] == Approx(2850).epsilon(0.1));
          REQUIRE_FALSE(a->projected_load.empty());
          CHECK(Loads(*a)[model::Strategy::kNone] == Approx(0.6435).epsilon(0.05));
          CHECK(a->advice == model::Strategy::kNone);
          CHECK(a->advised_on.absorbed_ops == Approx(2850).epsilon(0.1));
        }
      }
      // Reports ended: the demand over the last 3 s decays from a second after the last
      // report, the key passes under the line, and cools 2 s later.
      if (t > stop + absl::Seconds(5.5)) CHECK((a == nullptr || !a->hot));
    }
  }
}

}  // namespace
}  // namespace hotkey::aggregate
