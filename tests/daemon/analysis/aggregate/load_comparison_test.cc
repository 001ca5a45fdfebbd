// Tests of LoadComparison (aggregate/load_comparison.h): which projection the measured loads
// are compared with, how each fix's row fills and starts over, staleness on the injected
// time, read errors. Its route and the page's table: tests/daemon/serving/web/measured_test.cc.

#include "hotkey/aggregate/load_comparison.h"

#include <memory>
#include <string>

#include <prometheus/text_serializer.h>
#include <catch2/catch.hpp>

#include "checkers.h"

namespace hotkey::aggregate {
namespace {

using Catch::Matchers::Contains;
using model::Strategy;
using testing::Exposition;
using testing::Json;
using testing::ParseExposition;
using testing::ParseJson;

// The families in the text format, as /metrics serves them.
std::string RenderText(const LoadComparison& cmp) {
  return prometheus::TextSerializer().Serialize(cmp.Collect());
}

const absl::Time kT0 = absl::FromUnixSeconds(1'764'604'800);

// The lab's cluster: 8 shards of 1,000 ops/s, 8 app servers refreshing every second.
model::Cluster LabCluster() {
  model::Cluster c;
  c.shards = 8;
  c.capacity = 1000;
  c.app_servers = 8;
  c.replicas = 4;
  c.split = 8;
  return c;
}

// A shard serving `shard_ops` decayed ops/s at `time`, where `key` (hot) takes `share` of
// them with write ratio `w`, next to a cooler hot key "other" at 0.12.
Snapshot ShardAt(absl::Time time, double shard_ops, const std::string& key, double share,
                 double w) {
  Snapshot s;
  s.time = time;
  s.ops_per_second[0] = shard_ops * 0.9;
  s.ops_per_second[1] = shard_ops * 0.1;
  KeySnapshot k;
  k.label = key;
  k.share = share;
  k.write_ratio = w;
  k.hot = true;
  s.keys.push_back(k);
  KeySnapshot other;
  other.label = "other";
  other.share = 0.12;
  other.write_ratio = 0.5;
  other.hot = true;
  s.keys.push_back(other);
  return s;
}

config::MeasuredLoads Measured(absl::Time t, Strategy s, std::vector<double> ops,
                               std::string key = "") {
  config::MeasuredLoads m;
  m.time = t;
  m.strategy = s;
  m.ops_per_second = std::move(ops);
  m.key = std::move(key);
  return m;
}

absl::StatusOr<std::optional<config::MeasuredLoads>> News(config::MeasuredLoads m) {
  return std::optional<config::MeasuredLoads>(std::move(m));
}

Json MustParse(const std::string& body) {
  std::string error;
  std::optional<Json> j = ParseJson(body, &error);
  INFO(error << "\n" << body.substr(0, 500));
  REQUIRE(j.has_value());
  return *j;
}

const Json& Fix(const Json& answer, const std::string& strategy) {
  for (const Json& f : answer["fixes"].array) {
    if (f["strategy"].string == strategy) return f;
  }
  FAIL("no fix " << strategy);
  throw;  // unreachable
}

// The lab's first mix: the key at 1,500 of the shard's 1,937.5 ops/s, 5% writes.
constexpr double kShardOps = 1937.5;
constexpr double kShare = 1500 / 1937.5;

TEST_CASE("LoadComparison: the projection is the daemon's advice figures while no fix is in force",
          "[daemon][load_comparison]") {
  const model::Cluster c = LabCluster();
  LoadComparison cmp(config::MeasuredLoadsOptions{"/run/loads.json", absl::Seconds(10)});
  cmp.Observe(ShardAt(kT0, kShardOps, "user:42", kShare, 0.05), c);
  cmp.Update(News(Measured(kT0 + absl::Seconds(1), Strategy::kNone,
                           {1940, 437, 437, 437, 437, 437, 437, 438})));
  const Json j = MustParse(cmp.Json(c, kT0 + absl::Seconds(2)));
  REQUIRE(j["projection"].kind == Json::kObject);
  CHECK(j["projection"]["key"].string == "user:42");
  CHECK(j["projection"]["advice"].string == "cache");
  // What model::ProjectShare gives for those figures, the aggregator's call for the advice.
  const absl::StatusOr<model::Projection> p = model::ProjectShare(c, kShardOps, kShare, 0.05);
  REQUIRE(p.ok());
  for (const model::StrategyLoad& l : p->loads) {
    const Json& f = Fix(j, std::string(model::StrategyName(l.strategy)));
    INFO(model::StrategyName(l.strategy));
    CHECK(f["projected"]["busiest"].number == Approx(l.busiest));
    CHECK(f["projected"]["least_busy"].number == Approx(l.least_busy));
  }
  // The model's seed figures: no fix 194%, cache 52%, the others at 44%.
  CHECK(Fix(j, "none")["projected"]["busiest"].number == Approx(1.9375));
  CHECK(Fix(j, "cache")["projected"]["busiest"].number == Approx(0.5205).epsilon(1e-3));
  CHECK(Fix(j, "none")["projected"]["least_busy"].number == Approx(0.4375));
  // Beside it, what was measured under no fix: busiest shard 0 at 194%, least 43.7%.
  const Json& none = Fix(j, "none");
  CHECK(none["in_force"].boolean);
  CHECK(none["measured"]["busiest"].number == Approx(1.94));
  CHECK(none["measured"]["busiest_shard"].number == 0);
  CHECK(none["measured"]["least_busy"].number == Approx(0.437));
  CHECK(none["measured"]["age_seconds"].number == Approx(1));
  CHECK_FALSE(none["measured"]["stale"].boolean);
  CHECK(Fix(j, "cache")["measured"].kind == Json::kNull);
  CHECK(j["measurement"]["loads"].array.size() == 8);
  CHECK(j["measurement"]["loads"].array[1].number == Approx(0.437));
}

TEST_CASE("LoadComparison: figures noted after the measurement are not in its projection",
          "[daemon][load_comparison]") {
  // Once a fix is applied the shard sees fixed traffic: the daemon's figures then would
  // project the fixes on top of a fix. A no-fix measurement taken at t adopts only what was
  // noted at or before t.
  const model::Cluster c = LabCluster();
  LoadComparison cmp(config::MeasuredLoadsOptions{"f", absl::Seconds(10)});
  cmp.Observe(ShardAt(kT0, kShardOps, "user:42", kShare, 0.05), c);
  cmp.Observe(ShardAt(kT0 + absl::Seconds(2), 520, "user:42", 83.0 / 520, 0.9), c);  // cached
  cmp.Update(News(Measured(kT0 + absl::Seconds(1), Strategy::kNone, {1940, 437})));
  const Json j = MustParse(cmp.Json(c, kT0 + absl::Seconds(3)));
  CHECK(j["projection"]["shard_ops"].number == Approx(kShardOps));
  CHECK(j["projection"]["time"].string == "2025-12-01T16:00:00.000Z");
  CHECK(Fix(j, "none")["projected"]["busiest"].number == Approx(1.9375));
}

TEST_CASE("LoadComparison: over a measuring interval, the projection is of the mean figures",
          "[daemon][load_comparison]") {
  const model::Cluster c = LabCluster();
  LoadComparison cmp(config::MeasuredLoadsOptions{"f", absl::Seconds(10)});
  // Before the interval (not averaged), two in it, one after the measurement (not either).
  cmp.Observe(ShardAt(kT0, 500, "user:42", 0.5, 0.5), c);
  cmp.Observe(ShardAt(kT0 + absl::Seconds(3), 1800, "user:42", 1400 / 1800.0, 0.05), c);
  cmp.Observe(ShardAt(kT0 + absl::Seconds(4), 2075, "user:42", 1600 / 2075.0, 0.05), c);
  cmp.Observe(ShardAt(kT0 + absl::Seconds(6), 520, "user:42", 0.16, 0.9), c);
  config::MeasuredLoads m = Measured(kT0 + absl::Seconds(5), Strategy::kNone, {1940, 437});
  m.interval = absl::Seconds(2);
  cmp.Update(News(m));
  const Json j = MustParse(cmp.Json(c, kT0 + absl::Seconds(6)));
  CHECK(j["projection"]["samples"].number == 2);
  CHECK(j["projection"]["shard_ops"].number == Approx(1937.5));
  CHECK(j["projection"]["hot_share"].number == Approx(kShare));
  CHECK(j["projection"]["write_share"].number == Approx(0.05));
  CHECK(j["projection"]["time"].string == "2025-12-01T16:00:04.000Z");
  CHECK(Fix(j, "none")["projected"]["busiest"].number == Approx(1.9375));
  CHECK(Fix(j, "cache")["projected"]["busiest"].number == Approx(0.5205).epsilon(1e-3));
}

TEST_CASE("LoadComparison: each fix's row holds its last measurement; no fix starts over",
          "[daemon][load_comparison]") {
  const model::Cluster c = LabCluster();
  LoadComparison cmp(config::MeasuredLoadsOptions{"f", absl::Seconds(10)});
  cmp.Observe(ShardAt(kT0, kShardOps, "user:42", kShare, 0.05), c);
  cmp.Update(News(Measured(kT0 + absl::Seconds(1), Strategy::kNone, {1940, 437})));
  cmp.Observe(ShardAt(kT0 + absl::Seconds(2), 520, "user:42", 0.16, 0.9), c);
  cmp.Update(News(Measured(kT0 + absl::Seconds(3), Strategy::kCache, {530, 437})));
  cmp.Update(News(Measured(kT0 + absl::Seconds(4), Strategy::kCache, {521, 436})));
  Json j = MustParse(cmp.Json(c, kT0 + absl::Seconds(5)));
  // The projection stays the unfixed one; cache's row is its last measurement.
  CHECK(j["projection"]["shard_ops"].number == Approx(kShardOps));
  CHECK(Fix(j, "cache")["in_force"].boolean);
  CHECK_FALSE(Fix(j, "none")["in_force"].boolean);
  CHECK(Fix(j, "cache")["measured"]["busiest"].number == Approx(0.521));
  CHECK(Fix(j, "cache")["projected"]["busiest"].number == Approx(0.5205).epsilon(1e-3));
  CHECK(Fix(j, "none")["measured"]["busiest"].number == Approx(1.94));
  CHECK(j["measurement"]["strategy"].string == "cache");
  // Back to no fix, with another mix: a new projection, and the fixes' rows are emptied.
  cmp.Observe(ShardAt(kT0 + absl::Seconds(6), kShardOps, "user:42", kShare, 0.95), c);
  cmp.Update(News(Measured(kT0 + absl::Seconds(7), Strategy::kNone, {1938, 437})));
  j = MustParse(cmp.Json(c, kT0 + absl::Seconds(8)));
  CHECK(j["projection"]["write_share"].number == Approx(0.95));
  CHECK(j["projection"]["advice"].string == "split");
  CHECK(Fix(j, "cache")["measured"].kind == Json::kNull);
  CHECK(Fix(j, "none")["measured"]["busiest"].number == Approx(1.938));
}

TEST_CASE("LoadComparison: the key is the measurement's, else the hottest hot key",
          "[daemon][load_comparison]") {
  const model::Cluster c = LabCluster();
  {
    LoadComparison cmp(config::MeasuredLoadsOptions{"f", absl::Seconds(10)});
    cmp.Observe(ShardAt(kT0, kShardOps, "user:42", kShare, 0.05), c);
    cmp.Update(News(Measured(kT0, Strategy::kNone, {1})));
    CHECK(MustParse(cmp.Json(c, kT0))["projection"]["key"].string == "user:42");
  }
  {
    // Named: the first measurement names the key, so the figures noted from then on are its.
    LoadComparison cmp(config::MeasuredLoadsOptions{"f", absl::Seconds(10)});
    cmp.Update(News(Measured(kT0, Strategy::kNone, {1}, "other")));
    cmp.Observe(ShardAt(kT0 + absl::Seconds(1), kShardOps, "user:42", kShare, 0.05), c);
    cmp.Update(News(Measured(kT0 + absl::Seconds(2), Strategy::kNone, {1}, "other")));
    const Json j = MustParse(cmp.Json(c, kT0 + absl::Seconds(2)));
    CHECK(j["projection"]["key"].string == "other");
    CHECK(j["projection"]["hot_share"].number == Approx(0.12));
    CHECK(j["measurement"]["key"].string == "other");
  }
  {
    // A named key the shard does not export: no projection, rather than another key's.
    LoadComparison cmp(config::MeasuredLoadsOptions{"f", absl::Seconds(10)});
    cmp.Update(News(Measured(kT0, Strategy::kNone, {1}, "elsewhere")));
    cmp.Observe(ShardAt(kT0 + absl::Seconds(1), kShardOps, "user:42", kShare, 0.05), c);
    cmp.Update(News(Measured(kT0 + absl::Seconds(2), Strategy::kNone, {1}, "elsewhere")));
    const Json j = MustParse(cmp.Json(c, kT0 + absl::Seconds(2)));
    CHECK(j["projection"].kind == Json::kNull);
    CHECK(Fix(j, "none")["projected"].kind == Json::kNull);
    CHECK(Fix(j, "none")["measured"]["busiest"].number == Approx(0.001));
  }
}

TEST_CASE("LoadComparison: a measurement older than the max age is stale",
          "[daemon][load_comparison]") {
  const model::Cluster c = LabCluster();
  LoadComparison cmp(config::MeasuredLoadsOptions{"f", absl::Seconds(5)});
  cmp.Update(News(Measured(kT0, Strategy::kSplit, {700, 700})));
  Json j = MustParse(cmp.Json(c, kT0 + absl::Seconds(5)));
  CHECK_FALSE(j["measurement"]["stale"].boolean);
  CHECK_FALSE(Fix(j, "split")["measured"]["stale"].boolean);
  j = MustParse(cmp.Json(c, kT0 + absl::Seconds(5) + absl::Milliseconds(1)));
  CHECK(j["measurement"]["stale"].boolean);
  CHECK(Fix(j, "split")["measured"]["stale"].boolean);
  CHECK(j["measurement"]["age_seconds"].number == Approx(5.001));
  CHECK(j["max_age_seconds"].number == 5);
}

TEST_CASE("LoadComparison: a bad file is counted and reported; the last measurement stays",
          "[daemon][load_comparison]") {
  const model::Cluster c = LabCluster();
  LoadComparison cmp(config::MeasuredLoadsOptions{"f", absl::Seconds(5)});
  std::string error;
  std::optional<Exposition> e = ParseExposition(RenderText(cmp), &error);
  REQUIRE(e.has_value());
  CHECK(e->Value("hotkey_measured_loads_last_read_successful") == 1);
  CHECK(e->Value("hotkey_measured_loads_read_errors_total") == 0);
  CHECK(e->types["hotkey_measured_loads_read_errors_total"] == "counter");
  CHECK(e->Find("hotkey_measured_loads_timestamp_seconds").empty());

  cmp.Update(News(Measured(kT0, Strategy::kNone, {400, 500})));
  cmp.Update(absl::InvalidArgumentError("measured loads file \"f\": not JSON"));
  Json j = MustParse(cmp.Json(c, kT0 + absl::Seconds(1)));
  CHECK_FALSE(j["last_read_successful"].boolean);
  CHECK(j["read_errors_total"].number == 1);
  CHECK_THAT(j["last_error"].string, Contains("not JSON"));
  CHECK(j["measurement"]["busiest"].number == Approx(0.5));
  e = ParseExposition(RenderText(cmp), &error);
  REQUIRE(e.has_value());
  CHECK(e->Value("hotkey_measured_loads_last_read_successful") == 0);
  CHECK(e->Value("hotkey_measured_loads_read_errors_total") == 1);
  CHECK(e->Value("hotkey_measured_loads_timestamp_seconds") == 1'764'604'800);
  // Nothing new keeps the state; the next good read clears the error, not the count.
  cmp.Update(std::optional<config::MeasuredLoads>());
  CHECK_FALSE(MustParse(cmp.Json(c, kT0))["last_read_successful"].boolean);
  cmp.Update(News(Measured(kT0 + absl::Seconds(2), Strategy::kNone, {400, 600})));
  j = MustParse(cmp.Json(c, kT0 + absl::Seconds(2)));
  CHECK(j["last_read_successful"].boolean);
  CHECK(j["last_error"].kind == Json::kNull);
  CHECK(j["read_errors_total"].number == 1);
  CHECK(j["measurement"]["busiest"].number == Approx(0.6));
}

TEST_CASE("LoadComparison: keys are arbitrary bytes; the answer stays valid JSON",
          "[daemon][load_comparison]") {
  const model::Cluster c = LabCluster();
  LoadComparison cmp(config::MeasuredLoadsOptions{"f\xff", absl::Seconds(5)});
  const std::string odd = "k\xc3(\"\n";
  cmp.Update(News(Measured(kT0, Strategy::kIsolate, {1}, odd)));
  const Json j = MustParse(cmp.Json(c, kT0));
  // isolate is not in the cluster's order, but was measured: it gets a row, unprojected.
  CHECK(Fix(j, "isolate")["measured"]["busiest"].number == Approx(0.001));
  CHECK(Fix(j, "isolate")["projected"].kind == Json::kNull);
}

}  // namespace
}  // namespace hotkey::aggregate

namespace hotkey::aggregate {
namespace {

TEST_CASE("LoadComparison: measured loads are fractions of the capacity the projection used",
          "[daemon][load_comparison]") {
  // The advice's capacity is measured and moves with the shard's load: the page divides the
  // measurements by the one the projection was made with, not the latest.
  model::Cluster at_projection = LabCluster();
  LoadComparison cmp(config::MeasuredLoadsOptions{"/run/loads.json", absl::Seconds(10)});
  cmp.Observe(ShardAt(kT0, kShardOps, "user:42", kShare, 0.05), at_projection);
  cmp.Update(News(Measured(kT0 + absl::Seconds(1), Strategy::kNone,
                           {1940, 437, 437, 437, 437, 437, 437, 438})));
  cmp.Update(News(Measured(kT0 + absl::Seconds(2), Strategy::kCache,
                           {520, 437, 437, 437, 437, 437, 437, 438})));
  model::Cluster now = at_projection;
  now.capacity = 2 * at_projection.capacity;
  const Json j = MustParse(cmp.Json(now, kT0 + absl::Seconds(3)));
  CHECK(Fix(j, "cache")["measured"]["busiest"].number == Approx(520 / at_projection.capacity));
  CHECK(j["measurement"]["loads"].array[0].number == Approx(520 / at_projection.capacity));
}

}  // namespace
}  // namespace hotkey::aggregate
