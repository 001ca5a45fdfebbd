// AdviceHold: keeps each key's advised fix steady.
//
// The model's answer for a key can move with every tick's figures; an operator acting on
// it needs one answer. A key's first answer is taken at once; after that the held fix
// changes only when it has not been the model's answer at any tick for `dwell` (as an
// episode needs its share over the threshold for min_dwell), and then to the answer of
// that tick. So an answer that flickers back to the held fix within the dwell never
// replaces it, and a held fix that keeps losing goes even while the others take turns. A
// key not observed at a tick is forgotten, so the hold keeps at most the keys observed at
// one tick.
//
// Time is whatever the caller passes (monotonic readings); tests use a fake clock.
// Thread-compatible: the aggregator calls it from one thread.

#ifndef HOTKEY_AGGREGATE_ADVICE_HOLD_H_
#define HOTKEY_AGGREGATE_ADVICE_HOLD_H_

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "hotkey/model/shard_model.h"

namespace hotkey::aggregate {

class AdviceHold {
 public:
  explicit AdviceHold(absl::Duration dwell) : dwell_(dwell) {}

  void SetDwell(absl::Duration dwell) { dwell_ = dwell; }

  // One tick: Begin(), Observe() for each key with advice, then Finish().
  void Begin(absl::Time now);
  // The fix to publish for key `id` whose model answer at this tick is `answer`.
  model::Strategy Observe(uint64_t id, model::Strategy answer);
  // Forgets the keys not observed since Begin().
  void Finish();

  size_t size() const { return keys_.size(); }

 private:
  struct Entry {
    model::Strategy held;
    absl::Time losing_since;  // the first tick since which the held fix was not the answer
    uint64_t seen_tick;
  };
  absl::Duration dwell_;
  absl::Time now_;
  uint64_t tick_ = 0;
  absl::flat_hash_map<uint64_t, Entry> keys_;
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_ADVICE_HOLD_H_
