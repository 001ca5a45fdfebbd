#include "hotkey/aggregate/advice_hold.h"

namespace hotkey::aggregate {

AdviceHold::Decision AdviceHold::Observe(uint64_t id, const model::Projection& p, double target,
                                         bool settled) {
  auto [it, fresh] = keys_.try_emplace(id, Entry{p.advice, tick_});
  Entry& e = it->second;
  e.seen_tick = tick_;
  if (fresh) return Decision{p.advice, std::nullopt, true};
  const model::Strategy held = e.held;
  // The held fix's row, and the first cheaper strategy that fits with room.
  const model::StrategyLoad* own = nullptr;
  const model::StrategyLoad* cheaper = nullptr;
  for (const model::StrategyLoad& l : p.loads) {
    if (l.strategy == held) {
      own = &l;
      break;
    }
    if (!cheaper && l.busiest <= target - margin_) cheaper = &l;
  }
  if (!own && held != model::Strategy::kIsolate) {  // dropped from the order
    e.held = p.advice;
  } else if (settled && own && own->busiest > target + margin_) {
    e.held = p.advice;
  } else if (settled && cheaper) {
    e.held = cheaper->strategy;
  }
  return Decision{e.held, held, e.held != held};
}

void AdviceHold::Finish() {
  absl::erase_if(keys_, [this](const auto& kv) { return kv.second.seen_tick != tick_; });
}

}  // namespace hotkey::aggregate
