// TapCounters: what the tap (tap.h) counts besides events, and how it shows in /metrics
// and /api/v1/snapshot (its MetricSchema, hotkey/source/source_metrics.h). Each count is
// named in one row of tap_counters.cc's table, which holds where its value is read, its
// family, help, labels and JSON field; the schema and Fill() both iterate that table.
//
// Thread-compatible: plain values.

#ifndef HOTKEY_TAP_TAP_COUNTERS_H_
#define HOTKEY_TAP_TAP_COUNTERS_H_

#include <array>
#include <cstdint>

#include "hotkey/config/tap_options.h"
#include "hotkey/source/source_metrics.h"

namespace hotkey::tap {

struct TapCounters {
  uint64_t packets = 0;          // frames read from the capture
  uint64_t captured_bytes = 0;   // their bytes as captured (at most the snap length each)
  uint64_t capture_errors = 0;   // pcap_dispatch failures
  uint64_t kernel_drops = 0;     // pcap_stats ps_drop: no room in the capture ring
  uint64_t interface_drops = 0;  // pcap_stats ps_ifdrop: dropped by the interface or driver
  // Frames not used, by tcp::DecodeStatus (kNotTcp .. kUnsupportedLink; kOk unused).
  std::array<uint64_t, 7> frames_skipped = {};
  // The reassembler's (hotkey/tcp/reassembler.h).
  uint64_t flows = 0;  // in the table now
  uint64_t flows_opened = 0;
  uint64_t flows_closed = 0;
  uint64_t flows_expired = 0;
  uint64_t flows_evicted = 0;
  uint64_t joined_midstream = 0;
  uint64_t gaps = 0;
  uint64_t retransmitted_bytes = 0;
  // The parsers' (hotkey/parsers/request.h), of the one protocol the tap parses.
  config::TapProtocol protocol = config::TapProtocol::kRedis;
  uint64_t commands = 0;
  uint64_t read_keys = 0;
  uint64_t write_keys = 0;
  uint64_t unknown_commands = 0;
  uint64_t protocol_errors = 0;
  uint64_t resyncs = 0;
  uint64_t keys_dropped = 0;
  uint64_t excluded_requests = 0;
  uint64_t reply_protocol_errors = 0;  // the reply parsers' (--tap.weight=bytes)
  uint64_t reply_resyncs = 0;
  // --tap.weight=bytes (pipeline.h): replies matched to their requests; replies with no
  // request waiting (a push, a stream joined mid-way); requests with keys charged their
  // request bytes only because the queue of requests awaiting replies was full, because
  // the flow had lost bytes (a gap) and had not yet resynced, or because the flow ended.
  uint64_t replies = 0;
  uint64_t replies_unmatched = 0;
  uint64_t unanswered_queue_full = 0;
  uint64_t unanswered_gap = 0;
  uint64_t unanswered_closed = 0;
  uint64_t memory_bytes = 0;        // held now: flow table, parsers, reply queues, ring
  uint64_t memory_bound_bytes = 0;  // the most it can hold (TapOptions::MemoryBoundBytes)
  uint64_t file_done = 0;           // --tap.file: 1 once the whole file was read

  // Writes these counts into `out` in the order of TapMetricSchema().
  void Fill(source::SourceMetrics& out) const;
};

const source::MetricSchema& TapMetricSchema();

}  // namespace hotkey::tap

#endif  // HOTKEY_TAP_TAP_COUNTERS_H_
