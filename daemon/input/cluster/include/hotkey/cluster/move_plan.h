// Slot moves: which hot slots of this node to move to which other primary of a Redis Cluster,
// the projected load of both nodes after the move, and the bash script that performs it with
// redis-cli. Use it when a slot is hot through many keys (a hot hash tag, say); when one key
// carries its slot, moving the slot only moves the hot spot, and the key's own fix applies.
//
// The plan (PlanSlotMove) follows three rules:
// - Target: the least loaded of `others`. Load = ops/s over capacity; a node without a
//   capacity takes self's (the nodes are alike). When self's capacity is unknown too, a node
//   without one has no load, and the nodes are compared by ops/s instead. Ties go to the
//   lowest id.
// - Greedy, slots largest first (ties: lowest slot first): a slot of s ops/s is moved iff the
//   target then stays under what `from` then carries, to + s < from - s (in load when both
//   capacities are known, else in ops/s); so the busier of the two always falls, and a slot
//   carrying half the gap between them or more is never moved: it would only move the hot
//   spot.
//   A slot that does not fit is skipped, and smaller ones are still tried.
// - When no slot fits, the largest goes to the target all the same if the target is the
//   quieter of the two, in a plan marked relieves = false: it shows where the hot spot would
//   go, and that moving does not help (a slot hot through one tag's many keys wants its keys
//   to have tags of their own).
// - Stop once `from`'s load is at or under `target_load`, when its capacity is known, and
//   one slot has moved: a hot slot is moved off even a node that absorbs it (the plan says
//   where it would go; the alerts page only when the node is at risk), and no more than it.
// Bad input never crashes: a hot slot that is not a slot number (>= 16384), a duplicate, or
// one whose ops/s are not a positive finite number is ignored, as is a node whose ops/s are
// negative or not finite, or that has self's id; a capacity that is not a positive finite
// number is unknown.
//
// The script (MoveCommands) runs the CLUSTER SETSLOT sequence of Redis 7
// (https://redis.io/commands/cluster-setslot/), slot by slot: IMPORTING on `to`, MIGRATING on
// `from`, MIGRATE of the slot's keys in batches of 100 until none are left, then SETSLOT NODE
// on `to` and on `from`. Keys travel byte-exact, newlines and NULs included: redis-cli
// --no-raw prints each key quoted and escaped, and redis-cli reads the quoted form back from
// stdin. Every reply is checked; the script stops at the first unexpected one (a key that
// already exists on `to` stops it, BUSYKEY: MIGRATE without REPLACE). It does not authenticate:
// with AUTH, export REDISCLI_AUTH, and MIGRATE then needs AUTH2 <user> <password> added. Tests:
// tests/daemon/input/cluster/move_plan_test.cc (rules and script text) and
// tests/daemon/input/cluster/move_commands_test.cc (the script run on a real three-node cluster).
//
// Thread-safe (pure functions, no I/O).

#ifndef HOTKEY_CLUSTER_MOVE_PLAN_H_
#define HOTKEY_CLUSTER_MOVE_PLAN_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace hotkey::cluster {

// A primary of the cluster and its measured load.
struct NodeLoad {
  std::string id;
  std::string address;                 // host:port; an IPv6 host bare ("::1:7000") or "[::1]:7000"
  double ops_per_second = 0;           // commands/s
  std::optional<double> capacity_ops;  // commands/s at busy 1; nullopt: unknown
};

// One hot slot of this node.
struct SlotOps {
  uint16_t slot = 0;
  double ops_per_second = 0;  // in the node's commands/s
};

// One end of a move: the node, and its projected ops/s and load before and after.
struct MoveSide {
  std::string id, address;
  double ops_before = 0, ops_after = 0;
  std::optional<double> load_before, load_after;  // ops / capacity, when a capacity is known
};

struct MoveOptions {
  double target_load = 0.7;  // stop moving once `from` is at or under this load (after one)
  bool tls = false;          // add --tls to every redis-cli
};

struct MovePlan {
  std::vector<uint16_t> slots;  // to move, largest first
  MoveSide from, to;
  std::string commands;  // the bash script: MoveCommands(from, to, slots, tls)
  // Whether the move lowers the busier of the two nodes; false: the one slot moved carries
  // half the gap or more, so the hot spot only moves (to a node that was quieter).
  bool relieves = true;
};

// Plans moving some of `hot` (this node's hot slots, each spread over many keys) from `self`
// to the least loaded of `others` (other primaries), by the rules above. nullopt when no move
// lowers the busier of the two nodes and the target is not the quieter one (no other node,
// or every node is at least as busy as `self`).
std::optional<MovePlan> PlanSlotMove(const NodeLoad& self, std::span<const NodeLoad> others,
                                     std::span<const SlotOps> hot, const MoveOptions& options);

// The bash script moving `slots` from node `from` to node `to` with redis-cli, as above; run
// it on a host that reaches both nodes. Every interpolated value is shell-quoted. An address
// that is not host:port gives a script that says so and exits 1, having changed nothing.
std::string MoveCommands(const MoveSide& from, const MoveSide& to, std::span<const uint16_t> slots,
                         bool tls);

}  // namespace hotkey::cluster

#endif  // HOTKEY_CLUSTER_MOVE_PLAN_H_
