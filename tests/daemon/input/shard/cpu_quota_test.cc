// The CPU quota of a process from its cgroup files' text: v2, v1, nested limits, hostile text.

#include "hotkey/shard/cpu_quota.h"

#include <unistd.h>

#include <map>
#include <string>

#include <catch2/catch.hpp>

namespace hotkey::shard {
namespace {

TEST_CASE("CpuQuota: cpu.max and cfs_quota_us", "[shard][cgroup]") {
  CHECK(ParseCpuMax("max 100000\n").value() == std::nullopt);
  CHECK(ParseCpuMax("50000 100000\n").value() == 0.5);
  CHECK(ParseCpuMax("20000 100000").value() == 0.2);
  CHECK(ParseCpuMax("300000 100000\n").value() == 3.0);
  CHECK(ParseCfsQuota("-1\n", "100000\n").value() == std::nullopt);
  CHECK(ParseCfsQuota("20000\n", "100000\n").value() == 0.2);
  for (std::string_view bad : {"", "max", "50000", "0 100000", "50000 0", "-5 100000", "x 100000",
                               "50000 100000 7", "50000 1e5"}) {
    INFO(bad);
    CHECK_FALSE(ParseCpuMax(bad).ok());
  }
  CHECK_FALSE(ParseCfsQuota("0", "100000").ok());
  CHECK_FALSE(ParseCfsQuota("-2", "100000").ok());
  CHECK_FALSE(ParseCfsQuota("20000", "0").ok());
  CHECK_FALSE(ParseCfsQuota("20000", "").ok());
}

TEST_CASE("CpuQuota: /proc/<pid>/cgroup of v2, v1 and hybrid hosts", "[shard][cgroup]") {
  CgroupPaths p = ParseProcCgroup("0::/system.slice/redis-server.service\n").value();
  CHECK(p.v2 == "/system.slice/redis-server.service");
  CHECK_FALSE(p.v1_cpu);
  p = ParseProcCgroup("12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/x\n0::/\n")
          .value();
  CHECK(p.v1_cpu == "/docker/abc");
  CHECK(p.v2 == "/");
  p = ParseProcCgroup("0::/a:b\n").value();  // a path may hold ':'
  CHECK(p.v2 == "/a:b");
  CHECK_FALSE(ParseProcCgroup("garbage\n").ok());
  CHECK_FALSE(ParseProcCgroup("0::relative\n").ok());
}

TEST_CASE("CpuQuota: mountinfo's cgroup mounts", "[shard][cgroup]") {
  const CgroupMounts m =
      ParseMountInfo(
          "22 1 0:21 / /proc rw - proc proc rw\n"
          "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
          "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup "
          "rw,cpu,cpuacct\n"
          "32 30 0:29 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"
          "40 30 0:37 /kube /sys/fs/cgroup/uni\\040fied rw - cgroup2 cgroup2 rw\n")
          .value();
  REQUIRE(m.v1_cpu);
  CHECK(m.v1_cpu->point == "/sys/fs/cgroup/cpu,cpuacct");
  CHECK(m.v1_cpu->root == "/");
  REQUIRE(m.v2);
  CHECK(m.v2->point == "/sys/fs/cgroup/uni fied");  // \040 is a space
  CHECK(m.v2->root == "/kube");
  CHECK_FALSE(ParseMountInfo("1 2 3\n").ok());
  CHECK_FALSE(ParseMountInfo("1 2 - cgroup2\n").ok());
}

TEST_CASE("CpuQuota: a cgroup's directories run from itself up to the mount's root",
          "[shard][cgroup]") {
  const CgroupMount root{"/", "/sys/fs/cgroup"};
  CHECK(CgroupDirs(root, "/a/b") ==
        std::vector<std::string>{"/sys/fs/cgroup/a/b", "/sys/fs/cgroup/a", "/sys/fs/cgroup"});
  CHECK(CgroupDirs(root, "/") == std::vector<std::string>{"/sys/fs/cgroup"});
  const CgroupMount sub{"/kube", "/sys/fs/cgroup"};
  CHECK(CgroupDirs(sub, "/kube/pod/c") ==
        std::vector<std::string>{"/sys/fs/cgroup/pod/c", "/sys/fs/cgroup/pod", "/sys/fs/cgroup"});
  CHECK(CgroupDirs(sub, "/kubelet/x").empty());  // outside the mount
  CHECK(CgroupDirs(root, "/../other").empty());  // another cgroup namespace's
  CHECK(CgroupDirs(root, "a/b").empty());        // not a cgroup path (once looped forever)
}

TEST_CASE("CpuQuota: the tightest limit over a cgroup and its ancestors wins", "[shard][cgroup]") {
  std::map<std::string, std::string> files = {
      {"/sys/fs/cgroup/pod/cpu.max", "50000 100000\n"},
      {"/sys/fs/cgroup/pod/redis/cpu.max", "max 100000\n"},
  };
  auto read = [&](const std::string& path) -> std::optional<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  };
  const std::string mountinfo = "40 30 0:37 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
  absl::StatusOr<std::optional<CpuQuota>> q = CpuQuotaFrom("0::/pod/redis\n", mountinfo, read);
  REQUIRE(q.ok());
  REQUIRE(*q);
  CHECK((*q)->cpus == 0.5);
  CHECK((*q)->file == "/sys/fs/cgroup/pod/cpu.max");
  files["/sys/fs/cgroup/pod/redis/cpu.max"] = "20000 100000\n";
  q = CpuQuotaFrom("0::/pod/redis\n", mountinfo, read);
  CHECK((*q)->cpus == 0.2);
  CHECK((*q)->file == "/sys/fs/cgroup/pod/redis/cpu.max");
  // No limit anywhere.
  q = CpuQuotaFrom("0::/other\n", mountinfo, read);
  REQUIRE(q.ok());
  CHECK_FALSE(*q);
  // v1: quota over period, in the cpu controller's hierarchy.
  files = {{"/sys/fs/cgroup/cpu/t/cpu.cfs_quota_us", "25000\n"},
           {"/sys/fs/cgroup/cpu/t/cpu.cfs_period_us", "100000\n"},
           {"/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n"},
           {"/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n"}};
  q = CpuQuotaFrom("1:cpu:/t\n0::/\n",
                   "31 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n", read);
  REQUIRE(q.ok());
  REQUIRE(*q);
  CHECK((*q)->cpus == 0.25);
  // A corrupt limit file is an error naming it.
  files["/sys/fs/cgroup/cpu/t/cpu.cfs_quota_us"] = "lots\n";
  q = CpuQuotaFrom("1:cpu:/t\n", "31 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n",
                   read);
  REQUIRE_FALSE(q.ok());
  CHECK(std::string(q.status().message()).starts_with("/sys/fs/cgroup/cpu/t/cpu.cfs_quota_us: "));
}

TEST_CASE("CpuQuota: a process that does not exist is an error", "[shard][cgroup]") {
  CHECK_FALSE(ReadCpuQuota(0).ok());
  CHECK_FALSE(ReadCpuQuota(int64_t{1} << 40).ok());
  CHECK(ReadCpuQuota(::getpid()).ok());
}

}  // namespace
}  // namespace hotkey::shard
