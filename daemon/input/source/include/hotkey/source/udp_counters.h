// UdpCounters: what the UDP receiver (udp_receiver.h) counts besides events, and how it
// shows in /metrics and /api/v1/snapshot (its MetricSchema, source_metrics.h).
//
// Thread-compatible: plain values.

#ifndef HOTKEY_SOURCE_UDP_COUNTERS_H_
#define HOTKEY_SOURCE_UDP_COUNTERS_H_

#include <array>
#include <cstdint>

#include "hotkey/parsers/wire.h"
#include "hotkey/source/source_metrics.h"

namespace hotkey::source {

struct UdpCounters {
  uint64_t datagrams = 0;
  std::array<uint64_t, parsers::kNumRejects> rejected = {};  // lines (datagrams for kBadHeader)
  uint64_t datagrams_denied = 0;  // from a source outside --udp.allowed-sources
  uint64_t receive_errors = 0;    // recvmmsg failures other than "nothing to read"

  // Writes these counts into `out` in the order of UdpMetricSchema().
  void Fill(SourceMetrics& out) const;
};

const MetricSchema& UdpMetricSchema();

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_UDP_COUNTERS_H_
