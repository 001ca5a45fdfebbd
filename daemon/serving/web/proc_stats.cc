#include "hotkey/web/proc_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace hotkey::web {

namespace {

std::string ReadFile(const char* path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<ProcessStats> ReadProcessStats() {
  ProcessStats s;
  const std::string stat = ReadFile("/proc/self/stat");
  // The command name may hold spaces and parentheses: fields start after the last ')'.
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return absl::InternalError("unreadable /proc/self/stat");
  std::vector<absl::string_view> f =
      absl::StrSplit(absl::string_view(stat).substr(paren + 2), ' ', absl::SkipEmpty());
  // After ')': state is field 3 of proc(5), so field N is f[N - 3].
  if (f.size() < 22) return absl::InternalError("short /proc/self/stat");
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  double utime = 0, stime = 0, start = 0, vsize = 0, rss = 0;
  if (!absl::SimpleAtod(f[14 - 3], &utime) || !absl::SimpleAtod(f[15 - 3], &stime) ||
      !absl::SimpleAtod(f[22 - 3], &start) || !absl::SimpleAtod(f[23 - 3], &vsize) ||
      !absl::SimpleAtod(f[24 - 3], &rss)) {
    return absl::InternalError("unparsable /proc/self/stat");
  }
  s.cpu_seconds = (utime + stime) / ticks;
  s.virtual_bytes = vsize;
  s.resident_bytes = rss * page;
  // starttime counts clock ticks since boot; btime in /proc/stat is the boot time.
  const std::string proc_stat = ReadFile("/proc/stat");
  for (absl::string_view line : absl::StrSplit(proc_stat, '\n')) {
    if (absl::ConsumePrefix(&line, "btime ")) {
      double btime;
      if (absl::SimpleAtod(line, &btime)) s.start_time_seconds = btime + start / ticks;
    }
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++s.open_fds;
  }
  rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) s.max_fds = static_cast<double>(rl.rlim_cur);
  return s;
}

uint64_t ParseUdpDrops(std::string_view table, std::span<const uint64_t> inodes) {
  uint64_t drops = 0;
  bool header = true;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(table.data(), table.size()), '\n')) {
    if (header) {
      header = false;
      continue;
    }
    // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 13) continue;
    uint64_t inode, d;
    if (!absl::SimpleAtoi(f[9], &inode) || !absl::SimpleAtoi(f[12], &d)) continue;
    if (std::find(inodes.begin(), inodes.end(), inode) != inodes.end()) drops += d;
  }
  return drops;
}

uint64_t ReadUdpDrops(std::span<const uint64_t> inodes) {
  return ParseUdpDrops(ReadFile("/proc/net/udp"), inodes) +
         ParseUdpDrops(ReadFile("/proc/net/udp6"), inodes);
}

}  // namespace hotkey::web
