// TapPipeline: the tap's work on one captured frame, without the capture: decode the frame
// to its TCP segment (hotkey/tcp/packet.h), put each flow's streams back in order
// (hotkey/tcp/reassembler.h), parse each flow's requests (hotkey/parsers/request.h) and
// count every key they touch in the tracker. TapSource (tap_source.h) feeds it from
// libpcap; the tests and bench/tap_bench.cc feed it from capture files.
//
// Per flow (a slot of the reassembler's table, FlowId) it keeps a session, preallocated
// as an array of max_flows: the request parser of the client-to-server stream and, with
// TapWeight::kBytes, the reply parser of the server-to-client stream and a queue of the
// requests awaiting their replies. Parsers and queue are made at the flow's first bytes
// and freed when the flow ends; the parsers' buffers grow (doubling, up to
// flow_buffer_bytes) to what the flow's requests need, so a flow allocates a few times
// while it warms up and not per packet or per request after that (tests/tap pins it); a
// flow joined mid-stream starts with a Gap(), so its parser resyncs at the
// next request boundary instead of misparsing.
//
// Weights:
//   ops:   each key a request touches weighs 1 (MGET a b c: three reads).
//   bytes: a request weighs its request bytes plus its reply's bytes, split evenly over its
//          keys (so a 400 KB value read weighs ~400 KB, not 1). Replies come back in
//          request order on a flow, so each reply is matched to the oldest request waiting.
//          The waiting requests' keys are copied into the flow's queue, a ring of
//          flow_buffer_bytes; a request that does not fit is charged at once with its
//          request bytes (counted: queue_full) and leaves a placeholder (or, the ring being
//          full, a count of such requests behind it) so the replies stay in step. A request that
//          expects no reply (memcached noreply, quiet meta commands) is charged at once. Keyless
//          requests (PING, MULTI) wait too, since they have replies; they charge nothing. After a
//          gap in either direction the flow stops matching (the replies of lost requests would be
//          charged to later ones): its waiting requests and the next ones are charged request bytes
//          only (counted: gap), replies with nothing waiting are counted unmatched, and matching
//          resumes at the first request the client sends after the server last spoke (for a client
//          that waits for its replies, as most do, every earlier reply has then come back).
//
// Client hosts: the client address of each flow (the peer of the tapped port) is noted in
// a source::ClientHosts (client_hosts.h) when the flow opens, and again at most every
// kHostRefresh while the client sends, so a long-lived connection keeps its host counted;
// client_hosts() reads it, after ExpireIdle() has forgotten hosts not seen in its window.
//
// Memory: the flow table (fixed), max_flows sessions (fixed), the client hosts table
// (fixed), and per active flow its parsers (each at most about flow_buffer_bytes) and, with
// bytes, its queue (flow_buffer_bytes): at most TapOptions::MemoryBoundBytes() less the
// capture ring. memory_bytes() reports what is held now; tests/tap pins both.
//
// Hot path: no allocation per packet or per request once a flow has warmed up (above), no
// lock, no exception. Thread-compatible: one thread.

#ifndef HOTKEY_TAP_PIPELINE_H_
#define HOTKEY_TAP_PIPELINE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "hotkey/config/tap_options.h"
#include "hotkey/parsers/request.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "hotkey/source/client_hosts.h"
#include "hotkey/source/slot_counts.h"
#include "hotkey/tap/tap_counters.h"
#include "hotkey/tcp/packet.h"
#include "hotkey/tcp/reassembler.h"

