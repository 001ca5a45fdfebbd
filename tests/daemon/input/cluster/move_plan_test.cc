// PlanRebalance's rules (trigger, goal, greedy over several targets, no plan that does not
// bring the busiest node under its goal, hysteresis, bad input) and MoveCommands' script: its text,
// and what bash makes of it with a stand-in redis-cli that records its arguments.

#include "hotkey/cluster/move_plan.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hotkey::cluster {
namespace {

NodeLoad Node(std::string id, double ops, std::optional<double> capacity = std::nullopt) {
  return {.id = id,
          .address = absl::StrCat("10.0.0.", id.size(), ":7000"),
          .ops_per_second = ops,
          .capacity_ops = capacity};
}

std::vector<SlotOps> Slots(std::initializer_list<std::pair<int, double>> list) {
  std::vector<SlotOps> out;
  for (const auto& [slot, ops] : list) out.push_back({static_cast<uint16_t>(slot), ops});
  return out;
}

std::vector<uint16_t> SlotsTo(const MovePlan& plan, const std::string& id) {
  for (const Transfer& t : plan.to) {
    if (t.to.id == id) return t.slots;
  }
  return {};
}

TEST_CASE("MovePlan: a node over its target moves its largest slots to the least loaded nodes",
          "[cluster]") {
  const NodeLoad self = Node("self", 9000, 10000);
  // a: 3000 / 10000 = 0.3; b: 4000 / 20000 = 0.2: b has more ops/s but less load.
  const std::vector<NodeLoad> others = {Node("a", 3000, 10000), Node("b", 4000, 20000)};
  const std::vector<SlotOps> slots = Slots({{1, 1000}, {2, 800}, {3, 600}, {4, 500}, {5, 50}});
  const std::optional<MovePlan> plan = PlanRebalance(self, others, slots, {.target_load = 0.7});
  REQUIRE(plan);
  CHECK(plan->reason == MoveReason::kOverTarget);
  CHECK(plan->in_load);
  CHECK(plan->goal == 0.7);
  // 1 (1000) to b (0.2 -> 0.25); 2 (800) to b (0.25 -> 0.29); 3 (600) to b (0.29 -> 0.32):
  // self 9000 -> 6600 (0.66 <= 0.7): stop before 4. b stays the least loaded throughout.
  CHECK(SlotsTo(*plan, "b") == std::vector<uint16_t>{1, 2, 3});
  CHECK(SlotsTo(*plan, "a").empty());
  CHECK(plan->SlotCount() == 3);
  CHECK(plan->from.ops_before == 9000);
  CHECK(plan->from.ops_after == 6600);
  CHECK(*plan->from.load_after == Approx(0.66));
  REQUIRE(plan->to.size() == 1);
  CHECK(plan->to[0].to.ops_after == 6400);
  CHECK(*plan->to[0].to.load_after == Approx(0.32));
  CHECK(plan->to[0].ops_per_second == 2400);
  CHECK(absl::StrContains(plan->commands,
                          "# Advice: move. Node self (10.0.0.4:7000) is over its "
                          "load target: 90% against 70%."));
  CHECK(absl::StrContains(plan->commands, "#   self (10.0.0.4:7000): 9000 -> 6600"));
  CHECK(absl::StrContains(plan->commands, "#   b (10.0.0.1:7000): 4000 -> 6400"));
  CHECK(absl::StrContains(plan->commands, "\nmove_keys 1\n"));
  CHECK(absl::StrContains(plan->commands, "\nmove_keys 3\n"));
  CHECK_FALSE(absl::StrContains(plan->commands, "\nmove_keys 4\n"));
}

TEST_CASE("MovePlan: many warm slots of a node clearly over its peers go to several nodes",
          "[cluster]") {
  // The issue's reproduction: one node at 1800 commands/s against 600 and 600, through 200
  // slots of 6 commands/s each, with no capacity known (compared in ops/s).
  const NodeLoad self = Node("self", 1800);
  const std::vector<NodeLoad> others = {Node("a", 600), Node("bb", 600)};
  std::vector<SlotOps> slots;
  for (int s = 0; s < 200; ++s) slots.push_back({static_cast<uint16_t>(100 + s), 6});
  const std::optional<MovePlan> plan = PlanRebalance(self, others, slots, {});
  REQUIRE(plan);
  CHECK(plan->reason == MoveReason::kOverPeers);
  CHECK_FALSE(plan->in_load);
  CHECK(plan->peers_mean == 600);
  // The goal: 1.1 x the mean of 1800, 600, 600 = 1100. Each slot goes to the less loaded of
  // a and bb, so they take turns: 117 slots (702) bring self to 1098.
  CHECK(plan->goal == Approx(1100));
  CHECK(plan->SlotCount() == 117);
  CHECK(plan->from.ops_after == Approx(1098));
  REQUIRE(plan->to.size() == 2);
  CHECK(plan->to[0].to.id == "a");
  CHECK(plan->to[0].slots.size() == 59);
  CHECK(plan->to[1].slots.size() == 58);
  CHECK(plan->to[0].to.ops_after == Approx(954));
  CHECK(plan->to[1].to.ops_after == Approx(948));
  CHECK_FALSE(plan->from.load_after);
  // One script: both targets, each after its own migrate_to.
  CHECK(absl::StrContains(plan->commands, "# To node a (10.0.0.1:7000)\nmigrate_to="));
  CHECK(absl::StrContains(plan->commands, "# To node bb (10.0.0.2:7000)\nmigrate_to="));
  CHECK(absl::StrContains(plan->commands, "is 3.00x its peers' mean: 1800 commands/s against 600"));
}

TEST_CASE(
    "MovePlan: no advice for a balanced cluster, a node that is not the busiest, or one "
    "no move brings under its goal",
    "[cluster]") {
  const std::vector<SlotOps> slots = Slots({{1, 100}, {2, 100}, {3, 100}});
  // Balanced: 1080 against 1087 and 833 (the issue's cluster after its rebalance).
  CHECK_FALSE(
      PlanRebalance(Node("self", 1080), std::vector{Node("a", 1087), Node("b", 833)}, slots, {}));
  // The busiest by far, but not the busiest: that node's own hotkeyd plans.
  CHECK_FALSE(
      PlanRebalance(Node("self", 1800), std::vector{Node("a", 600), Node("b", 1900)}, slots, {}));
  // Under its target in load and not clearly over its peers: nothing, however busy in ops/s.
  CHECK_FALSE(PlanRebalance(Node("self", 6000, 10000),
                            std::vector{Node("a", 5000, 10000), Node("b", 5000, 10000)}, slots,
                            {.target_load = 0.7}));
  // At 1.2% of its CPU and 3x its peers: over them, and a plan is made (the load gate is the
  // peers' comparison here): 4 slots of 30 bring it to 180, under 1.1 x 166.7 = 183.3. At
  // 1.4x its peers, none.
  const std::optional<MovePlan> idle =
      PlanRebalance(Node("self", 300, 25000), std::vector{Node("a", 100), Node("b", 100)},
                    Slots({{1, 30}, {2, 30}, {3, 30}, {4, 30}, {5, 30}}), {});
  REQUIRE(idle);
  CHECK(idle->SlotCount() == 4);
  // Slots too coarse to end under the goal: 50 each leaves it at 200 with both others at 150,
  // and a third would put one of them over the goal.
  CHECK_FALSE(PlanRebalance(Node("self", 300, 25000), std::vector{Node("a", 100), Node("b", 100)},
                            Slots({{1, 50}, {2, 50}, {3, 50}}), {}));
  CHECK_FALSE(
      PlanRebalance(Node("self", 140), std::vector{Node("a", 100), Node("b", 100)}, slots, {}));
  // Over its peers, but its one slot would make its target the busiest: no plan (the hot
  // spot would only move), and so no advice.
  CHECK_FALSE(
      PlanRebalance(Node("self", 1700), std::vector{Node("a", 600)}, Slots({{42, 1100}}), {}));
  // Over its target, but every other node is near it too: no move brings it under.
  CHECK_FALSE(PlanRebalance(Node("self", 9000, 10000),
                            std::vector{Node("a", 6800, 10000), Node("b", 6900, 10000)},
                            Slots({{1, 1000}, {2, 1000}, {3, 1000}}), {.target_load = 0.7}));
}

TEST_CASE("MovePlan: a kept plan does not change while the load jitters, and ends once run",
          "[cluster]") {
  const std::vector<NodeLoad> others = {Node("a", 600), Node("b", 600)};
  std::vector<SlotOps> slots;
  for (int s = 0; s < 200; ++s) slots.push_back({static_cast<uint16_t>(s), 6});
  const std::optional<MovePlan> first = PlanRebalance(Node("self", 1800), others, slots, {});
  REQUIRE(first);
  // The slots' ops jitter: each read would order them differently, and a fresh plan would
  // pick other slots; the kept plan keeps its slots and targets.
  std::vector<SlotOps> jittered = slots;
  for (size_t i = 0; i < jittered.size(); ++i) jittered[i].ops_per_second += (i % 7) * 0.1;
  const std::vector<NodeLoad> moved = {Node("a", 610), Node("b", 590)};
  const std::optional<MovePlan> fresh = PlanRebalance(Node("self", 1810), moved, jittered, {});
  REQUIRE(fresh);
  CHECK(fresh->to[0].slots != first->to[0].slots);
  const std::optional<MovePlan> kept =
      PlanRebalance(Node("self", 1810), moved, jittered, {}, &*first);
  REQUIRE(kept);
  CHECK(kept->to[0].slots == first->to[0].slots);
  CHECK(kept->to[1].slots == first->to[1].slots);
  CHECK(kept->to[0].to.ops_before == 610);  // re-projected on the loads now
  // The load it was made on was half the real one (a window still holding the quiet before):
  // with each slot now at 12, the kept plan would move twice the excess; a fresh one moves
  // about half as many slots.
  std::vector<SlotOps> doubled = slots;
  for (SlotOps& s : doubled) s.ops_per_second = 12;
  const std::optional<MovePlan> redone =
      PlanRebalance(Node("self", 1800), others, doubled, {}, &*first);
  REQUIRE(redone);
  CHECK(redone->SlotCount() == 59);
  // Run: the slots are no longer self's, the node is balanced, and no plan is advised.
  std::vector<SlotOps> left;
  for (const SlotOps& s : slots) {
    if (std::find(first->to[0].slots.begin(), first->to[0].slots.end(), s.slot) ==
            first->to[0].slots.end() &&
        std::find(first->to[1].slots.begin(), first->to[1].slots.end(), s.slot) ==
            first->to[1].slots.end()) {
      left.push_back(s);
    }
  }
  CHECK_FALSE(PlanRebalance(Node("self", 1098), std::vector{Node("a", 954), Node("b", 948)}, left,
                            {}, &*first));
  // Still over, but the kept plan's slots are gone (moved by hand): a fresh plan.
  const std::optional<MovePlan> again =
      PlanRebalance(Node("self", 1800), others, std::span(slots).subspan(150), {}, &*first);
  CHECK_FALSE(again);  // 50 slots of 6 left: not enough to reach the goal
  const std::optional<MovePlan> other =
      PlanRebalance(Node("self", 1800), others, std::span(slots).subspan(50), {}, &*first);
  REQUIRE(other);
  CHECK(other->to[0].slots.front() >= 50);
}

TEST_CASE("MovePlan: bad input is ignored, never a crash", "[cluster]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const NodeLoad self = Node("self", 9000, 10000);
  const std::vector<SlotOps> slots = {{16384, 5000}, {65535, 1}, {1, nan}, {2, -5},  {3, inf},
                                      {4, 0},        {5, 1000},  {5, 900}, {6, 800}, {7, 300}};
  const std::vector<NodeLoad> others = {Node("self", 0, 10000), Node("n", nan, 10000),
                                        Node("m", -1, 10000), Node("i", inf), Node("z", 1000, 0)};
  // z: capacity 0 is unknown, so self's; 5 once (its largest), then 6, then 7 (to 0.69).
  const std::optional<MovePlan> plan = PlanRebalance(self, others, slots, {.target_load = 0.7});
  REQUIRE(plan);
  REQUIRE(plan->to.size() == 1);
  CHECK(plan->to[0].to.id == "z");
  CHECK(plan->to[0].slots == std::vector<uint16_t>{5, 6, 7});
  CHECK(*plan->to[0].to.load_after == Approx(0.31));
  CHECK(*plan->from.load_after == Approx(0.69));
  // No usable other node, no slot, or self's ops/s not a number: no plan.
  CHECK_FALSE(PlanRebalance(self, std::span<const NodeLoad>(others.data(), 4), slots, {}));
  CHECK_FALSE(PlanRebalance(self, {}, slots, {}));
  CHECK_FALSE(PlanRebalance(self, others, {}, {}));
  CHECK_FALSE(PlanRebalance(Node("self", nan, 10000), others, slots, {}));
}

MoveSide Side(std::string id, std::string address) {
  MoveSide side;
  side.id = std::move(id);
  side.address = std::move(address);
  return side;
}

TEST_CASE("MoveCommands: the SETSLOT sequence, slot by slot, in order", "[cluster]") {
  const std::vector<uint16_t> slots = {1234, 99};
  const std::string s =
      MoveCommands(Side("fromid", "127.0.0.1:7000"), Side("toid", "127.0.0.1:7001"), slots, false);
  INFO(s);
  CHECK(
      s.starts_with("#!/usr/bin/env bash\n# Moves Redis Cluster slots from node fromid "
                    "(127.0.0.1:7000) to node toid (127.0.0.1:7001): slots 1234 99.\n"));
  CHECK(absl::StrContains(s, "REDISCLI_AUTH"));
  CHECK(absl::StrContains(s, "AUTH2"));
  CHECK(absl::StrContains(s, "\nset -euo pipefail\n"));
  CHECK(absl::StrContains(s, "\nfrom_cli=(redis-cli -h 127.0.0.1 -p 7000)\n"));
  CHECK(absl::StrContains(s, "\nmigrate_to='\"127.0.0.1\" 7001'\n"));
  CHECK(absl::StrContains(s, "CLUSTER GETKEYSINSLOT \"$slot\" 100"));
  CHECK(absl::StrContains(s, "MIGRATE %s \"\" 0 5000 KEYS %s"));
  const std::string expected =
      "\n# Slot 1234\n"
      "expect OK redis-cli -h 127.0.0.1 -p 7001 CLUSTER SETSLOT 1234 IMPORTING fromid\n"
      "expect OK redis-cli -h 127.0.0.1 -p 7000 CLUSTER SETSLOT 1234 MIGRATING toid\n"
      "move_keys 1234\n"
      "expect OK redis-cli -h 127.0.0.1 -p 7001 CLUSTER SETSLOT 1234 NODE toid\n"
      "expect OK redis-cli -h 127.0.0.1 -p 7000 CLUSTER SETSLOT 1234 NODE toid\n"
      "\n# Slot 99\n"
      "expect OK redis-cli -h 127.0.0.1 -p 7001 CLUSTER SETSLOT 99 IMPORTING fromid\n"
      "expect OK redis-cli -h 127.0.0.1 -p 7000 CLUSTER SETSLOT 99 MIGRATING toid\n"
      "move_keys 99\n"
      "expect OK redis-cli -h 127.0.0.1 -p 7001 CLUSTER SETSLOT 99 NODE toid\n"
      "expect OK redis-cli -h 127.0.0.1 -p 7000 CLUSTER SETSLOT 99 NODE toid\n";
  CHECK(s.ends_with(expected));
}

TEST_CASE("MoveCommands: --tls on every redis-cli", "[cluster]") {
  const std::vector<uint16_t> slots = {1, 2};
  const std::string s =
      MoveCommands(Side("f", "127.0.0.1:7000"), Side("t", "127.0.0.1:7001"), slots, true);
  INFO(s);
  // from_cli, then four per slot; no redis-cli line without it.
  size_t n = 0;
  for (size_t at = 0; (at = s.find("redis-cli --tls -h ", at)) != std::string::npos; ++at) ++n;
  CHECK(n == 1 + 4 * 2);
  CHECK_FALSE(absl::StrContains(s, "redis-cli -h"));
}

TEST_CASE("MoveCommands: IPv6 addresses, bracketed or bare", "[cluster]") {
  const std::vector<uint16_t> slots = {5};
  const std::string s =
      MoveCommands(Side("f", "[::1]:7000"), Side("t", "fe80::1:7001"), slots, false);
  INFO(s);
  CHECK(absl::StrContains(s, "\nfrom_cli=(redis-cli -h ::1 -p 7000)\n"));
  CHECK(absl::StrContains(s, "\nmigrate_to='\"fe80::1\" 7001'\n"));
  CHECK(absl::StrContains(s, "expect OK redis-cli -h fe80::1 -p 7001 CLUSTER SETSLOT 5 NODE t\n"));
  const std::string b =
      MoveCommands(Side("f", "[2001:db8::7]:6379"), Side("t", "[2001:db8::8]:6380"), slots, false);
  CHECK(absl::StrContains(b, "\nmigrate_to='\"2001:db8::8\" 6380'\n"));
  CHECK(absl::StrContains(b, "redis-cli -h 2001:db8::7 -p 6379 CLUSTER SETSLOT 5 MIGRATING t\n"));
}

TEST_CASE("MoveCommands: an address that is not host:port gives a script that exits 1",
          "[cluster]") {
  const std::vector<uint16_t> slots = {5};
  for (const std::string bad : {"", "host", "host:", ":7000", "host:0", "host:65536", "host:7x",
                                "[::1]7000", "[::1", "a b:7000", "h\n:7000", "host:+7"}) {
    INFO(bad);
    const std::string s = MoveCommands(Side("f", "127.0.0.1:7000"), Side("t", bad), slots, false);
    INFO(s);
    CHECK_FALSE(absl::StrContains(s, "SETSLOT"));
    CHECK(s.ends_with("exit 1\n"));
    const std::string r = MoveCommands(Side("f", bad), Side("t", "127.0.0.1:7000"), slots, false);
    CHECK_FALSE(absl::StrContains(r, "SETSLOT"));
  }
}

// A directory holding a stand-in redis-cli: it appends its arguments to args.log (each
// followed by a NUL, each call by a line break). It answers an error to a call with the word
// $FAIL; to GETKEYSINSLOT, the file `keys` once (when there is one), then "(empty array)";
// to a call without a command (a line on stdin, which it appends to stdin.log), $MIGRATE or
// "OK"; and "OK" to anything else.
class FakeCli {
 public:
  FakeCli() {
    char tmpl[] = "/tmp/hotkey-move-plan-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/redis-cli") << R"(#!/usr/bin/env bash
dir=$(dirname "$0")
printf '%s\0' "$@" >>"$dir/args.log"
printf '\n' >>"$dir/args.log"
case " $* " in
  *" $FAIL "*) echo 'ERR refused' ;;
  *" GETKEYSINSLOT "*)
    if [[ -f $dir/keys && ! -f $dir/listed ]]; then
      touch "$dir/listed"
      cat "$dir/keys"
    else
      echo '(empty array)'
    fi
    ;;
  *" --no-raw ") cat >>"$dir/stdin.log"; echo "${MIGRATE:-OK}" ;;
  *) echo OK ;;
