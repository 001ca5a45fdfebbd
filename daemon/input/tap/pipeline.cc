#include "pipeline.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace hotkey::tap {

namespace {

parsers::Protocol ToProtocol(config::TapProtocol p) {
  return p == config::TapProtocol::kMemcached ? parsers::Protocol::kMemcached
                                              : parsers::Protocol::kRedis;
}

sketch::Op ToOp(parsers::Access a) {
  return a == parsers::Access::kWrite ? sketch::Op::kWrite : sketch::Op::kRead;
}

// A queue record: header, then per key its length (4 bytes), access (1) and bytes.
//   request_bytes (8) | keys (4) | record_bytes (4) | [len (4) | access (1) | key]...
// A placeholder (a request already charged) has keys = 0 and request_bytes = 0.
constexpr size_t kKeyHeaderBytes = 5;

}  // namespace

std::string TapFilter(const config::TapOptions& options) {
  std::string ports, dst, src;
  for (uint16_t p : options.ports) {
    const char* sep = ports.empty() ? "" : " or ";
    absl::StrAppend(&ports, sep, "port ", p);
    absl::StrAppend(&dst, sep, "dst port ", p);
    absl::StrAppend(&src, sep, "src port ", p);
  }
  if (options.weight == config::TapWeight::kBytes) return absl::StrCat("tcp and (", ports, ")");
  // By ops only the requests matter: the kernel keeps the server's half of the traffic
  // (replies and their ACKs) out of the ring, all but its FIN and RST, which end flows.
  // tcp[tcpflags] implies IPv4; over IPv6 the flags are byte 13 of a TCP header right
  // after the 40-byte fixed header (ip6[53], next header 6). That is also all libpcap's
  // "tcp" matches over IPv6: a packet behind an extension header is not captured.
  return absl::StrCat("tcp and ((", dst, ") or ((", src,
                      ") and (tcp[tcpflags] & (tcp-fin|tcp-rst) != 0 or "
                      "(ip6 and ip6[6] == 6 and ip6[53] & 5 != 0))))");
}

// One flow's parsers and, with bytes weight, its queue of requests awaiting replies: a ring
// of variable-size records, contiguous each. Unwrapped, the records lie in [head, tail);
// wrapped, in [head, end) and then [0, tail).
struct TapPipeline::Session {
  std::unique_ptr<parsers::RequestParser> request;
  std::unique_ptr<parsers::ReplyParser> reply;
  std::unique_ptr<char[]> ring;  // flow_buffer_bytes, with bytes weight
  uint32_t head = 0;
  uint32_t tail = 0;
  uint32_t end = 0;
  uint32_t pending = 0;  // records in the ring
  // Requests charged at once after the ring filled up (not even a placeholder fitted):
  // their replies follow those of the ring's records.
  uint32_t charged_tail = 0;
  bool wrapped = false;
  bool matching = true;                          // replies are matched to requests
  bool server_spoke = false;                     // the server sent bytes since the client last did
  source::ClientHosts::Address client = {};      // the flow's client address
  absl::Time host_noted = absl::InfinitePast();  // when `client` was last noted in hosts_

  void Reset() {
    request.reset();
    reply.reset();
    ring.reset();
    head = tail = end = pending = charged_tail = 0;
    wrapped = false;
    matching = true;
    server_spoke = false;
  }

  // Room for `n` contiguous bytes in a ring of `cap`: its offset, or -1.
  int64_t Reserve(size_t n, size_t cap) {
    if (pending == 0) head = tail = end = 0, wrapped = false;
    if (!wrapped) {
      if (cap - tail >= n) {
        const uint32_t at = tail;
        tail += static_cast<uint32_t>(n);
        return at;
      }
      if (head >= n) {  // wrap: the records now end at `end`, and go on from 0
        end = tail;
        wrapped = true;
        tail = static_cast<uint32_t>(n);
        return 0;
      }
      return -1;
    }
    if (head - tail >= n) {
      const uint32_t at = tail;
      tail += static_cast<uint32_t>(n);
      return at;
    }
    return -1;
  }

  // The oldest record; pending > 0.
  const char* Front() const { return ring.get() + head; }
  void Pop(uint32_t record_bytes) {
    head += record_bytes;
    --pending;
    if (wrapped && head == end) {
      head = 0;
      wrapped = false;
    }
    if (pending == 0) head = tail = end = 0, wrapped = false;
  }
};

TapPipeline::TapPipeline(const config::TapOptions& options, sketch::HeavyHitters& tracker)
    : options_(options),
      protocol_(ToProtocol(options.protocol)),
      bytes_(options.weight == config::TapWeight::kBytes),
      ports_(options.ports),
      tracker_(tracker),
      reassembler_(tcp::Limits{options.max_flows, options.idle_timeout}, *this),
      sessions_(options.max_flows) {
  limits_.max_buffer_bytes = options.flow_buffer_bytes;
}

