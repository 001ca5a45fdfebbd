// Tests for the shard load model (daemon/common/model/shard_model.cc): every strategy's formula
// against numbers worked by hand, the advice order, the edge cases and the validation errors.
//
// The worked example used throughout is the header's default cluster (T = 50000 ops/s,
// N = 8, C = 10000, A = 50, refresh 1 s, R = 4, S = 8, target 0.8) with h = 0.2, w = 0.1:
//   H = 10000, Hr = 9000, Hw = 1000, B = 50000 * 0.8 / 8 = 5000, A/interval = 50, so
//   none        15000        -> 1.5     (others 0.5)
//   cache       5000+1000+50 -> 0.605   (others 0.5)
//   replicate   5000+2250+1000 -> 0.825 on 4 shards (others 0.5)
//   split       5000+125+9000  -> 1.4125 on all 8
//   split_cache 5000+125+50    -> 0.5175 on all 8
// and the advice is cache (the first in the default order at or under 0.8).

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "hotkey/model/shard_model.h"

namespace hotkey::model {
namespace {

using Catch::Matchers::Contains;

Projection MustProject(const Cluster& c, const HotKey& k) {
  absl::StatusOr<Projection> p = Project(c, k);
  REQUIRE(p.ok());
  return *p;
}

const StrategyLoad& Row(const Projection& p, Strategy s) {
  for (const StrategyLoad& l : p.loads) {
    if (l.strategy == s) return l;
  }
  FAIL("no row for " << StrategyName(s));
  return p.loads.front();
}

// Checks a row: the first `touched` shards at `hot`, the rest at `cold`.
void CheckRow(const StrategyLoad& row, int touched, double hot, double cold) {
  INFO("strategy " << StrategyName(row.strategy));
  REQUIRE(row.shard_loads.size() == 8);
  for (int i = 0; i < 8; ++i) {
    INFO("shard " << i);
    CHECK(row.shard_loads[i] == Approx(i < touched ? hot : cold));
  }
  CHECK(row.busiest == Approx(std::max(hot, touched < 8 ? cold : hot)));
  CHECK(row.least_busy == Approx(touched < 8 ? std::min(hot, cold) : hot));
}

TEST_CASE("Model: each strategy's loads match the worked example", "[model]") {
  const Projection p = MustProject(Cluster{}, HotKey{0.2, 0.1});
  REQUIRE(p.loads.size() == 5);
  CheckRow(Row(p, Strategy::kNone), 1, 1.5, 0.5);
  CheckRow(Row(p, Strategy::kCache), 1, 0.605, 0.5);
  CheckRow(Row(p, Strategy::kReplicate), 4, 0.825, 0.5);
  CheckRow(Row(p, Strategy::kSplit), 8, 1.4125, 1.4125);
  CheckRow(Row(p, Strategy::kSplitCache), 8, 0.5175, 0.5175);
  CHECK(p.advice == Strategy::kCache);
}

TEST_CASE("Model: rows follow the order and advice is the first strategy that fits", "[model]") {
  Cluster c;
  SECTION("default order") {
    const Projection p = MustProject(c, HotKey{0.2, 0.1});
    const Strategy want[] = {Strategy::kNone, Strategy::kCache, Strategy::kReplicate,
                             Strategy::kSplit, Strategy::kSplitCache};
    for (int i = 0; i < 5; ++i) CHECK(p.loads[i].strategy == want[i]);
  }
  SECTION("custom order skips the strategies it leaves out") {
    c.order = {Strategy::kReplicate, Strategy::kSplit, Strategy::kSplitCache};
    const Projection p = MustProject(c, HotKey{0.2, 0.1});
    REQUIRE(p.loads.size() == 3);
    CHECK(p.loads[0].strategy == Strategy::kReplicate);
    CHECK(p.loads[2].strategy == Strategy::kSplitCache);
    // replicate 0.825 and split 1.4125 exceed 0.8; split_cache's 0.5175 fits.
    CHECK(p.advice == Strategy::kSplitCache);
  }
  SECTION("an order whose strategies all exceed the target advises isolate") {
    c.order = {Strategy::kReplicate, Strategy::kSplit};
    CHECK(MustProject(c, HotKey{0.2, 0.1}).advice == Strategy::kIsolate);
  }
  SECTION("more replicas make replicate fit: 5000 + 9000/8 + 1000 = 7125") {
    c.replicas = 8;
    c.order = {Strategy::kNone, Strategy::kReplicate, Strategy::kCache};
    const Projection p = MustProject(c, HotKey{0.2, 0.1});
    CHECK(Row(p, Strategy::kReplicate).busiest == Approx(0.7125));
    CHECK(p.advice == Strategy::kReplicate);
  }
  SECTION("a load exactly at the target fits") {
    // h = 0.2, w = 0, T = 50000: none puts 5000 + 10000 on one shard; target 1.5 exactly.
    c.target = 1.5;
    CHECK(MustProject(c, HotKey{0.2, 0.0}).advice == Strategy::kNone);
  }
  SECTION("a target under the background fits nothing") {
    c.target = 0.4;  // under even the background: nothing fits
    CHECK(MustProject(c, HotKey{0.2, 0.1}).advice == Strategy::kIsolate);
  }
}

TEST_CASE("Model: with no hot traffic (h = 0) every shard carries T/N", "[model]") {
  const Projection p = MustProject(Cluster{}, HotKey{0.0, 0.5});
  // B = 6250; cache and split_cache still add the refresh reads A/interval = 50.
  CheckRow(Row(p, Strategy::kNone), 1, 0.625, 0.625);
  CheckRow(Row(p, Strategy::kCache), 1, 0.63, 0.625);
  CheckRow(Row(p, Strategy::kReplicate), 4, 0.625, 0.625);
  CheckRow(Row(p, Strategy::kSplit), 8, 0.625, 0.625);
  CheckRow(Row(p, Strategy::kSplitCache), 8, 0.63, 0.63);
  CHECK(p.advice == Strategy::kNone);
}

TEST_CASE("Model: a read-only key (w = 0) is helped by cache and replicate, not split", "[model]") {
  const Projection p = MustProject(Cluster{}, HotKey{0.2, 0.0});
  CheckRow(Row(p, Strategy::kCache), 1, 0.505, 0.5);         // 5000 + 0 + 50
  CheckRow(Row(p, Strategy::kReplicate), 4, 0.75, 0.5);      // 5000 + 10000/4
  CheckRow(Row(p, Strategy::kSplit), 8, 1.5, 1.5);           // 5000 + 0 + 10000
  CheckRow(Row(p, Strategy::kSplitCache), 8, 0.505, 0.505);  // 5000 + 0 + 50
}

TEST_CASE("Model: a write-only key (w = 1) is helped only by split", "[model]") {
  Cluster c;
  c.order = {Strategy::kNone, Strategy::kCache, Strategy::kReplicate, Strategy::kSplit};
  const Projection p = MustProject(c, HotKey{0.2, 1.0});
  CheckRow(Row(p, Strategy::kCache), 1, 1.505, 0.5);    // 5000 + 10000 + 50
  CheckRow(Row(p, Strategy::kReplicate), 4, 1.5, 0.5);  // every copy applies every write
  CheckRow(Row(p, Strategy::kSplit), 8, 0.625, 0.625);  // 5000 + 10000/8
  CHECK(p.advice == Strategy::kSplit);
}

TEST_CASE("Model: a split over fewer shards than N leaves the others at B", "[model]") {
  Cluster c;
  c.split = 2;
  const Projection p = MustProject(c, HotKey{0.2, 0.1});
  // 5000 + 1000/2 + 9000 = 14500 on 2 shards; split_cache 5000 + 500 + 50 = 5550.
  CheckRow(Row(p, Strategy::kSplit), 2, 1.45, 0.5);
  CheckRow(Row(p, Strategy::kSplitCache), 2, 0.555, 0.5);
}

TEST_CASE("Model: one replica and a split into one are the same as doing nothing", "[model]") {
  Cluster c;
  c.replicas = 1;
  c.split = 1;
  const Projection p = MustProject(c, HotKey{0.3, 0.4});
  const StrategyLoad& none = Row(p, Strategy::kNone);
  for (Strategy s : {Strategy::kReplicate, Strategy::kSplit}) {
    INFO(StrategyName(s));
    const StrategyLoad& row = Row(p, s);
    for (int i = 0; i < 8; ++i) CHECK(row.shard_loads[i] == Approx(none.shard_loads[i]));
  }
}

TEST_CASE("Model: isolate is advised when nothing fits", "[model]") {
  // h = 0.9, w = 0.5, A = 10000: H = 45000, Hr = Hw = 22500, B = 625. The cheapest of the
  // five, split_cache, still puts 625 + 2812.5 + 10000 = 13437.5 on each shard.
  Cluster c;
  c.app_servers = 10000;
  const Projection p = MustProject(c, HotKey{0.9, 0.5});
  CHECK(Row(p, Strategy::kSplitCache).busiest == Approx(1.34375));
  CHECK(p.advice == Strategy::kIsolate);
  CHECK(p.loads.size() == 5);  // no row for isolate itself
}

TEST_CASE("Model: isolate is advised when the background alone exceeds the target", "[model]") {
  Cluster c;
  c.ops = 80000;  // B = 80000 * 0.99 / 8 = 9900 > 8000 whatever happens to the key
  const Projection p = MustProject(c, HotKey{0.01, 0.1});
  CHECK(Row(p, Strategy::kNone).least_busy == Approx(0.99));
  CHECK(p.advice == Strategy::kIsolate);
}

TEST_CASE("Model: ProjectMeasured agrees with Project given B = T(1-h)/N and H = T*h", "[model]") {
  Cluster c;
  c.shards = 16;
  c.replicas = 3;
  c.split = 5;
  c.ops = 123456;
  for (double h : {0.0, 0.01, 0.2, 0.5, 1.0}) {
    for (double w : {0.0, 0.1, 0.7, 1.0}) {
      INFO("h=" << h << " w=" << w);
      const Projection a = MustProject(c, HotKey{h, w});
      Cluster measured = c;
      measured.ops = -1;  // ignored by ProjectMeasured
      absl::StatusOr<Projection> b =
          ProjectMeasured(measured, c.ops * (1 - h) / c.shards, c.ops * h, w);
      REQUIRE(b.ok());
      CHECK(a.advice == b->advice);
      REQUIRE(a.loads.size() == b->loads.size());
      for (size_t i = 0; i < a.loads.size(); ++i) {
        CHECK(a.loads[i].strategy == b->loads[i].strategy);
        CHECK(a.loads[i].busiest == Approx(b->loads[i].busiest));
        CHECK(a.loads[i].least_busy == Approx(b->loads[i].least_busy));
        CHECK(b->loads[i].shard_loads.empty());  // busiest and least busy only
      }
    }
  }
}

TEST_CASE(
    "Model: ProjectMeasured's O(1) busiest and least busy shard equal the max and min of "
    "every shard's load",
    "[model]") {
  // Every shard's load by the formulas of shard_model.h, the long way.
  auto shard_loads = [](const Cluster& c, Strategy s, double b, double h, double w) {
    const double hr = h * (1 - w), hw = h * w, refresh = c.app_servers / c.refresh_seconds;
    int touched = 1;
    double extra = h;
    if (s == Strategy::kCache) extra = hw + refresh;
    if (s == Strategy::kReplicate) touched = c.replicas, extra = hr / c.replicas + hw;
    if (s == Strategy::kSplit) touched = c.split, extra = hw / c.split + hr;
    if (s == Strategy::kSplitCache) touched = c.split, extra = hw / c.split + refresh;
    std::vector<double> loads(c.shards, b / c.capacity);
    for (int i = 0; i < touched; ++i) loads[i] = (b + extra) / c.capacity;
    return loads;
  };
  int checked = 0;
  for (int shards : {1, 2, 3, 8, 100, Cluster::kMaxShards}) {
    for (int k : {1, 2, shards}) {  // replicas and split: one, some, every shard
      if (k > shards) continue;
      Cluster c;
      c.shards = shards;
      c.replicas = k;
      c.split = shards + 1 - k;
      c.capacity = 7000;
      for (double b : {0.0, 3.5, 5000.0, 1e9}) {
        for (double h : {0.0, 1.0, 12345.0, 1e9}) {
          for (double w : {0.0, 0.25, 1.0}) {
            absl::StatusOr<Projection> p = ProjectMeasured(c, b, h, w);
            REQUIRE(p.ok());
            for (const StrategyLoad& l : p->loads) {
              const std::vector<double> all = shard_loads(c, l.strategy, b, h, w);
              INFO("N=" << shards << " k=" << k << " b=" << b << " h=" << h << " w=" << w
                        << " strategy " << StrategyName(l.strategy));
              CHECK(l.busiest == *std::max_element(all.begin(), all.end()));
              CHECK(l.least_busy == *std::min_element(all.begin(), all.end()));
              ++checked;
            }
          }
        }
      }
    }
  }
  CHECK(checked > 1000);
}

TEST_CASE("Model: ProjectShare is ProjectMeasured on share * shard ops and the rest", "[model]") {
  const Cluster c;
  for (double share : {0.0, 0.05, 0.3, 0.9, 1.0}) {
    for (double w : {0.0, 0.5, 0.95}) {
      INFO("share " << share << " writes " << w);
      const double shard_ops = 7400;
      absl::StatusOr<Projection> a = ProjectShare(c, shard_ops, share, w);
      absl::StatusOr<Projection> b =
          ProjectMeasured(c, shard_ops - share * shard_ops, share * shard_ops, w);
      REQUIRE(a.ok());
      REQUIRE(b.ok());
      CHECK(a->advice == b->advice);
      REQUIRE(a->loads.size() == b->loads.size());
      for (size_t i = 0; i < a->loads.size(); ++i) {
        CHECK(a->loads[i].busiest == b->loads[i].busiest);
        CHECK(a->loads[i].least_busy == b->loads[i].least_busy);
      }
    }
  }
  for (double bad : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    absl::StatusOr<Projection> p = ProjectShare(c, 1000, bad, 0.5);
    REQUIRE_FALSE(p.ok());
    CHECK_THAT(std::string(p.status().message()), Contains("hot_share must be in [0, 1]"));
  }
}

// The Redis with headroom: 20,000 ops/s at 3% busy, a key at 30% with 5% writes.
// Its capacity is 20000 / 0.03 = 666,667 ops/s, so with no fix the shard stays at 0.03
// (where the configured 10,000 ops/s projected 2.0 and advised isolate).
TEST_CASE("Model: ProjectBusy takes the shard's busy fraction as the load with no fix", "[model]") {
  Cluster c;
  c.target = 0.8;
  absl::StatusOr<Projection> p = ProjectBusy(c, 0.03, 20000, 0.3, 0.05);
  REQUIRE(p.ok());
  CHECK(p->advice == Strategy::kNone);
  CHECK(Row(*p, Strategy::kNone).busiest == Approx(0.03));
  // The same shard at 90% busy: capacity 20000 / 0.9 = 22,222. cache: B + Hw + A/interval =
  // 14000 + 300 + 50 = 14350 -> 0.6458.
  p = ProjectBusy(c, 0.9, 20000, 0.3, 0.05);
  REQUIRE(p.ok());
  CHECK(Row(*p, Strategy::kNone).busiest == Approx(0.9));
  CHECK(Row(*p, Strategy::kCache).busiest == Approx(14350.0 * 0.9 / 20000));
  CHECK(p->advice == Strategy::kCache);
  // Agrees with ProjectShare at the measured capacity.
  Cluster measured = c;
  measured.capacity = 20000 / 0.9;
  absl::StatusOr<Projection> q = ProjectShare(measured, 20000, 0.3, 0.05);
  REQUIRE(q.ok());
  for (size_t i = 0; i < p->loads.size(); ++i) {
    CHECK(p->loads[i].busiest == Approx(q->loads[i].busiest));
  }
  // An idle shard: every load 0, no fix.
  p = ProjectBusy(c, 0, 20000, 0.3, 0.05);
  REQUIRE(p.ok());
  CHECK(p->advice == Strategy::kNone);
  for (const StrategyLoad& l : p->loads) CHECK(l.busiest == 0);
  // The configured capacity plays no part, even an invalid one.
  c.capacity = -1;
  CHECK(ProjectBusy(c, 0.5, 1000, 0.3, 0.5).ok());
  CHECK_THAT(std::string(ProjectBusy(c, -0.1, 1000, 0.3, 0.5).status().message()),
             Contains("busy must be >= 0"));
  CHECK_THAT(std::string(ProjectBusy(c, 0.5, 0, 0.3, 0.5).status().message()),
             Contains("shard_ops must be a positive"));
  CHECK_THAT(std::string(ProjectBusy(c, 0.5, 1000, 1.3, 0.5).status().message()),
             Contains("hot_share must be in [0, 1]"));
}

TEST_CASE("Model: strategy names round-trip and unknown names are rejected", "[model]") {
  for (Strategy s : {Strategy::kNone, Strategy::kCache, Strategy::kReplicate, Strategy::kSplit,
                     Strategy::kSplitCache, Strategy::kIsolate}) {
    absl::StatusOr<Strategy> back = ParseStrategy(StrategyName(s));
    REQUIRE(back.ok());
    CHECK(*back == s);
  }
  CHECK(StrategyName(Strategy::kSplitCache) == "split_cache");
  absl::StatusOr<Strategy> bad = ParseStrategy("Replicate");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "\"Replicate\" is not a strategy (none, cache, replicate, split, split_cache, isolate)");
  CHECK_FALSE(ParseStrategy("").ok());
}

// Expects Project() to fail with InvalidArgument and a message containing `needle`.
void ExpectInvalid(const Cluster& c, const HotKey& k, const std::string& needle) {
  absl::StatusOr<Projection> p = Project(c, k);
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(p.status().message()), Contains(needle));
}