esac
)";
    REQUIRE(::chmod((dir_ + "/redis-cli").c_str(), 0755) == 0);
  }
  ~FakeCli() { std::system(absl::StrCat("rm -rf '", dir_, "'").c_str()); }

  // Runs `script` with bash, the stand-in first on PATH; its exit status.
  int Run(const std::string& script, const std::string& fail = "-none-",
          const std::string& migrate = "OK") const {
    std::ofstream(dir_ + "/move.sh") << script;
    const int status =
        std::system(absl::StrCat("FAIL='", fail, "' MIGRATE='", migrate, "' PATH='", dir_,
                                 "':\"$PATH\" bash '", dir_, "/move.sh' >'", dir_, "/out.log' 2>&1")
                        .c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  // What GETKEYSINSLOT answers first.
  void SetKeys(const std::string& reply) const { std::ofstream(dir_ + "/keys") << reply; }
  // The contents of a file of the directory.
  std::string Read(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // One entry per call: its arguments.
  std::vector<std::vector<std::string>> Calls() const {
    std::vector<std::vector<std::string>> calls;
    std::vector<std::string> args;
    std::string cur;
    const std::string text = Read("args.log");
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\0') {
        args.push_back(cur);
        cur.clear();
      } else if (text[i] == '\n' && cur.empty()) {
        calls.push_back(args);
        args.clear();
      } else {
        cur += text[i];
      }
    }
    return calls;
  }

 private:
  std::string dir_;
};

