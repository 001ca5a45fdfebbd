// A real three-node Redis Cluster for the tests: three redis-servers in cluster mode on
// loopback ports, joined by `redis-cli --cluster create`, shut down at destruction.
//
// A test that uses it is tagged [cluster]; CTest runs those alone (shard_cluster_test),
// which reports SKIP (exit 77) where redis-server or redis-cli is missing.

#ifndef HOTKEY_TESTS_SHARD_REDIS_CLUSTER_H_
#define HOTKEY_TESTS_SHARD_REDIS_CLUSTER_H_

#include <stdlib.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "command_output.h"

namespace hotkey::shard {

class RedisCluster {
 public:
  RedisCluster() {
    if (::access(HOTKEY_REDIS_SERVER, X_OK) != 0 || ::access(HOTKEY_REDIS_CLI, X_OK) != 0) {
      std::fprintf(stderr, "SKIP: redis-server or redis-cli not found\n");
      std::exit(77);
    }
    char tmpl[] = "/tmp/hotkey-cluster-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    // Each node's cluster bus listens on its port + 10000, so ports stay under 55536 (a bus
    // port in use fails the start, and the test).
    for (int& p : ports_) {
      do {
        p = FreePort();
      } while (p > 55535);
    }
    for (int p : ports_) {
      REQUIRE(std::system(absl::StrCat(HOTKEY_REDIS_SERVER, " --port ", p,
                                       " --bind 127.0.0.1 --cluster-enabled yes",
                                       " --cluster-config-file ", dir_, "/nodes-", p,
                                       ".conf --dir ", dir_, " --save '' --appendonly no",
                                       " --daemonize yes --logfile ", dir_, "/", p, ".log")
                              .c_str()) == 0);
    }
    for (int p : ports_) {
      for (int i = 0; i < 50 && Cli(p, "ping") != "PONG"; ++i) ::usleep(100'000);
    }
    REQUIRE(std::system(absl::StrCat(HOTKEY_REDIS_CLI, " --cluster create 127.0.0.1:", ports_[0],
                                     " 127.0.0.1:", ports_[1], " 127.0.0.1:", ports_[2],
                                     " --cluster-yes >", dir_, "/create.log 2>&1")
                            .c_str()) == 0);
    // `--cluster create` returns once every node agrees on the slots; each node learns the
    // others' ids over the bus, which can lag a little.
    for (int p : ports_) {
      for (int i = 0; i < 50 && Cli(p, "cluster nodes | grep -c master") != "3"; ++i) {
        ::usleep(100'000);
      }
    }
    // And a node serves commands only once its own view says the cluster is up
    // (CLUSTERDOWN before).
    for (int p : ports_) {
      for (int i = 0; i < 100 && Cli(p, "cluster info | grep -c cluster_state:ok") != "1"; ++i) {
        ::usleep(100'000);
      }
    }
  }
  ~RedisCluster() {
    for (int p : ports_) Cli(p, "shutdown nosave");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  const std::array<int, 3>& ports() const { return ports_; }
  std::string address(int i) const { return absl::StrCat("127.0.0.1:", ports_[i]); }
  const std::string& dir() const { return dir_; }
  // redis-cli on node `port` (not following redirections); `args` may hold a shell pipe.
  std::string Cli(int port, const std::string& args) const {
    return testing::CommandOutput(absl::StrCat(HOTKEY_REDIS_CLI, " -p ", port, " ", args, " 2>&1"));
  }

 private:
  // A port nothing listens on now (bound, then released).
  static int FreePort() {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::address_v4::loopback(), 0});
    return a.local_endpoint().port();
  }

  std::string dir_;
  std::array<int, 3> ports_{};
};

}  // namespace hotkey::shard

#endif  // HOTKEY_TESTS_SHARD_REDIS_CLUSTER_H_
