#include "hotkey/aggregate/busy_window.h"

#include <cmath>

namespace hotkey::aggregate {

void BusyWindow::Add(const Sample& s) {
  if (!(s.end > s.start) || !std::isfinite(s.busy) || s.busy < 0) return;
  while (!samples_.empty() && samples_.front().sample.end <= s.end - window_) samples_.pop_front();
  if (!samples_.empty() && s.start >= change_at_ && samples_.back().sample.start < change_at_) {
    samples_.clear();  // the first answer after a known change: the load from then on
  }
  if (samples_.empty()) departed_ = 0;  // nothing left to have departed from
  // An answer that departed waits for the next: both are judged against the load before it.
  std::optional<double> reference;
  if (departed_ != 0) {
    reference = reference_;
  } else if (std::optional<Sample> mean = Over(s.end)) {
    reference = mean->busy;
  }
  int departs = 0;
  if (reference && std::abs(s.busy - *reference) > kLoadStep) {
    departs = s.busy > *reference ? 1 : -1;
  }
  if (departs != 0 && departs == departed_) {
    samples_.clear();
    departs = 0;  // the next answer is judged against the new window
  }
  departed_ = departs;
  if (departs != 0) reference_ = *reference;
  if (samples_.size() == kMaxSamples) samples_.pop_front();
  samples_.push_back({s, departs != 0});
}

std::optional<BusyWindow::Sample> BusyWindow::Over(absl::Time now, absl::Time since) const {
  double weighted = 0;
  double seconds = 0;
  std::optional<Sample> out;
  for (const Kept& k : samples_) {
    const Sample& s = k.sample;
    if (s.end <= now - window_ || s.end > now || s.start < since) continue;
    const double span = absl::ToDoubleSeconds(s.end - s.start);
    weighted += s.busy * span;
    seconds += span;
    if (!out) out = Sample{s.start, s.end, 0};
    out->end = s.end;
  }
  if (out) out->busy = weighted / seconds;
  return out;
}

bool BusyWindow::Settled(absl::Time now) const {
  for (const Kept& k : samples_) {
    if (k.departed && k.sample.end > now - window_ && k.sample.end <= now) return false;
  }
  return true;
}

}  // namespace hotkey::aggregate
