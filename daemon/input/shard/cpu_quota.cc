#include "hotkey/shard/cpu_quota.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace hotkey::shard {
namespace {

// The whole of `s` as a non-negative integer.
std::optional<int64_t> Integer(std::string_view s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const size_t at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

std::optional<double> Ratio(int64_t quota, int64_t period) {
  return static_cast<double>(quota) / static_cast<double>(period);
}

// mountinfo escapes space, tab, newline and backslash in paths as \ooo (octal).
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int v = 0;
      bool octal = true;
      for (size_t k = 1; octal && k <= 3; ++k) {
        octal = s[i + k] >= '0' && s[i + k] <= '7';
        v = v * 8 + (s[i + k] - '0');
      }
      if (octal && v < 256) {
        out.push_back(static_cast<char>(v));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::optional<double>> ParseCpuMax(std::string_view text) {
  const std::vector<std::string_view> f = Split(Trim(text), ' ');
  const std::optional<int64_t> period = f.size() == 2 ? Integer(f[1]) : std::nullopt;
  if (!period || *period == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu.max: not \"max <period>\" or \"<quota> <period>\": \"",
                     std::string(text.substr(0, 64)), "\""));
  }
  if (f[0] == "max") return std::nullopt;
  const std::optional<int64_t> quota = Integer(f[0]);
  if (!quota || *quota == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu.max: bad quota \"", std::string(f[0].substr(0, 32)), "\""));
  }
  return Ratio(*quota, *period);
}

absl::StatusOr<std::optional<double>> ParseCfsQuota(std::string_view quota_text,
                                                    std::string_view period_text) {
  const std::optional<int64_t> period = Integer(Trim(period_text));
  if (!period || *period == 0) {
    return absl::InvalidArgumentError("cpu.cfs_period_us: not a positive integer");
  }
  quota_text = Trim(quota_text);
  if (quota_text == "-1") return std::nullopt;
  const std::optional<int64_t> quota = Integer(quota_text);
  if (!quota || *quota == 0) {
    return absl::InvalidArgumentError("cpu.cfs_quota_us: not -1 or a positive integer");
  }
  return Ratio(*quota, *period);
}

absl::StatusOr<CgroupPaths> ParseProcCgroup(std::string_view text) {
  CgroupPaths out;
  for (std::string_view line : Split(text, '\n')) {
    if (line.empty()) continue;
    // hierarchy-ID:controller-list:cgroup-path (the path may itself hold ':').
    const size_t a = line.find(':');
    const size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) {
      return absl::InvalidArgumentError("/proc/<pid>/cgroup: a line without two ':'");
    }
    const std::string_view id = line.substr(0, a);
    const std::string_view controllers = line.substr(a + 1, b - a - 1);
    const std::string_view path = line.substr(b + 1);
    if (!path.starts_with("/")) {
      return absl::InvalidArgumentError("/proc/<pid>/cgroup: a path not starting with '/'");
    }
    if (id == "0" && controllers.empty()) {
      out.v2 = std::string(path);
      continue;
    }
    for (std::string_view c : Split(controllers, ',')) {
      if (c == "cpu") out.v1_cpu = std::string(path);
    }
  }
  return out;
}

absl::StatusOr<CgroupMounts> ParseMountInfo(std::string_view text) {
  CgroupMounts out;
  for (std::string_view line : Split(text, '\n')) {
    if (line.empty()) continue;
    const size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) {
      return absl::InvalidArgumentError("mountinfo: a line without \" - \"");
    }
    const std::vector<std::string_view> before = Split(line.substr(0, dash), ' ');
    const std::vector<std::string_view> after = Split(line.substr(dash + 3), ' ');
    if (before.size() < 6 || after.size() < 3) {
      return absl::InvalidArgumentError("mountinfo: a line with too few fields");
    }
    const CgroupMount mount{Unescape(before[3]), Unescape(before[4])};
    if (after[0] == "cgroup2" && !out.v2) {
      out.v2 = mount;
    } else if (after[0] == "cgroup" && !out.v1_cpu) {
      for (std::string_view option : Split(after[2], ',')) {
        if (option == "cpu") out.v1_cpu = mount;
      }
    }
  }
  return out;
}

