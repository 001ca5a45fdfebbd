// Clock: the monotonic time source the load generators pace themselves by.
//
// Sender and Replayer read time only through this interface, so tests drive them with a
// fake clock whose SleepFor() advances time instantly and whose schedule is exact. The
// real one is SteadyClock(): std::chrono::steady_clock, immune to wall-clock jumps.

#ifndef HOTKEY_LOADGEN_CLOCK_H_
#define HOTKEY_LOADGEN_CLOCK_H_

#include "absl/time/time.h"

namespace hotkey::loadgen {

// Implementations must be safe to call from the one thread that runs a Sender/Replayer.
class Clock {
 public:
  virtual ~Clock() = default;
  // Time since an arbitrary fixed origin; never decreases.
  virtual absl::Duration Now() = 0;
  // Blocks for about `d` (d <= 0 returns at once). Callers re-read Now() afterwards rather
  // than assume the sleep was exact.
  virtual void SleepFor(absl::Duration d) = 0;
};

// The process-wide steady clock. Thread-safe (stateless).
Clock& SteadyClock();

}  // namespace hotkey::loadgen

#endif  // HOTKEY_LOADGEN_CLOCK_H_