namespace hotkey::tap {

// The BPF filter the tap installs: with bytes weight "tcp and (port 6379 or port 6380)";
// by ops the client-to-server half and the server's FIN and RST only, over IPv4 and IPv6,
// "tcp and ((dst port 6379) or ((src port 6379) and (tcp[tcpflags] & (tcp-fin|tcp-rst) != 0
// or (ip6 and ip6[6] == 6 and ip6[53] & 5 != 0))))" (the requests are all a count by ops
// needs; the FINs and RSTs end the flows). IPv6 packets behind extension headers do not
// pass: libpcap's "tcp" looks at the fixed header's next header only.
std::string TapFilter(const config::TapOptions& options);

class TapPipeline final : private tcp::StreamHandler,
                          private parsers::RequestSink,
                          private parsers::ReplySink {
 public:
  // `tracker` must outlive the pipeline; the pipeline is its only writer.
  TapPipeline(const config::TapOptions& options, sketch::HeavyHitters& tracker);
  ~TapPipeline();
  TapPipeline(const TapPipeline&) = delete;
  TapPipeline& operator=(const TapPipeline&) = delete;

  // How often, at most, a sending flow notes its client host again: a fraction of
  // ClientHosts::kWindow, so a host stays counted while its connection is in use.
  static constexpr absl::Duration kHostRefresh = absl::Seconds(1);

  // One captured frame of link type `link_type` (pcap_datalink), `now` its capture time.
  // Counts every key its requests touch (the caller advances the tracker's clock).
  void Frame(int link_type, std::string_view frame, absl::Time now);
  // Forgets flows idle since before now - idle_timeout, and client hosts not seen since
  // now - ClientHosts::kWindow.
  void ExpireIdle(absl::Time now);
  // The distinct client hosts seen (see above).
  const source::ClientHosts& client_hosts() const { return hosts_; }

  // Keys counted in the tracker so far.
  uint64_t events() const { return events_; }
  // Also counts every key into `slots` (null: not), beside the tracker.
  void SetSlotCounts(source::SlotCounts* slots) { slots_ = slots; }
  // The decode, reassembly, parser and reply-matching counts, and memory_bytes(), written
  // into `out` (the capture's own fields, packets and drops, are the caller's).
  void Fill(TapCounters& out) const;
  // Bytes held now: flow table, sessions, parsers, queues.
  size_t memory_bytes() const;
  // Queue record header: exposed for the memory test.
  static constexpr size_t kRecordHeaderBytes = 16;
  // The state one flow holds besides its buffers, at most (its session and its share of
  // the flow table); TapOptions::kFlowStateBytes must cover it.
  size_t FlowStateBytes() const;

 private:
  struct Session;

  // tcp::StreamHandler
  void OnOpen(tcp::FlowId flow, const tcp::Segment& first, bool from_start) override;
  void OnData(tcp::FlowId flow, tcp::Direction direction, std::string_view bytes) override;
  void OnGap(tcp::FlowId flow, tcp::Direction direction) override;
  void OnClose(tcp::FlowId flow) override;
  // parsers::RequestSink, parsers::ReplySink: for the session being fed (current_).
  void OnRequest(const parsers::Request& request) override;
  void OnReply(uint64_t wire_bytes) override;

  void Charge(const parsers::Request& request, double bytes);
  // Charges the keys of `s`'s oldest waiting request their share of its request bytes plus
  // `reply_bytes`, and pops it; returns its number of keys.
  uint32_t ChargeFront(Session& s, uint64_t reply_bytes);
  // Charges every waiting request its request bytes only; counts each under `reason`.
  void Flush(Session& s, uint64_t& reason);

  const config::TapOptions options_;
  const parsers::Protocol protocol_;
  const bool bytes_;
  const std::vector<uint16_t> ports_;
  sketch::HeavyHitters& tracker_;
  source::SlotCounts* slots_ = nullptr;
  parsers::ParserLimits limits_;
  tcp::Reassembler reassembler_;
  std::vector<Session> sessions_;  // by FlowId
  Session* current_ = nullptr;
  tcp::Segment segment_;  // DecodeFrame's output, reused
  absl::Time now_;        // the capture time of the frame being fed
  source::ClientHosts hosts_;

  uint64_t events_ = 0;
  std::array<uint64_t, 7> frames_skipped_ = {};
  parsers::ParserCounters requests_;  // request parsers'
  parsers::ParserCounters replies_;   // reply parsers'
  uint64_t replies_matched_ = 0;
  uint64_t replies_unmatched_ = 0;
  uint64_t unanswered_queue_full_ = 0;
  uint64_t unanswered_gap_ = 0;
  uint64_t unanswered_closed_ = 0;
};

}  // namespace hotkey::tap

#endif  // HOTKEY_TAP_PIPELINE_H_