TEST_CASE("Model: invalid clusters and keys are rejected with a clear message", "[model]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const HotKey ok_key{0.2, 0.1};
  CHECK(Cluster{}.Validate().ok());

  Cluster c;
  SECTION("shares outside [0, 1]") {
    ExpectInvalid(c, HotKey{-0.1, 0.1}, "share must be in [0, 1]");
    ExpectInvalid(c, HotKey{1.5, 0.1}, "share must be in [0, 1]");
    ExpectInvalid(c, HotKey{nan, 0.1}, "share must be in [0, 1]");
    ExpectInvalid(c, HotKey{0.2, 2.0}, "write_share must be in [0, 1]");
    ExpectInvalid(c, HotKey{0.2, -0.0001}, "write_share");
  }
  SECTION("a shard count the model cannot hold") {
    c.shards = Cluster::kMaxShards + 1;
    ExpectInvalid(c, ok_key, "shards must be in [1, 10000]");
    c.shards = 0;
    ExpectInvalid(c, ok_key, "shards must be in [1, 10000]");
  }
  SECTION("non-positive rates") {
    c.ops = 0;
    ExpectInvalid(c, ok_key, "ops must be a positive");
    c = Cluster{};
    c.ops = inf;
    ExpectInvalid(c, ok_key, "ops must be a positive");
    c = Cluster{};
    c.capacity = -5;
    ExpectInvalid(c, ok_key, "capacity");
    c = Cluster{};
    c.refresh_seconds = 0;
    ExpectInvalid(c, ok_key, "refresh_seconds");
    c = Cluster{};
    c.target = 0;
    ExpectInvalid(c, ok_key, "target");
    c = Cluster{};
    c.app_servers = 0;
    ExpectInvalid(c, ok_key, "app_servers");
    c = Cluster{};
    c.shards = 0;
    ExpectInvalid(c, ok_key, "shards must be in [1, 10000]");
  }
  SECTION("R and S outside [1, N]") {
    c.replicas = 0;
    ExpectInvalid(c, ok_key, "replicas must be in [1, shards=8], got 0");
    c.replicas = 9;
    ExpectInvalid(c, ok_key, "replicas must be in [1, shards=8], got 9");
    c = Cluster{};
    c.split = 0;
    ExpectInvalid(c, ok_key, "split must be in [1, shards=8]");
    c.split = 9;
    ExpectInvalid(c, ok_key, "split must be in [1, shards=8]");
  }
  SECTION("bad orders") {
    c.order = {};
    ExpectInvalid(c, ok_key, "at least one strategy");
    c.order = {Strategy::kCache, Strategy::kSplit, Strategy::kCache};
    ExpectInvalid(c, ok_key, "'cache' more than once");
    c.order = {Strategy::kNone, Strategy::kIsolate};
    ExpectInvalid(c, ok_key, "isolate");
  }
  SECTION("ProjectMeasured rejects negative or non-finite rates") {
    CHECK_FALSE(ProjectMeasured(c, -1, 100, 0.1).ok());
    CHECK_FALSE(ProjectMeasured(c, 100, -1, 0.1).ok());
    CHECK_FALSE(ProjectMeasured(c, nan, 100, 0.1).ok());
    CHECK_FALSE(ProjectMeasured(c, 100, inf, 0.1).ok());
    CHECK_FALSE(ProjectMeasured(c, 100, 100, 1.1).ok());
    c.split = 20;
    CHECK_FALSE(ProjectMeasured(c, 100, 100, 0.1).ok());
  }
}

}  // namespace
}  // namespace hotkey::model
