// CLUSTER NODES, as the documentation shows it and as a real three-node cluster, created by
// redis-cli --cluster create on loopback, answers it.

#include "hotkey/cluster/topology.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "command_output.h"
#include "hotkey/cluster/slot.h"

namespace hotkey::cluster {
namespace {

// The example of https://redis.io/commands/cluster-nodes/ (Redis 7 form, with hostnames), a
// slot migrating and one importing.
constexpr std::string_view kDocExample =
    "07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host4 slave "
    "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected\n"
    "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002,host2 master - 0 "
    "1426238316232 2 connected 5461-10922\n"
    "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003,host3 master - 0 "
    "1426238318243 3 connected 10923-16383 [10923-<-e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca]\n"
    "6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@31005,host5 slave "
    "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 0 1426238316232 5 connected\n"
    "824fe116063bc5fcf9f4ffd895bc17aee7731ac3 127.0.0.1:30006@31006,host6 slave "
    "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 0 1426238317741 6 connected\n"
    "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001,host1 myself,master - 0 0 "
    "1 connected 0-5460 [10923->-292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f]\n";

TEST_CASE("Topology: the documented CLUSTER NODES answer", "[cluster]") {
  absl::StatusOr<Topology> t = ParseClusterNodes(kDocExample);
  REQUIRE(t.ok());
  REQUIRE(t->nodes.size() == 6);
  CHECK(t->Shards() == 3);
  const Node* me = t->Myself();
  REQUIRE(me != nullptr);
  CHECK(me->id == "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca");
  CHECK(me->address == "127.0.0.1:30001");
  CHECK(me->hostname == "host1");
  CHECK(me->primary);
  CHECK(me->slots == std::vector<SlotRange>{{0, 5460}});
  CHECK(me->SlotCount() == 5461);
  CHECK(me->migrating ==
        std::vector<SlotMove>{{10923, "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f"}});
  const Node& replica = t->nodes[0];
  CHECK_FALSE(replica.primary);
  CHECK(replica.primary_id == me->id);
  CHECK(replica.slots.empty());
  CHECK(t->nodes[2].importing == std::vector<SlotMove>{{10923, me->id}});
  CHECK(t->Owner(0)->id == me->id);
  CHECK(t->Owner(5461)->address == "127.0.0.1:30002");
  CHECK(t->Owner(16383)->address == "127.0.0.1:30003");
  CHECK(t->Owner(KeySlot("foo"))->address == "127.0.0.1:30003");  // slot 12182
}

TEST_CASE("Topology: a malformed answer is an error naming its line, never a crash", "[cluster]") {
  const std::string_view good =
      "e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-16383\n";
  REQUIRE(ParseClusterNodes(good).ok());
  CHECK(ParseClusterNodes(good)->Owner(16383) != nullptr);
  for (std::string_view bad : {
           "",
           "\n\n",
           "e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1\n",                    // short
           "e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-16384\n",  // past the end
           "e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 10-5\n",     // backwards
           "e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected -5\n",
           "e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 5-\n",
           "e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected x\n",
           "e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected +5\n",
           "e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 99999999999\n",
           "e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected [5->-]\n",
           "e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected [5]\n",
           "e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected [5->-x\n",
           "e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 sideways 0-5\n",
       }) {
    INFO(bad);
    const absl::StatusOr<Topology> t = ParseClusterNodes(bad);
    CHECK_FALSE(t.ok());
  }
  const absl::StatusOr<Topology> t = ParseClusterNodes(std::string(good) + "x y\n");
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().message() == "CLUSTER NODES line 2: fewer than 8 fields");
}

TEST_CASE("Topology: what no node can answer is refused, each by its own status code",
          "[cluster]") {
  const auto line = [](const std::string& id, const std::string& slots) {
    return absl::StrCat(id, " 127.0.0.1:30001@31001 master - 0 0 1 connected ", slots, "\n");
  };
  // A slot past 16383, in a range or alone, and digits too many for any number.
  for (const std::string slots : {"0-16384", "16384", "99999999999999999999", "[16384->-e7d1]"}) {
    INFO(slots);
    CHECK(ParseClusterNodes(line("e7d1", slots)).status().code() == absl::StatusCode::kOutOfRange);
  }
  // One slot given to two nodes, or twice to one: each slot has one owner in a node's view.
  const absl::StatusOr<Topology> two =
      ParseClusterNodes(line("e7d1", "0-16383") + line("a2b3", "16383"));
  CHECK(two.status().code() == absl::StatusCode::kAlreadyExists);
  CHECK_THAT(std::string(two.status().message()), Catch::Contains("slot 16383"));
  CHECK(ParseClusterNodes(line("e7d1", "0-10 5")).status().code() ==
        absl::StatusCode::kAlreadyExists);
  CHECK(ParseClusterNodes(line("e7d1", "0-10") + line("a2b3", "11-20")).ok());
  // More lines than kMaxNodes.
  std::string many;
  for (size_t i = 0; i <= kMaxNodes; ++i) many += line(absl::StrCat(i), "");
  CHECK(ParseClusterNodes(many).status().code() == absl::StatusCode::kResourceExhausted);
  // A node id longer than Redis's, or an address longer than a host name: no node's.
  CHECK(ParseClusterNodes(line(std::string(kNodeIdBytes + 1, 'a'), "0")).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(ParseClusterNodes(line(std::string(kNodeIdBytes, 'a'), "0")).ok());
  const std::string long_host = absl::StrCat("e7d1 ", std::string(kMaxHostBytes + 1, 'h'),
                                             ":1@2 master - 0 0 1 connected 0\n");
  CHECK(ParseClusterNodes(long_host).status().code() == absl::StatusCode::kInvalidArgument);
}

using hotkey::testing::CommandOutput;

// Three redis-servers in cluster mode on loopback, joined by redis-cli --cluster create; each
// shut down at the end.
class ThreeNodes {
 public:
  ThreeNodes() {
    char tmpl[] = "/tmp/hotkey-topology-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    // Ports (and their cluster bus ports, +10000) in 20000-54999; a clash fails the start and
    // is retried with other ports.
    for (int attempt = 0; attempt < 5 && !Started(); ++attempt) {
      const int base = 20000 + static_cast<int>((::getpid() * 7919 + attempt * 101) % 35000);
      ports_ = {base, base + 1, base + 2};
      bool ok = true;
      for (int p : ports_) {
        ok = ok && std::system(absl::StrCat(HOTKEY_REDIS_SERVER, " --port ", p,
                                            " --bind 127.0.0.1 --cluster-enabled yes",
                                            " --cluster-config-file ", dir_, "/nodes-", p,
                                            ".conf --dir ", dir_, " --save '' --appendonly no",
                                            " --daemonize yes --logfile ", dir_, "/", p, ".log")
                                   .c_str()) == 0;
      }
      for (int i = 0; ok && i < 50 && !Started(); ++i) ::usleep(100'000);
      if (!Started()) Shutdown();
    }
    REQUIRE(Started());
    REQUIRE(std::system(absl::StrCat(HOTKEY_REDIS_CLI, " --cluster create 127.0.0.1:", ports_[0],
                                     " 127.0.0.1:", ports_[1], " 127.0.0.1:", ports_[2],
                                     " --cluster-yes >", dir_, "/create.log 2>&1")
                            .c_str()) == 0);
    for (int i = 0; i < 100 && !AllOk(); ++i) ::usleep(100'000);
    REQUIRE(AllOk());
  }
  ~ThreeNodes() {
    Shutdown();
    std::system(absl::StrCat("rm -rf ", dir_).c_str());
  }

  std::string Cli(int port, const std::string& args) const {
    return CommandOutput(absl::StrCat(HOTKEY_REDIS_CLI, " -p ", port, " ", args, " 2>&1"));
  }
  const std::array<int, 3>& ports() const { return ports_; }

 private:
  bool Started() const {
    for (int p : ports_) {
      if (p == 0 || Cli(p, "ping") != "PONG") return false;
    }
    return true;
  }
  bool AllOk() const {
    for (int p : ports_) {
      if (Cli(p, "cluster info").find("cluster_state:ok") == std::string::npos) return false;
    }
    return true;
  }
  void Shutdown() {
    for (int p : ports_) {
      if (p != 0) Cli(p, "shutdown nosave");
    }
  }

  std::string dir_;
  std::array<int, 3> ports_ = {0, 0, 0};
};

TEST_CASE(
    "Topology: a real three-node cluster's CLUSTER NODES, checked against where it "
    "accepts keys",
    "[cluster][redis]") {
  ThreeNodes cluster;
  for (int port : cluster.ports()) {
    const std::string text = cluster.Cli(port, "cluster nodes");
    INFO(text);
    absl::StatusOr<Topology> t = ParseClusterNodes(text);
    REQUIRE(t.ok());
    CHECK(t->nodes.size() == 3);
    CHECK(t->Shards() == 3);
    REQUIRE(t->Myself() != nullptr);
    CHECK(t->Myself()->id == cluster.Cli(port, "cluster myid"));
    CHECK(t->Myself()->address == absl::StrCat("127.0.0.1:", port));
    // Every slot has exactly one owner.
    int total = 0;
    for (const Node& n : t->nodes) total += n.SlotCount();
    CHECK(total == kSlots);
    for (int slot = 0; slot < kSlots; ++slot) REQUIRE(t->Owner(static_cast<uint16_t>(slot)));
  }
  // The owner the parse names takes the key; the others redirect it (MOVED).
  const absl::StatusOr<Topology> t =
      ParseClusterNodes(cluster.Cli(cluster.ports()[0], "cluster nodes"));
  REQUIRE(t.ok());
  for (const std::string key : {"foo", "bar", "user:{42}:name", "{42}", "a", "zz", "hot:key:7"}) {
    INFO(key);
    const std::string owner = t->Owner(KeySlot(key))->address;
    for (int port : cluster.ports()) {
      const std::string reply = cluster.Cli(port, absl::StrCat("set '", key, "' v"));
      if (owner == absl::StrCat("127.0.0.1:", port)) {
        CHECK(reply == "OK");
      } else {
        CHECK(reply.find("MOVED") != std::string::npos);
      }
    }
  }
  // A slot being moved shows on both ends.
  const Node* from = t->Owner(KeySlot("foo"));
  const Node* to =
      t->Owner(KeySlot("bar")) == from ? t->Owner(KeySlot("a")) : t->Owner(KeySlot("bar"));
  REQUIRE(from != to);
  const int slot = KeySlot("foo");
  auto port_of = [](const Node* n) { return n->address.substr(n->address.find(':') + 1); };
  REQUIRE(cluster.Cli(std::stoi(port_of(to)),
                      absl::StrCat("cluster setslot ", slot, " importing ", from->id)) == "OK");
  REQUIRE(cluster.Cli(std::stoi(port_of(from)),
                      absl::StrCat("cluster setslot ", slot, " migrating ", to->id)) == "OK");
  const absl::StatusOr<Topology> moving =
      ParseClusterNodes(cluster.Cli(std::stoi(port_of(from)), "cluster nodes"));
  REQUIRE(moving.ok());
  CHECK(moving->Myself()->migrating ==
        std::vector<SlotMove>{{static_cast<uint16_t>(slot), to->id}});
  CHECK(moving->Owner(static_cast<uint16_t>(slot))->id == from->id);  // until it is moved
  const absl::StatusOr<Topology> importing =
      ParseClusterNodes(cluster.Cli(std::stoi(port_of(to)), "cluster nodes"));
  REQUIRE(importing.ok());
  CHECK(importing->Myself()->importing ==
        std::vector<SlotMove>{{static_cast<uint16_t>(slot), from->id}});
}

}  // namespace
}  // namespace hotkey::cluster
