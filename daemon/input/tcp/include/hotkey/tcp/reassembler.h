// Reassembler: puts each TCP flow's two byte streams back in order, within fixed bounds,
// and hands them to a StreamHandler.
//
// A flow is (client address and port, server address and port). The table holds at most
// Limits::max_flows flows in slots 0..max_flows-1, allocated up front; a new flow when the
// table is full evicts the least recently active one (counted). A flow idle for
// Limits::idle_timeout is expired by ExpireIdle().
//
// In order, without buffering: a segment that starts exactly where the stream left off is
// handed over at once; data already seen (a retransmission) is trimmed and counted; a
// segment that starts past the expected sequence number is a gap (loss or reordering,
// counted): its bytes are handed over after OnGap(), so the parser resyncs at the next
// request boundary; a reordered segment that comes after the gap is then behind the
// stream, trimmed as a retransmission. A flow first seen without the client's SYN (the
// tap started while it was open, or its SYN went by unseen) opens with OnGap() on each
// direction, counted in joined_midstream, not in gaps. So memory is the flow table alone,
// whatever the traffic. Sequence numbers compare modulo 2^32 (RFC 9293 section 3.4).
//
// How a flow ends:
//   - RST closes it at once.
//   - FIN ends its direction; the flow closes when both directions have ended, so the
//     replies that follow a client's FIN are still handed over. A flow whose other FIN is
//     never seen is expired when idle.
//   - A client SYN with another initial sequence number than the flow's (a new connection
//     on the same 4-tuple) closes the old flow and opens a new one.
//   All three count in flows_closed. A segment of an untracked flow with neither data nor
//   SYN (the last ACK after both FINs, a late RST) opens nothing.
//
// Cost per segment: one hash and an expected O(1) lookup, no allocation. ExpireIdle()
// costs O(1 + flows expired), so it may be called every tick. Times are taken as the
// newest seen so far (a `now` earlier than a previous one counts as that one), which keeps
// the least recently active flow the first to expire.
//
// Pure: no I/O, no clock (times are passed in), no allocation after construction.
// Thread-compatible. The handler is called from inside Add() and ExpireIdle(), and must
// not call back into the same Reassembler.

#ifndef HOTKEY_TCP_REASSEMBLER_H_
#define HOTKEY_TCP_REASSEMBLER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/time/time.h"
#include "hotkey/tcp/packet.h"

namespace hotkey::tcp {

using FlowId = uint32_t;  // a slot: < Limits::max_flows, reused once the flow ends

class StreamHandler {
 public:
  // A flow took slot `flow`. `from_start`: the client's SYN was seen, so no byte is
  // missing. `first` (and its payload) is valid during the call only.
  virtual void OnOpen(FlowId flow, const Segment& first, bool from_start) = 0;
  // The next in-order bytes of one direction (never empty; valid during the call only).
  virtual void OnData(FlowId flow, Direction direction, std::string_view bytes) = 0;
  // Bytes of one direction were lost (or the stream was joined mid-way): what follows is
  // not contiguous with what came before.
  virtual void OnGap(FlowId flow, Direction direction) = 0;
  // The slot is free again (FIN, RST, idle expiry or eviction); `flow` may be reused next.
  virtual void OnClose(FlowId flow) = 0;

 protected:
  ~StreamHandler() = default;
};

struct Limits {
  size_t max_flows = 10'000;
  absl::Duration idle_timeout = absl::Minutes(5);
};

struct Counters {
  uint64_t segments = 0;             // segments added
  uint64_t payload_bytes = 0;        // payload bytes handed to the handler
  uint64_t retransmitted_bytes = 0;  // payload already seen, trimmed
  // OnGap calls for a lost or reordered segment, or for the first data of a direction
  // whose SYN went unseen in a flow opened from the client's SYN (a missed SYN-ACK).
  uint64_t gaps = 0;
  uint64_t joined_midstream = 0;  // flows first seen without their SYN
  uint64_t flows_opened = 0;
  uint64_t flows_closed = 0;   // by FIN, RST or a new SYN on the same 4-tuple
  uint64_t flows_expired = 0;  // idle past idle_timeout
  uint64_t flows_evicted = 0;  // the table was full: the least recently active went
};

class Reassembler {
 public:
  // `limits.max_flows` >= 1 (0 is taken as 1). `handler` must outlive the reassembler.
  Reassembler(const Limits& limits, StreamHandler& handler);
  ~Reassembler();
  Reassembler(const Reassembler&) = delete;
  Reassembler& operator=(const Reassembler&) = delete;

  // Hands over what `segment` adds to its flow's streams, opening, closing or evicting
  // flows as described above.
  void Add(const Segment& segment, absl::Time now);
  // Closes every flow idle since before now - idle_timeout.
  void ExpireIdle(absl::Time now);

  size_t flows() const;  // flows in the table now
  const Counters& counters() const;
  // The table's bytes, fixed at construction: at most 128 per flow of max_flows (a slot,
  // and 2 to 4 hash-index buckets of 4 bytes), plus under 1 KiB.
  size_t memory_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hotkey::tcp

#endif  // HOTKEY_TCP_REASSEMBLER_H_
