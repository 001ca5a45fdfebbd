// PlanSlotMove's rules (target, greedy, stop, no move that only moves the hot spot, unknown
// capacities, ties, bad input) and MoveCommands' script: its text, and what bash makes of it
// with a stand-in redis-cli that records its arguments.

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

TEST_CASE("MovePlan: the target is the least loaded node, by load when capacities are known",
          "[cluster]") {
  const NodeLoad self = Node("self", 9000, 10000);
  // a: 3000 / 10000 = 0.3; b: 4000 / 20000 = 0.2: b has more ops/s but less load.
  const std::vector<NodeLoad> others = {Node("a", 3000, 10000), Node("b", 4000, 20000)};
  const std::vector<SlotOps> hot = {{100, 1000}};
  const std::optional<MovePlan> plan = PlanSlotMove(self, others, hot, {});
  REQUIRE(plan);
  CHECK(plan->to.id == "b");
  CHECK(plan->slots == std::vector<uint16_t>{100});
  // from: 9000 - 1000 = 8000 (0.8); to: 4000 + 1000 = 5000 (5000 / 20000 = 0.25).
  CHECK(plan->from.ops_before == 9000);
  CHECK(plan->from.ops_after == 8000);
  CHECK(*plan->from.load_before == Approx(0.9));
  CHECK(*plan->from.load_after == Approx(0.8));
  CHECK(plan->to.ops_before == 4000);
  CHECK(plan->to.ops_after == 5000);
  CHECK(*plan->to.load_before == Approx(0.2));
  CHECK(*plan->to.load_after == Approx(0.25));
  CHECK(plan->from.address == self.address);
  CHECK(plan->to.address == others[1].address);
  CHECK(plan->commands == MoveCommands(plan->from, plan->to, plan->slots, false));
}

TEST_CASE("MovePlan: a node without a capacity takes self's", "[cluster]") {
  const NodeLoad self = Node("self", 9000, 10000);
  // a: 3000 / 10000 (self's) = 0.3; b: 2500 / 5000 = 0.5.
  const std::vector<NodeLoad> others = {Node("a", 3000), Node("b", 2500, 5000)};
  const std::vector<SlotOps> hot = {{7, 500}};
  const std::optional<MovePlan> plan = PlanSlotMove(self, others, hot, {});
  REQUIRE(plan);
  CHECK(plan->to.id == "a");
  CHECK(*plan->to.load_before == Approx(0.3));
  CHECK(*plan->to.load_after == Approx(0.35));
}

TEST_CASE("MovePlan: with no capacity known, the least ops/s wins and no load is projected",
          "[cluster]") {
  const NodeLoad self = Node("self", 9000);
  const std::vector<SlotOps> hot = {{7, 500}};
  {
    const std::vector<NodeLoad> others = {Node("a", 3000), Node("b", 2000)};
    const std::optional<MovePlan> plan = PlanSlotMove(self, others, hot, {});
    REQUIRE(plan);
    CHECK(plan->to.id == "b");
    CHECK_FALSE(plan->from.load_before);
    CHECK_FALSE(plan->from.load_after);
    CHECK_FALSE(plan->to.load_before);
    CHECK(plan->from.ops_after == 8500);
    CHECK(plan->to.ops_after == 2500);
  }
  {
    // Self's capacity unknown, one other's known: a has no load, so ops/s decide (b: 2000),
    // though b is at load 2000 / 2000 = 1.
    const std::vector<NodeLoad> others = {Node("a", 3000), Node("b", 2000, 2000)};
    const std::optional<MovePlan> plan = PlanSlotMove(self, others, hot, {});
    REQUIRE(plan);
    CHECK(plan->to.id == "b");
    CHECK(*plan->to.load_before == Approx(1.0));
    CHECK(*plan->to.load_after == Approx(1.25));
    CHECK_FALSE(plan->from.load_before);
  }
  {
    // Self's capacity unknown, every other's known: by load. a: 3000 / 10000 = 0.3 beats
    // b: 2000 / 2000 = 1. Without self's capacity the move is judged in ops/s: 3500 < 8500.
    const std::vector<NodeLoad> others = {Node("a", 3000, 10000), Node("b", 2000, 2000)};
    const std::optional<MovePlan> plan = PlanSlotMove(self, others, hot, {});
    REQUIRE(plan);
    CHECK(plan->to.id == "a");
  }
}

TEST_CASE("MovePlan: ties go to the lowest id, whatever the order given", "[cluster]") {
  const NodeLoad self = Node("self", 9000, 10000);
  const std::vector<SlotOps> hot = {{7, 500}};
  const std::vector<NodeLoad> ba = {Node("b", 3000, 10000), Node("a", 3000, 10000)};
  const std::vector<NodeLoad> ab = {Node("a", 3000, 10000), Node("b", 3000, 10000)};
  CHECK(PlanSlotMove(self, ba, hot, {})->to.id == "a");
  CHECK(PlanSlotMove(self, ab, hot, {})->to.id == "a");
  // Equal slots: the lowest slot first.
  const std::vector<SlotOps> equal = {{9, 500}, {3, 500}, {5, 500}};
  CHECK(PlanSlotMove(self, ab, equal, {})->slots == std::vector<uint16_t>{3, 5, 9});
}

