// FakeClock: a loadgen::Clock for tests whose SleepFor() advances time at once, so a
// paced Sender or Replayer runs its whole schedule instantly and exactly.

#ifndef HOTKEY_TESTS_TOOLS_FAKE_CLOCK_H_
#define HOTKEY_TESTS_TOOLS_FAKE_CLOCK_H_

#include "hotkey/loadgen/clock.h"

namespace hotkey::testing {

// Thread-compatible (used by the one thread running the code under test).
class FakeClock final : public loadgen::Clock {
 public:
  absl::Duration Now() override { return now_; }
  void SleepFor(absl::Duration d) override {
    if (d > absl::ZeroDuration()) now_ += d;
    ++sleeps_;
  }
  int sleeps() const { return sleeps_; }

 private:
  absl::Duration now_ = absl::Seconds(1000);  // a non-zero origin, as a real clock has
  int sleeps_ = 0;
};

}  // namespace hotkey::testing

#endif  // HOTKEY_TESTS_TOOLS_FAKE_CLOCK_H_
