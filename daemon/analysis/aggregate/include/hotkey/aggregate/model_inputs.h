// ModelInputs: the cluster the advice is computed against, and where each figure came from.
//
// The shard load model (model/shard_model.h) needs a shard's capacity, the number of shards
// and the number of app servers. The daemon measures what it can (the shard's own INFO or
// stats, its cluster topology, the client hosts the sources see) and takes the rest from
// the --cluster.* flags; a flag given on the command line always wins. Each figure says
// which it is, so /metrics, /api/v1/top and the page never present a guess as a
// measurement.
//
// Plain values; thread-compatible.

#ifndef HOTKEY_AGGREGATE_MODEL_INPUTS_H_
#define HOTKEY_AGGREGATE_MODEL_INPUTS_H_

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "hotkey/model/shard_model.h"
#include "hotkey/shard/reading.h"
#include "hotkey/text/enum_names.h"

namespace hotkey::aggregate {

enum class InputOrigin { kConfigured, kMeasured };

// Below this busy fraction a shard's capacity is not extrapolated (ModelInputs).
inline constexpr double kMinBusy = 0.05;
// The shard's answers the capacity is measured over (ModelInputs): a minute at the default
// 5 s between answers.
inline constexpr size_t kCapacitySamples = 12;
// Answers a shard that answers gives before its keys are advised (15 s at the default 5 s).
inline constexpr size_t kMinCapacitySamples = 3;

// The `origin` label value and JSON field.
inline constexpr text::EnumName<InputOrigin> kInputOriginNames[] = {
    {InputOrigin::kConfigured, "configured"}, {InputOrigin::kMeasured, "measured"}};
constexpr std::string_view InputOriginName(InputOrigin origin) {
  return text::NameOf(kInputOriginNames, origin);
}

struct ModelInputs {
  // What the advice uses. `ops` is not: the advice takes the shard's ops/s over the rate
  // window (ProjectShare).
  model::Cluster cluster;
  InputOrigin capacity = InputOrigin::kConfigured;
  InputOrigin shards = InputOrigin::kConfigured;
  InputOrigin app_servers = InputOrigin::kConfigured;

  // Inputs the aggregator measures unless a flag set them:
  // - the capacity: the ops the shard would serve with its command threads' CPU all used,
  //   counted as hotkeyd counts ops. At each new answer of the shard (shard_answers) the
  //   aggregator pairs the shard's ops/s over the rate window with shard_busy; the capacity
  //   is the sum of the last kCapacitySamples ops/s over the sum of their busy fractions,
  //   so it follows the shard's cost per op, not its bursts. Under an average kMinBusy
  //   there is too little work to extrapolate from: the last capacity measured stands, or
  //   the configured one until there is one. While the shard does not answer (or its answer
  //   is refused) the configured capacity is used, and the samples are dropped: a capacity
  //   measured before is stale, and is measured afresh once the shard answers again;
  // - the app servers, as the distinct client hosts the sources have seen.
  bool measure_capacity = false;
  bool measure_app_servers = false;
  // Counts the shard's answers with a load (a new shard_busy); the daemon increments it.
  uint64_t shard_answers = 0;

  // The shard's own account of itself. `shard_asked` is whether the daemon asks a shard at
  // all (a tap beside it, or --shard.address); `shard_up` whether the last asking worked,
  // and `shard_error` why not.
  bool shard_asked = false;
  bool shard_up = false;
  std::string shard_error;
  std::string server;  // "redis 7.0.15", as the shard names itself
  // The fraction of the CPU its bottleneck threads may use that they used, the CPUs they
  // may use, and where that limit came from ("one core", "cgroup", "flag", "threads");
  // NaN and empty until measured.
  double shard_busy = std::numeric_limits<double>::quiet_NaN();
  double shard_cpus = std::numeric_limits<double>::quiet_NaN();
  std::string cpus_origin;
  // Commands per second the shard says it served over the same interval.
  double shard_ops = std::numeric_limits<double>::quiet_NaN();
  // The shard's answers refused as impossible since start, by shard::Rejection, and the
  // reason the last answer was refused ("" when it was not). A refused answer counts as no
  // answer: shard_up is false, and its figures are unknown (NaN above).
  std::array<uint64_t, shard::kRejections> shard_rejected{};
  std::string shard_rejected_reason;
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_MODEL_INPUTS_H_
