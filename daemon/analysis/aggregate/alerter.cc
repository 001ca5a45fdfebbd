#include "hotkey/aggregate/alerter.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hotkey/log/log.h"

namespace hotkey::aggregate {

Alerter::Alerter(const config::AlertOptions& options, LogSink log, std::string subject)
    : options_(options),
      log_(std::move(log)),
      subject_(std::move(subject)),
      started_msg_(absl::StrCat("hot ", subject_, " episode started")),
      ended_msg_(absl::StrCat("hot ", subject_, " episode ended")) {}

void Alerter::Begin(absl::Time now, double shard_ops_per_second, absl::Time wall) {
  now_ = now;
  wall_ = wall;
  idle_ = shard_ops_per_second <= 0 || shard_ops_per_second < options_.min_ops_per_second;
  ++tick_;
}

bool Alerter::Observe(uint64_t id, double share, double threshold, std::string_view label,
                      std::string_view strategy, absl::Duration cool_grace) {
  return Observe(
      id, share, threshold, [label] { return std::string(label); }, strategy, cool_grace);
}

bool Alerter::Observe(uint64_t id, double share, double threshold,
                      absl::FunctionRef<std::string()> label, std::string_view strategy,
                      absl::Duration cool_grace) {
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
  // The last fix advised: a cooling key is no longer advised on (its share is under the
  // line), and its episode's end names the fix it had.
  if (!strategy.empty()) s.strategy = std::string(strategy);
  if (s.hot) {
    s.peak_share = std::max(s.peak_share, share);
    if (!idle_ && share >= threshold * (1 - options_.hysteresis)) {
      s.under_since = absl::InfiniteFuture();
      return true;
    }
    if (!idle_) {
      if (s.under_since == absl::InfiniteFuture()) s.under_since = now_;
      if (now_ - s.under_since < cool_grace) return true;
    }
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
    ++started_;
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

void Alerter::NoteFix(uint64_t id, std::string_view strategy) {
  if (auto it = keys_.find(id); it != keys_.end())
    it->second.state.strategy = std::string(strategy);
}

void Alerter::NoteInForce(uint64_t id, std::string_view strategy) {
  if (strategy.empty()) return;
  auto it = keys_.find(id);
  if (it == keys_.end() || it->second.state.in_force == strategy) return;
  KeyState& s = it->second.state;
  s.in_force.assign(strategy);
  // A fix noted while the key is pending was in force before its episode (a pin, or the
  // last episode's fix still held): its onset is the change of load, not this.
  if (s.hot) ++fixes_changed_;
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
  const std::string_view msg = start ? started_msg_ : ended_msg_;
  log::LogLine line(wall_, start ? "warn" : "info", msg);
  line.Quoted(subject_, s.label)
      .Value("share", absl::StrFormat("%.4f", share))
      .Value("peak_share", absl::StrFormat("%.4f", s.peak_share));
  if (threshold > 0) line.Value("threshold", absl::StrFormat("%.4f", threshold));
  if (!s.strategy.empty()) line.Value("strategy", s.strategy);
  if (!s.in_force.empty()) line.Value("in_force", s.in_force);
  if (!start) line.Value("duration", absl::FormatDuration(now_ - s.hot_since));
  log_(line.text());
}

}  // namespace hotkey::aggregate
