// Ticker: runs periodic jobs on one thread of its own, timed by an injected Clock
// (clock.h), so that a test on a FakeClock fires each job exactly when it advances time.
// The daemon's publish tick, its storage interval and its file polls all run on one.
//
// Schedule: a job added with interval p runs at origin + k * p (k = 1, 2, ...) on the
// clock, each time with the clock's reading then. A clock that jumps past several of its
// times (a stalled thread, a test's Advance) runs the job once, and the schedule goes on
// from the next time after the reading: jobs never pile up. Jobs run one after another,
// on the ticker's thread: each must be short (post work elsewhere and return).
//
// Thread-safe: Every() before Start(); Start() once; Stop() from any thread but a job's.

#ifndef HOTKEY_CLOCK_TICKER_H_
#define HOTKEY_CLOCK_TICKER_H_

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "hotkey/clock/clock.h"

namespace hotkey::clock {

class Ticker {
 public:
  // Called with the clock's reading when the job runs.
  using Job = std::function<void(absl::Time now)>;

  // `clock` must outlive the ticker.
  explicit Ticker(const Clock& clock) : clock_(clock) {}
  ~Ticker() { Stop(); }
  Ticker(const Ticker&) = delete;
  Ticker& operator=(const Ticker&) = delete;

  // Runs `job` every `interval` (> 0) from Start()'s origin. Only before Start().
  void Every(absl::Duration interval, Job job);
  // Starts the thread; the first times fall one interval after `origin`.
  void Start(absl::Time origin);
  // Returns once the thread has left (a job running then finishes first); no job runs
  // afterwards. Idempotent.
  void Stop();

 private:
  struct Entry {
    absl::Duration interval;
    Job job;
    absl::Time next;
  };
  void Loop();

  const Clock& clock_;
  std::vector<Entry> entries_;  // fixed once started; the thread's afterwards
  Waker waker_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace hotkey::clock

#endif  // HOTKEY_CLOCK_TICKER_H_