TapPipeline::~TapPipeline() = default;

size_t TapPipeline::FlowStateBytes() const {
  return sizeof(Session) + reassembler_.memory_bytes() / std::max<size_t>(1, sessions_.size());
}

void TapPipeline::Frame(int link_type, std::string_view frame, absl::Time now) {
  now_ = now;
  const tcp::DecodeStatus st = tcp::DecodeFrame(link_type, frame, ports_, segment_);
  if (st != tcp::DecodeStatus::kOk) {
    const size_t i = static_cast<size_t>(st);
    if (i < frames_skipped_.size()) ++frames_skipped_[i];
    return;
  }
  reassembler_.Add(segment_, now);
}

void TapPipeline::ExpireIdle(absl::Time now) {
  reassembler_.ExpireIdle(now);
  hosts_.Expire(now);
}

void TapPipeline::OnOpen(tcp::FlowId flow, const tcp::Segment& first, bool from_start) {
  Session& s = sessions_[flow];
  s.Reset();
  s.client = first.client.address;
  s.host_noted = now_;
  hosts_.Saw(s.client, now_);
  // Joined mid-stream, the flow starts with a gap (OnGap follows), which stops matching.
  s.matching = from_start;
}

void TapPipeline::OnData(tcp::FlowId flow, tcp::Direction direction, std::string_view bytes) {
  Session& s = sessions_[flow];
  current_ = &s;
  if (direction == tcp::Direction::kToServer) {
    if (now_ - s.host_noted >= kHostRefresh) {
      s.host_noted = now_;
      hosts_.Saw(s.client, now_);
    }
    if (!s.request) s.request = parsers::NewRequestParser(protocol_, limits_);
    // Resume matching at the first request after the server last spoke (see the header).
    if (bytes_ && !s.matching && s.server_spoke && s.pending == 0) s.matching = true;
    s.server_spoke = false;
    s.request->Feed(bytes, *this, requests_);
  } else {
    s.server_spoke = true;
    if (!bytes_) return;
    if (!s.reply) s.reply = parsers::NewReplyParser(protocol_, limits_);
    s.reply->Feed(bytes, *this, replies_);
  }
  current_ = nullptr;
}

void TapPipeline::OnGap(tcp::FlowId flow, tcp::Direction direction) {
  Session& s = sessions_[flow];
  if (direction == tcp::Direction::kToServer) {
    if (!s.request) s.request = parsers::NewRequestParser(protocol_, limits_);
    s.request->Gap(requests_);
  } else {
    s.server_spoke = true;
    if (!bytes_) return;
    if (!s.reply) s.reply = parsers::NewReplyParser(protocol_, limits_);
    s.reply->Gap(replies_);
  }
  if (bytes_) {
    current_ = &s;
    Flush(s, unanswered_gap_);
    current_ = nullptr;
    s.matching = false;
  }
}

void TapPipeline::OnClose(tcp::FlowId flow) {
  Session& s = sessions_[flow];
  if (bytes_) {
    current_ = &s;
    Flush(s, unanswered_closed_);
    current_ = nullptr;
  }
  s.Reset();
}

void TapPipeline::Charge(const parsers::Request& request, double bytes) {
  if (request.keys.empty()) return;
  const double w = bytes_ ? bytes / static_cast<double>(request.keys.size()) : 1.0;
  for (const parsers::KeyRef& k : request.keys) {
    tracker_.Update(k.key, ToOp(k.access), w);
    if (slots_) slots_->Update(k.key, ToOp(k.access), w);
  }
  events_ += request.keys.size();
}

