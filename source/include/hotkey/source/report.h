// SourceReport: what an event source (event_source.h) publishes each tick, and the
// counters every source keeps.
//
// A source counts into its own tracker on its own thread; every publish interval it
// copies tracker and counters into a report (report_buffer.h) that other threads read.
// Fields a kind of source has no use for stay 0 (the demo load has no datagrams).
//
// Thread-compatible: a published report is immutable.

#ifndef HOTKEY_SOURCE_REPORT_H_
#define HOTKEY_SOURCE_REPORT_H_

#include <algorithm>
#include <array>
#include <cstdint>

#include "absl/time/time.h"
#include "hotkey/parsers/wire.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace hotkey::source {

// The tap's counts (tap/tap_source.h); all 0 for other kinds of source. Gauges (flows,
// memory) sum over taps like the counters do.
struct TapCounters {
  uint64_t taps = 0;             // 1 for a tap source
  uint64_t packets = 0;          // frames read from the capture
  uint64_t captured_bytes = 0;   // their bytes as captured (at most the snap length each)
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
  // The parsers' (hotkey/parsers/request.h), by protocol (0 redis, 1 memcached).
  std::array<uint64_t, 2> commands = {};
  std::array<uint64_t, 2> read_keys = {};
  std::array<uint64_t, 2> write_keys = {};
  uint64_t unknown_commands = 0;
  uint64_t protocol_errors = 0;
  uint64_t resyncs = 0;
  uint64_t keys_dropped = 0;
  uint64_t excluded_requests = 0;
  uint64_t reply_protocol_errors = 0;  // the reply parsers' (--tap.weight=bytes)
  uint64_t reply_resyncs = 0;
  // --tap.weight=bytes (tap/pipeline.h): replies matched to their requests; replies with
  // no request waiting (a push, a stream joined mid-way); requests with keys charged their
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

  void Add(const TapCounters& o) {
    taps += o.taps;
    packets += o.packets;
    captured_bytes += o.captured_bytes;
    kernel_drops += o.kernel_drops;
    interface_drops += o.interface_drops;
    for (size_t i = 0; i < frames_skipped.size(); ++i) frames_skipped[i] += o.frames_skipped[i];
    flows += o.flows;
    flows_opened += o.flows_opened;
    flows_closed += o.flows_closed;
    flows_expired += o.flows_expired;
    flows_evicted += o.flows_evicted;
    joined_midstream += o.joined_midstream;
    gaps += o.gaps;
    retransmitted_bytes += o.retransmitted_bytes;
    for (size_t i = 0; i < commands.size(); ++i) {
      commands[i] += o.commands[i];
      read_keys[i] += o.read_keys[i];
      write_keys[i] += o.write_keys[i];
    }
    unknown_commands += o.unknown_commands;
    protocol_errors += o.protocol_errors;
    resyncs += o.resyncs;
    keys_dropped += o.keys_dropped;
    excluded_requests += o.excluded_requests;
    reply_protocol_errors += o.reply_protocol_errors;
    reply_resyncs += o.reply_resyncs;
    replies += o.replies;
    replies_unmatched += o.replies_unmatched;
    unanswered_queue_full += o.unanswered_queue_full;
    unanswered_gap += o.unanswered_gap;
    unanswered_closed += o.unanswered_closed;
    memory_bytes += o.memory_bytes;
    memory_bound_bytes += o.memory_bound_bytes;
    file_done += o.file_done;
  }
};

struct SourceCounters {
  uint64_t datagrams = 0;
  uint64_t events = 0;
  std::array<uint64_t, parsers::kNumRejects> rejected = {};  // lines (datagrams for kBadHeader)
  uint64_t datagrams_denied = 0;  // from a source outside --udp.allowed-sources
  uint64_t receive_errors = 0;    // recvmmsg failures other than "nothing to read"
  // When the source last counted an event (to the clock read of its batch); InfinitePast
  // before the first. A feed that went silent shows as this time falling behind.
  absl::Time last_event = absl::InfinitePast();
  TapCounters tap;

  void Add(const SourceCounters& o) {
    datagrams += o.datagrams;
    events += o.events;
    for (size_t i = 0; i < rejected.size(); ++i) rejected[i] += o.rejected[i];
    datagrams_denied += o.datagrams_denied;
    receive_errors += o.receive_errors;
    last_event = std::max(last_event, o.last_event);
    tap.Add(o.tap);
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

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_REPORT_H_
