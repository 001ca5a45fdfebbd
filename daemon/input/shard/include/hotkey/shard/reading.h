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
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace hotkey::shard {

struct Reading {
  std::string server;         // "redis 7.0.15", "memcached 1.6.18"
  uint64_t commands = 0;      // commands (memcached: key operations) served since start
  double cpu_seconds = 0;     // CPU time of the bottleneck threads since start
  int threads = 1;            // how many threads that CPU time is spread over
  bool cluster_mode = false;  // Redis with cluster_enabled:1
  int64_t pid = 0;            // the server's process id (INFO process_id, stats pid); 0: none
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
  // ops_per_second / busy. Unknown (nullopt) below kMinBusy: too little work to say.
  std::optional<double> capacity_ops;
};

// Below this busy fraction a capacity is not extrapolated.
inline constexpr double kMinBusy = 0.05;

// The load between readings `a` at `ta` and `b` at `tb` of one server, whose bottleneck may
// use `cpus` CPUs (Redis's main thread: 1, or less under a CPU quota; memcached: at most
// its threads). Nullopt when the readings cannot be of one server run in that order (time or
// counters going back, another process id: a restart), or when tb - ta or cpus is not
// positive.
std::optional<Load> LoadBetween(const Reading& a, absl::Time ta, const Reading& b, absl::Time tb,
                                double cpus);

}  // namespace hotkey::shard

#endif  // HOTKEY_SHARD_READING_H_