TEST_CASE("MoveCommands: bash passes every quoted value to redis-cli intact", "[cluster]") {
  // Ids and hosts with spaces, quotes, $ and backquotes, as bash would otherwise expand them.
  const std::string from_id = "f'r\"o m$HOME`true`";
  const std::string to_id = "t o'$(false)";
  const std::vector<uint16_t> slots = {7};
  const std::string s =
      MoveCommands(Side(from_id, "h'x$y:7000"), Side(to_id, "[::1]:7001"), slots, false);
  FakeCli cli;
  REQUIRE(cli.Run(s) == 0);
  const std::vector<std::vector<std::string>> calls = cli.Calls();
  using V = std::vector<std::string>;
  REQUIRE(calls.size() == 5);
  CHECK(calls[0] == V{"-h", "::1", "-p", "7001", "CLUSTER", "SETSLOT", "7", "IMPORTING", from_id});
  CHECK(calls[1] == V{"-h", "h'x$y", "-p", "7000", "CLUSTER", "SETSLOT", "7", "MIGRATING", to_id});
  CHECK(calls[2] ==
        V{"-h", "h'x$y", "-p", "7000", "--no-raw", "CLUSTER", "GETKEYSINSLOT", "7", "100"});
  CHECK(calls[3] == V{"-h", "::1", "-p", "7001", "CLUSTER", "SETSLOT", "7", "NODE", to_id});
  CHECK(calls[4] == V{"-h", "h'x$y", "-p", "7000", "CLUSTER", "SETSLOT", "7", "NODE", to_id});
}

