#include "hotkey/aggregate/advice_hold.h"

namespace hotkey::aggregate {

void AdviceHold::Begin(absl::Time now) {
  now_ = now;
  ++tick_;
}

model::Strategy AdviceHold::Observe(uint64_t id, model::Strategy answer) {
  auto [it, fresh] = keys_.try_emplace(id, Entry{answer, absl::InfiniteFuture(), tick_});
  Entry& e = it->second;
  e.seen_tick = tick_;
  if (fresh || answer == e.held) {
    e.losing_since = absl::InfiniteFuture();
    return e.held;
  }
  if (e.losing_since == absl::InfiniteFuture()) e.losing_since = now_;
  if (now_ - e.losing_since >= dwell_) {
    e.held = answer;
    e.losing_since = absl::InfiniteFuture();
  }
  return e.held;
}

void AdviceHold::Finish() {
  absl::erase_if(keys_, [this](const auto& kv) { return kv.second.seen_tick != tick_; });
}

}  // namespace hotkey::aggregate
