#include "alerter.h"

#include "absl/strings/str_format.h"

namespace hotkey::daemon {

namespace {
// logfmt value: quoted, with quotes and backslashes escaped. Labels are already valid
// UTF-8 without control characters (key_label.h).
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}
}  // namespace

Alerter::Alerter(const config::AlertOptions& options, LogSink log)
    : options_(options), log_(std::move(log)) {}

void Alerter::Begin(absl::Time now, double shard_ops_per_second) {
  now_ = now;
  idle_ = shard_ops_per_second <= 0 || shard_ops_per_second < options_.min_ops_per_second;
  ++tick_;
}

bool Alerter::Observe(uint64_t id, double share, double threshold, std::string_view label,
                      std::string_view strategy) {
  return Observe(
      id, share, threshold, [label] { return std::string(label); }, strategy);
}

bool Alerter::Observe(uint64_t id, double share, double threshold,
                      absl::FunctionRef<std::string()> label, std::string_view strategy) {
  auto it = keys_.find(id);
  const bool over = !idle_ && share > threshold;
  if (it == keys_.end()) {
    if (!over) return false;
    it = keys_.emplace(id, Entry{}).first;
  }
  Entry& e = it->second;
  e.seen_tick = tick_;
  KeyState& s = e.state;
  s.label = label();
  s.strategy = std::string(strategy);
  if (s.hot) {
    s.peak_share = std::max(s.peak_share, share);
    const bool cooled = idle_ || share < threshold * (1 - options_.hysteresis);
    if (!cooled) return true;
    Log(/*start=*/false, s, share, threshold);
    keys_.erase(it);
    return false;
  }
  if (!over) {
    keys_.erase(it);  // fell back before the dwell passed: no episode
    return false;
  }
  if (s.over_since == absl::InfiniteFuture()) s.over_since = now_;
  s.peak_share = std::max(s.peak_share, share);
  if (now_ - s.over_since >= options_.min_dwell) {
    s.hot = true;
    s.hot_since = now_;
    Log(/*start=*/true, s, share, threshold);
  }
  return s.hot;
}

void Alerter::Finish() {
  for (auto it = keys_.begin(); it != keys_.end();) {
    auto cur = it++;
    if (cur->second.seen_tick == tick_) continue;
    if (cur->second.state.hot) Log(/*start=*/false, cur->second.state, 0, 0);
    keys_.erase(cur);
  }
}

const Alerter::KeyState* Alerter::Find(uint64_t id) const {
  auto it = keys_.find(id);
  return it == keys_.end() ? nullptr : &it->second.state;
}

size_t Alerter::hot_count() const {
  size_t n = 0;
  for (const auto& [id, e] : keys_) n += e.state.hot;
  return n;
}

void Alerter::Log(bool start, const KeyState& s, double share, double threshold) {
  if (!log_) return;
  const std::string_view msg = start ? "hot key episode started" : "hot key episode ended";
  std::string line =
      absl::StrFormat("ts=%s level=%s msg=%s key=%s share=%.4f peak_share=%.4f",
                      absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", now_, absl::UTCTimeZone()),
                      start ? "warn" : "info", Quote(msg), Quote(s.label), share, s.peak_share);
  if (threshold > 0) absl::StrAppendFormat(&line, " threshold=%.4f", threshold);
  if (!s.strategy.empty()) absl::StrAppendFormat(&line, " strategy=%s", s.strategy);
  if (!start) {
    absl::StrAppendFormat(&line, " duration=%s", absl::FormatDuration(now_ - s.hot_since));
  }
  log_(line);
}

}  // namespace hotkey::daemon
