// Tests of the advice's inputs from the flags and the shard's measurement
// (daemon/program/daemon/advice_inputs.h).

#include "hotkey/aggregate/advice_inputs.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

namespace hotkey::aggregate {
namespace {

shard::Measurement Answer() {
  shard::Measurement m;
  shard::Reading r;
  r.server = "redis 7.0.15";
  m.reading = r;
  m.load = shard::Load{2000, 0.25, 8000};
  m.cpus = 0.5;
  m.cpus_source = shard::CpusSource::kCgroupQuota;
  return m;
}

// The value of `key` in DescribeAdviceInputs' fields.
std::string Field(const std::vector<std::pair<std::string, std::string>>& fields,
                  const std::string& key) {
  for (const auto& [k, v] : fields) {
    if (k == key) return v;
  }
  FAIL("no field " << key);
  return "";
}

TEST_CASE("AdviceInputs: no shard asked and no --cluster.capacity: the headroom is unknown",
          "[daemon][advice]") {
  config::DaemonOptions o;
  const aggregate::ModelInputs in = AdviceInputs(o, o.cluster, "", nullptr);
  CHECK_FALSE(in.shard_asked);
  CHECK_FALSE(in.measure_capacity);
  CHECK(in.measure_app_servers);
  CHECK(in.capacity == InputOrigin::kUnknown);
  CHECK(std::isnan(in.cluster.capacity));
  CHECK(in.capacity_reason.find("--cluster.capacity is not given") != std::string::npos);
  CHECK(in.shards == InputOrigin::kConfigured);
  const auto fields = DescribeAdviceInputs(o, "");
  CHECK(Field(fields, "capacity") == "unknown");
  CHECK(Field(fields, "capacity_reason").find("no shard is asked") != std::string::npos);

  SECTION("--cluster.capacity given: configured, and the start log says so") {
    o.cluster_given.capacity = true;
    const aggregate::ModelInputs given = AdviceInputs(o, o.cluster, "", nullptr);
    CHECK(given.capacity == InputOrigin::kConfigured);
    CHECK(given.cluster.capacity == o.cluster.capacity);
    CHECK(given.capacity_reason == "--cluster.capacity given");
    // Beside a shard too: the flag wins, and the log no longer says "measured".
    const auto beside = DescribeAdviceInputs(o, "127.0.0.1:6379");
    CHECK(Field(beside, "capacity") == "configured");
    CHECK(Field(beside, "capacity_reason") == "--cluster.capacity given");
  }
  SECTION("--demo: its synthetic shard serves the configured capacity") {
    o.demo = true;
    const aggregate::ModelInputs demo = AdviceInputs(o, o.cluster, "", nullptr);
    CHECK(demo.capacity == InputOrigin::kConfigured);
    CHECK(demo.capacity_reason.find("--demo") != std::string::npos);
  }
}

TEST_CASE("AdviceInputs: a shard that answers gives its load; one that fails says why",
          "[daemon][advice]") {
  config::DaemonOptions o;
  const aggregate::ModelInputs before = AdviceInputs(o, o.cluster, "127.0.0.1:6379", nullptr);
  CHECK(before.shard_asked);
  CHECK_FALSE(before.shard_up);
  CHECK(before.shard_error == "not asked yet");
  CHECK(before.measure_capacity);
  CHECK(std::isnan(before.shard_busy));
  CHECK(before.capacity == InputOrigin::kUnknown);  // until the aggregator measures it
  CHECK(Field(DescribeAdviceInputs(o, "127.0.0.1:6379"), "capacity") == "measured");

  shard::Measurement ok = Answer();
  ok.time = absl::FromUnixSeconds(105);
  const aggregate::ModelInputs in =
      AdviceInputs(o, o.cluster, "127.0.0.1:6379", &ok, 1, absl::FromUnixSeconds(100));
  CHECK(in.shard_up);
  CHECK(in.server == "redis 7.0.15");
  CHECK(in.shard_busy == 0.25);
  CHECK(in.shard_cpus == 0.5);
  CHECK(in.cpus_origin == "cgroup_quota");
  CHECK(in.shard_ops == 2000);
  CHECK(in.shards == InputOrigin::kConfigured);  // standalone: the shard count is not known
  CHECK(in.shards_reason.find("not in a Redis Cluster") != std::string::npos);
  CHECK(in.shard_standalone);
  CHECK(in.shard_answers == 1);
  CHECK(in.shard_load_start == absl::FromUnixSeconds(100));
  CHECK(in.shard_load_end == absl::FromUnixSeconds(105));

  shard::Measurement bad;
  bad.status = absl::UnavailableError("connection refused");
  const aggregate::ModelInputs down = AdviceInputs(o, o.cluster, "127.0.0.1:6379", &bad);
  CHECK_FALSE(down.shard_up);
  CHECK(down.shard_error == "connection refused");
  CHECK(std::isnan(down.shard_busy));
  CHECK(down.capacity == InputOrigin::kUnknown);
  CHECK(down.capacity_reason.find("does not answer: connection refused") != std::string::npos);
}

TEST_CASE("AdviceInputs: a Redis Cluster gives the shard count, capping replicas and split",
          "[daemon][advice]") {
  config::DaemonOptions o;
  o.cluster.shards = 8;
  o.cluster.replicas = 4;
  o.cluster.split = 8;
  shard::Measurement m = Answer();
  m.cluster.cluster_mode = true;
  m.cluster.shards = 3;
  m.reading->cluster_mode = true;
  aggregate::ModelInputs in = AdviceInputs(o, o.cluster, "127.0.0.1:7000", &m);
  CHECK(in.shards == InputOrigin::kMeasured);
  CHECK(in.cluster.shards == 3);
  CHECK(in.cluster.replicas == 3);
  CHECK(in.cluster.split == 3);
  model::Cluster shape = in.cluster;
  shape.capacity = 1;  // unknown (NaN) until the aggregator measures it
  CHECK(shape.Validate().ok());
  CHECK_FALSE(in.shard_standalone);

  SECTION("flags given override every measurement") {
    o.cluster_given = {.capacity = true, .shards = true, .app_servers = true};
    in = AdviceInputs(o, o.cluster, "127.0.0.1:7000", &m);
    CHECK(in.shards == InputOrigin::kConfigured);
    CHECK(in.cluster.shards == 8);
    CHECK_FALSE(in.measure_capacity);
    CHECK_FALSE(in.measure_app_servers);
  }
}

}  // namespace
}  // namespace hotkey::aggregate
