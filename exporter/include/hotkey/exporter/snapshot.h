// Snapshot: everything the daemon knows at one publish tick, immutable once built.
//
// The aggregator builds one per tick from the receivers' reports and swaps it in; the HTTP
// handlers (/metrics, /api/v1/top, the landing page) only ever read a Snapshot, so they
// never touch a tracker and never block a receiver. Rates are sampling-scaled ops per
// second (each event counts as weight / sampling probability). Its times are wall-clock
// stamps for output only (Aggregator::Build places them from monotonic readings); no
// duration is computed from them.

#ifndef HOTKEY_EXPORTER_SNAPSHOT_H_
#define HOTKEY_EXPORTER_SNAPSHOT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "hotkey/model/shard_model.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "hotkey/source/report.h"

namespace hotkey::exporter {

struct KeySnapshot {
  std::string key;  // the tracked bytes (a prefix when `truncated`)
  bool truncated = false;
  uint64_t hash = 0;
  std::string label;       // the key as exported (key_label.h)
  double share = 0;        // upper-bound weight / total weight, decayed
  double share_error = 0;  // share minus the share's lower bound: the estimate's error bound
  double write_ratio = 0;  // writes / (reads + writes) of the weight seen since admission
  double ops_per_second[sketch::kNumOps] = {0, 0};          // over the rate window
  double decayed_ops_per_second[sketch::kNumOps] = {0, 0};  // over about one half-life
  double threshold = 0;  // its share threshold; +inf when a rule ignores it
  bool hot = false;
  absl::Time hot_since = absl::InfiniteFuture();  // wall stamp
  double peak_share = 0;
  model::Strategy advice = model::Strategy::kNone;
  // The busiest shard's load / capacity under each strategy of the cluster's order.
  std::vector<std::pair<model::Strategy, double>> projected_load;
};

struct Snapshot {
  absl::Time time;        // wall stamp of the tick
  absl::Time start_time;  // wall stamp of the aggregator's start
  int receivers = 0;      // sources merged: UDP receivers, and the demo source with --demo
  double half_life_seconds = 0;
  double rate_window_seconds = 0;  // the window the ops_per_second figures span now
  double ops_per_second[sketch::kNumOps] = {0, 0};
  double decayed_ops_per_second[sketch::kNumOps] = {0, 0};
  std::vector<KeySnapshot> keys;    // the exported keys, largest share first
  source::SourceCounters counters;  // summed over sources (their own metrics not)
  // Each source's counters, in the daemon's order (UDP receivers first): shows how the
  // kernel spread senders over SO_REUSEPORT sockets.
  std::vector<source::SourceCounters> sources;
  // The sources' own metrics (source_metrics.h), summed over the sources of each kind.
  std::vector<source::SourceMetrics> source_metrics;
  uint64_t kernel_drops = 0;        // /proc/net/udp drops of our sockets
  size_t tracked_keys = 0;          // keys in the trackers' tables
  size_t sketch_bytes = 0;          // one tracker per source (HeavyHitters::MemoryBytes())
  size_t merged_tracker_bytes = 0;  // the aggregator's merge target (0 with one source)
  size_t rate_history_bytes = 0;    // the aggregator's rate history
  // Bound of all the tracking state (Aggregator::MemoryBudget) plus what the sources hold
  // besides their trackers (source::SourceCounters::memory_bound_bytes).
  size_t memory_budget_bytes = 0;
  double epsilon = 0;  // count-min epsilon: share error bound for untracked keys
  size_t hot_keys = 0;
};

}  // namespace hotkey::exporter

#endif  // HOTKEY_EXPORTER_SNAPSHOT_H_
