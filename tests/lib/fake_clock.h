// FakeClock: a hotkey::clock::Clock for tests that moves only when told to, or when code
// under test sleeps on it: SleepFor() advances time at once, so a paced Sender or Replayer
// runs its whole schedule instantly and exactly. WaitUntil() does not move it: it returns
// when the test's Advance() or Set() reaches the deadline (or on the waker), so the
// daemon's periodic jobs (clock/ticker.h) and the demo source's pacing run exactly when
// the test says.

#ifndef HOTKEY_TESTS_LIB_FAKE_CLOCK_H_
#define HOTKEY_TESTS_LIB_FAKE_CLOCK_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "absl/time/time.h"
#include "hotkey/clock/clock.h"

namespace hotkey::testing {

// Thread-safe: one thread may advance it while others read it.
class FakeClock final : public clock::Clock {
 public:
  // A non-zero origin, as a real clock has.
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000))
      : nanos_(absl::ToUnixNanos(start)) {}

  absl::Time Now() const override { return absl::FromUnixNanos(nanos_.load()); }
  void SleepFor(absl::Duration d) const override {
    if (d > absl::ZeroDuration()) nanos_ += absl::ToInt64Nanoseconds(d);
    ++sleeps_;
  }

  bool WaitUntil(absl::Time deadline, clock::Waker& waker) const override {
    {
      std::lock_guard<std::mutex> l(mu_);
      waiters_.push_back(&waker);
    }
    const bool reached =
        waker.Wait([&] { return Now() >= deadline; }, std::chrono::steady_clock::time_point::max());
    std::lock_guard<std::mutex> l(mu_);
    waiters_.erase(std::find(waiters_.begin(), waiters_.end(), &waker));
    return reached;
  }

  void Advance(absl::Duration d) {
    nanos_ += absl::ToInt64Nanoseconds(d);
    PokeWaiters();
  }
  void Set(absl::Time t) {
    nanos_ = absl::ToUnixNanos(t);
    PokeWaiters();
  }
  // How many times SleepFor() was called.
  int sleeps() const { return sleeps_.load(); }
  // How many threads wait in WaitUntil() now.
  size_t waiters() const {
    std::lock_guard<std::mutex> l(mu_);
    return waiters_.size();
  }

 private:
  void PokeWaiters() {
    std::lock_guard<std::mutex> l(mu_);
    for (clock::Waker* w : waiters_) w->Poke();
  }

  mutable std::atomic<int64_t> nanos_;
  mutable std::atomic<int> sleeps_{0};
  mutable std::mutex mu_;
  mutable std::vector<clock::Waker*> waiters_;  // guarded by mu_
};

}  // namespace hotkey::testing

#endif  // HOTKEY_TESTS_LIB_FAKE_CLOCK_H_
