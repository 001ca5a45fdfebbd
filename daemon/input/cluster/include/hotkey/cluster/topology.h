// Topology: which node of a Redis Cluster serves which slots, read from the text of
// CLUSTER NODES (https://redis.io/commands/cluster-nodes/), as any node answers it.
//
// One line per node: id, address (ip:port@cport[,hostname]), flags (myself, master, slave,
// fail, fail?, handshake, noaddr, nofail, noflags), the primary's id or "-", ping sent, pong
// received, config epoch, link state, then the node's slots: "0-5460", "5461", and slots
// being moved, "[93->-<id>]" (migrating to id) or "[93-<-<id>]" (importing from id), which
// still belong to the node serving them now and are listed in `migrating` and `importing`.
//
// ParseClusterNodes is a pure function over bytes: any input gives a Topology or an error
// naming the line, never undefined behaviour (tests/daemon/input/cluster/topology_test.cc, which
// also reads a real three-node cluster's answer). Bounded: at most kMaxNodes lines.
//
// Thread-compatible: plain values.

#ifndef HOTKEY_CLUSTER_TOPOLOGY_H_
#define HOTKEY_CLUSTER_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace hotkey::cluster {

struct SlotRange {
  uint16_t first = 0;
  uint16_t last = 0;  // inclusive
  friend bool operator==(const SlotRange&, const SlotRange&) = default;
};

struct SlotMove {
  uint16_t slot = 0;
  std::string node;  // the node the slot goes to (migrating) or comes from (importing)
  friend bool operator==(const SlotMove&, const SlotMove&) = default;
};

struct Node {
  std::string id;
  std::string address;   // ip:port, as clients reach it
  std::string hostname;  // empty when the node announces none
  bool myself = false;   // the node that answered
  bool primary = false;  // "master": serves slots; else a replica of primary_id
  bool failed = false;   // "fail" (agreed) or "fail?" (suspected)
  std::string primary_id;
  std::vector<SlotRange> slots;
  std::vector<SlotMove> migrating;
  std::vector<SlotMove> importing;

  int SlotCount() const;
};

struct Topology {
  std::vector<Node> nodes;

  // The node that answered; null when no line says "myself".
  const Node* Myself() const;
  // The node serving `slot`; null when none does.
  const Node* Owner(uint16_t slot) const;
  // Primaries serving at least one slot: the shards.
  int Shards() const;
};

inline constexpr size_t kMaxNodes = 16384;
// The longest node id (Redis's CLUSTER_NAMELEN) and address or host name a line may hold.
inline constexpr size_t kNodeIdBytes = 40;
inline constexpr size_t kMaxHostBytes = 255 + 8;  // a host name, ':' and a port, or brackets

// The topology in `text`, or why it cannot be one, by status code:
//   - OutOfRange: a slot at or past kSlots (16384), which no node can serve;
//   - AlreadyExists: two nodes serving one slot, which one node's view never shows (each
//     slot has one owner in its configuration);
//   - ResourceExhausted: more than kMaxNodes nodes;
//   - InvalidArgument: any other line that is not a node's, or no node.
absl::StatusOr<Topology> ParseClusterNodes(std::string_view text);

}  // namespace hotkey::cluster

#endif  // HOTKEY_CLUSTER_TOPOLOGY_H_
