#include "hotkey/clock/ticker.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace hotkey::clock {

void Ticker::Every(absl::Duration interval, Job job) {
  assert(!thread_.joinable() && interval > absl::ZeroDuration());
  entries_.push_back(Entry{interval, std::move(job), absl::InfinitePast()});
}

void Ticker::Start(absl::Time origin) {
  assert(!thread_.joinable());
  for (Entry& e : entries_) e.next = origin + e.interval;
  thread_ = std::thread([this] { Loop(); });
}

void Ticker::Stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  waker_.Notify();
  thread_.join();
}

void Ticker::Loop() {
  while (!stopping_.load()) {
    absl::Time next = absl::InfiniteFuture();
    for (const Entry& e : entries_) next = std::min(next, e.next);
    if (!clock_.WaitUntil(next, waker_)) continue;  // woken: look at stopping_ again
    const absl::Time now = clock_.Now();
    for (Entry& e : entries_) {
      if (now < e.next || stopping_.load()) continue;
      e.job(now);
      // The next time after `now` on the schedule: a jump of several intervals runs the
      // job once.
      e.next += e.interval * (1 + (now - e.next) / e.interval);
    }
  }
}

}  // namespace hotkey::clock
