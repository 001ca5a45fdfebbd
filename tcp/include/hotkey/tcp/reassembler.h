// Reassembler: puts each TCP flow's two byte streams back in order, within fixed bounds,
// and hands them to a StreamHandler.
//
// A flow is (client address and port, server address and port). The table holds at most
// Limits::max_flows flows in slots 0..max_flows-1, allocated up front; a new flow when the
// table is full evicts the least recently active one (counted). A flow idle for
// Limits::idle_timeout is expired by ExpireIdle(); FIN or RST closes it.
//
// In order, without buffering: a segment that starts exactly where the stream left off is
// handed over at once; data already seen (a retransmission) is trimmed and counted; a
// segment that starts past the expected sequence number is a gap (loss or reordering,
// counted): its bytes are handed over after OnGap(), so the parser resyncs at the next
// request boundary. A flow first seen without its SYN (the tap started while it was open)
// starts with OnGap() as well. So memory is the flow table alone, whatever the traffic.
//
// Pure: no I/O, no clock (times are passed in), no allocation after construction.
// Thread-compatible.

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
  // A flow took slot `flow`. `from_start`: its SYN was seen, so no byte is missing.
  virtual void OnOpen(FlowId flow, const Segment& first, bool from_start) = 0;
  // The next in-order bytes of one direction.
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
  uint64_t segments = 0;           // segments added
  uint64_t payload_bytes = 0;      // payload bytes handed to the handler
  uint64_t retransmitted_bytes = 0;// payload already seen, trimmed
  uint64_t gaps = 0;               // OnGap calls for a lost or reordered segment
  uint64_t joined_midstream = 0;   // flows first seen without their SYN
  uint64_t flows_opened = 0;
  uint64_t flows_closed = 0;       // by FIN or RST
  uint64_t flows_expired = 0;      // idle past idle_timeout
  uint64_t flows_evicted = 0;      // the table was full: the least recently active went
};

class Reassembler {
 public:
  // `limits.max_flows` >= 1. `handler` must outlive the reassembler.
  Reassembler(const Limits& limits, StreamHandler& handler);
  ~Reassembler();
  Reassembler(const Reassembler&) = delete;
  Reassembler& operator=(const Reassembler&) = delete;

  void Add(const Segment& segment, absl::Time now);
  // Closes every flow idle since before now - idle_timeout.
  void ExpireIdle(absl::Time now);

  size_t flows() const;  // flows in the table now
  const Counters& counters() const;
  // The table's bytes, fixed at construction.
  size_t memory_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hotkey::tcp

#endif  // HOTKEY_TCP_REASSEMBLER_H_
