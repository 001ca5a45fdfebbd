// The `hotkey-sim model` output: a projection of the shard load model as a text table with
// ASCII bars, or as JSON. Pure formatting (no I/O), so tests can check it as a string.

#ifndef HOTKEY_TOOLS_SIM_MODEL_REPORT_H_
#define HOTKEY_TOOLS_SIM_MODEL_REPORT_H_

#include <string>

#include "hotkey/model/shard_model.h"

namespace hotkey::sim {

// One row per strategy: busiest and least busy shard as % of capacity, a bar for the
// busiest load marked at the target (':') and the capacity ('|'), then the advice.
std::string ModelTable(const model::Cluster& cluster, const model::HotKey& key,
                       const model::Projection& projection);

// {"cluster":{...},"hot_key":{...},"strategies":[{"strategy","shard_loads","busiest",
// "least_busy","fits"}...],"advice":"..."}; loads are fractions of capacity, numbers in
// their shortest round-trip form.
std::string ModelJson(const model::Cluster& cluster, const model::HotKey& key,
                      const model::Projection& projection);

}  // namespace hotkey::sim

#endif  // HOTKEY_TOOLS_SIM_MODEL_REPORT_H_
