// The prober's load figures against the server's own, with a real redis-server driven by
// redis-benchmark: unconstrained, and (where the test may create cgroups) under a CPU quota
// of 0.2 CPUs, which the prober must find and which the load saturates.
//
// Real time must pass here (the server's CPU is what is measured), so these use the steady
// clock and a window of kWindow. The prober stamps a reading when its reply arrives; the
// server stamps it (server_time_usec) when it computes INFO. The two windows differ by the
// difference of those two delays, each a reply's trip over a Unix socket plus the wait for
// the prober's thread: well under 50 ms even on a loaded machine, so the busy fractions and
// capacities agree within 2 x 50 ms / 2 s = 5%.

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "command_output.h"
#include "hotkey/clock/clock.h"
#include "hotkey/shard/cpu_quota.h"
#include "hotkey/shard/prober.h"
#include "probing.h"
#include "unix_socket.h"

namespace hotkey::shard {
namespace {

constexpr absl::Duration kWindow = absl::Seconds(2);
constexpr double kTolerance = 0.05;

using testing::CommandOutput;

// A redis-server on a Unix socket, and redis-benchmark loading it (-P 16) while it lives.
class LoadedRedis {
 public:
  LoadedRedis() {
    char tmpl[] = "/tmp/hotkey-prober-load-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    REQUIRE(std::system(absl::StrCat(HOTKEY_REDIS_SERVER, " --port 0 --unixsocket ", socket(),
                                     " --dir ", dir_, " --save '' --appendonly no",
                                     " --daemonize yes --pidfile ", dir_, "/pid --logfile ", dir_,
                                     "/log")
                            .c_str()) == 0);
    for (int i = 0; i < 100; ++i) {
      const int fd = testing::ConnectUnix(socket());
      if (fd >= 0) {
        ::close(fd);
        break;
      }
      ::usleep(50'000);
    }
  }
  ~LoadedRedis() {
    StopLoad();
    std::system(absl::StrCat("kill $(cat ", dir_, "/pid) 2>/dev/null").c_str());
    for (int i = 0; i < 100 && std::filesystem::exists(socket()); ++i) ::usleep(20'000);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string socket() const { return dir_ + "/sock"; }
  void StartLoad() {
    benchmark_pid_ = CommandOutput(absl::StrCat(HOTKEY_REDIS_BENCHMARK, " -s ", socket(),
                                                " -P 16 -c 4 -n 2000000000 -t set,get -q",
                                                " >/dev/null 2>&1 & echo $!"));
    REQUIRE_FALSE(benchmark_pid_.empty());
    ::usleep(300'000);  // its connections made, its pipelines full
  }
  void StopLoad() {
    if (benchmark_pid_.empty()) return;
    std::system(absl::StrCat("kill ", benchmark_pid_, " 2>/dev/null").c_str());
    benchmark_pid_.clear();
  }

 private:
  std::string dir_;
  std::string benchmark_pid_;
};

config::ShardOptions Options(const std::string& socket) {
  config::ShardOptions o;
  o.address = socket;
  o.protocol = config::TapProtocol::kRedis;
  o.timeout = absl::Seconds(5);
  return o;
}

// The busy fraction and the ops/s between `a` and `b` on the server's own clock.
struct ServerView {
  double busy;
  double ops_per_second;
};
ServerView ServerSays(const Measurement& a, const Measurement& b, double cpus) {
  const double seconds = absl::ToDoubleSeconds(*b.reading->server_time - *a.reading->server_time);
  return {(b.reading->cpu_seconds - a.reading->cpu_seconds) / seconds / cpus,
          static_cast<double>(b.reading->commands - a.reading->commands) / seconds};
}

// Two measurements kWindow apart under load; checks them against the server's own view.
Load MeasureUnderLoad(Probing& probing, double cpus) {
  const Measurement a = probing.Next();
  REQUIRE(a.status.ToString() == "OK");  // the status named if not
  absl::SleepFor(kWindow);
  const Measurement b = probing.Next();
  REQUIRE(b.status.ToString() == "OK");
  REQUIRE(b.load);
  REQUIRE(b.reading->server_time);
  const ServerView server = ServerSays(a, b, cpus);
  INFO("prober: busy " << b.load->busy << ", " << b.load->ops_per_second << " ops/s; server: busy "
                       << server.busy << ", " << server.ops_per_second << " ops/s");
  CHECK(b.load->busy == Approx(server.busy).epsilon(kTolerance));
  CHECK(b.load->ops_per_second == Approx(server.ops_per_second).epsilon(kTolerance));
  REQUIRE(b.load->capacity_ops);
  CHECK(*b.load->capacity_ops == b.load->ops_per_second / b.load->busy);
  CHECK(*b.load->capacity_ops ==
        Approx(server.ops_per_second / server.busy).epsilon(2 * kTolerance));
  return *b.load;
}

TEST_CASE("Prober load: busy and capacity agree with the server's own clock under load",
          "[shard][redis][load]") {
  LoadedRedis redis;
  Probing probing(Options(redis.socket()), clock::SteadyClock::Get());
  redis.StartLoad();
  const Load load = MeasureUnderLoad(probing, 1);
  CHECK(load.busy > 0);
  CHECK(load.capacity_ops.has_value());
}

// A cgroup with a CPU quota, in the v2 hierarchy with the cpu controller or in v1's cpu
// hierarchy, whichever this host has; `reason` says why none could be made.
class QuotaCgroup {
 public:
  QuotaCgroup(int64_t quota_us, int64_t period_us) {
    std::ifstream in("/proc/self/mountinfo");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    absl::StatusOr<CgroupMounts> mounts = ParseMountInfo(text);
    if (!mounts.ok()) {
      reason = std::string(mounts.status().message());
      return;
    }
    const std::string name = absl::StrCat("/hotkey-prober-test-", ::getpid());
    if (mounts->v2 &&
        Read(mounts->v2->point + "/cgroup.controllers").find("cpu") != std::string::npos) {
      root_ = mounts->v2->point;
      Write(root_ + "/cgroup.subtree_control", "+cpu");
      dir_ = root_ + name;
      limit_file_ = dir_ + "/cpu.max";
      if (std::filesystem::create_directory(dir_, ec_) &&
          Write(limit_file_, absl::StrCat(quota_us, " ", period_us))) {
        return;
      }
    } else if (mounts->v1_cpu) {
      root_ = mounts->v1_cpu->point;
      dir_ = root_ + name;
      limit_file_ = dir_ + "/cpu.cfs_quota_us";
      if (std::filesystem::create_directory(dir_, ec_) &&
          Write(dir_ + "/cpu.cfs_period_us", absl::StrCat(period_us)) &&
          Write(limit_file_, absl::StrCat(quota_us))) {
        return;
      }
    } else {
      reason = "no cgroup hierarchy with the cpu controller is mounted";
      return;
    }
    reason = absl::StrCat("cannot create ", dir_, " with a quota (", ec_.message(),
                          "): not root, or /sys/fs/cgroup is read-only");
  }
  ~QuotaCgroup() {
    if (!reason.empty()) return;
    for (int64_t pid : moved_) Write(root_ + "/cgroup.procs", absl::StrCat(pid));
    for (int i = 0; i < 50 && !std::filesystem::remove(dir_, ec_) && ec_; ++i) ::usleep(20'000);
  }
  bool Add(int64_t pid) {
    moved_.push_back(pid);
    return Write(dir_ + "/cgroup.procs", absl::StrCat(pid));
  }
  const std::string& limit_file() const { return limit_file_; }

  std::string reason;  // empty when the cgroup exists

 private:
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::string s;
    std::getline(in, s);
    return s;
  }
  static bool Write(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    out.flush();
    return static_cast<bool>(out);
  }

  std::string root_;
  std::string dir_;
  std::string limit_file_;
  std::vector<int64_t> moved_;
  std::error_code ec_;
};

TEST_CASE(
    "Prober load: under a cgroup quota of 0.2 CPUs the prober finds it and saturation "
    "reads busy",
    "[shard][redis][load][cgroup]") {
  LoadedRedis redis;
  // Made after the server, so that it is removed first: the server is moved out while it
  // still runs (a killed server may linger in it as a zombie and keep it from removal).
  QuotaCgroup cgroup(20'000, 100'000);
  if (!cgroup.reason.empty()) {
    WARN("skipped: " << cgroup.reason);
    return;
  }
  Probing probing(Options(redis.socket()), clock::SteadyClock::Get());
  const Measurement first = probing.Next();
  REQUIRE(first.status.ok());
  CHECK(first.cpus == 1);
  REQUIRE(cgroup.Add(first.reading->pid));
  const Measurement quoted = probing.Next();
  INFO(quoted.status.ToString());
  REQUIRE(quoted.status.ok());
  CHECK(quoted.cpus == 0.2);
  CHECK(quoted.cpus_source == CpusSource::kCgroupQuota);
  CHECK(quoted.cpus_detail == cgroup.limit_file());
  // The window since `first` ran without the quota: no load is judged on 0.2 CPUs from it.
  CHECK_FALSE(quoted.load.has_value());
  redis.StartLoad();
  // The next reading, the reference, comes a while after the last: over a few milliseconds
  // a server under a 100 ms quota period can use a whole period's quota, a busy fraction
  // over kMaxBusy that the prober rightly refuses.
  absl::SleepFor(kWindow);
  const Load load = MeasureUnderLoad(probing, 0.2);
  // Saturated: the server uses all its quota allows. CFS hands out the quota per 100 ms
  // period, so a window of 2 s sees it within a period or two (10%); more only if the
  // machine cannot give even 0.2 CPUs.
  CHECK(load.busy > 0.9);
  CHECK(load.busy < 1.05);
}

}  // namespace
}  // namespace hotkey::shard
