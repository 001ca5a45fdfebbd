// LoadComparison: the shards' measured loads (--model.measured-loads-file) beside the shard
// load model's projection for each fix, so a person can see whether the model holds. It is
// what GET /api/v1/measured answers and the landing page's "Projected against measured"
// table draws, plus a few self metrics.
//
// The projection has to be one of unfixed traffic: once a fix is in force the shard sees
// fixed traffic (a cached key's reads are gone), and modelling the fixes again on that
// would answer another question. So the projection shown is the daemon's advice figures
// (model::ProjectShare on the shard's ops/s over the rate window, the key's share and write
// ratio, with the cluster the advice used, as the aggregator advises) from the last moment a
// measurement says no fix was in force
// ("strategy": "none", the default): at each poll the figures of the key are noted with
// their snapshot's time, and a measurement with no fix, taken over [t - interval, t],
// adopts the mean of the figures noted in that interval (the shard's ops/s, the key's
// ops/s and its writes/s, averaged; then projected), or, with none noted there (an
// instant measurement), the latest noted before t; never one noted after t, when a fix
// may have begun. The key is the measurement's "key" (as its label on /metrics), or else the
// hottest hot key. A measurement with no fix also starts the comparison over: each fix's
// row holds the last measurement taken under it since then.
//
// A measurement whose timestamp is more than --model.measured-loads-max-age old is shown as
// stale. A file that cannot be read or parsed keeps the last good measurement (which goes
// stale), is logged by the daemon and counted here.
//
// Thread-safe: one mutex, taken a few times a second (polls, page requests, scrapes),
// never on the event path.

#ifndef HOTKEY_AGGREGATE_LOAD_COMPARISON_H_
#define HOTKEY_AGGREGATE_LOAD_COMPARISON_H_

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/aggregate/snapshot.h"
#include "hotkey/config/measured_loads.h"
#include "hotkey/config/options.h"
#include "hotkey/model/shard_model.h"

namespace hotkey::aggregate {

class LoadComparison : public prometheus::Collectable {
 public:
  // Key figures noted, one per poll: at the default poll interval, the last 64 s, so a
  // measuring interval of up to a minute is averaged whole.
  static constexpr size_t kMaxNoted = 128;

  explicit LoadComparison(config::MeasuredLoadsOptions options) : options_(std::move(options)) {}

  // Notes the advice figures of the key to project (see above) from `snap`, under `cluster`.
  void Observe(const Snapshot& snap, const model::Cluster& cluster);

  // One poll's outcome (config::MeasuredLoadsWatcher::Poll): a new measurement, nothing
  // new (nullopt), or the error reading the changed file.
  void Update(const absl::StatusOr<std::optional<config::MeasuredLoads>>& polled);

  // The answer of GET /api/v1/measured at `now`, loads as fractions of the capacity the
  // projection was made with (`cluster`'s before there is one):
  //   {"file", "max_age_seconds", "last_read_successful", "read_errors_total",
  //    "last_error" (the last read's error, or null),
  //    "measurement": null | {"time", "age_seconds", "stale", "strategy", "key", "source",
  //                           "shards", "ops_per_second": [...], "loads": [...], "busiest",
  //                           "busiest_shard", "least_busy", "cluster_shards"},
  //    "projection": null | {"key", "time" (of the last figures in it), "samples" (how many
  //                          were averaged), "shard_ops", "capacity" (the loads are
  //                          fractions of it), "hot_share", "write_share", "advice"},
  //    "fixes": [{"strategy", "in_force", "projected": null | {"busiest", "least_busy"},
  //               "measured": null | {"time", "age_seconds", "stale", "busiest",
  //                                   "busiest_shard", "least_busy"}}, ...]}
  // "fixes" lists the cluster's order, then any other strategy measured (isolate).
  std::string Json(const model::Cluster& cluster, absl::Time now) const;

  // hotkey_measured_loads_last_read_successful, hotkey_measured_loads_read_errors_total and
  // (once a measurement was read) hotkey_measured_loads_timestamp_seconds.
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  // The figures the daemon's advice for one key used, and the projection they give.
  struct Noted {
    absl::Time time;  // the snapshot's
    std::string key;  // its label
    double shard_ops = 0;
    double share = 0;
    double write_share = 0;
    model::Projection projection;
    int samples = 1;      // figures averaged into it
    double capacity = 0;  // the cluster's capacity it was projected with
  };

  const config::MeasuredLoadsOptions options_;
  mutable std::mutex mu_;
  std::optional<config::MeasuredLoads> latest_;                   // guarded by mu_
  std::map<model::Strategy, config::MeasuredLoads> by_strategy_;  // guarded by mu_
  std::deque<Noted> noted_;                                       // guarded by mu_
  std::optional<Noted> projection_;                               // guarded by mu_
  model::Cluster cluster_;            // guarded by mu_: the last Observe()'s, to project means with
  bool last_read_successful_ = true;  // guarded by mu_
  std::string last_error_;            // guarded by mu_
  uint64_t read_errors_ = 0;          // guarded by mu_
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_LOAD_COMPARISON_H_
