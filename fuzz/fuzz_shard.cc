// libFuzzer target: the parsers of daemon/input/shard/ over what a shard (or its host) says:
// Redis's INFO and memcached's stats (reading.h), the RESP2 and memcached reply framing (reply.h),
// and the cgroup files behind the CPU quota (cpu_quota.h).
//
// Input: byte 0 picks the parser (% 10, as in the switch below); byte 1 is its parameter (a
// byte cap, a time and CPU count, a terminal line); the rest is the text. Where a parser
// takes several texts they are the rest's '\0'-separated parts.
//
// Checked beyond "no crash, no sanitizer report":
// - a reading has a finite, non-negative cpu_seconds and at least one thread, and
//   LoadBetween over two parsed readings never gives a NaN or negative ops or busy, nor a NaN
//   or negative capacity, and gives one exactly when busy > 0; a reading against
//   itself gives zero load, and against a time not after its own none;
// - a framed reply lies within the buffer (size <= buffer size, its text inside the bytes
//   it takes), parses the same from exactly those bytes, and is not yet a reply one byte
//   short of them; a bulk string fits the cap; a memcached reply ends with its terminal line;
// - a quota is finite and positive and names a cpu.max or cpu.cfs_quota_us file; cgroup
//   paths start with '/'; a cgroup's directories start at the mount point, each shorter than
//   the one before, ending at the mount point itself.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "fuzz_util.h"
#include "hotkey/shard/cpu_quota.h"
#include "hotkey/shard/reading.h"
#include "hotkey/shard/reply.h"