TEST_CASE("MoveCommands: an id with a line break stays inside its comment and its quotes",
          "[cluster]") {
  const std::vector<uint16_t> slots = {7};
  const std::string s =
      MoveCommands(Side("x\nexit 3", "127.0.0.1:7000"), Side("t", "127.0.0.1:7001"), slots, false);
  CHECK(absl::StrContains(s, "from node x?exit 3 (127.0.0.1:7000)"));
  CHECK(absl::StrContains(s, "IMPORTING 'x\nexit 3'\n"));
  FakeCli cli;
  CHECK(cli.Run(s) == 0);
  CHECK(cli.Calls()[0].back() == "x\nexit 3");
}

TEST_CASE("MoveCommands: the script stops at an unexpected reply", "[cluster]") {
  const std::vector<uint16_t> slots = {7};
  FakeCli cli;
  // MIGRATING answered with an error: nothing after it runs.
  CHECK(
      cli.Run(MoveCommands(Side("f", "127.0.0.1:7000"), Side("t", "127.0.0.1:7001"), slots, false),
              "MIGRATING") == 1);
  CHECK(cli.Calls().size() == 2);
  // A bad address: redis-cli is never called.
  FakeCli none;
  CHECK(none.Run(MoveCommands(Side("f", "nohost"), Side("t", "127.0.0.1:7001"), slots, false)) ==
        1);
  CHECK(none.Calls().empty());
}

