// FakeClock: a hotkey::clock::Clock for tests that moves only when told to, or when code
// under test sleeps on it: SleepFor() advances time at once, so a paced Sender, Replayer
// or demo source runs its whole schedule instantly and exactly.

#ifndef HOTKEY_TESTS_LIB_FAKE_CLOCK_H_
#define HOTKEY_TESTS_LIB_FAKE_CLOCK_H_

#include <atomic>
#include <cstdint>

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

  void Advance(absl::Duration d) { nanos_ += absl::ToInt64Nanoseconds(d); }
  void Set(absl::Time t) { nanos_ = absl::ToUnixNanos(t); }
  // How many times SleepFor() was called.
  int sleeps() const { return sleeps_.load(); }

 private:
  mutable std::atomic<int64_t> nanos_;
  mutable std::atomic<int> sleeps_{0};
};

}  // namespace hotkey::testing

#endif  // HOTKEY_TESTS_LIB_FAKE_CLOCK_H_
