// The shard load model's inputs, from the flags and what the shard says about itself.
//
// A --cluster.* flag given on the command line always wins. Otherwise the shard count comes
// from the cluster's own topology (a Redis Cluster: its primaries serving slots), and the
// aggregator measures the capacity (from the shard's busy fraction) and the app servers
// (from the client hosts the sources see) at each tick (model_inputs.h). Replicas
// and sub-keys are capped at the shard count the model uses, so a measured cluster smaller
// than the configured R or S still gives a valid model.
//
// Pure functions; internal to hotkey::daemon.

#ifndef HOTKEY_AGGREGATE_ADVICE_INPUTS_H_
#define HOTKEY_AGGREGATE_ADVICE_INPUTS_H_

#include <string>

#include "hotkey/aggregate/model_inputs.h"
#include "hotkey/config/options.h"
#include "hotkey/shard/prober.h"

namespace hotkey::aggregate {

// `cluster` is the configured cluster (the flags); `shard_address` the shard asked (empty:
// none); `last` the shard's last measurement (null: none yet), and `answers` how many of
// its measurements had a load (ModelInputs::shard_answers).
aggregate::ModelInputs AdviceInputs(const config::DaemonOptions& options,
                                    const model::Cluster& cluster, const std::string& shard_address,
                                    const shard::Measurement* last, uint64_t answers = 0);

// What the start log says of the inputs: which are measured and, for the configured ones,
// the flags to set.
std::string DescribeAdviceInputs(const config::DaemonOptions& options,
                                 const std::string& shard_address);

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_ADVICE_INPUTS_H_
