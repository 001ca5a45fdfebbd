// AdviceHold: keeps each key's advised fix steady, by hysteresis on the projected loads.
//
// The model's answer for a key is the first strategy whose projected load is at most the
// target; a load near the target would flip it at every tick. An operator acting on the
// fix needs one answer while the load is steady, and the next one as soon as the load
// truly moves, so the held fix changes when the projections pass the target by `margin`
// (a fraction of the shard's capacity, as the loads are), not after a fixed wait:
//   - a key's first answer is taken at once;
//   - the held fix is replaced by the model's answer when its own projected load is over
//     target + margin (it no longer fits), or when it is not in the projection (a reload
//     dropped it from the order);
//   - else, when a strategy earlier in the order (cheaper) projects at most
//     target - margin, the first such replaces it (the cheaper fix fits with room);
//   - else it stays. kIsolate (no projection of its own) stays until a strategy fits
//     within target - margin.
// Those changes wait while the projection is not settled: the shard's load is read from a
// window that holds an answer departing from the load before it, unconfirmed
// (BusyWindow::Settled), which is a burst or half of a change. Either the next answer
// confirms the change, and the window starts afresh from it, or the hold waits until the
// answer has left the window. Only a fix dropped from the order gives way at once.
// So a load whose projections move by less than the margin around the target keeps one
// fix, and a change past it takes effect at the first settled tick that shows it. Once replaced for
// exceeding target + margin, the new fix (the first fitting the target) cannot be replaced
// by a cheaper one at the same figures: those project over the target. A key not observed
// at a tick is forgotten, so the hold keeps at most the keys observed at one tick, and a
// key's next episode starts from its own first answer.
//
// Thread-compatible: the aggregator calls it from one thread.

#ifndef HOTKEY_AGGREGATE_ADVICE_HOLD_H_
#define HOTKEY_AGGREGATE_ADVICE_HOLD_H_

#include <cstdint>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "hotkey/model/shard_model.h"

namespace hotkey::aggregate {

class AdviceHold {
 public:
  // `margin` in [0, 1) (config::AlertOptions::advice_margin).
  explicit AdviceHold(double margin) : margin_(margin) {}

  void SetMargin(double margin) { margin_ = margin; }

  struct Decision {
    model::Strategy fix;                  // the fix to publish
    std::optional<model::Strategy> from;  // the fix held before this tick; nullopt: none
    bool changed = false;                 // fix differs from `from`, or there was none
  };

  // One tick: Begin(), Observe() for each key with a projection, then Finish().
  void Begin() { ++tick_; }
  // The fix for key `id` whose projection at this tick is `p`, at the model's `target`;
  // `settled`: the load it starts from is settled (above).
  Decision Observe(uint64_t id, const model::Projection& p, double target, bool settled);
  // Forgets the keys not observed since Begin().
  void Finish();

  size_t size() const { return keys_.size(); }

 private:
  struct Entry {
    model::Strategy held;
    uint64_t seen_tick;
  };
  double margin_;
  uint64_t tick_ = 0;
  absl::flat_hash_map<uint64_t, Entry> keys_;
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_ADVICE_HOLD_H_
