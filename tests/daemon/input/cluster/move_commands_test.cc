// MoveCommands' script run with bash against a real three-node Redis Cluster (redis-server in
// cluster mode on loopback, joined by redis-cli --cluster create): 1,000 keys sharing the hash
// tag {42}, some with spaces, quotes, newlines, NULs and non-UTF-8 bytes, are moved with their
// slot to the node PlanRebalance picks, and the cluster agrees afterwards.
//
// Its own executable: it exits 77 (skipped, for CTest) when redis-server or redis-cli is
// missing. Ports: free ones found by binding port 0, with their cluster bus ports (+10000).

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "command_output.h"
#include "hotkey/cluster/move_plan.h"
#include "hotkey/cluster/slot.h"
#include "hotkey/cluster/topology.h"

namespace hotkey::cluster {
namespace {

using hotkey::testing::CommandOutput;

// `s` as one argument of a line redis-cli reads from stdin: quoted, with \xHH escapes.
std::string RedisQuote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c >= 0x20 && c < 0x7f) {
      out += c;
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", static_cast<unsigned char>(c));
    }
  }
  return out + "\"";
}

// True when TCP `port` on 127.0.0.1 can be bound now.
bool PortFree(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

// A port the kernel hands out now, whose bus port (+10000) is free too; 0 if none was found.
int FreePort() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    int port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port = ntohs(a.sin_port);
    }
    ::close(fd);
    if (port > 0 && port + 10000 <= 65535 && PortFree(port + 10000)) return port;
  }
  return 0;
}

