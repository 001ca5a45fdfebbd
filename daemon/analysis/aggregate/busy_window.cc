#include "hotkey/aggregate/busy_window.h"

#include <cmath>

namespace hotkey::aggregate {

void BusyWindow::Add(const Sample& s) {
  if (!(s.end > s.start) || !std::isfinite(s.busy) || s.busy < 0) return;
  while (!samples_.empty() && samples_.front().end <= s.end - window_) samples_.pop_front();
  if (std::optional<Sample> mean = Over(s.end); mean && std::abs(s.busy - mean->busy) > kLoadStep) {
    samples_.clear();
  }
  if (samples_.size() == kMaxSamples) samples_.pop_front();
  samples_.push_back(s);
}

std::optional<BusyWindow::Sample> BusyWindow::Over(absl::Time now, absl::Time since) const {
  double weighted = 0;
  double seconds = 0;
  std::optional<Sample> out;
  for (const Sample& s : samples_) {
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

}  // namespace hotkey::aggregate
