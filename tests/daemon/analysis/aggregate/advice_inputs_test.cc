// Tests of the advice's inputs from the flags and the shard's measurement
// (daemon/program/daemon/advice_inputs.h).

#include "hotkey/aggregate/advice_inputs.h"

#include <cmath>

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

TEST_CASE("AdviceInputs: no shard asked: all configured, client hosts still measured",
          "[daemon][advice]") {
  config::DaemonOptions o;
  const aggregate::ModelInputs in = AdviceInputs(o, o.cluster, "", nullptr);
  CHECK_FALSE(in.shard_asked);
  CHECK_FALSE(in.measure_capacity);
  CHECK(in.measure_app_servers);
  CHECK(in.capacity == InputOrigin::kConfigured);
  CHECK(in.shards == InputOrigin::kConfigured);
  CHECK(in.cluster.capacity == o.cluster.capacity);
  CHECK(DescribeAdviceInputs(o, "").find("--cluster.capacity") != std::string::npos);
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

  const shard::Measurement ok = Answer();
  const aggregate::ModelInputs in = AdviceInputs(o, o.cluster, "127.0.0.1:6379", &ok);
  CHECK(in.shard_up);
  CHECK(in.server == "redis 7.0.15");
  CHECK(in.shard_busy == 0.25);
  CHECK(in.shard_cpus == 0.5);
  CHECK(in.cpus_origin == "cgroup_quota");
  CHECK(in.shard_ops == 2000);
  CHECK(in.shards == InputOrigin::kConfigured);  // standalone: the shard count is not known

  shard::Measurement bad;
  bad.status = absl::UnavailableError("connection refused");
  const aggregate::ModelInputs down = AdviceInputs(o, o.cluster, "127.0.0.1:6379", &bad);
  CHECK_FALSE(down.shard_up);
  CHECK(down.shard_error == "connection refused");
  CHECK(std::isnan(down.shard_busy));
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
  aggregate::ModelInputs in = AdviceInputs(o, o.cluster, "127.0.0.1:7000", &m);
  CHECK(in.shards == InputOrigin::kMeasured);
  CHECK(in.cluster.shards == 3);
  CHECK(in.cluster.replicas == 3);
  CHECK(in.cluster.split == 3);
  CHECK(in.cluster.Validate().ok());

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
