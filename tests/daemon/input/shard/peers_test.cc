// PeerProbers: which nodes of a topology it probes, how it follows a changing topology, its
// bound, and, against a real three-node Redis Cluster the test starts, the other primaries'
// loads. Times come from a FakeClock, so loads are exact.

#include "hotkey/shard/peers.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "certificates.h"
#include "fake_clock.h"
#include "hotkey/cluster/slot.h"
#include "probing.h"
#include "redis_cluster.h"

namespace hotkey::shard {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

cluster::Node Primary(std::string id, std::string address, uint16_t first, uint16_t last) {
  cluster::Node n;
  n.id = std::move(id);
  n.address = std::move(address);
  n.primary = true;
  n.slots = {{first, last}};
  return n;
}

// A port nothing listens on now (bound, then released).
int ClosedPort() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::address_v4::loopback(), 0});
  return a.local_endpoint().port();
}

config::ShardOptions Base() {
  config::ShardOptions o;
  o.timeout = absl::Seconds(5);
  return o;
}

std::vector<std::string> Ids(const std::vector<PeerLoad>& loads) {
  std::vector<std::string> ids;
  for (const PeerLoad& l : loads) ids.push_back(l.id);
  return ids;
}

// Runs the io_context until every round started has called back.
void RunRounds(boost::asio::io_context& io) {
  io.restart();
  io.run();
}

TEST_CASE("PeerProbers: every other primary serving slots, by id, none probed yet", "[shard]") {
  cluster::Topology t;
  t.nodes.push_back(Primary("a", "127.0.0.1:7000", 0, 99));
  t.nodes.back().myself = true;
  t.nodes.push_back(Primary("c", "127.0.0.1:7002", 200, 16383));
  t.nodes.push_back(Primary("b", "127.0.0.1:7001", 100, 199));
  cluster::Node replica = Primary("d", "127.0.0.1:7003", 0, 0);
  replica.primary = false;
  replica.slots.clear();
  replica.primary_id = "b";
  t.nodes.push_back(replica);
  cluster::Node empty = Primary("e", "127.0.0.1:7004", 0, 0);
  empty.slots.clear();  // a primary added to the cluster, no slots yet
  t.nodes.push_back(empty);
  cluster::Node failed = Primary("f", "127.0.0.1:7005", 0, 0);
  failed.slots.clear();
  failed.failed = true;
  t.nodes.push_back(failed);

  boost::asio::io_context io;
  testing::FakeClock clock;
  PeerProbers peers(io, Base(), clock);
  CHECK(peers.Loads().empty());
  peers.SetTopology(t);
  const std::vector<PeerLoad> loads = peers.Loads();
  REQUIRE(Ids(loads) == std::vector<std::string>{"b", "c"});
  CHECK(loads[0].address == "127.0.0.1:7001");
  CHECK(loads[0].slots == 100);
  CHECK(loads[1].slots == 16184);
  for (const PeerLoad& l : loads) {
    CHECK_FALSE(l.asked);  // not "down": not asked yet
    CHECK_FALSE(l.up);
    CHECK_FALSE(l.load);
    CHECK(l.status == absl::UnavailableError("not probed yet"));
  }
  CHECK(peers.unprobed() == 0);
  CHECK(io.poll() == 0);  // SetTopology sends nothing
}

TEST_CASE("PeerProbers: a new topology keeps the peers that stay, drops the gone, adds the new",
          "[shard]") {
  const std::string b = absl::StrCat("127.0.0.1:", ClosedPort());
  const std::string c = absl::StrCat("127.0.0.1:", ClosedPort());
  cluster::Topology t;
  t.nodes.push_back(Primary("a", "127.0.0.1:1", 0, 99));
  t.nodes.back().myself = true;
  t.nodes.push_back(Primary("b", b, 100, 199));
  t.nodes.push_back(Primary("c", c, 200, 16383));

  boost::asio::io_context io;
  testing::FakeClock clock;
  PeerProbers peers(io, Base(), clock);
  peers.SetTopology(t);
  peers.ProbeAll();
  RunRounds(io);
  for (const PeerLoad& l : peers.Loads()) {
    CHECK_FALSE(l.up);
    CHECK_THAT(std::string(l.status.message()),
               StartsWith(absl::StrCat("connect to ", l.address, ": Connection refused")));
  }

  // c goes, g comes, b stays (with more slots) and keeps what its last round said.
  t.nodes[1].slots = {{100, 299}};
  t.nodes[2] = Primary("g", "127.0.0.1:7006", 300, 16383);
  peers.SetTopology(t);
  std::vector<PeerLoad> loads = peers.Loads();
  REQUIRE(Ids(loads) == std::vector<std::string>{"b", "g"});
  CHECK(loads[0].slots == 200);
  CHECK_THAT(std::string(loads[0].status.message()), Contains("Connection refused"));
  CHECK(loads[1].status == absl::UnavailableError("not probed yet"));

  // b moves to another address: a new prober, nothing kept.
  t.nodes[1].address = c;
  peers.SetTopology(t);
  loads = peers.Loads();
  CHECK(loads[0].address == c);
  CHECK(loads[0].status == absl::UnavailableError("not probed yet"));

  // CLUSTER NODES writes an IPv6 node without brackets; the prober is given them.
  t.nodes[2].address = absl::StrCat("::1:", ClosedPort());
  peers.SetTopology(t);
  peers.ProbeAll();
  RunRounds(io);
  loads = peers.Loads();
  CHECK_THAT(std::string(loads[1].status.message()),
             StartsWith(absl::StrCat("connect to [::1]:", t.nodes[2].address.substr(4), ": ")));

  // Outside a cluster (an empty topology): no peers.
  peers.SetTopology(cluster::Topology{});
  CHECK(peers.Loads().empty());
}

