// Clock: where hotkeyd and its tools read the time and wait, so tests drive decay,
// publishing, alert dwell times and load pacing deterministically on a fake clock
// (Envoy's TimeSource pattern). Header-only. A component is given the clock it reads,
// never reads a global one behind its caller's back; the exceptions are named where they
// are: Asio timers (the HTTP server's deadlines) run on std::chrono::steady_clock, and
// http::HttpServer, which does not link this library, takes its password backoff's clock
// as a function (HttpServer::NowFunction) that defaults to the steady clock.
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
// advances time at once and whose WaitUntil() returns when the test advances it.
//
// Waiting: a thread that must wake at a time on a clock, or earlier when told (a periodic
// job, a paced source), calls WaitUntil(deadline, waker); another thread's
// waker.Notify() ends the wait early. Every periodic job of the daemon waits so
// (ticker.h), so a test on a FakeClock fires each of them exactly when it advances time.

#ifndef HOTKEY_CLOCK_CLOCK_H_
#define HOTKEY_CLOCK_CLOCK_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace hotkey::clock {

// Ends a thread's Clock::WaitUntil early: to stop it, or to hand it work. A Notify() while
// no one waits is kept, and the next wait returns at once, so a notification is never lost
// between a waiter's check of its work and its wait. One waiter at a time. Thread-safe.
class Waker {
 public:
  void Notify() {
    {
      std::lock_guard<std::mutex> l(mu_);
      notified_ = true;
    }
    cv_.notify_all();
  }

  // For Clock implementations. Blocks until Notify() (returns false, and the notification
  // is used up), `ready()` holds (true), or the steady clock passes `limit` (true).
  // `ready()` is called with the waker's lock held.
  template <typename Ready>
  bool Wait(Ready ready, std::chrono::steady_clock::time_point limit) {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      if (notified_) {
        notified_ = false;
        return false;
      }
      if (ready()) return true;
      if (limit == std::chrono::steady_clock::time_point::max()) {
        cv_.wait(l);  // (wait_until on max() overflows in some standard libraries)
      } else if (cv_.wait_until(l, limit) == std::cv_status::timeout && !notified_) {
        return true;
      }
    }
  }
  // For Clock implementations whose time moves by command (FakeClock): has the waiter look
  // at `ready()` again.
  void Poke() {
    std::lock_guard<std::mutex> l(mu_);
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;  // guarded by mu_
};

// Implementations are thread-safe: one clock is read from many threads at once.
class Clock {
 public:
  virtual ~Clock() = default;
  // The present time on this clock.
  virtual absl::Time Now() const = 0;
  // Blocks for about `d` (d <= 0 returns at once). Callers re-read Now() afterwards rather
  // than assume the wait was exact.
  virtual void SleepFor(absl::Duration d) const = 0;
  // Blocks until Now() >= deadline (returns true) or `waker` is notified (false). This
  // implementation, for clocks that move by themselves, sleeps on the steady clock for
  // the time left and re-reads Now() (a wall clock may have stepped meanwhile).
  virtual bool WaitUntil(absl::Time deadline, Waker& waker) const {
    for (;;) {
      const absl::Duration left = deadline - Now();
      if (left <= absl::ZeroDuration()) return true;
      const auto limit = std::chrono::steady_clock::now() +
                         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                             absl::ToChronoNanoseconds(std::min(left, absl::Hours(24))));
      if (!waker.Wait([] { return false; }, limit)) return false;
    }
  }
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
