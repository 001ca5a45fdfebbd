// SteadyClock(): Clock over std::chrono::steady_clock.

#include "hotkey/loadgen/clock.h"

#include <chrono>
#include <thread>

namespace hotkey::loadgen {
namespace {

class SteadyClockImpl final : public Clock {
 public:
  absl::Duration Now() override {
    return absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
  }
  void SleepFor(absl::Duration d) override {
    if (d > absl::ZeroDuration()) std::this_thread::sleep_for(absl::ToChronoNanoseconds(d));
  }
};

}  // namespace

Clock& SteadyClock() {
  static SteadyClockImpl clock;  // stateless, so a function-local static is harmless
  return clock;
}

}  // namespace hotkey::loadgen