TEST_CASE("PeerProbers: at most kMaxPeers probers; the rest are listed, not probed", "[shard]") {
  cluster::Topology t;
  t.nodes.push_back(Primary("me", "127.0.0.1:1", 0, 0));
  t.nodes.back().myself = true;
  const size_t n = PeerProbers::kMaxPeers + 44;
  for (size_t i = 0; i < n; ++i) {
    const auto slot = static_cast<uint16_t>(i + 1);
    t.nodes.push_back(Primary(absl::StrFormat("p%04d", i), "127.0.0.1:2", slot, slot));
  }
  boost::asio::io_context io;
  testing::FakeClock clock;
  PeerProbers peers(io, Base(), clock);
  peers.SetTopology(t);
  std::vector<PeerLoad> loads = peers.Loads();
  REQUIRE(loads.size() == n);
  CHECK(peers.unprobed() == 44);
  // In id order: the first kMaxPeers probed, the rest say why not.
  for (size_t i = 0; i < n; ++i) {
    INFO(loads[i].id);
    if (i < PeerProbers::kMaxPeers) {
      CHECK(loads[i].status == absl::UnavailableError("not probed yet"));
    } else {
      CHECK(loads[i].status.code() == absl::StatusCode::kResourceExhausted);
      CHECK(loads[i].status.message() == "not probed: more than 256 other primaries serve slots");
    }
  }

  // A new primary whose id sorts first does not displace one already probed.
  t.nodes.push_back(Primary("a-new", "127.0.0.1:2", 9000, 9000));
  peers.SetTopology(t);
  loads = peers.Loads();
  CHECK(peers.unprobed() == 45);
  REQUIRE(loads[0].id == "a-new");
  CHECK(loads[0].status.code() == absl::StatusCode::kResourceExhausted);
  CHECK(loads[1].status == absl::UnavailableError("not probed yet"));

  // Once 100 probed ones are gone, there is room for every other.
  t.nodes.erase(t.nodes.begin() + 1, t.nodes.begin() + 101);
  peers.SetTopology(t);
  CHECK(peers.Loads().size() == n + 1 - 100);
  CHECK(peers.unprobed() == 0);
  for (const PeerLoad& l : peers.Loads()) {
    CHECK(l.status == absl::UnavailableError("not probed yet"));
  }
}

TEST_CASE("PeerProbers: nothing is probed after Stop()", "[shard]") {
  cluster::Topology t;
  t.nodes.push_back(Primary("a", "127.0.0.1:1", 0, 99));
  t.nodes.back().myself = true;
  t.nodes.push_back(Primary("b", absl::StrCat("127.0.0.1:", ClosedPort()), 100, 16383));
  boost::asio::io_context io;
  testing::FakeClock clock;
  PeerProbers peers(io, Base(), clock);
  peers.SetTopology(t);
  peers.ProbeAll();
  peers.Stop();
  RunRounds(io);
  peers.ProbeAll();
  RunRounds(io);
  peers.SetTopology(t);
  REQUIRE(peers.Loads().size() == 1);
  CHECK(peers.Loads()[0].status == absl::UnavailableError("not probed yet"));
  peers.Stop();  // idempotent
}

