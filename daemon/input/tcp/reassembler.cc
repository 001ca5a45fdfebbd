// Reassembler: a fixed flow table, an LRU list over its slots, and per direction the next
// expected sequence number. No segment is buffered: each is trimmed against what was
// already handed over and passed on at once, so memory is the table alone.
//
// Layout, all allocated in the constructor and never resized:
//   flows_   max_flows Flow slots (a FlowId is a slot's index). A used slot is on the LRU
//            list (doubly linked by index, head = most recently active, tail = least); a
//            free slot is on the free list (singly linked through `next`, last freed first).
//   index_   an open-addressing hash index of slot ids, linear probing, a power of two at
//            least twice max_flows (load <= 1/2: a lookup probes ~1.5 buckets on average).
//            Deletion shifts the following entries back (Knuth 6.4, algorithm R), so there
//            are no tombstones and the index never needs a rebuild. The hash is
//            absl::Hash, seeded per process, so a peer cannot aim flows at one bucket.
//
// Cost per segment: one hash, an expected O(1) probe, O(1) LRU relink, a few compares.
// ExpireIdle() walks from the LRU tail and stops at the first flow active since the
// cutoff: O(1 + flows expired), so calling it every tick costs nothing when none expire.
// The LRU order is the order of last activity because each flow's activity time is the
// newest `now` seen so far (a `now` that goes backwards counts as the newest).
//
// Sequence numbers compare in the circular space of RFC 9293 section 3.4 (and RFC 1982
// serial arithmetic): a is before b when int32_t(a - b) < 0, so a stream crosses 2^32
// without a hitch, as long as one segment is shorter than 2^31 bytes.
//
// Ends of a flow, and why:
//   RST      closes at once: nothing more is coming in either direction.
//   FIN      ends its direction only; the flow closes once both directions have ended.
//            Closing at the first FIN would lose the other side's trailing bytes (the
//            server's last replies after a client's FIN, or a half-closed request stream).
//            A flow whose second FIN is never seen goes by idle expiry.
//   SYN      a client SYN whose sequence number is not the flow's known ISN starts a new
//            connection on a reused 4-tuple: the old flow closes first (counted closed).
//   Segments of an unknown flow that carry neither data nor SYN (the last ACK after both
//   FINs, a late RST) open nothing: they have nothing to hand over.

#include "hotkey/tcp/reassembler.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/hash/hash.h"

namespace hotkey::tcp {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
// Slot ids and index buckets are uint32_t, kNone excluded; 2^30 flows is far past any
// table that fits in memory (about 120 bytes each), so the clamp never bites in practice.
constexpr size_t kMaxFlows = size_t{1} << 30;

// RFC 9293 3.4: "a < b" in sequence space.
bool SeqBefore(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }

size_t IndexBuckets(size_t max_flows) {
  size_t n = 16;
  while (n < 2 * max_flows) n *= 2;
  return n;
}

}  // namespace

struct Reassembler::Impl {
  struct Half {
    uint32_t next_seq = 0;       // the first byte not yet handed over (valid when synced)
    uint32_t isn = 0;            // the SYN's sequence number (valid when has_isn)
    bool synced = false;         // next_seq is known
    bool has_isn = false;        // the SYN was seen
    bool gap_announced = false;  // OnGap() already told the handler its start is missing
    bool fin = false;            // this direction ended
  };
  struct Flow {
    Endpoint client;
    Endpoint server;
    size_t hash = 0;
    absl::Time last_active;
    Half half[2];
    uint32_t prev = kNone;  // LRU: towards the head (more recent)
    uint32_t next = kNone;  // LRU: towards the tail; on the free list, the next free slot
    bool in_use = false;
  };

  Impl(const Limits& l, StreamHandler& h)
      : max_flows(std::clamp<size_t>(l.max_flows, 1, kMaxFlows)),
        idle_timeout(l.idle_timeout),
        handler(h),
        flows(max_flows),
        index(IndexBuckets(max_flows), kNone),
        mask(index.size() - 1) {
    for (size_t i = 0; i < max_flows; ++i) {
      flows[i].next = i + 1 < max_flows ? static_cast<uint32_t>(i + 1) : kNone;
    }
    free_head = 0;
  }

