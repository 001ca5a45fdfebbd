// ModelInputs: the cluster the advice is computed against, and where each figure came from.
//
// The shard load model (model/shard_model.h) needs a shard's headroom (its load, or a
// capacity), the number of shards and the number of app servers. The daemon measures what
// it can (the shard's own INFO or stats, its cluster topology, the client hosts the
// sources see) and takes the rest from the --cluster.* flags; a flag given on the command
// line always wins. Each figure says which it is, and why, so /metrics, /api/v1/top, the
// page and the log never present a guess as a measurement. A headroom that is neither
// measured nor configured is unknown: no key is advised on it (no default stands in).
//
// Plain values; thread-compatible.

#ifndef HOTKEY_AGGREGATE_MODEL_INPUTS_H_
#define HOTKEY_AGGREGATE_MODEL_INPUTS_H_

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "hotkey/model/shard_model.h"
#include "hotkey/shard/reading.h"
#include "hotkey/text/enum_names.h"

namespace hotkey::aggregate {

enum class InputOrigin { kConfigured, kMeasured, kUnknown };

// The `origin` label value and JSON field.
inline constexpr text::EnumName<InputOrigin> kInputOriginNames[] = {
    {InputOrigin::kConfigured, "configured"},
    {InputOrigin::kMeasured, "measured"},
    {InputOrigin::kUnknown, "unknown"}};
constexpr std::string_view InputOriginName(InputOrigin origin) {
  return text::NameOf(kInputOriginNames, origin);
}

struct ModelInputs {
  // What the advice uses. `ops` is not: the advice takes the shard's ops/s over the key's
  // span (ProjectBusy, ProjectShare). `cluster.capacity` is NaN while the capacity is
  // unknown, and the measured one (the window's ops over the shard's busy fraction, +inf
  // for a shard whose busy fraction is 0) once measured.
  model::Cluster cluster;
  InputOrigin capacity = InputOrigin::kConfigured;
  InputOrigin shards = InputOrigin::kConfigured;
  InputOrigin app_servers = InputOrigin::kConfigured;
  // Why each input has its origin ("--cluster.capacity given", "no shard is asked ..."),
  // for the page and the start log; empty for a measured one.
  std::string capacity_reason;
  std::string shards_reason;
  std::string app_servers_reason;

  // Inputs the aggregator measures unless a flag set them:
  // - the shard's load: at each new answer of the shard (shard_answers) the aggregator
  //   keeps its busy fraction over the interval it covers (busy_window.h); the load with
  //   no fix is their mean over the rate window, and the capacity the window's ops over it.
  //   An answer refused as impossible adds nothing. Until the first answer, and once the
  //   answers are older than the window, it is unknown;
  // - the app servers, as the distinct client hosts the sources have seen.
  bool measure_capacity = false;
  bool measure_app_servers = false;
  // Counts the shard's answers with a load (a new shard_busy); the daemon increments it.
  uint64_t shard_answers = 0;
  // The interval shard_busy covers, on the daemon's monotonic clock: from the shard's
  // previous reading to this one.
  absl::Time shard_load_start = absl::InfinitePast();
  absl::Time shard_load_end = absl::InfinitePast();

  // The shard's own account of itself. `shard_asked` is whether the daemon asks a shard at
  // all (a tap beside it, or --shard.address); `shard_up` whether the last asking worked,
  // and `shard_error` why not.
  bool shard_asked = false;
  bool shard_up = false;
  std::string shard_error;
  std::string server;  // "redis 7.0.15", as the shard names itself
  // The shard said it is not in a cluster (Redis with cluster_enabled:0, or memcached):
  // its keys have no slots to report.
  bool shard_standalone = false;
  // The node's role (shard::RoleName: primary, replica, unknown) and, in a Redis Cluster,
  // the slots it serves (-1 outside one); as of the last answer.
  std::string shard_role = "unknown";
  int shard_slots = -1;
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
