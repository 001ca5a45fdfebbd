// BusyWindow: the shard's busy fraction over the rate window, from its answers.
//
// Each answer of the shard (shard/prober.h) gives the fraction of its CPU the shard used
// between its previous reading and this one (5 s apart by default). The load the advice
// starts from is their mean, weighted by the time each covers, over the answers that ended
// within the rate window: with the defaults (10 s window, 5 s answers) the last two, so a
// steady load reads the same from one answer to the next. A real change of load (a CPU
// quota, a new mix, a key turning hot) should not wait for the window to forget the old
// one, and one burst should not decide alone: an answer that differs from the mean of those
// kept by more than kLoadStep is averaged in, and if the next answer differs from that same
// mean by more than kLoadStep in the same direction, the window starts afresh with it. The
// first answer to differ may straddle the change; the second, wholly after it, is the load
// from then on. An answer back within kLoadStep of the mean was a burst.
// Settled(now) is false while an answer that departed and was not confirmed is within the
// window: the read is a burst, or half of a change, and a fix held on it waits. A change the
// daemon knows of (ChangeAt: a hot key's fix in force changed, so the kits took its load
// off the shard or spread it) needs no confirming: the first answer begun after it starts
// the window afresh.
// Over(since) reads only the answers whose interval began at or after `since`: a hot key's
// episode is advised on its own time, never on the quiet before its onset.
//
// At most kMaxSamples answers are kept (an interval shorter than window / kMaxSamples keeps
// the newest only), so the memory is fixed.
//
// Times are readings of the daemon's monotonic clock; tests use a fake one.
// Thread-compatible: the aggregator calls it from one thread.

#ifndef HOTKEY_AGGREGATE_BUSY_WINDOW_H_
#define HOTKEY_AGGREGATE_BUSY_WINDOW_H_

#include <algorithm>
#include <cstddef>
#include <deque>
#include <optional>

#include "absl/time/time.h"

namespace hotkey::aggregate {

class BusyWindow {
 public:
  // A tenth of a CPU: more than a steady shard's answers differ by (the CPU clock's ticks
  // and the load's own jitter), less than a change the advice must follow.
  static constexpr double kLoadStep = 0.1;
  static constexpr size_t kMaxSamples = 64;

  struct Sample {
    absl::Time start;  // the interval the shard's answer covers
    absl::Time end;
    double busy = 0;
  };

  explicit BusyWindow(absl::Duration window) : window_(window) {}
  void SetWindow(absl::Duration window) { window_ = window; }

  // Keeps a new answer. One with end <= start, or a busy fraction that is negative or not
  // finite, is ignored (the prober's figures are checked before they come here).
  void Add(const Sample& s);
  // The mean busy fraction over the answers that ended within the window before `now` and
  // began at or after `since`, with the span they cover (start of the oldest, end of the
  // newest); nullopt when there is none.
  std::optional<Sample> Over(absl::Time now, absl::Time since = absl::InfinitePast()) const;
  void Clear() {
    samples_.clear();
    departed_ = 0;
  }
  // The shard's load changed at `at`: the first answer begun at or after it starts the
  // window afresh, settled, whatever the answers before it read.
  void ChangeAt(absl::Time at) { change_at_ = std::max(change_at_, at); }
  // No answer within the window before `now` departed without being confirmed.
  bool Settled(absl::Time now) const;
  size_t size() const { return samples_.size(); }

 private:
  struct Kept {
    Sample sample;
    bool departed = false;  // it differed from the load before it by more than kLoadStep
  };
  absl::Duration window_;
  std::deque<Kept> samples_;  // oldest first
  // The direction (+1 or -1) in which the last answer differed by more than kLoadStep from
  // the mean before it (`reference_`); 0 when it did not.
  int departed_ = 0;
  double reference_ = 0;
  absl::Time change_at_ = absl::InfinitePast();  // the last ChangeAt()
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_BUSY_WINDOW_H_
