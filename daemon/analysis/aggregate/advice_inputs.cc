#include "hotkey/aggregate/advice_inputs.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hotkey::aggregate {

aggregate::ModelInputs AdviceInputs(const config::DaemonOptions& options,
                                    const model::Cluster& cluster, const std::string& shard_address,
                                    const shard::Measurement* last, uint64_t answers) {
  aggregate::ModelInputs in;
  in.cluster = cluster;
  in.shard_asked = !shard_address.empty();
  in.measure_capacity = in.shard_asked && !options.cluster_given.capacity;
  in.measure_app_servers = !options.cluster_given.app_servers;
  if (!in.shard_asked) return in;
  if (last == nullptr) {
    in.shard_error = "not asked yet";
    return in;
  }
  in.shard_up = last->status.ok();
  if (!in.shard_up) in.shard_error = std::string(last->status.message());
  if (last->rejected) in.shard_rejected_reason = std::string(shard::RejectionName(*last->rejected));
  if (last->reading) in.server = last->reading->server;
  in.shard_cpus = last->cpus;
  in.cpus_origin = std::string(shard::CpusSourceName(last->cpus_source));
  if (last->load) {
    in.shard_answers = answers;
    in.shard_busy = last->load->busy;
    in.shard_ops = last->load->ops_per_second;
  }
  if (last->cluster.cluster_mode && last->cluster.shards > 0 && !options.cluster_given.shards) {
    in.cluster.shards = std::min(last->cluster.shards, model::Cluster::kMaxShards);
    in.cluster.replicas = std::min(in.cluster.replicas, in.cluster.shards);
    in.cluster.split = std::min(in.cluster.split, in.cluster.shards);
    in.shards = InputOrigin::kMeasured;
  }
  return in;
}

std::string DescribeAdviceInputs(const config::DaemonOptions& options,
                                 const std::string& shard_address) {
  const config::DaemonOptions::ClusterGiven& given = options.cluster_given;
  std::vector<std::string> flags;
  if (!given.capacity && shard_address.empty()) flags.push_back("--cluster.capacity");
  if (!given.shards) flags.push_back("--cluster.shards");
  std::string out =
      shard_address.empty()
          ? "no shard is asked (no --tap.interface or --shard.address): the capacity is "
            "configured"
          : absl::StrCat("the capacity is measured from the shard at ", shard_address,
                         " (a Redis Cluster gives the shard count too)");
  if (!flags.empty()) {
    absl::StrAppend(&out, "; set ", absl::StrJoin(flags, " and "),
                    " to your cluster's where they are not measured");
  }
  return out;
}

}  // namespace hotkey::aggregate
