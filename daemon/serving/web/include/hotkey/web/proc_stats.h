// What the kernel says about this process and its sockets, read from /proc (Linux only).
// Each call reads a few small files: called at scrape or publish time, never per event.
// Thread-safe (no shared state).

#ifndef HOTKEY_WEB_PROC_STATS_H_
#define HOTKEY_WEB_PROC_STATS_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"

namespace hotkey::web {

// The standard process_* metrics of Prometheus client libraries.
struct ProcessStats {
  double cpu_seconds = 0;  // user + system
  double resident_bytes = 0;
  double virtual_bytes = 0;
  double start_time_seconds = 0;  // since the Unix epoch
  double open_fds = 0;
  double max_fds = 0;
};
absl::StatusOr<ProcessStats> ReadProcessStats();

// The sum of the kernel's drop counters (the last column of /proc/net/udp and udp6) for
// the sockets with these inodes: datagrams the kernel discarded because our receive
// buffer was full.
uint64_t ReadUdpDrops(std::span<const uint64_t> inodes);

// Parses one /proc/net/udp table; exposed for tests.
uint64_t ParseUdpDrops(std::string_view table, std::span<const uint64_t> inodes);

}  // namespace hotkey::web

#endif  // HOTKEY_WEB_PROC_STATS_H_