TEST_CASE("MoveCommands: the listed keys go to MIGRATE quoted as redis-cli printed them",
          "[cluster]") {
  const std::vector<uint16_t> slots = {7};
  const std::string script =
      MoveCommands(Side("f", "127.0.0.1:7000"), Side("t", "[::1]:7001"), slots, false);
  // redis-cli --no-raw pads the index from the tenth element on.
  std::string listed, quoted;
  for (int i = 1; i <= 10; ++i) {
    const std::string key = i == 2 ? R"("a b\"c\n\x00\xff")" : absl::StrCat("\"k", i, "\"");
    absl::StrAppend(&listed, i < 10 ? " " : "", i, ") ", key, "\n");
    absl::StrAppend(&quoted, key, " ");
  }
  FakeCli cli;
  cli.SetKeys(listed);
  REQUIRE(cli.Run(script) == 0);
  CHECK(cli.Read("stdin.log") ==
        absl::StrCat("MIGRATE \"::1\" 7001 \"\" 0 5000 KEYS ", quoted, "\n"));
  // IMPORTING, MIGRATING, GETKEYSINSLOT, MIGRATE, GETKEYSINSLOT (empty), NODE twice.
  CHECK(cli.Calls().size() == 7);

  // A MIGRATE that fails (a key already on the target) stops the script before any NODE.
  FakeCli busy;
  busy.SetKeys(listed);
  CHECK(busy.Run(script, "-none-", "(error) BUSYKEY Target key name already exists.") == 1);
  CHECK(busy.Calls().size() == 4);
  CHECK(absl::StrContains(busy.Read("out.log"), "BUSYKEY"));

  // An error listing the keys stops it too.
  FakeCli error;
  CHECK(error.Run(script, "GETKEYSINSLOT") == 1);
  CHECK(error.Calls().size() == 3);
}

}  // namespace
}  // namespace hotkey::cluster
