// The shard load model's inputs, from the flags and what the shard says about itself.
//
// A --cluster.* flag given on the command line always wins. Otherwise the shard count comes
// from the cluster's own topology (a Redis Cluster: its primaries serving slots), and the
// aggregator measures the shard's load (its busy fraction) and the app servers (from the
// client hosts the sources see) at each tick (model_inputs.h). With no shard asked and no
// --cluster.capacity the headroom is unknown (--demo excepted: its synthetic shard serves
// --cluster.capacity). Replicas and sub-keys are capped at the shard count the model uses,
// so a measured cluster smaller than the configured R or S still gives a valid model.
//
// Pure functions; internal to hotkey::daemon.

#ifndef HOTKEY_AGGREGATE_ADVICE_INPUTS_H_
#define HOTKEY_AGGREGATE_ADVICE_INPUTS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "hotkey/aggregate/model_inputs.h"
#include "hotkey/config/options.h"
#include "hotkey/shard/prober.h"

namespace hotkey::aggregate {

// `cluster` is the configured cluster (the flags); `shard_address` the shard asked (empty:
// none); `last` the shard's last measurement (null: none yet), `answers` how many of its
// measurements had a load (ModelInputs::shard_answers), and `load_start` when the reading
// before `last` was taken (the start of the interval its load covers).
aggregate::ModelInputs AdviceInputs(const config::DaemonOptions& options,
                                    const model::Cluster& cluster, const std::string& shard_address,
                                    const shard::Measurement* last, uint64_t answers = 0,
                                    absl::Time load_start = absl::InfinitePast());

// What the start log says of each input: its origin as it will be once the shard has
// answered (<input>=measured|configured|unknown) and why (<input>_reason), in that order.
std::vector<std::pair<std::string, std::string>> DescribeAdviceInputs(
    const config::DaemonOptions& options, const std::string& shard_address);

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_ADVICE_INPUTS_H_
