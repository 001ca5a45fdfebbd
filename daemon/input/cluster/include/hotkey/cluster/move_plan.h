// Slot moves: one plan that rebalances a Redis Cluster node that serves more than it should,
// by moving some of its slots to other primaries, with every node's projected load after it
// and the bash script that performs it with redis-cli. Use it when a node is loaded through
// many slots; a slot hot through one key or one hash tag is not moved (its key's fix, or
// re-keying the tag, applies: moving it only moves the hot spot), and the caller leaves it out.
//
// The plan (PlanRebalance) follows these rules:
// - Trigger: self is over its target, the busiest node in load (ops/s over capacity, a node
//   without a capacity taking self's: the nodes are alike) with a load above target_load,
//   when self's capacity is known; or clearly over its peers, the busiest in ops/s with more
//   than over_peers times their mean (in ops/s: at a few percent of a CPU a server's fixed
//   costs are most of its busy time, and loads would understate how the traffic is spread).
//   Otherwise no plan: a node with headroom, or one no busier than the rest, is advised
//   nothing.
// - Goal, in the trigger's measure: target_load when over the target; else balance times the
//   mean of every node (self included). No target may end above the goal.
// - Greedy, slots largest first (ties: lowest slot first), each to the least loaded node that
//   stays at or under the goal and under what self then carries; a slot that fits nowhere
//   is skipped and smaller ones are still tried; stop once self is at or under the goal.
//   Largest first moves the fewest slots; hotkeyd does not know how many keys each slot
//   holds, so fewest slots stands in for fewest keys.
// - No plan unless self ends at or under the goal: a move that does not bring the busiest
//   node under its goal is not advised (the caller's advice and alert then resolve).
// - Hysteresis: a previous plan of the same node is kept while its slots are still self's,
//   its targets still known, the trigger still holds within `keep`, and re-projected on the
//   loads now it still brings self to its goal within `keep_projection`, moves no more than
//   self's excess over the goal plus `keep_projection` of it (a plan made while the window
//   still held the load before is replaced once it would move too much), and puts no target
//   over the goal by more than `keep_projection`; so the slots and targets do not change
//   between reads of a steady load.
// Bad input never crashes: a slot that is not a slot number (>= 16384), a duplicate, or one
// whose ops/s are not a positive finite number is ignored, as is a node whose ops/s are
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
// Several targets share one script: the slots for each target in turn.
//
// Thread-safe (pure functions, no I/O).

#ifndef HOTKEY_CLUSTER_MOVE_PLAN_H_
#define HOTKEY_CLUSTER_MOVE_PLAN_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hotkey/text/enum_names.h"

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

// Why a plan was made.
enum class MoveReason { kOverTarget, kOverPeers };
inline constexpr text::EnumName<MoveReason> kMoveReasonNames[] = {
    {MoveReason::kOverTarget, "over_target"}, {MoveReason::kOverPeers, "over_peers"}};
constexpr std::string_view MoveReasonName(MoveReason r) {
  return text::NameOf(kMoveReasonNames, r);
}

struct MoveOptions {
  double target_load = 0.7;  // the load a node should stay under (the advice model's target)
  // "Clearly over its peers": self above this times their mean. A node half again as busy
  // as the others is beyond what the slots' uneven sizes and the load's jitter give.
  double over_peers = 1.5;
  // The goal when over the peers: this times the cluster's mean, so the plan stops once the
  // node is within a tenth of an even share instead of chasing the last slot.
  double balance = 1.1;
  // Hysteresis of a kept plan: the trigger may drift by `keep`, its projections by
  // `keep_projection`. A peer's load is read from one answer, and at a few percent of a CPU
  // its busy fraction (and so its capacity) moves by a tenth or more from one answer to the
  // next: a plan must outlast that.
  double keep = 0.1;
  double keep_projection = 0.25;
  // The most slots one plan moves: bounds the script and the answer that carries it.
  size_t max_slots = 1024;
  bool tls = false;  // add --tls to every redis-cli
};

// The slots going to one node.
struct Transfer {
  MoveSide to;
  std::vector<uint16_t> slots;  // largest first
  double ops_per_second = 0;    // theirs, in self's commands/s
};

struct MovePlan {
  MoveReason reason = MoveReason::kOverPeers;
  bool in_load = false;      // goal and peers_mean in load (over its target) or in ops/s
  double goal = 0;           // what self is brought to at most
  double peers_mean = 0;     // the other nodes' mean, before the move
  MoveSide from;             // self
  std::vector<Transfer> to;  // one per target, by id
  std::string commands;      // the bash script: MoveCommands(from, to, tls), with a summary
  size_t SlotCount() const;
};

// The plan for `self` by the rules above. `others` are the other primaries with a load;
// `slots` this node's movable slots (those it serves, less any hot through one key or tag)
// with their ops/s in self's commands/s; `previous` the last plan returned (or null).
std::optional<MovePlan> PlanRebalance(const NodeLoad& self, std::span<const NodeLoad> others,
                                      std::span<const SlotOps> slots, const MoveOptions& options,
                                      const MovePlan* previous = nullptr);

// The bash script moving `slots` from node `from` to node `to` with redis-cli, as above; run
// it on a host that reaches both nodes. Every interpolated value is shell-quoted. An address
// that is not host:port gives a script that says so and exits 1, having changed nothing.
std::string MoveCommands(const MoveSide& from, const MoveSide& to, std::span<const uint16_t> slots,
                         bool tls);
// The same for several targets in one script, each transfer's slots in turn; `summary`
// (what the plan is for, any text) opens it as comment lines.
std::string MoveCommands(const MoveSide& from, std::span<const Transfer> to, bool tls,
                         std::string_view summary = {});

}  // namespace hotkey::cluster

#endif  // HOTKEY_CLUSTER_MOVE_PLAN_H_