namespace hotkey::fuzz {
namespace {

std::vector<std::string_view> Parts(std::string_view s) {
  std::vector<std::string_view> out;
  for (;;) {
    const size_t at = s.find('\0');
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

// `inner` lies within `outer` (an empty view may point anywhere).
bool Within(std::string_view inner, std::string_view outer) {
  return inner.empty() || (inner.data() >= outer.data() &&
                           inner.data() + inner.size() <= outer.data() + outer.size());
}

void CheckReading(const shard::Reading& r) {
  FUZZ_CHECK(std::isfinite(r.cpu_seconds) && r.cpu_seconds >= 0);
  FUZZ_CHECK(r.threads >= 1);
}

void CheckLoad(const std::optional<shard::Load>& l) {
  if (!l) return;
  FUZZ_CHECK(!std::isnan(l->ops_per_second) && l->ops_per_second >= 0);
  FUZZ_CHECK(!std::isnan(l->busy) && l->busy >= 0);
  FUZZ_CHECK(l->capacity_ops.has_value() == (l->busy > 0));
  if (l->capacity_ops) FUZZ_CHECK(!std::isnan(*l->capacity_ops) && *l->capacity_ops >= 0);
}

// Two readings from the first two parts (one part: read twice), then the load between them.
void Readings(std::string_view text, uint8_t param,
              absl::StatusOr<shard::Reading> (*parse)(std::string_view)) {
  const std::vector<std::string_view> parts = Parts(text);
  const absl::StatusOr<shard::Reading> a = parse(parts[0]);
  const absl::StatusOr<shard::Reading> b = parse(parts.size() > 1 ? parts[1] : parts[0]);
  if (a.ok()) CheckReading(*a);
  if (b.ok()) CheckReading(*b);
  if (!a.ok() || !b.ok()) return;
  const absl::Time ta = absl::FromUnixSeconds(1700000000);
  const absl::Time tb = ta + absl::Milliseconds(1 + (param & 0x0f) * 997);
  const double cpus = ((param >> 4) + 1) / 4.0;
  CheckLoad(shard::LoadBetween(*a, ta, *b, tb, cpus));
  const std::optional<shard::Load> same = shard::LoadBetween(*a, ta, *a, tb, cpus);
  FUZZ_CHECK(same && same->ops_per_second == 0 && same->busy == 0 && !same->capacity_ops);
  FUZZ_CHECK(!shard::LoadBetween(*a, ta, *b, ta, cpus));
  FUZZ_CHECK(!shard::LoadBetween(*a, tb, *b, ta, cpus));
}

// A reply framed from `buffer` again from its own bytes, and one byte short of them.
template <typename Parse>
void CheckReply(const absl::StatusOr<std::optional<shard::Reply>>& r, std::string_view buffer,
                const Parse& parse) {
  if (!r.ok() || !*r) return;
  const shard::Reply& reply = **r;
  FUZZ_CHECK(reply.size > 0 && reply.size <= buffer.size());
  const std::string_view taken = buffer.substr(0, reply.size);
  FUZZ_CHECK(Within(reply.text, taken));
  const absl::StatusOr<std::optional<shard::Reply>> again = parse(taken);
  FUZZ_CHECK(again.ok() && again->has_value());
  FUZZ_CHECK((*again)->kind == reply.kind && (*again)->size == reply.size &&
             (*again)->text.data() == reply.text.data() &&
             (*again)->text.size() == reply.text.size());
  const absl::StatusOr<std::optional<shard::Reply>> shorter =
      parse(buffer.substr(0, reply.size - 1));
  FUZZ_CHECK(!shorter.ok() || !shorter->has_value());
}

void RespReply(std::string_view buffer, uint8_t param) {
  const size_t cap = size_t{param} * 64;
  auto parse = [cap](std::string_view b) { return shard::ParseRespReply(b, cap); };
  const absl::StatusOr<std::optional<shard::Reply>> r = parse(buffer);
  CheckReply(r, buffer, parse);
  if (r.ok() && *r && (*r)->kind == shard::Reply::Kind::kBulk) FUZZ_CHECK((*r)->text.size() <= cap);
  if (r.ok() && !*r)
    FUZZ_CHECK(buffer.find("\r\n") != std::string_view::npos || buffer.size() <= cap);
}

void MemcachedReply(std::string_view buffer, uint8_t param) {
  const std::string_view terminal = param & 1 ? "STORED" : "END";
  const size_t cap = size_t{param} * 64;
  auto parse = [&](std::string_view b) { return shard::ParseMemcachedReply(b, terminal, cap); };
  const absl::StatusOr<std::optional<shard::Reply>> r = parse(buffer);
  CheckReply(r, buffer, parse);
  if (r.ok() && *r && (*r)->kind == shard::Reply::Kind::kBulk) {
    FUZZ_CHECK((*r)->text.data() == buffer.data());
    FUZZ_CHECK(buffer.substr((*r)->text.size(), (*r)->size - (*r)->text.size()) ==
               std::string(terminal) + "\r\n");
  }
  if (r.ok() && !*r) FUZZ_CHECK(buffer.size() <= cap);
}

void CheckQuota(const absl::StatusOr<std::optional<double>>& q) {
  if (q.ok() && *q) FUZZ_CHECK(std::isfinite(**q) && **q > 0);
}

void CheckDirs(const shard::CgroupMount& mount, std::string_view cgroup) {
  const std::vector<std::string> dirs = shard::CgroupDirs(mount, cgroup);
  for (size_t i = 0; i < dirs.size(); ++i) {
    FUZZ_CHECK(std::string_view(dirs[i]).starts_with(mount.point));
    if (i > 0) FUZZ_CHECK(dirs[i].size() < dirs[i - 1].size());
  }
  if (!dirs.empty()) FUZZ_CHECK(dirs.back() == mount.point);
}

void QuotaFrom(std::string_view text) {
  const std::vector<std::string_view> parts = Parts(text);
  if (parts.size() < 2) return;
  // The limit files' texts are the further parts, handed out in the order they are asked for.
  size_t next = 2;
  const shard::ReadFileFn read = [&](const std::string&) -> std::optional<std::string> {
    if (next >= parts.size()) return std::nullopt;
    return std::string(parts[next++]);
  };
  const absl::StatusOr<std::optional<shard::CpuQuota>> q =
      shard::CpuQuotaFrom(parts[0], parts[1], read);
  if (!q.ok() || !*q) return;
  FUZZ_CHECK(std::isfinite((*q)->cpus) && (*q)->cpus > 0);
  FUZZ_CHECK((*q)->file.ends_with("/cpu.max") || (*q)->file.ends_with("/cpu.cfs_quota_us"));
}

}  // namespace

int FuzzShard(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t param = data[1];
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  switch (data[0] % 10) {
    case 0:
      Readings(text, param, shard::ParseRedisInfo);
      break;
    case 1:
      Readings(text, param, shard::ParseMemcachedStats);
      break;
    case 2:
      RespReply(text, param);
      break;
    case 3:
      MemcachedReply(text, param);
      break;
    case 4:
      CheckQuota(shard::ParseCpuMax(text));
      break;
    case 5: {
      const std::vector<std::string_view> parts = Parts(text);
      CheckQuota(shard::ParseCfsQuota(parts[0], parts.size() > 1 ? parts[1] : ""));
      break;
    }
    case 6: {
      const absl::StatusOr<shard::CgroupPaths> p = shard::ParseProcCgroup(text);
      if (p.ok() && p->v2) FUZZ_CHECK(p->v2->starts_with("/") && text.find(*p->v2) != text.npos);
      if (p.ok() && p->v1_cpu) {
        FUZZ_CHECK(p->v1_cpu->starts_with("/") && text.find(*p->v1_cpu) != text.npos);
      }
      break;
    }
    case 7: {
      // mountinfo, then the directories of the second part's cgroup under its mounts.
      const std::vector<std::string_view> parts = Parts(text);
      const absl::StatusOr<shard::CgroupMounts> m = shard::ParseMountInfo(parts[0]);
      if (!m.ok()) break;
      for (const std::optional<shard::CgroupMount>& mount : {m->v2, m->v1_cpu}) {
        if (!mount) continue;
        FUZZ_CHECK(mount->root.size() <= parts[0].size() && mount->point.size() <= parts[0].size());
        CheckDirs(*mount, parts.size() > 1 ? parts[1] : "/");
      }
      break;
    }
    case 8:
      QuotaFrom(text);
      break;
    case 9: {
      // CgroupDirs alone: mount root, mount point, cgroup.
      const std::vector<std::string_view> parts = Parts(text);
      if (parts.size() < 3) break;
      CheckDirs(shard::CgroupMount{std::string(parts[0]), std::string(parts[1])}, parts[2]);
      break;
    }
  }
  return 0;
}

}  // namespace hotkey::fuzz

#ifndef HOTKEY_FUZZ_NO_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hotkey::fuzz::FuzzShard(data, size);
}
#endif
