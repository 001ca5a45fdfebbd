// Clock: where the daemon reads the time, so tests can drive decay, publishing and alert
// dwell times deterministically (Envoy's TimeSource pattern).

#ifndef HOTKEY_DAEMON_CLOCK_H_
#define HOTKEY_DAEMON_CLOCK_H_

#include <atomic>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace hotkey::daemon {

// Thread-safe: implementations may be read from any thread.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() const = 0;
};

class RealClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

// A clock that moves only when told to. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000))
      : nanos_(absl::ToUnixNanos(start)) {}
  absl::Time Now() const override { return absl::FromUnixNanos(nanos_.load()); }
  void Advance(absl::Duration d) { nanos_ += absl::ToInt64Nanoseconds(d); }
  void Set(absl::Time t) { nanos_ = absl::ToUnixNanos(t); }

 private:
  std::atomic<int64_t> nanos_;
};

}  // namespace hotkey::daemon

#endif  // HOTKEY_DAEMON_CLOCK_H_