  static size_t Hash(const Endpoint& client, const Endpoint& server) {
    return absl::Hash<std::tuple<const std::array<uint8_t, 16>&, uint16_t,
                                 const std::array<uint8_t, 16>&, uint16_t>>{}(
        std::tie(client.address, client.port, server.address, server.port));
  }

  uint32_t Find(const Endpoint& client, const Endpoint& server, size_t hash) const {
    for (size_t b = hash & mask;; b = (b + 1) & mask) {
      const uint32_t id = index[b];
      if (id == kNone) return kNone;
      const Flow& f = flows[id];
      if (f.hash == hash && f.client == client && f.server == server) return id;
    }
  }

  void IndexInsert(uint32_t id) {
    size_t b = flows[id].hash & mask;
    while (index[b] != kNone) b = (b + 1) & mask;
    index[b] = id;
  }

  void IndexErase(uint32_t id) {
    size_t hole = flows[id].hash & mask;
    while (index[hole] != id) hole = (hole + 1) & mask;
    index[hole] = kNone;
    // Shift back every following entry of the run that may no longer be reached across
    // the hole: one whose home bucket is not cyclically within (hole, j].
    for (size_t j = (hole + 1) & mask; index[j] != kNone; j = (j + 1) & mask) {
      const size_t home = flows[index[j]].hash & mask;
      const bool reachable = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (reachable) continue;
      index[hole] = index[j];
      index[j] = kNone;
      hole = j;
    }
  }

  void Unlink(uint32_t id) {
    Flow& f = flows[id];
    (f.prev == kNone ? lru_head : flows[f.prev].next) = f.next;
    (f.next == kNone ? lru_tail : flows[f.next].prev) = f.prev;
    f.prev = f.next = kNone;
  }

  void PushFront(uint32_t id) {
    Flow& f = flows[id];
    f.prev = kNone;
    f.next = lru_head;
    (lru_head == kNone ? lru_tail : flows[lru_head].prev) = id;
    lru_head = id;
  }

  void Touch(uint32_t id, absl::Time now) {
    flows[id].last_active = now;
    if (lru_head == id) return;
    Unlink(id);
    PushFront(id);
  }

  // Frees slot `id` and counts why in `*reason`.
  void Close(uint32_t id, uint64_t* reason) {
    handler.OnClose(id);
    ++*reason;
    IndexErase(id);
    Unlink(id);
    Flow& f = flows[id];
    f.in_use = false;
    f.next = free_head;
    free_head = id;
    --count;
  }

  uint32_t Open(const Segment& s, size_t hash, absl::Time now) {
    if (free_head == kNone) Close(lru_tail, &counters.flows_evicted);
    const uint32_t id = free_head;
    Flow& f = flows[id];
    free_head = f.next;
    f.client = s.client;
    f.server = s.server;
    f.hash = hash;
    f.last_active = now;
    f.half[0] = f.half[1] = Half{};
    f.in_use = true;
    IndexInsert(id);
    PushFront(id);
    ++count;
    ++counters.flows_opened;
    // Only the client's SYN shows the connection from its first byte: a first-seen
    // SYN-ACK means the client's SYN went by before the tap looked.
    const bool from_start = s.syn && s.direction == Direction::kToServer;
    handler.OnOpen(id, s, from_start);
    if (!from_start) {
      ++counters.joined_midstream;
      for (Direction d : {Direction::kToServer, Direction::kToClient}) {
        f.half[static_cast<int>(d)].gap_announced = true;
        handler.OnGap(id, d);
      }
    }
    return id;
  }

  void Gap(uint32_t id, Direction d) {
    ++counters.gaps;
    handler.OnGap(id, d);
  }

