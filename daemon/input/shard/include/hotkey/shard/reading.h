// What a shard says about itself, and the load and capacity that two of its readings imply:
// the measured inputs of the shard load model, where flags would otherwise be guesses.
//
// A reading is parsed from Redis's INFO or memcached's stats text; both parsers are pure
// functions over bytes (any input gives a reading or an error, never undefined behaviour;
// tests/daemon/input/shard/reading_test.cc, against a real redis-server and memcached).
//
// The shard's bottleneck is the CPU of the threads that run its commands: Redis's main
// thread (used_cpu_*_main_thread; the whole process where the server does not report the
// thread), memcached's worker threads (the process's rusage over its `threads`).
//
// Thread-compatible: plain values and pure functions.

#ifndef HOTKEY_SHARD_READING_H_
#define HOTKEY_SHARD_READING_H_

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/text/enum_names.h"

namespace hotkey::shard {

// The node's role in replication: a primary takes the writes (and in a Redis Cluster serves
// its slots), a replica copies one. Unknown where the server does not say (memcached).
enum class Role { kUnknown, kPrimary, kReplica };
inline constexpr text::EnumName<Role> kRoleNames[] = {
    {Role::kUnknown, "unknown"}, {Role::kPrimary, "primary"}, {Role::kReplica, "replica"}};
constexpr std::string_view RoleName(Role r) { return text::NameOf(kRoleNames, r); }

struct Reading {
  std::string server;          // "redis 7.0.15", "memcached 1.6.18"
  uint64_t commands = 0;       // commands (memcached: key operations) served since start
  double cpu_seconds = 0;      // CPU time of the bottleneck threads since start
  int threads = 1;             // how many threads that CPU time is spread over
  bool cluster_mode = false;   // Redis with cluster_enabled:1
  Role role = Role::kUnknown;  // Redis's INFO role: master or slave
  int64_t pid = 0;             // the server's process id (INFO process_id, stats pid); 0: none
  // The server's own clock when it answered (Redis 7's server_time_usec; memcached's `time`,
  // in whole seconds); nullopt where it does not say. A cross-check of the reader's clock,
  // not used by LoadBetween.
  std::optional<absl::Time> server_time = std::nullopt;
};

// INFO's text (all sections, or at least server, stats and cpu).
absl::StatusOr<Reading> ParseRedisInfo(std::string_view text);
// The answer to `stats`: "STAT name value" lines, up to END.
absl::StatusOr<Reading> ParseMemcachedStats(std::string_view text);

struct Load {
  double ops_per_second = 0;
  // The fraction of the CPU the bottleneck may use that it used: 0 to 1 (or a little over
  // 1, from the servers' rounding).
  double busy = 0;
  // The ops per second the shard serves at busy = 1, at this mix of commands:
  // ops_per_second / busy, however small busy is (the measured load, no floor: as the own
  // shard's capacity, aggregate/aggregator.h). Unknown (nullopt) only when busy is 0.
  std::optional<double> capacity_ops;
};
// Above this busy fraction a load is impossible, and refused (Rejection::kBusy): the CPU time
// grew faster than the CPUs allow. The 0.25 over 1 covers the servers' rounding of CPU time
// and the delay between the server reading its clock and the prober reading its own, which
// at the default 5 s interval would have to reach 1.25 s to pass it.
inline constexpr double kMaxBusy = 1.25;

// Why a shard's figures were refused. Each is impossible for a working server, so the
// answer is a bug, a lie or another program on the shard's port: never a load to advise on.
enum class Rejection {
  kBusy,         // busy above kMaxBusy: CPU time faster than the CPUs allow
  kSlotRange,    // CLUSTER NODES names a slot at or past 16384
  kSlotOverlap,  // CLUSTER NODES gives one slot to two nodes
  kNodeCount,    // CLUSTER NODES lists more nodes than cluster::kMaxNodes
};
inline constexpr text::EnumName<Rejection> kRejectionNames[] = {
    {Rejection::kBusy, "busy"},
    {Rejection::kSlotRange, "slot_range"},
    {Rejection::kSlotOverlap, "slot_overlap"},
    {Rejection::kNodeCount, "node_count"}};
inline constexpr size_t kRejections = std::size(kRejectionNames);
constexpr std::string_view RejectionName(Rejection r) { return text::NameOf(kRejectionNames, r); }

// FailedPrecondition, naming the figure, when `load` (LoadBetween's, with `cpus`) cannot be
// a real server's: busy above kMaxBusy. OK otherwise.
absl::Status CheckLoad(const Load& load, double cpus);

// The load between readings `a` at `ta` and `b` at `tb` of one server, whose bottleneck may
// use `cpus` CPUs (Redis's main thread: 1, or less under a CPU quota; memcached: at most
// its threads). Nullopt when the readings cannot be of one server run in that order (time or
// counters going back, another process id: a restart), or when tb - ta or cpus is not
// positive.
std::optional<Load> LoadBetween(const Reading& a, absl::Time ta, const Reading& b, absl::Time tb,
                                double cpus);

}  // namespace hotkey::shard

#endif  // HOTKEY_SHARD_READING_H_
