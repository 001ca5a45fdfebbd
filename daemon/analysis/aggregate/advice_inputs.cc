#include "hotkey/aggregate/advice_inputs.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace hotkey::aggregate {
namespace {

constexpr char kNoShard[] = "no shard is asked (no --tap.interface or --shard.address)";

}  // namespace

aggregate::ModelInputs AdviceInputs(const config::DaemonOptions& options,
                                    const model::Cluster& cluster, const std::string& shard_address,
                                    const shard::Measurement* last, uint64_t answers,
                                    absl::Time load_start) {
  const config::DaemonOptions::ClusterGiven& given = options.cluster_given;
  aggregate::ModelInputs in;
  in.cluster = cluster;
  in.shard_asked = !shard_address.empty();
  in.measure_capacity = in.shard_asked && !given.capacity;
  in.measure_app_servers = !given.app_servers;
  // The capacity: the flag's; the demo's (its synthetic shard serves the configured
  // capacity); measured by the aggregator from the shard's answers; or unknown.
  if (given.capacity) {
    in.capacity_reason = "--cluster.capacity given";
  } else if (!in.shard_asked && options.demo) {
    in.capacity_reason = "--demo: the demo's shard serves --cluster.capacity";
  } else {
    in.capacity = InputOrigin::kUnknown;
    in.cluster.capacity = std::numeric_limits<double>::quiet_NaN();
    in.capacity_reason =
        in.shard_asked
            ? absl::StrCat("the shard at ", shard_address, " has not yet reported its load")
            : absl::StrCat(kNoShard, " and --cluster.capacity is not given");
  }
  in.shards_reason = given.shards      ? "--cluster.shards given"
                     : !in.shard_asked ? absl::StrCat(kNoShard, ": --cluster.shards")
                                       : "the shard is not in a Redis Cluster: --cluster.shards";
  in.app_servers_reason = given.app_servers ? "--cluster.app-servers given"
                                            : "no client host seen yet: --cluster.app-servers";
  if (!in.shard_asked) return in;
  if (last == nullptr) {
    in.shard_error = "not asked yet";
    return in;
  }
  in.shard_up = last->status.ok();
  if (!in.shard_up) {
    in.shard_error = std::string(last->status.message());
    if (in.measure_capacity) {
      in.capacity_reason =
          absl::StrCat("the shard at ", shard_address, " does not answer: ", in.shard_error);
    }
  }
  if (last->reading) {
    in.server = last->reading->server;
    in.shard_standalone = !last->reading->cluster_mode;
    in.shard_role = std::string(shard::RoleName(last->role));
    if (last->cluster.cluster_mode) in.shard_slots = last->cluster.slots;
  }
  if (last->rejected) in.shard_rejected_reason = std::string(shard::RejectionName(*last->rejected));
  in.shard_cpus = last->cpus;
  in.cpus_origin = std::string(shard::CpusSourceName(last->cpus_source));
  if (last->load) {
    in.shard_answers = answers;
    in.shard_busy = last->load->busy;
    in.shard_ops = last->load->ops_per_second;
    in.shard_load_start = load_start;
    in.shard_load_end = last->time;
  }
  if (last->cluster.cluster_mode && last->cluster.shards > 0 && !given.shards) {
    in.cluster.shards = std::min(last->cluster.shards, model::Cluster::kMaxShards);
    in.cluster.replicas = std::min(in.cluster.replicas, in.cluster.shards);
    in.cluster.split = std::min(in.cluster.split, in.cluster.shards);
    in.shards = InputOrigin::kMeasured;
    in.shards_reason.clear();
  } else if (last->cluster.cluster_mode && !given.shards) {
    in.shards_reason = "the cluster names no primary serving slots: --cluster.shards";
  }
  return in;
}

std::vector<std::pair<std::string, std::string>> DescribeAdviceInputs(
    const config::DaemonOptions& options, const std::string& shard_address) {
  const ModelInputs in = AdviceInputs(options, options.cluster, shard_address, nullptr);
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&out](const char* input, InputOrigin origin, const std::string& reason) {
    out.emplace_back(input, std::string(InputOriginName(origin)));
    out.emplace_back(absl::StrCat(input, "_reason"), reason);
  };
  if (in.measure_capacity) {
    add("capacity", InputOrigin::kMeasured,
        absl::StrCat("the busy fraction of the shard at ", shard_address,
                     " over the rate window, from its second answer on"));
  } else {
    add("capacity", in.capacity, in.capacity_reason);
  }
  if (in.shard_asked && !options.cluster_given.shards) {
    add("shards", InputOrigin::kMeasured,
        absl::StrCat("the topology of the shard at ", shard_address,
                     " if it is in a Redis Cluster, else --cluster.shards"));
  } else {
    add("shards", in.shards, in.shards_reason);
  }
  if (in.measure_app_servers) {
    add("app_servers", InputOrigin::kMeasured,
        "the client hosts the sources see, --cluster.app-servers until one is seen");
  } else {
    add("app_servers", in.app_servers, in.app_servers_reason);
  }
  return out;
}

}  // namespace hotkey::aggregate
