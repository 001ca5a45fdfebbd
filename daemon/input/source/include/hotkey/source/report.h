// SourceReport: what an event source (event_source.h) publishes each tick, and the
// counters every source keeps.
//
// A source counts into its own tracker on its own thread; every publish interval it
// copies tracker and counters into a report (report_buffer.h) that other threads read.
//
// Thread-compatible: a published report is immutable.

#ifndef HOTKEY_SOURCE_REPORT_H_
#define HOTKEY_SOURCE_REPORT_H_

#include <algorithm>
#include <cstdint>

#include <optional>

#include "absl/time/time.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "hotkey/source/slot_counts.h"
#include "hotkey/source/source_metrics.h"

namespace hotkey::source {

// What every kind of source counts; what is its own (the UDP receiver's datagrams, the
// tap's packets) is in `own`, described by the source's schema (source_metrics.h).
struct SourceCounters {
  uint64_t events = 0;  // events counted into the tracker
  // When the source last counted an event (to the clock read of its batch), on the
  // daemon's monotonic clock (the aggregator turns it into wall time for the snapshot);
  // InfinitePast before the first. A feed that went silent shows as this falling behind.
  absl::Time last_event = absl::InfinitePast();
  // The most memory the source can hold besides its tracker (the tap's flow table and
  // capture ring); 0 for most.
  uint64_t memory_bound_bytes = 0;
  // Distinct client hosts seen over the last ClientHosts::kWindow (client_hosts.h): the tap's
  // peers of connections to the tapped port, the UDP receiver's senders; 0 for the demo.
  // With client_hosts_capped, at least this many (the table of ClientHosts::kCapacity was
  // full).
  uint64_t client_hosts = 0;
  bool client_hosts_capped = false;
  SourceMetrics own;

  // Adds the counters every source has; `own` is summed per kind (the aggregator).
  // Client hosts take the largest, not the sum: sources of one daemon can see the same app
  // servers (a host with several sockets reaches several UDP receivers), and the sum would
  // count such a host twice. The largest is a lower bound (hosts spread over receivers are
  // not added up); with one source it is exact.
  void Add(const SourceCounters& o) {
    events += o.events;
    last_event = std::max(last_event, o.last_event);
    memory_bound_bytes += o.memory_bound_bytes;
    if (o.client_hosts > client_hosts) {
      client_hosts = o.client_hosts;
      client_hosts_capped = o.client_hosts_capped;
    } else if (o.client_hosts == client_hosts) {
      client_hosts_capped = client_hosts_capped || o.client_hosts_capped;
    }
  }
};

// Immutable once published.
struct SourceReport {
  absl::Time time;  // on the daemon's monotonic clock
  sketch::HeavyHitters tracker;
  SourceCounters counters;
  // The traffic by slot and by tag, when the source counts them (EventSource::EnableSlots).
  std::optional<source::SlotCounts> slots;
};

// The names from when the UDP receiver was the only source.
using ReceiverCounters = SourceCounters;
using ReceiverReport = SourceReport;

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_REPORT_H_
