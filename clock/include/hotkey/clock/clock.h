// Clock: where hotkeyd and its tools read the time and wait, so tests drive decay,
// publishing, alert dwell times and load pacing deterministically on a fake clock
// (Envoy's TimeSource pattern). Header-only; no global clock is ever read behind a
// component's back.
//
// Two real clocks, for two jobs:
//   SteadyClock  std::chrono::steady_clock, immune to wall-clock steps: every duration
//                (tracker decay, rate windows, alert dwell, publish and poll ticks, the load
//                generators' pacing). Its Now() is a point on an arbitrary fixed origin,
//                meaningful only as a difference of two readings.
//   RealClock    wall time (absl::Now()): only to stamp output (the snapshot's time, log
//                lines, success timestamps, the state file's save time), never to measure
//                a duration, since NTP or an operator may step it.
// Tests use hotkey::testing::FakeClock (tests/lib/fake_clock.h), whose SleepFor()
// advances time at once.

#ifndef HOTKEY_CLOCK_CLOCK_H_
#define HOTKEY_CLOCK_CLOCK_H_

#include <chrono>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace hotkey::clock {

// Implementations are thread-safe: one clock is read from many threads at once.
class Clock {
 public:
  virtual ~Clock() = default;
  // The present time on this clock.
  virtual absl::Time Now() const = 0;
  // Blocks for about `d` (d <= 0 returns at once). Callers re-read Now() afterwards rather
  // than assume the wait was exact.
  virtual void SleepFor(absl::Duration d) const = 0;
};

// Wall time. Thread-safe (stateless).
class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
  void SleepFor(absl::Duration d) const override {
    if (d > absl::ZeroDuration()) absl::SleepFor(d);
  }
};

// Monotonic time from an arbitrary origin. Thread-safe (stateless).
class SteadyClock final : public Clock {
 public:
  // One shared instance (stateless, so sharing it is harmless): the load generators'
  // default clock.
  static const SteadyClock& Get() {
    static const SteadyClock clock;
    return clock;
  }
  absl::Time Now() const override {
    return absl::UnixEpoch() +
           absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
  }
  void SleepFor(absl::Duration d) const override {
    if (d > absl::ZeroDuration()) absl::SleepFor(d);
  }
};

}  // namespace hotkey::clock

#endif  // HOTKEY_CLOCK_CLOCK_H_