void TapPipeline::OnRequest(const parsers::Request& request) {
  Session& s = *current_;
  if (!bytes_ || !request.expects_reply) {
    Charge(request, static_cast<double>(request.wire_bytes));
    return;
  }
  if (!s.matching) {
    Charge(request, static_cast<double>(request.wire_bytes));
    ++unanswered_gap_;
    return;
  }
  if (s.charged_tail > 0) {  // behind requests already charged: keep the order
    Charge(request, static_cast<double>(request.wire_bytes));
    ++unanswered_queue_full_;
    ++s.charged_tail;
    return;
  }
  const size_t cap = options_.flow_buffer_bytes;
  if (!s.ring) s.ring = std::make_unique<char[]>(cap);
  size_t need = kRecordHeaderBytes;
  for (const parsers::KeyRef& k : request.keys) need += kKeyHeaderBytes + k.key.size();
  uint32_t keys = static_cast<uint32_t>(request.keys.size());
  uint64_t request_bytes = request.wire_bytes;
  int64_t at = need <= cap ? s.Reserve(need, cap) : -1;
  if (at < 0) {
    // Charged now; a placeholder keeps the replies in step.
    Charge(request, static_cast<double>(request.wire_bytes));
    ++unanswered_queue_full_;
    need = kRecordHeaderBytes;
    keys = 0;
    request_bytes = 0;
    at = s.Reserve(need, cap);
    if (at < 0) {  // not even that: counted, its reply comes after the ring's
      ++s.charged_tail;
      return;
    }
  }
  char* p = s.ring.get() + at;
  const uint32_t record = static_cast<uint32_t>(need);
  std::memcpy(p, &request_bytes, 8);
  std::memcpy(p + 8, &keys, 4);
  std::memcpy(p + 12, &record, 4);
  p += kRecordHeaderBytes;
  if (keys > 0) {
    for (const parsers::KeyRef& k : request.keys) {
      const uint32_t len = static_cast<uint32_t>(k.key.size());
      std::memcpy(p, &len, 4);
      p[4] = static_cast<char>(k.access);
      std::memcpy(p + kKeyHeaderBytes, k.key.data(), len);
      p += kKeyHeaderBytes + len;
    }
  }
  ++s.pending;
}

void TapPipeline::OnReply(uint64_t wire_bytes) {
  Session& s = *current_;
  if (s.pending == 0) {
    if (s.charged_tail > 0) {
      --s.charged_tail;
      ++replies_matched_;
    } else {
      ++replies_unmatched_;
    }
    return;
  }
  ++replies_matched_;
  ChargeFront(s, wire_bytes);
}

uint32_t TapPipeline::ChargeFront(Session& s, uint64_t reply_bytes) {
  const char* p = s.Front();
  uint64_t request_bytes;
  uint32_t keys, record;
  std::memcpy(&request_bytes, p, 8);
  std::memcpy(&keys, p + 8, 4);
  std::memcpy(&record, p + 12, 4);
  if (keys > 0) {
    const double w = static_cast<double>(request_bytes + reply_bytes) / keys;
    const char* k = p + kRecordHeaderBytes;
    for (uint32_t i = 0; i < keys; ++i) {
      uint32_t len;
      std::memcpy(&len, k, 4);
      const auto access = static_cast<parsers::Access>(k[4]);
      const std::string_view key(k + kKeyHeaderBytes, len);
      tracker_.Update(key, ToOp(access), w);
      if (slots_) slots_->Update(key, ToOp(access), w);
      k += kKeyHeaderBytes + len;
    }
    events_ += keys;
  }
  s.Pop(record);
  return keys;
}

void TapPipeline::Flush(Session& s, uint64_t& reason) {
  while (s.pending > 0) {
    if (ChargeFront(s, 0) > 0) ++reason;
  }
  s.charged_tail = 0;
}

void TapPipeline::Fill(TapCounters& out) const {
  const tcp::Counters& r = reassembler_.counters();
  out.frames_skipped = frames_skipped_;
  out.flows = reassembler_.flows();
  out.flows_opened = r.flows_opened;
  out.flows_closed = r.flows_closed;
  out.flows_expired = r.flows_expired;
  out.flows_evicted = r.flows_evicted;
  out.joined_midstream = r.joined_midstream;
  out.gaps = r.gaps;
  out.retransmitted_bytes = r.retransmitted_bytes;
  out.protocol = options_.protocol;
  out.commands = requests_.requests;
  out.read_keys = requests_.read_keys;
  out.write_keys = requests_.write_keys;
  out.unknown_commands = requests_.unknown_commands;
  out.protocol_errors = requests_.protocol_errors;
  out.resyncs = requests_.resyncs;
  out.keys_dropped = requests_.keys_dropped;
  out.excluded_requests = requests_.excluded_requests;
  out.reply_protocol_errors = replies_.protocol_errors;
  out.reply_resyncs = replies_.resyncs;
  out.replies = replies_matched_;
  out.replies_unmatched = replies_unmatched_;
  out.unanswered_queue_full = unanswered_queue_full_;
  out.unanswered_gap = unanswered_gap_;
  out.unanswered_closed = unanswered_closed_;
  out.memory_bytes = memory_bytes();
}

static_assert(source::ClientHosts::kMemoryBytes <= config::TapOptions::kClientHostsBytes,
              "the tap's memory bound covers its client hosts table");

size_t TapPipeline::memory_bytes() const {
  size_t n =
      reassembler_.memory_bytes() + sessions_.capacity() * sizeof(Session) + hosts_.memory_bytes();
  for (const Session& s : sessions_) {
    if (s.request) n += s.request->memory_bytes();
    if (s.reply) n += s.reply->memory_bytes();
    if (s.ring) n += options_.flow_buffer_bytes;
  }
  return n;
}

}  // namespace hotkey::tap