TEST_CASE("MovePlan: greedy, largest first, stops once from is at or under the target load",
          "[cluster]") {
  const NodeLoad self = Node("self", 9000, 10000);
  const std::vector<NodeLoad> others = {Node("a", 1000, 10000)};
  const std::vector<SlotOps> hot = {{4, 500}, {2, 800}, {1, 1000}, {3, 600}};
  // 1 (1000): from 8000 (0.8), to 2000; 2 (800): from 7200 (0.72), to 2800; 3 (600): from 6600
  // (0.66 <= 0.7): stop before 4.
  const std::optional<MovePlan> plan = PlanSlotMove(self, others, hot, {.target_load = 0.7});
  REQUIRE(plan);
  CHECK(plan->slots == std::vector<uint16_t>{1, 2, 3});
  CHECK(plan->from.ops_after == 6600);
  CHECK(plan->to.ops_after == 3400);
  CHECK(*plan->from.load_after == Approx(0.66));
  CHECK(*plan->to.load_after == Approx(0.34));
  // A lower target takes the last one too: 6100 vs 3900.
  CHECK(PlanSlotMove(self, others, hot, {.target_load = 0.5})->slots ==
        std::vector<uint16_t>{1, 2, 3, 4});
  // Already at or under the target: the largest slot that fits still moves, and no more.
  CHECK(PlanSlotMove(self, others, hot, {.target_load = 0.9})->slots == std::vector<uint16_t>{1});
  CHECK(PlanSlotMove(self, others, hot, {.target_load = 0.95})->slots == std::vector<uint16_t>{1});
}

TEST_CASE("MovePlan: a move that only moves the hot spot says so", "[cluster]") {
  const NodeLoad self = Node("self", 9000, 10000);
  const std::vector<NodeLoad> others = {Node("a", 3000, 10000)};
  // One slot of 6000: the target would carry 9000 against from's 3000.
  const std::vector<SlotOps> one = {{42, 6000}};
  const std::optional<MovePlan> only = PlanSlotMove(self, others, one, {});
  REQUIRE(only);
  CHECK_FALSE(only->relieves);
  CHECK(only->slots == std::vector<uint16_t>{42});
  CHECK(only->from.ops_after == 3000);
  CHECK(only->to.ops_after == 9000);
  // Exactly half the gap (3000): both would end at 6000, and the target must stay strictly
  // under for a move that relieves.
  const std::vector<SlotOps> half = {{42, 3000}};
  CHECK_FALSE(PlanSlotMove(self, others, half, {})->relieves);
  // A slot over the gap is skipped; a smaller one after it still moves: 3000 + 2000 < 9000 - 2000.
  const std::vector<SlotOps> two = {{42, 6000}, {43, 2000}};
  const std::optional<MovePlan> plan = PlanSlotMove(self, others, two, {});
  REQUIRE(plan);
  CHECK(plan->slots == std::vector<uint16_t>{43});
  CHECK(plan->relieves);
  CHECK(*plan->from.load_after == Approx(0.7));
  CHECK(*plan->to.load_after == Approx(0.5));
  // The target busier than self: nothing fits.
  const std::vector<NodeLoad> busier = {Node("a", 9500, 10000)};
  CHECK_FALSE(PlanSlotMove(self, busier, two, {}));
}

TEST_CASE("MovePlan: different capacities are compared in load", "[cluster]") {
  // from 8000 / 10000; to 1000 / 2000 = 0.5. A slot of 1000: to 2000 / 2000 = 1 > from 0.7:
  // not moved, though 2000 < 7000 in ops/s. A slot of 400: 1400 / 2000 = 0.7 < 0.76: moved.
  const NodeLoad self = Node("self", 8000, 10000);
  const std::vector<NodeLoad> others = {Node("a", 1000, 2000)};
  const std::vector<SlotOps> hot = {{1, 1000}, {2, 400}};
  const std::optional<MovePlan> plan = PlanSlotMove(self, others, hot, {});
  REQUIRE(plan);
  CHECK(plan->slots == std::vector<uint16_t>{2});
}

TEST_CASE("MovePlan: bad input is ignored, never a crash", "[cluster]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const NodeLoad self = Node("self", 9000, 10000);
  const std::vector<SlotOps> hot = {{16384, 5000}, {65535, 1}, {1, nan}, {2, -5}, {3, inf},
                                    {4, 0},        {5, 1000},  {5, 900}, {6, 800}};
  const std::vector<NodeLoad> others = {Node("self", 0, 10000), Node("n", nan, 10000),
                                        Node("m", -1, 10000), Node("i", inf), Node("z", 1000, 0)};
  // z: capacity 0 is unknown, so self's; 5 once (its largest), then 6.
  const std::optional<MovePlan> plan = PlanSlotMove(self, others, hot, {.target_load = 0.5});
  REQUIRE(plan);
  CHECK(plan->to.id == "z");
  CHECK(plan->slots == std::vector<uint16_t>{5, 6});
  CHECK(*plan->to.load_after == Approx(0.28));
  // No usable other node, no slot, or self's ops/s not a number: no plan.
  CHECK_FALSE(PlanSlotMove(self, std::span<const NodeLoad>(others.data(), 4), hot, {}));
  CHECK_FALSE(PlanSlotMove(self, {}, hot, {}));
  CHECK_FALSE(PlanSlotMove(self, others, {}, {}));
  CHECK_FALSE(PlanSlotMove(Node("self", nan, 10000), others, hot, {}));
  CHECK_FALSE(PlanSlotMove(Node("self", 9000, nan), others, std::span(hot).first(0), {}));
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
      s.starts_with("#!/usr/bin/env bash\n# Moves Redis Cluster slots 1234 99 from node fromid "
                    "(127.0.0.1:7000) to node toid (127.0.0.1:7001):\n"));
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
