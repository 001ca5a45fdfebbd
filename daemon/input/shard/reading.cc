#include "hotkey/shard/reading.h"

#include <charconv>
#include <cmath>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hotkey::shard {

namespace {

// name -> value of the "<prefix>name<sep>value" lines before END; at most kMaxFields.
constexpr size_t kMaxFields = 4096;

absl::StatusOr<std::map<std::string, std::string, std::less<>>> Fields(std::string_view text,
                                                                       std::string_view prefix,
                                                                       char sep) {
  std::map<std::string, std::string, std::less<>> out;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.starts_with("#")) continue;
    if (line == "END") break;
    if (!line.starts_with(prefix)) continue;
    line.remove_prefix(prefix.size());
    const size_t at = line.find(sep);
    if (at == std::string_view::npos || at == 0) continue;
    if (out.size() == kMaxFields) return absl::InvalidArgumentError("too many fields");
    out.emplace(std::string(line.substr(0, at)), std::string(line.substr(at + 1)));
  }
  return out;
}

template <typename T>
bool Number(const std::map<std::string, std::string, std::less<>>& f, std::string_view name,
            T* out) {
  auto it = f.find(name);
  if (it == f.end()) return false;
  const std::string& s = it->second;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(*out) || *out < 0) return false;
  }
  return ec == std::errc() && end == s.data() + s.size();
}

absl::Status Missing(std::string_view what, std::string_view name) {
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(what), ": no valid ", std::string(name)));
}

}  // namespace

absl::StatusOr<Reading> ParseRedisInfo(std::string_view text) {
  absl::StatusOr<std::map<std::string, std::string, std::less<>>> f = Fields(text, "", ':');
  if (!f.ok()) return absl::InvalidArgumentError(absl::StrCat("INFO: ", f.status().message()));
  Reading r;
  auto version = f->find("redis_version");
  if (version == f->end()) return Missing("INFO", "redis_version");
  r.server = absl::StrCat("redis ", version->second);
  if (!Number(*f, "total_commands_processed", &r.commands)) {
    return Missing("INFO", "total_commands_processed");
  }
  double sys = 0, user = 0;
  if (Number(*f, "used_cpu_sys_main_thread", &sys) &&
      Number(*f, "used_cpu_user_main_thread", &user)) {
    r.cpu_seconds = sys + user;
  } else if (Number(*f, "used_cpu_sys", &sys) && Number(*f, "used_cpu_user", &user)) {
    r.cpu_seconds = sys + user;
  } else {
    return Missing("INFO", "used_cpu_sys and used_cpu_user");
  }
  // Each is finite; their sum may not be (two values near DBL_MAX), and an infinite CPU time
  // would make LoadBetween's busy NaN.
  if (!std::isfinite(r.cpu_seconds)) return Missing("INFO", "used_cpu_sys and used_cpu_user");
  if (!Number(*f, "process_id", &r.pid)) r.pid = 0;
  if (int64_t us = 0; Number(*f, "server_time_usec", &us)) r.server_time = absl::FromUnixMicros(us);
  int cluster = 0;
  r.cluster_mode = Number(*f, "cluster_enabled", &cluster) && cluster == 1;
  if (auto role = f->find("role"); role != f->end()) {
    r.role = role->second == "master"  ? Role::kPrimary
             : role->second == "slave" ? Role::kReplica
                                       : Role::kUnknown;
  }
  return r;
}

absl::StatusOr<Reading> ParseMemcachedStats(std::string_view text) {
  absl::StatusOr<std::map<std::string, std::string, std::less<>>> f = Fields(text, "STAT ", ' ');
  if (!f.ok()) return absl::InvalidArgumentError(absl::StrCat("stats: ", f.status().message()));
  Reading r;
  auto version = f->find("version");
  if (version == f->end()) return Missing("stats", "version");
  r.server = absl::StrCat("memcached ", version->second);
  double sys = 0, user = 0;
  if (!Number(*f, "rusage_system", &sys) || !Number(*f, "rusage_user", &user)) {
    return Missing("stats", "rusage_system and rusage_user");
  }
  r.cpu_seconds = sys + user;
  if (!std::isfinite(r.cpu_seconds)) return Missing("stats", "rusage_system and rusage_user");
  if (!Number(*f, "threads", &r.threads) || r.threads < 1) return Missing("stats", "threads");
  if (!Number(*f, "pid", &r.pid)) r.pid = 0;
  if (int64_t t = 0; Number(*f, "time", &t)) r.server_time = absl::FromUnixSeconds(t);
  // Key operations: retrievals count per key (cmd_get), storage and touch per command.
  for (std::string_view name : {"cmd_get", "cmd_set", "cmd_touch", "delete_hits", "delete_misses",
                                "incr_hits", "incr_misses", "decr_hits", "decr_misses"}) {
    uint64_t v = 0;
    if (!Number(*f, name, &v)) return Missing("stats", name);
    r.commands += v;
  }
  return r;
}

std::optional<Load> LoadBetween(const Reading& a, absl::Time ta, const Reading& b, absl::Time tb,
                                double cpus) {
  const double seconds = absl::ToDoubleSeconds(tb - ta);
  if (!(seconds > 0) || !(cpus > 0) || b.commands < a.commands || b.cpu_seconds < a.cpu_seconds ||
      a.server != b.server || a.pid != b.pid) {
    return std::nullopt;
  }
  Load l;
  l.ops_per_second = static_cast<double>(b.commands - a.commands) / seconds;
  l.busy = (b.cpu_seconds - a.cpu_seconds) / seconds / cpus;
  if (l.busy > 0) l.capacity_ops = l.ops_per_second / l.busy;
  return l;
}

absl::Status CheckLoad(const Load& load, double cpus) {
  if (load.busy <= kMaxBusy) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "the shard's CPU time grew %g s a second on %g CPUs (busy %g, at most %g is possible)",
      load.busy * cpus, cpus, load.busy, kMaxBusy));
}

}  // namespace hotkey::shard
