// Readings of a real redis-server and a real memcached, each started on a Unix socket in a
// temporary directory: the commands counted between two readings are exactly those sent.

#include "hotkey/shard/reading.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "unix_socket.h"

namespace hotkey::shard {
namespace {

// A server started with `command` (given the directory), reached on <dir>/sock; stopped by
// `stop` sent over the socket, or by its pid file.
class Server {
 public:
  explicit Server(const std::string& command_template) {
    char tmpl[] = "/tmp/hotkey-shard-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    std::string cmd = command_template;
    for (size_t at; (at = cmd.find("DIR")) != std::string::npos;) cmd.replace(at, 3, dir_);
    REQUIRE(std::system(cmd.c_str()) == 0);
    for (int i = 0; i < 100 && fd_ < 0; ++i) {
      fd_ = testing::ConnectUnix(dir_ + "/sock");
      if (fd_ < 0) ::usleep(50'000);
    }
    REQUIRE(fd_ >= 0);
  }
  ~Server() {
    if (fd_ >= 0) ::close(fd_);
    std::system(absl::StrCat("kill $(cat ", dir_, "/pid) 2>/dev/null").c_str());
    for (int i = 0; i < 100 && std::filesystem::exists(dir_ + "/sock"); ++i) ::usleep(20'000);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Sends `request` and reads until `done(reply so far)`.
  template <typename Done>
  std::string Ask(const std::string& request, Done done) {
    REQUIRE(testing::WriteAll(fd_, request));
    std::string in;
    char buf[65536];
    while (!done(in)) {
      const ssize_t n = ::read(fd_, buf, sizeof(buf));
      REQUIRE(n > 0);
      in.append(buf, static_cast<size_t>(n));
    }
    return in;
  }

 private:
  std::string dir_;
  int fd_ = -1;
};

size_t Count(const std::string& s, std::string_view what) {
  size_t n = 0;
  for (size_t at = 0; (at = s.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

// INFO's reply: a bulk string "$<len>\r\n<text>\r\n"; returns the text once complete.
std::string RedisInfo(Server& s) {
  std::string text;
  s.Ask("INFO\r\n", [&](const std::string& in) {
    const size_t eol = in.find("\r\n");
    if (eol == std::string::npos) return false;
    const size_t len = std::stoul(in.substr(1, eol - 1));
    if (in.size() < eol + 2 + len + 2) return false;
    text = in.substr(eol + 2, len);
    return true;
  });
  return text;
}

TEST_CASE("Reading: a real redis-server's INFO counts exactly the commands sent",
          "[shard][redis]") {
  Server redis(absl::StrCat(HOTKEY_REDIS_SERVER,
                            " --port 0 --unixsocket DIR/sock --dir DIR --save '' --appendonly no"
                            " --daemonize yes --pidfile DIR/pid --logfile DIR/log"));
  const absl::StatusOr<Reading> a = ParseRedisInfo(RedisInfo(redis));
  REQUIRE(a.ok());
  CHECK(a->server.starts_with("redis "));
  CHECK_FALSE(a->cluster_mode);
  CHECK(a->threads == 1);
  std::string pipeline;
  // 100 SETs and 200 GETs of keys never set: each reply one line (+OK, $-1).
  for (int i = 0; i < 300; ++i) {
    absl::StrAppend(&pipeline,
                    i % 3 ? absl::StrCat("GET nosuch", i) : absl::StrCat("SET k", i, " v"), "\r\n");
  }
  redis.Ask(pipeline, [](const std::string& in) { return Count(in, "\r\n") >= 300; });
  const absl::StatusOr<Reading> b = ParseRedisInfo(RedisInfo(redis));
  REQUIRE(b.ok());
  CHECK(b->commands - a->commands == 300 + 1);  // and the first INFO
  CHECK(b->cpu_seconds >= a->cpu_seconds);
  const absl::Time t0 = absl::FromUnixSeconds(100);
  const std::optional<Load> l = LoadBetween(*a, t0, *b, t0 + absl::Seconds(2), 1);
  REQUIRE(l);
  CHECK(l->ops_per_second == 301.0 / 2);
}

TEST_CASE("Reading: a real memcached's stats count exactly the key operations sent",
          "[shard][memcached]") {
  Server mc(absl::StrCat(HOTKEY_MEMCACHED, " -u root -s DIR/sock -d -P DIR/pid -t 3"));
  auto stats = [&] {
    return mc.Ask("stats\r\n", [](const std::string& in) { return in.ends_with("END\r\n"); });
  };
  const absl::StatusOr<Reading> a = ParseMemcachedStats(stats());
  REQUIRE(a.ok());
  CHECK(a->server.starts_with("memcached "));
  CHECK(a->threads == 3);
  std::string pipeline;
  for (int i = 0; i < 30; ++i) absl::StrAppend(&pipeline, "set k", i, " 0 0 1\r\nv\r\n");
  for (int i = 0; i < 50; ++i) absl::StrAppend(&pipeline, "get k", i % 30, "\r\n");
  absl::StrAppend(&pipeline, "get k1 k2 k3\r\n", "set n 0 0 1\r\n5\r\n", "incr n 1\r\n",
                  "incr n 1\r\n", "delete k1\r\n", "delete nosuch\r\n", "touch k2 100\r\n");
  absl::StrAppend(&pipeline, "mn\r\n");  // the end marker of the pipeline's replies
  mc.Ask(pipeline, [](const std::string& in) { return in.ends_with("MN\r\n"); });
  const absl::StatusOr<Reading> b = ParseMemcachedStats(stats());
  REQUIRE(b.ok());
  // 31 sets, 50 + 3 retrievals, 2 incr, 2 deletes, 1 touch.
  CHECK(b->commands - a->commands == 31 + 53 + 2 + 2 + 1);
}

TEST_CASE("Reading: the thread's figures win over the process's; bad input is an error",
          "[shard]") {
  const absl::StatusOr<Reading> r = ParseRedisInfo(
      "# Server\r\nredis_version:7.2.4\r\n# Stats\r\ntotal_commands_processed:1000\r\n"
      "# CPU\r\nused_cpu_sys:10.5\r\nused_cpu_user:20.25\r\nused_cpu_sys_main_thread:1.5\r\n"
      "used_cpu_user_main_thread:2.25\r\n# Cluster\r\ncluster_enabled:1\r\n"
      "process_id:77\r\nserver_time_usec:1700000000123456\r\n# Replication\r\nrole:slave\r\n");
  REQUIRE(r.ok());
  CHECK(r->role == Role::kReplica);
  CHECK(r->server == "redis 7.2.4");
  CHECK(r->commands == 1000);
  CHECK(r->cpu_seconds == 3.75);
  CHECK(r->cluster_mode);
  CHECK(r->pid == 77);
  CHECK(r->server_time == absl::FromUnixMicros(1700000000123456));
  const absl::StatusOr<Reading> old = ParseRedisInfo(
      "redis_version:5.0.7\ntotal_commands_processed:7\nused_cpu_sys:1\nused_cpu_user:2\n");
  REQUIRE(old.ok());
  CHECK(old->cpu_seconds == 3);
  CHECK(old->role == Role::kUnknown);  // no role line
  CHECK(old->pid == 0);
  CHECK_FALSE(old->server_time);
  for (std::string_view bad :
       {"", "redis_version:7\n", "redis_version:7\ntotal_commands_processed:x\n",
        "redis_version:7\ntotal_commands_processed:1\nused_cpu_sys:-1\nused_cpu_user:1\n",
        "redis_version:7\ntotal_commands_processed:1\nused_cpu_sys:nan\nused_cpu_user:1\n",
        "redis_version:7\ntotal_commands_processed:99999999999999999999999\n",
        // Each finite, their sum not (LoadBetween would make NaN of it).
        "redis_version:7\ntotal_commands_processed:1\nused_cpu_sys:1e308\nused_cpu_user:1e308\n"}) {
    INFO(bad);
    CHECK_FALSE(ParseRedisInfo(bad).ok());
  }
  CHECK_FALSE(ParseMemcachedStats("STAT version 1.6\r\nEND\r\n").ok());
  CHECK_FALSE(ParseMemcachedStats("ERROR\r\n").ok());
  const auto stats = [](const char* cpu) {
    std::string text = absl::StrCat("STAT version 1.6\r\nSTAT rusage_user ", cpu,
                                    "\r\nSTAT rusage_system ", cpu, "\r\nSTAT threads 4\r\n");
    for (const char* name : {"cmd_get", "cmd_set", "cmd_touch", "delete_hits", "delete_misses",
                             "incr_hits", "incr_misses", "decr_hits", "decr_misses"}) {
      absl::StrAppend(&text, "STAT ", name, " 1\r\n");
    }
    return text + "END\r\n";
  };
  CHECK(ParseMemcachedStats(stats("1.5")).ok());
  CHECK_FALSE(ParseMemcachedStats(stats("1e308")).ok());  // each finite, their sum not
}

TEST_CASE("Reading: load and capacity between two readings", "[shard]") {
  Reading a{"redis 7", 1000, 10.0, 1, false};
  Reading b{"redis 7", 21000, 11.0, 1, false};  // 20,000 commands on 1 CPU-second
  const absl::Time t0 = absl::FromUnixSeconds(100);
  std::optional<Load> l = LoadBetween(a, t0, b, t0 + absl::Seconds(2), 1);
  REQUIRE(l);
  CHECK(l->ops_per_second == 10000);
  CHECK(l->busy == 0.5);
  CHECK(l->capacity_ops == 20000);
  // Under a quota of half a CPU the same work is the whole allowance.
  l = LoadBetween(a, t0, b, t0 + absl::Seconds(2), 0.5);
  REQUIRE(l);
  CHECK(l->busy == 1);
  CHECK(l->capacity_ops == 10000);
  // A nearly idle server still has a capacity, extrapolated from what it measured: 10
  // commands in 1 ms of CPU, 10,000 at busy 1. No floor stands in for the measurement.
  Reading idle = a;
  idle.commands += 10;
  idle.cpu_seconds += 0.001;
  l = LoadBetween(a, t0, idle, t0 + absl::Seconds(1), 1);
  REQUIRE(l);
  REQUIRE(l->capacity_ops);
  CHECK(*l->capacity_ops == Approx(10000));
  // No CPU used at all: nothing to extrapolate from.
  Reading still = a;
  still.commands += 10;
  l = LoadBetween(a, t0, still, t0 + absl::Seconds(1), 1);
  REQUIRE(l);
  CHECK_FALSE(l->capacity_ops);
  // Not one server run in order: a restart, another server, time not moving.
  CHECK_FALSE(LoadBetween(b, t0, a, t0 + absl::Seconds(1), 1));
  Reading other = b;
  other.server = "redis 7.2";
  CHECK_FALSE(LoadBetween(a, t0, other, t0 + absl::Seconds(1), 1));
  other = b;
  other.pid = 4242;  // the same server, restarted: another process
  CHECK_FALSE(LoadBetween(a, t0, other, t0 + absl::Seconds(1), 1));
  CHECK_FALSE(LoadBetween(a, t0, b, t0, 1));
  CHECK_FALSE(LoadBetween(a, t0, b, t0 + absl::Seconds(1), 0));
}

}  // namespace
}  // namespace hotkey::shard
