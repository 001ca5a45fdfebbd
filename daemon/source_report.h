// SourceReport: what an event source (event_source.h) publishes each tick, and the
// counters every source keeps.
//
// A source counts into its own tracker on its own thread; every publish interval it
// copies tracker and counters into a report (report_buffer.h) that other threads read.
// Fields a kind of source has no use for stay 0 (the demo load has no datagrams).
//
// Thread-compatible: a published report is immutable.

#ifndef HOTKEY_DAEMON_SOURCE_REPORT_H_
#define HOTKEY_DAEMON_SOURCE_REPORT_H_

#include <algorithm>
#include <array>
#include <cstdint>

#include "absl/time/time.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "protocol.h"

namespace hotkey::daemon {

struct SourceCounters {
  uint64_t datagrams = 0;
  uint64_t events = 0;
  std::array<uint64_t, kNumRejects> rejected = {};  // lines (datagrams for kBadHeader)
  uint64_t datagrams_denied = 0;                    // from a source outside --udp.allowed-sources
  uint64_t receive_errors = 0;  // recvmmsg failures other than "nothing to read"
  // When the source last counted an event (to the clock read of its batch); InfinitePast
  // before the first. A feed that went silent shows as this time falling behind.
  absl::Time last_event = absl::InfinitePast();

  void Add(const SourceCounters& o) {
    datagrams += o.datagrams;
    events += o.events;
    for (size_t i = 0; i < rejected.size(); ++i) rejected[i] += o.rejected[i];
    datagrams_denied += o.datagrams_denied;
    receive_errors += o.receive_errors;
    last_event = std::max(last_event, o.last_event);
  }
};

// Immutable once published.
struct SourceReport {
  absl::Time time;
  sketch::HeavyHitters tracker;
  SourceCounters counters;
};

// The names from when the UDP receiver was the only source.
using ReceiverCounters = SourceCounters;
using ReceiverReport = SourceReport;

}  // namespace hotkey::daemon

#endif  // HOTKEY_DAEMON_SOURCE_REPORT_H_