std::vector<std::string> CgroupDirs(const CgroupMount& mount, std::string_view cgroup) {
  std::vector<std::string> out;
  std::string_view root = mount.root;
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  std::string_view rel;
  if (root == "/") {
    rel = cgroup;
  } else if (cgroup == root) {
    rel = "";
  } else if (cgroup.starts_with(root) && cgroup.substr(root.size()).starts_with("/")) {
    rel = cgroup.substr(root.size());
  } else {
    return out;  // outside the mount
  }
  // A cgroup path is absolute; a relative one names no directory (and has no parent to
  // climb to below).
  if (!rel.empty() && !rel.starts_with("/")) return out;
  while (!rel.empty() && rel.back() == '/') rel.remove_suffix(1);
  for (std::string_view part : Split(rel, '/')) {
    if (part == "..") return out;  // (a cgroup of another namespace shows so)
  }
  for (;;) {
    out.push_back(absl::StrCat(mount.point, std::string(rel)));
    if (rel.empty()) return out;
    rel = rel.substr(0, rel.rfind('/'));
  }
}

absl::StatusOr<std::optional<CpuQuota>> CpuQuotaFrom(std::string_view proc_cgroup,
                                                     std::string_view mountinfo,
                                                     const ReadFileFn& read) {
  absl::StatusOr<CgroupPaths> paths = ParseProcCgroup(proc_cgroup);
  if (!paths.ok()) return paths.status();
  absl::StatusOr<CgroupMounts> mounts = ParseMountInfo(mountinfo);
  if (!mounts.ok()) return mounts.status();
  std::optional<CpuQuota> best;
  auto consider = [&](const absl::StatusOr<std::optional<double>>& q,
                      const std::string& file) -> absl::Status {
    if (!q.ok())
      return absl::Status(q.status().code(), absl::StrCat(file, ": ", q.status().message()));
    if (*q && (!best || **q < best->cpus)) best = CpuQuota{**q, file};
    return absl::OkStatus();
  };
  if (paths->v2 && mounts->v2) {
    for (const std::string& dir : CgroupDirs(*mounts->v2, *paths->v2)) {
      const std::string file = dir + "/cpu.max";
      const std::optional<std::string> text = read(file);
      if (!text) continue;  // the root cgroup, or no cpu controller here
      if (absl::Status s = consider(ParseCpuMax(*text), file); !s.ok()) return s;
    }
  }
  if (paths->v1_cpu && mounts->v1_cpu) {
    for (const std::string& dir : CgroupDirs(*mounts->v1_cpu, *paths->v1_cpu)) {
      const std::string file = dir + "/cpu.cfs_quota_us";
      const std::optional<std::string> quota = read(file);
      const std::optional<std::string> period = read(dir + "/cpu.cfs_period_us");
      if (!quota || !period) continue;
      if (absl::Status s = consider(ParseCfsQuota(*quota, *period), file); !s.ok()) return s;
    }
  }
  return best;
}

namespace {

// Limit files are a line; /proc files at most a few KiB (mountinfo grows with mounts:
// the cap keeps a pathological one from using unbounded memory).
constexpr size_t kMaxFileBytes = size_t{1} << 20;

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  // Read as the file comes, not into a zeroed buffer of the cap: the files are a line or a
  // few KiB, and each answer of every shard asked (peers included) reads several.
  std::string out;
  std::array<char, 4096> chunk;
  while (out.size() < kMaxFileBytes) {
    const size_t want = std::min(chunk.size(), kMaxFileBytes - out.size());
    in.read(chunk.data(), static_cast<std::streamsize>(want));
    out.append(chunk.data(), static_cast<size_t>(in.gcount()));
    if (!in) break;
  }
  if (in.bad()) return std::nullopt;
  return out;
}

}  // namespace

absl::StatusOr<std::optional<CpuQuota>> ReadCpuQuota(int64_t pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/cgroup");
  const std::optional<std::string> cgroup = pid > 0 ? ReadSmallFile(path) : std::nullopt;
  if (!cgroup) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  const std::optional<std::string> mountinfo = ReadSmallFile("/proc/self/mountinfo");
  if (!mountinfo) return absl::NotFoundError("cannot read /proc/self/mountinfo");
  return CpuQuotaFrom(*cgroup, *mountinfo, ReadSmallFile);
}

}  // namespace hotkey::shard
