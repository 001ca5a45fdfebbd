// Snapshot: everything the daemon knows at one publish tick, immutable once built.
//
// The aggregator builds one per tick from the receivers' reports and swaps it in; the HTTP
// handlers (/metrics, /api/v1/top, the landing page) only ever read a Snapshot, so they
// never touch a tracker and never block a receiver. Rates are sampling-scaled ops per
// second (each event counts as weight / sampling probability). Its times are wall-clock
// stamps for output only (Aggregator::Build places them from monotonic readings); no
// duration is computed from them.

#ifndef HOTKEY_AGGREGATE_SNAPSHOT_H_
#define HOTKEY_AGGREGATE_SNAPSHOT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "hotkey/aggregate/model_inputs.h"
#include "hotkey/aggregate/slots.h"
#include "hotkey/model/shard_model.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "hotkey/source/report.h"

namespace hotkey::aggregate {

struct KeySnapshot {
  std::string key;  // the tracked bytes (a prefix when `truncated`)
  bool truncated = false;
  uint64_t hash = 0;
  std::string label;  // the key as exported (key_label.h)
  // The key's ops over the shard's, both over the rate window: what is exported, shown and
  // advised on. A lower bound (a key's ops before it was tracked are not known), reached
  // once the key has been tracked for a whole window.
  double share = 0;
  // Upper-bound weight / total weight, decayed over about one half-life: what detection
  // (the hot state) and the choice of exported keys use, since it moves within a second.
  double decayed_share = 0;
  // decayed_share minus its lower bound: that estimate's error bound.
  double share_error = 0;
  // Writes / (reads + writes) over the rate window; until the window holds an op of the
  // key, of the decayed weight seen since admission.
  double write_ratio = 0;
  double ops_per_second[sketch::kNumOps] = {0, 0};          // over the rate window
  double decayed_ops_per_second[sketch::kNumOps] = {0, 0};  // over about one half-life
  // What client kits absorbed of the key (demand.h), by op, over the rate window; 0 when
  // no kit reported it.
  double absorbed_ops_per_second[sketch::kNumOps] = {0, 0};
  // The key's demand as a share: what the shard saw of it plus what the kits absorbed over
  // the last few seconds, over the shard's ops plus the same; decayed_share when nothing is
  // absorbed. What the hot state compares with the threshold, so a fix that hides the key
  // from the shard does not end its episode.
  double demand_share = 0;
  double threshold = 0;  // its share threshold; +inf when a rule ignores it
  bool hot = false;
  absl::Time hot_since = absl::InfiniteFuture();  // wall stamp
  double peak_share = 0;                          // of decayed_share, over the episode
  // The fix advised, held by hysteresis (advice_hold.h); meaningful when projected_load is
  // not empty: a hot key whose episode's own figures are known, on a shard whose headroom
  // is known (aggregator.h).
  model::Strategy advice = model::Strategy::kNone;
  // The busiest shard's load / capacity under each strategy of the cluster's order, from
  // the key's share and write ratio since its episode's onset (within the rate window) and
  // the shard's measured busy fraction over the same time (or, configured, its ops/s over
  // the configured capacity). What the kits absorbed of the key is added back to both, at
  // the measured cost per operation, so the load with no fix is the shard's without the
  // fix in force. Empty for a key that is not hot.
  std::vector<std::pair<model::Strategy, double>> projected_load;
  // The figures projected_load was computed from (with it): the shard's ops/s, the key's
  // share and write ratio over the episode's span (`seconds` long, within the rate window),
  // all with the kits' absorbed ops added (`absorbed_ops` of them), and the capacity
  // (configured, or the shard's ops/s over its busy fraction then: +inf for an idle
  // shard). model::ProjectShare on them gives projected_load back.
  struct AdviceFigures {
    double shard_ops = 0;
    double absorbed_ops = 0;
    double share = 0;
    double write_ratio = 0;
    double capacity = 0;
    double seconds = 0;
  } advised_on;
};

struct Snapshot {
  absl::Time time;        // wall stamp of the tick
  absl::Time start_time;  // wall stamp of the aggregator's start
  int receivers = 0;      // sources merged: UDP receivers, and the demo source with --demo
  double half_life_seconds = 0;
  double rate_window_seconds = 0;  // the window the ops_per_second figures span now
  double ops_per_second[sketch::kNumOps] = {0, 0};
  double decayed_ops_per_second[sketch::kNumOps] = {0, 0};
  std::vector<KeySnapshot> keys;  // the exported keys, largest share first
  // The keys client kits reported absorbing over the last few seconds (demand.h), sorted;
  // at most the ledger's bound. Exported or not: on a node that became a replica they keep
  // their feed entries alive while the demand lasts (feed.h).
  std::vector<std::string> absorbed_keys;
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
  ModelInputs model;  // what the advice was computed against
  // The unit every rate and share is in: ops (each key an operation touches counts 1), or
  // bytes (a bytes-weighted tap: --tap.weight=bytes). In bytes there is no advice: the
  // shard load model counts operations.
  bool counts_bytes = false;
  // Redis Cluster slots and hash tags (slots.h); `slots.enabled` false when not counted.
  SlotsSnapshot slots;
  // The history (history.h) and the episode log (episodes.h) as this tick left them: their
  // memory now and its bound, fixed at start; windows held per ring (fine, coarse); episodes
  // held and open.
  size_t history_bytes = 0;
  size_t history_bound_bytes = 0;
  size_t history_windows[2] = {0, 0};
  size_t episodes = 0;
  size_t open_episodes = 0;
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_SNAPSHOT_H_
