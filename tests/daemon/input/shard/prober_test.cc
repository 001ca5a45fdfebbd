// The prober against real servers the test starts: a redis-server (standalone, with a
// password, an ACL user, TLS, and a three-node cluster) and a memcached; and against
// servers that do not answer. Times come from a FakeClock, so loads are exact.

#include "hotkey/shard/prober.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "certificates.h"
#include "command_output.h"
#include "fake_clock.h"
#include "hotkey/clock/ticker.h"
#include "probing.h"
#include "redis_cluster.h"
#include "unix_socket.h"

namespace hotkey::shard {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

using testing::CommandOutput;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/hotkey-prober-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::string path_;
};

// A port nothing listens on now (bound, then released).
int FreePort() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::address_v4::loopback(), 0});
  return a.local_endpoint().port();
}

// A redis-server started with `args`, on DIR/sock (and whatever ports `args` name).
class Redis {
 public:
  explicit Redis(const std::string& args) {
    REQUIRE(std::system(absl::StrCat(HOTKEY_REDIS_SERVER, " --unixsocket ", dir_.path(),
                                     "/sock --dir ", dir_.path(),
                                     " --save '' --appendonly no --daemonize yes --pidfile ",
                                     dir_.path(), "/pid --logfile ", dir_.path(), "/log ", args)
                            .c_str()) == 0);
    for (int i = 0; i < 100 && !Up(); ++i) ::usleep(50'000);
    REQUIRE(Up());
  }
  ~Redis() {
    std::system(absl::StrCat("kill $(cat ", dir_.path(), "/pid) 2>/dev/null").c_str());
    for (int i = 0; i < 100 && std::filesystem::exists(socket()); ++i) ::usleep(20'000);
  }
  std::string socket() const { return dir_.path() + "/sock"; }
  const TempDir& dir() const { return dir_; }
  // redis-cli on the socket, with `auth` as its first arguments.
  std::string Cli(const std::string& args, const std::string& auth = "") const {
    return CommandOutput(
        absl::StrCat(HOTKEY_REDIS_CLI, " -s ", socket(), " ", auth, " ", args, " 2>/dev/null"));
  }

 private:
  bool Up() const {
    const int fd = testing::ConnectUnix(socket());
    if (fd < 0) return false;
    ::close(fd);
    return true;
  }
  TempDir dir_;
};

config::ShardOptions Options(const std::string& address,
                             config::TapProtocol protocol = config::TapProtocol::kRedis) {
  config::ShardOptions o;
  o.address = address;
  o.protocol = protocol;
  return o;
}

TEST_CASE("Prober: a real redis-server's commands and CPU, and the load between two rounds",
          "[shard][redis]") {
  Redis redis("--port 0");
  testing::FakeClock clock;
  Probing probing(Options(redis.socket()), clock);
  const Measurement a = probing.Next();
  REQUIRE(a.status.ok());
  REQUIRE(a.reading);
  CHECK(a.reading->server.starts_with("redis "));
  CHECK_FALSE(a.load);  // nothing to compare with yet
  CHECK(a.time == clock.Now());
  CHECK_FALSE(a.cluster.cluster_mode);
  CHECK(a.cluster.shards == 0);
  // The test machine puts no quota on the server: one core, from Redis's one thread.
  CHECK(a.cpus == 1);
  CHECK(a.cpus_source == CpusSource::kOneCore);

  // 300 commands on a connection of the test's own.
  const int fd = testing::ConnectUnix(redis.socket());
  REQUIRE(fd >= 0);
  std::string pipeline;
  for (int i = 0; i < 300; ++i) absl::StrAppend(&pipeline, "SET k", i, " v\r\n");
  REQUIRE(testing::WriteAll(fd, pipeline));
  std::string in;
  char buf[4096];
  while (in.size() < 300 * 5) {  // 300 "+OK\r\n"
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    REQUIRE(n > 0);
    in.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  clock.Advance(absl::Seconds(2));
  const Measurement b = probing.Next();
  REQUIRE(b.status.ok());
  // The 300, and the prober's own first INFO (INFO counts itself only after answering).
  CHECK(b.reading->commands - a.reading->commands == 300 + 1);
  REQUIRE(b.load);
  CHECK(b.load->ops_per_second == 301.0 / 2);
  CHECK(b.load->busy == (b.reading->cpu_seconds - a.reading->cpu_seconds) / 2);
  // The CPU is INFO's main-thread figure, the process id INFO's.
  const std::string info = redis.Cli("info");
  CHECK_THAT(info, Contains(absl::StrCat("process_id:", b.reading->pid, "\r")));
  CHECK(ParseRedisInfo(info)->cpu_seconds >= b.reading->cpu_seconds);
  // The connection is kept: a third round makes none (the one counted is redis-cli's).
  auto connections = [&] {
    return std::stoi(redis.Cli("info stats | grep total_connections_received | cut -d: -f2"));
  };
  const int before = connections();
  CHECK(probing.Next().status.ok());
  CHECK(connections() == before + 1);
  // A kept connection the server has closed since is made again within the round.
  CHECK(redis.Cli("client kill type normal") == "1");
  clock.Advance(absl::Seconds(1));
  const Measurement c = probing.Next();
  CHECK(c.status.ok());
  CHECK(c.load);
  CHECK(connections() == before + 4);  // three redis-cli, one prober
}

TEST_CASE("Prober: --shard.cpus overrides what is measured", "[shard][redis]") {
  Redis redis("--port 0");
  testing::FakeClock clock;
  config::ShardOptions o = Options(redis.socket());
  o.cpus = 0.5;
  Probing probing(o, clock);
  const Measurement a = probing.Next();
  REQUIRE(a.status.ok());
  CHECK(a.cpus == 0.5);
  CHECK(a.cpus_source == CpusSource::kFlag);
  CHECK(CpusSourceName(a.cpus_source) == "flag");
  clock.Advance(absl::Seconds(1));
  const Measurement b = probing.Next();
  REQUIRE(b.load);
  CHECK(b.load->busy == (b.reading->cpu_seconds - a.reading->cpu_seconds) / 1 / 0.5);
  CHECK(CpusSourceName(CpusSource::kOneCore) == "one_core");
  CHECK(CpusSourceName(CpusSource::kThreads) == "threads");
  CHECK(CpusSourceName(CpusSource::kCgroupQuota) == "cgroup_quota");
}

// A prober asking a real redis-server every 5 s on a ticker of a fake clock, started at
// `start`; `got` holds its measurements, in order.
struct Scheduled {
  Scheduled()
      : prober(io, Interval(Options(redis.socket())), clock,
               [this](const Measurement& m) { got.push_back(m); }) {
    prober.ScheduleOn(ticker);
    ticker.Start(start);
  }
  ~Scheduled() { ticker.Stop(); }
  static config::ShardOptions Interval(config::ShardOptions o) {
    o.interval = absl::Seconds(5);
    return o;
  }
  // Runs the io_context until the `n`th measurement is in.
  const Measurement& Next(size_t n) {
    while (got.size() < n) REQUIRE(io.run_one() > 0);
    REQUIRE(got.size() == n);
    return got.back();
  }

  Redis redis{"--port 0"};
  testing::FakeClock clock;
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work =
      boost::asio::make_work_guard(io);
  std::vector<Measurement> got;
  Prober prober;
  clock::Ticker ticker{clock};
  const absl::Time start = clock.Now();
};

TEST_CASE("Prober: on a ticker it asks every interval of the clock's time", "[shard][redis]") {
  Scheduled p;
  for (size_t round = 1; round <= 3; ++round) {
    p.clock.Advance(absl::Seconds(5));
    const Measurement& m = p.Next(round);
    CHECK(m.status.ok());
    CHECK(m.time == p.start + absl::Seconds(5 * static_cast<double>(round)));
  }
  REQUIRE(p.got[2].load);
  // Each interval holds one INFO of the prober's: 1 / 5 s.
  CHECK(p.got[2].load->ops_per_second == 0.2);
}

// A hot key's onset (the daemon calls AskNow): a round at once, and the schedule again from
// it, so the next answer covers the episode's own time only.
TEST_CASE("Prober: AskNow reads at once and starts the schedule again from there",
          "[shard][redis]") {
  Scheduled p;
  auto at = [&](double seconds) { return p.start + absl::Seconds(seconds); };
  auto advance_to = [&](double seconds) {
    p.clock.Advance(at(seconds) - p.clock.Now());
    p.io.run_for(std::chrono::milliseconds(300));  // the ticker's check, and any round
  };
  auto next = [&](size_t n) {
    const Measurement& m = p.Next(n);
    REQUIRE(m.status.ok());
    return m;
  };
  advance_to(5);
  CHECK(next(1).time == at(5));
  // 2 s after the last reading: less than half an interval, so this reading only starts
  // the next interval, with no load.
  advance_to(7);
  p.prober.AskNow();
  Measurement m = next(2);
  CHECK(m.time == at(7));
  CHECK_FALSE(m.load);
  // The schedule starts again from 7 s: nothing at 10 s, a round at 12 s with the load
  // over 7-12 s (one INFO of the prober's: 0.2 ops/s).
  advance_to(10);
  CHECK(p.got.size() == 2);
  advance_to(12);
  m = next(3);
  CHECK(m.time == at(12));
  REQUIRE(m.load);
  CHECK(m.load->ops_per_second == 0.2);
  // At most one reading an interval is cut short: at 12.5 s (5.5 s after the last cut) it
  // is, at 13 s it is not, and no round starts.
  advance_to(12.5);
  p.prober.AskNow();
  CHECK_FALSE(next(4).load);
  advance_to(13);
  p.prober.AskNow();
  p.io.run_for(std::chrono::milliseconds(300));
  CHECK(p.got.size() == 4);
  // Half an interval after the last reading or more, AskNow reads with a load.
  advance_to(15.5);
  p.prober.AskNow();
  m = next(5);
  CHECK(m.time == at(15.5));
  REQUIRE(m.load);
  CHECK(m.load->ops_per_second == Approx(1 / 3.0));
  // And the schedule goes on from there: the next round at 20.5 s.
  advance_to(20);
  CHECK(p.got.size() == 5);
  advance_to(20.5);
  CHECK(next(6).time == at(20.5));
}

// A hot key's fix in force changed (the daemon calls AskNow(next), next shorter than the
// interval): a round at once, the next one `next` later with the load over that time, and
// the schedule from there. Such an ask is never refused, however soon after another.
TEST_CASE("Prober: AskNow(next) reads at once and again `next` later", "[shard][redis]") {
  Scheduled p;
  auto at = [&](double seconds) { return p.start + absl::Seconds(seconds); };
  auto advance_to = [&](double seconds) {
    p.clock.Advance(at(seconds) - p.clock.Now());
    p.io.run_for(std::chrono::milliseconds(300));
  };
  advance_to(5);
  REQUIRE(p.Next(1).time == at(5));
  advance_to(6);  // within half an interval: a cut, the next interval starts here
  p.prober.AskNow(absl::Seconds(2));
  CHECK_FALSE(p.Next(2).load);
  advance_to(7.75);
  CHECK(p.got.size() == 2);
  advance_to(8);
  Measurement m = p.Next(3);
  CHECK(m.time == at(8));
  REQUIRE(m.load);
  CHECK(m.load->ops_per_second == Approx(0.5));  // one INFO over 6-8 s
  // Another change 0.5 s later: cut again (an ask for a whole interval would be refused
  // here, 2.5 s after the last cut), and the load over the next second.
  advance_to(8.5);
  p.prober.AskNow(absl::Seconds(1));
  CHECK_FALSE(p.Next(4).load);
  advance_to(9.5);
  m = p.Next(5);
  CHECK(m.time == at(9.5));
  REQUIRE(m.load);
  CHECK(m.load->ops_per_second == Approx(1.0));  // one INFO over 8.5-9.5 s
  advance_to(14.25);
  CHECK(p.got.size() == 5);
  advance_to(14.5);
  CHECK(p.Next(6).time == at(14.5));
  // A `next` longer than the interval is the interval.
  advance_to(17.5);
  p.prober.AskNow(absl::Hours(1));
  m = p.Next(7);
  CHECK(m.time == at(17.5));
  REQUIRE(m.load);
  advance_to(22.5);
  CHECK(p.Next(8).time == at(22.5));
}

TEST_CASE("Prober: no callback after Stop(), even for a round in progress", "[shard]") {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor hung(io, {boost::asio::ip::address_v4::loopback(), 0});
  config::ShardOptions o = Options(absl::StrCat("127.0.0.1:", hung.local_endpoint().port()));
  o.timeout = absl::Seconds(30);
  testing::FakeClock clock;
  int calls = 0;
  Prober prober(io, o, clock, [&](const Measurement&) { ++calls; });
  prober.Probe();
  io.poll();  // the round starts (connecting, or waiting for the reply to INFO)
  prober.Stop();
  io.run();  // returns once the round has ended: the deadline's 30 s are not waited for
  CHECK(calls == 0);
  prober.Probe();
  io.restart();
  io.run();
  CHECK(calls == 0);
}

TEST_CASE("Prober: AUTH from a password file, and a wrong password is a clear error",
          "[shard][redis]") {
  Redis redis("--port 0 --requirepass s3cret --user alice on '>pw' '~*' '&*' '+@all'");
  testing::FakeClock clock;
  config::ShardOptions o = Options(redis.socket());
  o.password_file = redis.dir().Write("pw", "s3cret\n");
  CHECK(Probing(o, clock).Next().status.ok());
  o.password_file = redis.dir().Write("acl", "alice pw\n");
  CHECK(Probing(o, clock).Next().status.ok());
  CHECK(CheckReachable(o, absl::Seconds(5)).ok());

  o.password_file = redis.dir().Write("wrong", "nope\n");
  Measurement m = Probing(o, clock).Next();
  CHECK(m.status.code() == absl::StatusCode::kUnauthenticated);
  CHECK_THAT(std::string(m.status.message()), StartsWith("AUTH refused: WRONGPASS"));
  CHECK_FALSE(m.reading);
  CHECK(CheckReachable(o, absl::Seconds(5)) == m.status);

  o.password_file.clear();
  m = Probing(o, clock).Next();
  CHECK_THAT(std::string(m.status.message()), StartsWith("INFO: the shard answered NOAUTH"));
  o.password_file = redis.dir().path() + "/missing";
  CHECK_THAT(std::string(Probing(o, clock).Next().status.message()),
             Contains("password file: cannot read"));
}

TEST_CASE("Prober: a real memcached's stats, its threads as the CPUs", "[shard][memcached]") {
  TempDir dir;
  REQUIRE(std::system(absl::StrCat(HOTKEY_MEMCACHED, " -u root -s ", dir.path(), "/sock -d -P ",
                                   dir.path(), "/pid -t 3")
                          .c_str()) == 0);
  for (int i = 0; i < 100 && !std::filesystem::exists(dir.path() + "/sock"); ++i) {
    ::usleep(50'000);
  }
  testing::FakeClock clock;
  Probing probing(Options(dir.path() + "/sock", config::TapProtocol::kMemcached), clock);
  const Measurement a = probing.Next();
  REQUIRE(a.status.ok());
  CHECK(a.reading->server.starts_with("memcached "));
  CHECK(a.cpus == 3);
  CHECK(a.cpus_source == CpusSource::kThreads);
  const int fd = testing::ConnectUnix(dir.path() + "/sock");
  REQUIRE(fd >= 0);
  REQUIRE(testing::WriteAll(fd, "set k 0 0 1\r\nv\r\nget k\r\nget k\r\n"));
  std::string in;
  char buf[512];
  while (in.find("END\r\nVALUE", 0) == std::string::npos || !in.ends_with("END\r\n")) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    REQUIRE(n > 0);
    in.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  clock.Advance(absl::Seconds(1));
  const Measurement b = probing.Next();
  REQUIRE(b.status.ok());
  CHECK(b.reading->commands - a.reading->commands == 3);  // stats counts in none
  REQUIRE(b.load);
  CHECK(b.load->ops_per_second == 3);
  std::system(absl::StrCat("kill $(cat ", dir.path(), "/pid)").c_str());
}

TEST_CASE("Prober: memcached's ASCII authentication from a password file", "[shard][memcached]") {
  TempDir dir;
  const std::string users = dir.Write("users", "hotkeyd:pw\n");
  REQUIRE(std::system(absl::StrCat(HOTKEY_MEMCACHED, " -u root -s ", dir.path(), "/sock -d -P ",
                                   dir.path(), "/pid -Y ", users)
                          .c_str()) == 0);
  for (int i = 0; i < 100 && !std::filesystem::exists(dir.path() + "/sock"); ++i) {
    ::usleep(50'000);
  }
  testing::FakeClock clock;
  config::ShardOptions o = Options(dir.path() + "/sock", config::TapProtocol::kMemcached);
  o.password_file = dir.Write("pw", "hotkeyd pw\n");
  Measurement m = Probing(o, clock).Next();
  CHECK(m.status.ok());
  o.password_file = dir.Write("wrong", "hotkeyd nope\n");
  m = Probing(o, clock).Next();
  CHECK(m.status.code() == absl::StatusCode::kUnauthenticated);
  CHECK_THAT(std::string(m.status.message()), StartsWith("AUTH refused: CLIENT_ERROR"));
  o.password_file = dir.Write("one", "pw\n");
  CHECK_THAT(std::string(Probing(o, clock).Next().status.message()),
             Contains("needs \"user password\""));
  o.password_file.clear();
  CHECK_THAT(std::string(Probing(o, clock).Next().status.message()),
             StartsWith("stats: the shard answered CLIENT_ERROR"));
  std::system(absl::StrCat("kill $(cat ", dir.path(), "/pid)").c_str());
}

TEST_CASE("Prober: a server that never answers times out; a closed port is refused", "[shard]") {
  // A listening socket that is never accepted from: the kernel completes the handshake,
  // nothing ever answers.
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor hung(io, {boost::asio::ip::address_v4::loopback(), 0});
  config::ShardOptions o = Options(absl::StrCat("127.0.0.1:", hung.local_endpoint().port()));
  o.timeout = absl::Milliseconds(200);
  testing::FakeClock clock;
  Measurement m = Probing(o, clock).Next();
  CHECK(m.status.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(m.status.message() == "INFO: no answer within 200ms");
  CHECK(CheckReachable(o, absl::Milliseconds(200)) == m.status);
  o.protocol = config::TapProtocol::kMemcached;
  CHECK(Probing(o, clock).Next().status.message() == "stats: no answer within 200ms");

  o = Options(absl::StrCat("127.0.0.1:", FreePort()));
  m = Probing(o, clock).Next();
  CHECK(m.status.code() == absl::StatusCode::kUnavailable);
  CHECK_THAT(std::string(m.status.message()),
             StartsWith(absl::StrCat("connect to ", o.address, ": Connection refused")));
  CHECK(CheckReachable(o, absl::Seconds(1)) == m.status);
  CHECK_THAT(std::string(CheckReachable(Options("/nonexistent/sock"), absl::Seconds(1)).message()),
             StartsWith("connect to /nonexistent/sock: "));
}

// A server that answers each request with `reply`, on a socket in the test's directory.
TEST_CASE("Prober: hostile replies are errors, never a crash", "[shard]") {
  for (const std::string& reply :
       {std::string(":1\r\n"), std::string("$2000000\r\n"), std::string("$5\r\nab"),
        std::string("-ERR no\r\n"), std::string("$5\r\nhello\r\n"),
        std::string("+") + std::string(3 << 20, 'x')}) {
    INFO(reply.substr(0, 20));
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor acceptor(io, {boost::asio::ip::address_v4::loopback(), 0});
    boost::asio::ip::tcp::socket peer(io);
    config::ShardOptions o = Options(absl::StrCat("127.0.0.1:", acceptor.local_endpoint().port()));
    o.timeout = absl::Milliseconds(300);
    std::thread server([&] {
      acceptor.accept(peer);
      char buf[256];
      peer.read_some(boost::asio::buffer(buf));
      boost::system::error_code ec;
      boost::asio::write(peer, boost::asio::buffer(reply), ec);
      peer.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ec);
    });
    testing::FakeClock clock;
    const Measurement m = Probing(o, clock).Next();
    server.join();
    CHECK_FALSE(m.status.ok());
    CHECK_THAT(std::string(m.status.message()), StartsWith("INFO: "));
    CHECK_FALSE(m.reading);
  }
}

TEST_CASE("Prober: TLS to a real redis-server, verified against a CA made by the test",
          "[shard][redis][tls]") {
  TempDir certs;
  testing::MakeCertificates(certs.path());
  const int port = FreePort();
  const std::string c = certs.path();
  Redis redis(absl::StrCat("--port 0 --tls-port ", port, " --tls-cert-file ", c,
                           "/server.pem --tls-key-file ", c, "/server.key --tls-ca-cert-file ", c,
                           "/ca.pem --tls-auth-clients optional"));
  testing::FakeClock clock;
  config::ShardOptions o = Options(absl::StrCat("127.0.0.1:", port));
  o.tls = true;
  o.tls_ca_file = c + "/ca.pem";
  Measurement m = Probing(o, clock).Next();
  REQUIRE(m.status.ok());
  CHECK(m.reading->server.starts_with("redis "));
  CHECK(m.cpus_source == CpusSource::kOneCore);  // loopback: local, and no quota here
  o.tls_server_name = "localhost";
  CHECK(Probing(o, clock).Next().status.ok());
  o.tls_cert_file = c + "/client.pem";
  o.tls_key_file = c + "/client.key";
  CHECK(Probing(o, clock).Next().status.ok());
  CHECK(CheckReachable(o, absl::Seconds(5)).ok());

  // A name the certificate does not hold; a CA that did not sign it; plain text to TLS.
  o.tls_server_name = "redis.example";
  m = Probing(o, clock).Next();
  CHECK_THAT(std::string(m.status.message()),
             StartsWith(absl::StrCat("TLS handshake with 127.0.0.1:", port, ": ")));
  CHECK_THAT(std::string(m.status.message()), Contains("certificate verify failed"));
  o.tls_server_name.clear();
  o.tls_ca_file = c + "/client.pem";
  CHECK_THAT(std::string(Probing(o, clock).Next().status.message()),
             Contains("certificate verify failed"));
  o.tls_ca_file = c + "/missing.pem";
  CHECK_THAT(std::string(Probing(o, clock).Next().status.message()),
             StartsWith(absl::StrCat("TLS: CA file ", c, "/missing.pem: ")));
  o = Options(absl::StrCat("127.0.0.1:", port));
  o.timeout = absl::Milliseconds(500);
  CHECK_FALSE(Probing(o, clock).Next().status.ok());
}

TEST_CASE("Prober: a real three-node cluster's shards, this node's id and the whole topology",
          "[shard][redis][cluster]") {
  RedisCluster cluster;
  testing::FakeClock clock;
  for (int p : cluster.ports()) {
    const Measurement m = Probing(Options(absl::StrCat("127.0.0.1:", p)), clock).Next();
    REQUIRE(m.status.ok());
    CHECK(m.reading->cluster_mode);
    CHECK(m.cluster.cluster_mode);
    CHECK(m.cluster.shards == 3);
    CHECK(m.cluster.node_id == cluster.Cli(p, "cluster myid"));
    // The topology: three primaries, this one `myself` at its address, and their slots.
    REQUIRE(m.topology);
    REQUIRE(m.topology->nodes.size() == 3);
    CHECK(m.topology->Shards() == 3);
    const cluster::Node* me = m.topology->Myself();
    REQUIRE(me);
    CHECK(me->id == m.cluster.node_id);
    CHECK(me->address == absl::StrCat("127.0.0.1:", p));
    CHECK(me->primary);
    int total = 0;
    for (const cluster::Node& n : m.topology->nodes) {
      CHECK(n.primary);
      // `--cluster create` splits 16384 slots in three: 5461, 5462, 5461.
      CHECK((n.SlotCount() == 5461 || n.SlotCount() == 5462));
      total += n.SlotCount();
    }
    CHECK(total == 16384);
    // The owner of a key's slot is the node CLUSTER KEYSLOT and CLUSTER NODES agree on.
    const int slot = std::stoi(cluster.Cli(p, "cluster keyslot user:1000"));
    const cluster::Node* owner = m.topology->Owner(static_cast<uint16_t>(slot));
    REQUIRE(owner);
    CHECK_THAT(cluster.Cli(p, "cluster nodes"),
               Contains(absl::StrCat(owner->id, " ", owner->address)));
  }

  // Outside a cluster: no topology.
  Redis redis("--port 0");
  const Measurement m = Probing(Options(redis.socket()), clock).Next();
  REQUIRE(m.status.ok());
  CHECK_FALSE(m.topology);
}

}  // namespace
}  // namespace hotkey::shard