TEST_CASE("PeerProbers: with TLS, a peer's certificate is checked against its hostname or IP",
          "[shard][redis][tls]") {
  char tmpl[] = "/tmp/hotkey-peers-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string d = tmpl;
  testing::MakeCertificates(d);  // the server's certificate names localhost and 127.0.0.1
  const int port = ClosedPort();
  REQUIRE(std::system(absl::StrCat(HOTKEY_REDIS_SERVER, " --port 0 --tls-port ", port,
                                   " --bind 127.0.0.1 --tls-cert-file ", d,
                                   "/server.pem --tls-key-file ", d, "/server.key",
                                   " --tls-ca-cert-file ", d, "/ca.pem --tls-auth-clients no",
                                   " --save '' --appendonly no --daemonize yes --dir ", d,
                                   " --pidfile ", d, "/pid --logfile ", d, "/log")
                          .c_str()) == 0);
  struct Cleanup {
    std::string d;
    ~Cleanup() {
      std::system(absl::StrCat("kill $(cat ", d, "/pid) 2>/dev/null").c_str());
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  } cleanup{d};
  config::ShardOptions base = Base();
  base.tls = true;
  base.tls_ca_file = d + "/ca.pem";
  // The own shard's server name is not the peers'.
  base.tls_server_name = "redis.example";

  // The standalone server stands in for a peer: a good handshake ends in "not in cluster
  // mode", a refused certificate in the handshake's error.
  auto status_with_hostname = [&](const std::string& hostname) {
    cluster::Topology t;
    t.nodes.push_back(Primary("me", "127.0.0.1:1", 0, 99));
    t.nodes.back().myself = true;
    t.nodes.push_back(Primary("peer", absl::StrCat("127.0.0.1:", port), 100, 16383));
    t.nodes.back().hostname = hostname;
    boost::asio::io_context io;
    testing::FakeClock clock;
    PeerProbers peers(io, base, clock);
    peers.SetTopology(t);
    for (int i = 0; i < 50; ++i) {  // until the server listens
      peers.ProbeAll();
      RunRounds(io);
      if (!absl::StartsWith(peers.Loads()[0].status.message(), "connect to ")) break;
      ::usleep(100'000);
    }
    return peers.Loads()[0].status;
  };
  const std::string not_cluster = absl::StrCat("127.0.0.1:", port, " is not in cluster mode");
  CHECK(status_with_hostname("").message() == not_cluster);  // checked against 127.0.0.1
  CHECK(status_with_hostname("localhost").message() == not_cluster);
  const absl::Status refused = status_with_hostname("redis.example");
  CHECK_THAT(std::string(refused.message()),
             StartsWith(absl::StrCat("TLS handshake with 127.0.0.1:", port, ": ")));
  CHECK_THAT(std::string(refused.message()), Contains("certificate verify failed"));
}

// A key whose slot `node` serves.
std::string KeyOn(const cluster::Topology& t, const std::string& node) {
  for (int i = 0;; ++i) {
    std::string key = absl::StrCat("counter:", i);
    const cluster::Node* owner = t.Owner(cluster::KeySlot(key));
    if (owner != nullptr && owner->id == node) return key;
  }
}

TEST_CASE("PeerProbers: a real cluster's other two primaries, up, with the load sent to one",
          "[shard][redis][cluster]") {
  RedisCluster cluster;
  testing::FakeClock clock;
  config::ShardOptions own = Base();
  own.address = cluster.address(0);
  const Measurement m = Probing(own, clock).Next();
  REQUIRE(m.status.ok());
  REQUIRE(m.topology);
  REQUIRE(m.topology->Shards() == 3);
  const std::string id1 = cluster.Cli(cluster.ports()[1], "cluster myid");
  const std::string id2 = cluster.Cli(cluster.ports()[2], "cluster myid");
  const std::string key = KeyOn(*m.topology, id1);
  // 500 INCRs, through one redis-cli, written before the rounds so that only the traffic
  // between them counts.
  const std::string script = cluster.dir() + "/incr.txt";
  {
    std::ofstream out(script);
    for (int i = 0; i < 500; ++i) out << "INCR " << key << "\n";
  }

  boost::asio::io_context io;
  config::ShardOptions base = Base();
  base.timeout = absl::Seconds(1);  // for the paused node below
  PeerProbers peers(io, base, clock);
  peers.SetTopology(*m.topology);
  std::vector<PeerLoad> loads = peers.Loads();
  REQUIRE(loads.size() == 2);
  peers.ProbeAll();
  RunRounds(io);
  loads = peers.Loads();
  for (const PeerLoad& l : loads) {
    INFO(l.id << " " << l.status);
    CHECK(l.up);
    CHECK(l.status.ok());
    CHECK_FALSE(l.load);  // one answer: nothing to compare with yet
  }

  REQUIRE(std::system(absl::StrCat(HOTKEY_REDIS_CLI, " -p ", cluster.ports()[1], " <", script,
                                   " >/dev/null")
                          .c_str()) == 0);
  CHECK(cluster.Cli(cluster.ports()[1], absl::StrCat("get ", key)) == "500");
  clock.Advance(absl::Seconds(2));
  peers.ProbeAll();
  RunRounds(io);
  loads = peers.Loads();
  REQUIRE(loads.size() == 2);
  for (const PeerLoad& l : loads) {
    INFO(l.id << " " << l.status);
    REQUIRE(l.up);
    REQUIRE(l.load);
    const bool busy = l.id == id1;
    CHECK(l.address == cluster.address(busy ? 1 : 2));
    CHECK(l.id == (busy ? id1 : id2));
    // Between the two INFOs: the first round's INFO (counted once answered) and CLUSTER
    // NODES; on the busy node also the 500 INCRs, the COMMAND DOCS redis-cli sends before
    // reading commands from its input, and the GET after them: over 2 s.
    CHECK(l.load->ops_per_second == (busy ? (2 + 500 + 1 + 1) / 2.0 : 2 / 2.0));
    CHECK(l.load->busy >= 0);
  }

  // A round that fails (the idle node does not answer within the timeout) leaves the peer
  // not up, with the load of its last two good answers.
  const int idle_port = cluster.ports()[2];
  REQUIRE(cluster.Cli(idle_port, "client pause 3000 all") == "OK");
  peers.ProbeAll();
  RunRounds(io);
  for (const PeerLoad& l : peers.Loads()) {
    if (l.id != id2) continue;
    CHECK(l.asked);  // asked, and failed: down
    CHECK_FALSE(l.up);
    CHECK(l.status.code() == absl::StatusCode::kDeadlineExceeded);
    REQUIRE(l.load);
    CHECK(l.load->ops_per_second == 2 / 2.0);
  }
  cluster.Cli(idle_port, "client unpause");  // waits out the pause

  // An address that answers as another node: not up, no load, and it says why.
  cluster::Topology moved = *m.topology;
  for (cluster::Node& n : moved.nodes) {
    if (n.id == id2) n.address = cluster.address(1);
  }
  peers.SetTopology(moved);
  peers.ProbeAll();
  RunRounds(io);
  for (const PeerLoad& l : peers.Loads()) {
    if (l.id != id2) continue;
    CHECK_FALSE(l.up);
    CHECK_FALSE(l.load);
    CHECK(l.status.code() == absl::StatusCode::kFailedPrecondition);
    CHECK(l.status.message() == absl::StrCat(cluster.address(1), " answers as node ", id1, ", not ",
                                             id2, " (the cluster's topology has changed?)"));
  }
  // Back at its own address, it is up again.
  peers.SetTopology(*m.topology);
  peers.ProbeAll();
  RunRounds(io);
  for (const PeerLoad& l : peers.Loads()) {
    CHECK(l.asked);
    CHECK(l.up);
  }
}

TEST_CASE("PeerProbers: a peer that is not in cluster mode is not up, and says so",
          "[shard][redis][cluster]") {
  RedisCluster cluster;  // for the skip where redis-server is missing, and its directory
  const int port = cluster.ports()[0];
  cluster.Cli(port, "shutdown nosave");
  REQUIRE(std::system(absl::StrCat(HOTKEY_REDIS_SERVER, " --port ", port,
                                   " --bind 127.0.0.1 --save '' --appendonly no --daemonize yes",
                                   " --dir ", cluster.dir(), " --logfile ", cluster.dir(),
                                   "/standalone.log")
                          .c_str()) == 0);
  for (int i = 0; i < 50 && cluster.Cli(port, "ping") != "PONG"; ++i) ::usleep(100'000);
  cluster::Topology t;
  t.nodes.push_back(Primary("me", cluster.address(1), 0, 99));
  t.nodes.back().myself = true;
  t.nodes.push_back(Primary("standalone", cluster.address(0), 100, 16383));
  boost::asio::io_context io;
  testing::FakeClock clock;
  PeerProbers peers(io, Base(), clock);
  peers.SetTopology(t);
  peers.ProbeAll();
  RunRounds(io);
  REQUIRE(peers.Loads().size() == 1);
  const PeerLoad l = peers.Loads()[0];
  CHECK_FALSE(l.up);
  CHECK(l.status ==
        absl::FailedPreconditionError(absl::StrCat(cluster.address(0), " is not in cluster mode")));
}

}  // namespace
}  // namespace hotkey::shard
