// The CPU quota a process runs under: what Linux's CFS bandwidth control lets it use, read
// from its control groups (cgroup v2 `cpu.max`, cgroup v1 `cpu.cfs_quota_us` over
// `cpu.cfs_period_us`; https://docs.kernel.org/admin-guide/cgroup-v2.html, "CPU").
//
// A quota caps a whole cgroup subtree, so the limit of a process is the least over its
// cgroup and every ancestor up to the root of the mount hotkeyd sees (a container's pod
// cgroup often holds the limit, its own cgroup none). A process whose cgroup lies outside
// the mounted hierarchy (another cgroup namespace) has no quota hotkeyd can see: nullopt.
//
// The parsers are pure functions over the files' text (any input gives a value or an
// error, never undefined behaviour); ReadCpuQuota does the reading. Thread-compatible.

#ifndef HOTKEY_SHARD_CPU_QUOTA_H_
#define HOTKEY_SHARD_CPU_QUOTA_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace hotkey::shard {

// cpu.max: "max <period>" (no limit: nullopt) or "<quota> <period>" (quota / period CPUs).
absl::StatusOr<std::optional<double>> ParseCpuMax(std::string_view text);
// cpu.cfs_quota_us ("-1": no limit) over cpu.cfs_period_us.
absl::StatusOr<std::optional<double>> ParseCfsQuota(std::string_view quota,
                                                    std::string_view period);

// A process's cgroups, from /proc/<pid>/cgroup ("hierarchy:controllers:path" lines).
struct CgroupPaths {
  std::optional<std::string> v2;      // the "0::<path>" line
  std::optional<std::string> v1_cpu;  // the v1 hierarchy whose controllers include "cpu"
};
absl::StatusOr<CgroupPaths> ParseProcCgroup(std::string_view text);

// Where those hierarchies are mounted, from /proc/self/mountinfo.
struct CgroupMount {
  std::string root;   // the cgroup the mount shows at its mount point ("/" usually)
  std::string point;  // "/sys/fs/cgroup", "/sys/fs/cgroup/cpu,cpuacct"
};
struct CgroupMounts {
  std::optional<CgroupMount> v2;
  std::optional<CgroupMount> v1_cpu;
};
absl::StatusOr<CgroupMounts> ParseMountInfo(std::string_view text);

// The directories of `cgroup` and its ancestors under `mount`, the cgroup's own first;
// empty when the cgroup lies outside what the mount shows.
std::vector<std::string> CgroupDirs(const CgroupMount& mount, std::string_view cgroup);

struct CpuQuota {
  double cpus = 0;   // quota / period of the tightest limit
  std::string file;  // the file that set it
};

// A file's text, or nullopt where it does not exist or cannot be read.
using ReadFileFn = std::function<std::optional<std::string>(const std::string& path)>;

// The tightest quota over the cgroups of a process given the text of its /proc/<pid>/cgroup
// and of /proc/self/mountinfo, reading the limit files with `read`. Nullopt: no limit found.
absl::StatusOr<std::optional<CpuQuota>> CpuQuotaFrom(std::string_view proc_cgroup,
                                                     std::string_view mountinfo,
                                                     const ReadFileFn& read);

// CpuQuotaFrom over the real files for process `pid`. An error when /proc/<pid> cannot be
// read (no such process, another PID namespace, no permission).
absl::StatusOr<std::optional<CpuQuota>> ReadCpuQuota(int64_t pid);

}  // namespace hotkey::shard

#endif  // HOTKEY_SHARD_CPU_QUOTA_H_
