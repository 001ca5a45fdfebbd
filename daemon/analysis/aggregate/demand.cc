// The demand kits absorb, as they report it; see demand.h.

#include "hotkey/aggregate/demand.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/string_view.h"

namespace hotkey::aggregate {

namespace {

constexpr absl::Duration kBucket = absl::Seconds(1);
// How often a kit reports (docs/feed.md): the time since the last report is covered by the
// next one, so it counts only once it is longer than this.
constexpr absl::Duration kReportPeriod = absl::Seconds(1);

int64_t SecondOf(absl::Time t) {
  absl::Duration rest;  // IDivDuration writes it: it may not be null
  return absl::IDivDuration(absl::Floor(t - absl::UnixEpoch(), kBucket), kBucket, &rest);
}

}  // namespace

DemandLedger::DemandLedger(absl::Duration window, size_t max_keys)
    : window_(window),
      max_keys_(max_keys),
      // A report kept for `window` may sit in the bucket of the second before the window's
      // first, and the newest second has its own.
      buckets_(static_cast<size_t>(std::ceil(absl::FDivDuration(window, kBucket))) + 2) {}

bool DemandLedger::Add(absl::Time now, std::string_view key, double reads, double writes,
                       absl::Duration interval) {
  auto it = keys_.find(absl::string_view(key.data(), key.size()));
  if (it == keys_.end()) {
    if (keys_.size() >= max_keys_) return false;
    it = keys_.emplace(std::string(key), Entry{std::vector<Bucket>(buckets_)}).first;
  }
  const int64_t second = SecondOf(now);
  Bucket& b = it->second.buckets[static_cast<size_t>(second) % buckets_];
  if (b.second != second) b = Bucket{second, now, now, now - interval, {0, 0}};
  b.last_arrival = now;
  b.first_covered = std::min(b.first_covered, now - interval);
  b.counts[0] += reads;
  b.counts[1] += writes;
  return true;
}

std::optional<DemandLedger::Absorbed> DemandLedger::Over(std::string_view key, absl::Time since,
                                                         absl::Time now) const {
  const auto it = keys_.find(absl::string_view(key.data(), key.size()));
  if (it == keys_.end()) return std::nullopt;
  since = std::max(since, now - window_);
  double counts[sketch::kNumOps] = {0, 0};
  absl::Time covered = absl::InfiniteFuture();
  absl::Time last = absl::InfinitePast();
  for (const Bucket& b : it->second.buckets) {
    if (b.second < 0 || b.first_arrival <= since || b.first_arrival > now) continue;
    covered = std::min(covered, b.first_covered);
    last = std::max(last, b.last_arrival);
    counts[0] += b.counts[0];
    counts[1] += b.counts[1];
  }
  if (covered == absl::InfiniteFuture()) return std::nullopt;
  const double span = absl::ToDoubleSeconds(std::max(last, now - kReportPeriod) - covered);
  Absorbed a;
  if (span <= 0) return a;
  for (int o = 0; o < sketch::kNumOps; ++o) a.ops_per_second[o] = counts[o] / span;
  return a;
}

void DemandLedger::Expire(absl::Time now) {
  for (auto it = keys_.begin(); it != keys_.end();) {
    bool any = false;
    for (Bucket& b : it->second.buckets) {
      if (b.second < 0) continue;
      if (b.first_arrival < now - window_) {
        b.second = -1;
      } else {
        any = true;
      }
    }
    if (any) {
      ++it;
    } else {
      keys_.erase(it++);
    }
  }
}

void DemandLedger::ForEachKey(const std::function<void(const std::string& key)>& fn) const {
  for (const auto& [key, entry] : keys_) fn(key);
}

size_t DemandLedger::MemoryBound(size_t max_key_bytes) const {
  // A flat_hash_map slot holds the key's std::string and the Entry, plus a control byte;
  // at its maximum load of 7/8 it holds 8/7 slots per key.
  const size_t slot = sizeof(std::string) + sizeof(Entry) + 1;
  return max_keys_ * (slot * 8 / 7 + 1 + max_key_bytes + 1 + buckets_ * sizeof(Bucket));
}

}  // namespace hotkey::aggregate