// Three redis-servers in cluster mode on loopback, joined with no replicas; shut down and
// their directory removed at the end.
class ThreeNodes {
 public:
  ThreeNodes() {
    char tmpl[] = "/tmp/hotkey-move-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    // A port taken between the probe and the start fails the start: retried with new ones.
    for (int attempt = 0; attempt < 5 && !Started(); ++attempt) {
      Shutdown();
      bool ok = true;
      for (int& p : ports_) {
        p = FreePort();
        ok = ok && p != 0 &&
             std::system(absl::StrCat(HOTKEY_REDIS_SERVER, " --port ", p,
                                      " --bind 127.0.0.1 --cluster-enabled yes",
                                      " --cluster-config-file ", dir_, "/nodes-", p, ".conf",
                                      " --dir ", dir_, " --save '' --appendonly no",
                                      " --daemonize yes --logfile ", dir_, "/", p, ".log")
                             .c_str()) == 0;
      }
      for (int i = 0; ok && i < 50 && !Started(); ++i) ::usleep(100'000);
    }
    REQUIRE(Started());
    REQUIRE(
        std::system(absl::StrCat(HOTKEY_REDIS_CLI, " --cluster create 127.0.0.1:", ports_[0],
                                 " 127.0.0.1:", ports_[1], " 127.0.0.1:", ports_[2],
                                 " --cluster-replicas 0 --cluster-yes >", dir_, "/create.log 2>&1")
                        .c_str()) == 0);
    for (int i = 0; i < 100 && !AllOk(); ++i) ::usleep(100'000);
    REQUIRE(AllOk());
  }
  ~ThreeNodes() {
    Shutdown();
    std::system(absl::StrCat("rm -rf ", dir_).c_str());
  }
  ThreeNodes(const ThreeNodes&) = delete;
  ThreeNodes& operator=(const ThreeNodes&) = delete;

  // redis-cli against the node at `port` with `args` (a shell fragment).
  std::string Cli(int port, const std::string& args) const {
    return CommandOutput(absl::StrCat(HOTKEY_REDIS_CLI, " -p ", port, " ", args, " 2>&1"));
  }
  // redis-cli against the node at `port`, reading `lines` (its own quoting) from stdin.
  std::string CliStdin(int port, const std::string& lines) const {
    const std::string file = dir_ + "/stdin.txt";
    std::ofstream(file) << lines;
    return Cli(port, "< " + file);
  }
  // Runs `script` with bash; its exit status, and its output in `output`.
  int Bash(const std::string& script, std::string* output) const {
    std::ofstream(dir_ + "/move.sh") << script;
    const int status =
        std::system(absl::StrCat("bash ", dir_, "/move.sh >", dir_, "/move.log 2>&1").c_str());
    *output = CommandOutput(absl::StrCat("cat ", dir_, "/move.log"));
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
      if (!absl::StrContains(Cli(p, "cluster info"), "cluster_state:ok")) return false;
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

int PortOf(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

// The i-th of the 1,000 keys: profile:{42}:<i>, every tenth with a space, a quote, a newline,
// a NUL or a byte that is not UTF-8 after it.
std::string Key(int i) {
  std::string key = absl::StrCat("profile:{42}:", i);
  switch (i % 10) {
    case 1:
      return key + " with spaces";
    case 2:
      return key + "'single";
    case 3:
      return key + "\"double\"";
    case 4:
      return key + "\nnext line";
    case 5:
      return key + std::string("\0nul", 4);
    case 6:
      return key + "\xff\xfe\\";
    case 7:
      return key + " $HOME `x` *";
    default:
      return key;
  }
}

TEST_CASE("MoveCommands: the script moves a hot tag's slot and its 1,000 keys on a real cluster",
          "[cluster][redis]") {
  ThreeNodes cluster;
  const int first = cluster.ports()[0];
  absl::StatusOr<Topology> before = ParseClusterNodes(cluster.Cli(first, "cluster nodes"));
  REQUIRE(before.ok());
  const uint16_t slot = KeySlot("profile:{42}:0");
  REQUIRE(cluster.Cli(first, "cluster keyslot 'profile:{42}:0'") == absl::StrCat(slot));
  const Node* owner = before->Owner(slot);
  REQUIRE(owner != nullptr);
  const int from_port = PortOf(owner->address);

  // 1,000 keys, value = index, written to the owner through redis-cli's own quoting.
  std::string sets;
  for (int i = 0; i < 1000; ++i) {
    REQUIRE(KeySlot(Key(i)) == slot);
    absl::StrAppend(&sets, "SET ", RedisQuote(Key(i)), " ", i, "\n");
  }
  cluster.CliStdin(from_port, sets);
  REQUIRE(cluster.Cli(from_port, absl::StrCat("cluster countkeysinslot ", slot)) == "1000");

  // The owner is busy, the others less so: the plan moves the slot to the least loaded.
  NodeLoad self{
      .id = owner->id, .address = owner->address, .ops_per_second = 9000, .capacity_ops = 10000};
  std::vector<NodeLoad> others;
  for (const Node& n : before->nodes) {
    if (n.id == owner->id) continue;
    others.push_back({.id = n.id,
                      .address = n.address,
                      .ops_per_second = others.empty() ? 3000.0 : 2000.0,
                      .capacity_ops = std::nullopt});
  }
  REQUIRE(others.size() == 2);
  const std::vector<SlotOps> hot = {{slot, 3000}};
  // 0.9 of capacity, over the 0.7 target: the slot goes to the least loaded (0.2 -> 0.5).
  const std::optional<MovePlan> plan = PlanRebalance(self, others, hot, {});
  REQUIRE(plan);
  REQUIRE(plan->to.size() == 1);
  CHECK(plan->to[0].to.id == others[1].id);
  CHECK(plan->to[0].slots == std::vector<uint16_t>{slot});
  const MoveSide& to = plan->to[0].to;
  const int to_port = PortOf(to.address);

  std::string output;
  INFO(plan->commands);
  const int status = cluster.Bash(plan->commands, &output);
  INFO(output);
  REQUIRE(status == 0);

  // Every node names the target as the slot's owner (the third learns it by gossip).
  for (int port : cluster.ports()) {
    bool agreed = false;
    for (int i = 0; i < 100 && !agreed; ++i) {
      const absl::StatusOr<Topology> t = ParseClusterNodes(cluster.Cli(port, "cluster nodes"));
      agreed = t.ok() && t->Owner(slot) != nullptr && t->Owner(slot)->id == to.id &&
               t->Myself()->migrating.empty() && t->Myself()->importing.empty();
      if (!agreed) ::usleep(100'000);
    }
    INFO(port);
    CHECK(agreed);
  }
  // All 1,000 keys on the target, none left behind, every byte intact.
  CHECK(cluster.Cli(to_port, "cluster keyslot 'profile:{42}:0'") == absl::StrCat(slot));
  CHECK(cluster.Cli(to_port, absl::StrCat("cluster countkeysinslot ", slot)) == "1000");
  CHECK(cluster.Cli(from_port, absl::StrCat("cluster countkeysinslot ", slot)) == "0");
  CHECK(cluster.Cli(to_port, "dbsize") == "1000");
  for (int i = 0; i < 10; ++i) {
    INFO(i);
    CHECK(cluster.CliStdin(to_port, absl::StrCat("GET ", RedisQuote(Key(i)), "\n")) ==
          absl::StrCat(i));
  }
  // The source redirects to the target.
  CHECK(
      absl::StrContains(cluster.CliStdin(from_port, absl::StrCat("GET ", RedisQuote(Key(0)), "\n")),
                        absl::StrCat("MOVED ", slot, " ", to.address)));
  // redis-cli's own check: every node agrees, every slot covered, no slot left open.
  std::string check;
  for (int i = 0; i < 100; ++i) {
    check = cluster.Cli(first, absl::StrCat("--cluster check 127.0.0.1:", first));
    if (absl::StrContains(check, "[OK] All nodes agree about slots configuration.")) break;
    ::usleep(100'000);
  }
  INFO(check);
  CHECK(absl::StrContains(check, "[OK] All nodes agree about slots configuration."));
  CHECK(absl::StrContains(check, "[OK] All 16384 slots covered."));
  CHECK_FALSE(absl::StrContains(check, "[ERR]"));
  CHECK_FALSE(absl::StrContains(check, "[WARNING]"));
}

}  // namespace
}  // namespace hotkey::cluster

int main(int argc, char** argv) {
  if (::access(HOTKEY_REDIS_SERVER, X_OK) != 0 || ::access(HOTKEY_REDIS_CLI, X_OK) != 0) {
    std::fprintf(stderr, "move_commands_test: skipped, redis-server or redis-cli not found\n");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