  void Add(const Segment& s, absl::Time t) {
    ++counters.segments;
    newest = std::max(newest, t);
    const absl::Time now = newest;
    const size_t hash = Hash(s.client, s.server);
    uint32_t id = Find(s.client, s.server, hash);
    if (id != kNone && s.syn && s.direction == Direction::kToServer && !s.rst) {
      const Half& h = flows[id].half[0];
      if (h.synced && !(h.has_isn && h.isn == s.seq)) {
        Close(id, &counters.flows_closed);  // a new connection on the same 4-tuple
        id = kNone;
      }
    }
    if (id == kNone) {
      if (s.rst || (!s.syn && s.payload.empty())) return;  // nothing to hand over
      id = Open(s, hash, now);
    } else {
      Touch(id, now);
    }
    if (s.rst) {
      Close(id, &counters.flows_closed);
      return;
    }

    const Direction dir = s.direction;
    Half& h = flows[id].half[static_cast<int>(dir)];
    uint32_t data_seq = s.seq;
    if (s.syn) {
      data_seq = s.seq + 1;  // the SYN takes one sequence number; any data follows it
      if (!h.synced) {
        h.synced = true;
        h.next_seq = data_seq;
        h.has_isn = true;
        h.isn = s.seq;
      } else if (!(h.has_isn && h.isn == s.seq)) {
        // A SYN-ACK with another ISN (the client's case reopened the flow above): what
        // follows is not this stream's continuation.
        Gap(id, dir);
        h.next_seq = data_seq;
        h.has_isn = true;
        h.isn = s.seq;
      }
    }

    std::string_view bytes = s.payload;
    if (!bytes.empty()) {
      if (!h.synced) {
        // The first data of a direction whose SYN was not seen.
        if (!h.gap_announced) Gap(id, dir);
        h.synced = true;
        h.next_seq = data_seq;
      }
      const uint32_t end = data_seq + static_cast<uint32_t>(bytes.size());
      if (SeqBefore(data_seq, h.next_seq)) {
        // Starts before the expected byte: a retransmission, wholly or in part.
        const uint32_t seen = h.next_seq - data_seq;
        const size_t trim = std::min<size_t>(seen, bytes.size());
        counters.retransmitted_bytes += trim;
        bytes.remove_prefix(trim);
      } else if (data_seq != h.next_seq) {
        Gap(id, dir);  // bytes between next_seq and data_seq were lost or come later
      }
      if (!bytes.empty()) {
        h.next_seq = end;
        counters.payload_bytes += bytes.size();
        handler.OnData(id, dir, bytes);
      }
    }

    if (s.fin) {
      h.fin = true;
      if (flows[id].half[0].fin && flows[id].half[1].fin) Close(id, &counters.flows_closed);
    }
  }

  void ExpireIdle(absl::Time now) {
    const absl::Time cutoff = now - idle_timeout;
    while (lru_tail != kNone && flows[lru_tail].last_active < cutoff) {
      Close(lru_tail, &counters.flows_expired);
    }
  }

  const size_t max_flows;
  const absl::Duration idle_timeout;
  StreamHandler& handler;
  std::vector<Flow> flows;
  std::vector<uint32_t> index;
  const size_t mask;
  uint32_t free_head = kNone;
  uint32_t lru_head = kNone;
  uint32_t lru_tail = kNone;
  size_t count = 0;
  absl::Time newest = absl::InfinitePast();
  Counters counters;
};

Reassembler::Reassembler(const Limits& limits, StreamHandler& handler)
    : impl_(std::make_unique<Impl>(limits, handler)) {}

Reassembler::~Reassembler() = default;

void Reassembler::Add(const Segment& segment, absl::Time now) { impl_->Add(segment, now); }

void Reassembler::ExpireIdle(absl::Time now) { impl_->ExpireIdle(now); }

size_t Reassembler::flows() const { return impl_->count; }

const Counters& Reassembler::counters() const { return impl_->counters; }

size_t Reassembler::memory_bytes() const {
  return sizeof(Impl) + impl_->flows.capacity() * sizeof(Impl::Flow) +
         impl_->index.capacity() * sizeof(uint32_t);
}

}  // namespace hotkey::tcp
