// Aggregator: turns the receivers' reports into the published Snapshot, once per tick.
//
// Per tick it merges the receivers' trackers (HeavyHitters::Merge) into one tracker it owns
// and reuses (one receiver's tracker is read in place, uncopied), computes each key's
// share, error bound, write ratio and decayed rate; the fixed-window rates from a short
// history of undecayed counts (operators read QPS, not decayed weights); the exported set
// (top_k keys over min_share and seen at min_key_ops_per_second, with hysteresis so labels
// do not churn); the hot state of
// every tracked key (alerter.h), with each key's threshold worked out once while it stays
// tracked over the lowest threshold or the export floor (keys under both, and unknown to
// the alerter, are passed over uncopied); and the shard model's projection and advice for
// every hot key (hotkey::model), on its episode's own figures: the key's share and the
// shard's load (busy_window.h) over the time since its onset, once an answer of the shard
// covers it (a change of a hot key's fix in force changes the shard's load as an onset
// does: the window starts afresh at the first answer after it, busy_window.h), and held by
// hysteresis on the projected loads (advice_hold.h). A key that is
// not hot gets no advice, and no key gets any while the shard's headroom is unknown. Labels
// (key_label.h, an HMAC in the hash modes) are made for the exported keys and for the few keys the
// alerter holds, not for every tracked key.
//
// Fixed-window rates are computed per source (receiver) before anything is merged, since
// each source's "since admission" counts only make sense against that source's own past:
// a source's ops/s are its raw-count difference against its oldest point in the window;
// a key's are the sum over the sources whose table holds it now of its difference there
// (against the base point if the key was tracked then and not re-admitted since, else
// everything since its admission, which lies inside the window), each over that source's
// span. So a key's ops/s never exceed the shard's (every op counted for the key in a
// source is counted in that source's total over the same span), a key evicted by one
// source keeps the others' share, and the figure is a lower bound: a source's ops for a
// key outside its table are not known. A source's first point is measured against zero
// counts at the aggregator's start if every key it holds was admitted since; otherwise
// (state restored from a previous run) it is only the baseline, so restored lifetime
// totals are never counted as traffic.
//
// Memory is bounded by the options: the history holds at most TrackOptions::MaxRatePoints()
// points (a tick closer than publish_interval / 2 to the newest point is not kept), each
// with at most `candidates` keys per source; popped points are reused. RateHistoryBound()
// and MemoryBudget() give the bounds; aggregator_test.cc pins them.
//
// Thread-compatible: Build() and SetReloadable() are called from one thread (the daemon's
// main io_context); the result is immutable and shared.

#ifndef HOTKEY_AGGREGATE_AGGREGATOR_H_
#define HOTKEY_AGGREGATE_AGGREGATOR_H_

#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "hotkey/aggregate/advice_hold.h"
#include "hotkey/aggregate/alerter.h"
#include "hotkey/aggregate/busy_window.h"
#include "hotkey/aggregate/demand.h"
#include "hotkey/aggregate/episodes.h"
#include "hotkey/aggregate/history.h"
#include "hotkey/aggregate/key_label.h"
#include "hotkey/aggregate/model_inputs.h"
#include "hotkey/aggregate/slots.h"
#include "hotkey/aggregate/snapshot.h"
#include "hotkey/aggregate/threshold_matcher.h"
#include "hotkey/config/options.h"

namespace hotkey::aggregate {

class Aggregator {
 public:
  // One key of one source's table at one point (internal; public for the helpers).
  struct KeyRaw {
    uint64_t hash;
    double raw[sketch::kNumOps];
    absl::Time admitted;
  };

  // `label_secret` keys the hash of hashed key labels (key_label.h). `start` and every
  // Build()'s `now` are readings of one monotonic clock (clock.h), as are the trackers'
  // times: every duration (rate spans, dwell, admission) is a difference of them.
  Aggregator(const config::TrackOptions& track, const config::ReloadableOptions& reloadable,
             std::string label_secret, absl::Time start, Alerter::LogSink log);

  // Takes effect at the next Build().
  void SetReloadable(const config::ReloadableOptions& reloadable);
  // The cluster the advice is computed against, with each figure's origin and what may be
  // measured; takes effect at the next Build(). Until called: the reloadable options'
  // cluster, all configured.
  void SetModelInputs(ModelInputs inputs);
  // The Redis Cluster around the shard (slots.h), for the slot-move plans; takes effect at
  // the next Build().
  void SetClusterInputs(ClusterInputs inputs);
  // The sources weigh bytes, not ops (Snapshot::counts_bytes): no advice is given.
  void SetCountsBytes(bool counts_bytes) { counts_bytes_ = counts_bytes; }
  // What client kits report they absorbed (demand.h), added to each key's demand and to the
  // load with no fix; null (the default): nothing. Build() expires its old reports. Must
  // outlive the aggregator, and be used on its thread.
  void SetDemand(DemandLedger* demand) { demand_ = demand; }
  // The fixes the kits apply: the feed's entries (web/feed.h), each a key's exact bytes, or a
  // prefix (a pin) that every key starting with it matches. A hot key's episode log lines
  // and its history name the fix in force for its key, beside the fix advised (which
  // follows what the shard sees, and so turns to none while a fix works). Replaces the
  // last set; takes effect at the next Build(). Held until the next call: at most the
  // feed's entries.
  struct FixInForce {
    std::string key;
    bool prefix = false;
    model::Strategy mode = model::Strategy::kNone;
  };
  void SetFixesInForce(const std::vector<FixInForce>& fixes);

  // Builds the snapshot for `now` (monotonic) from the latest report of each receiver (nulls
  // are skipped). `wall` is the same instant on the wall clock: it stamps the snapshot's
  // times (Snapshot::time, start_time, a key's hot_since, the last event), each placed at
  // its monotonic distance from `wall`, and is used for nothing else, so a stepped wall
  // clock moves the stamps and changes no figure. `kernel_drops` is read by the caller
  // from /proc.
  std::shared_ptr<const Snapshot> Build(
      std::span<const std::shared_ptr<const source::ReceiverReport>> reports, absl::Time now,
      absl::Time wall, uint64_t kernel_drops);
  // The same for a caller with one clock (tests, tools): `now` stamps the snapshot too.
  std::shared_ptr<const Snapshot> Build(
      std::span<const std::shared_ptr<const source::ReceiverReport>> reports, absl::Time now,
      uint64_t kernel_drops) {
    return Build(reports, now, now, kernel_drops);
  }

  // The history of the snapshots (history.h) and the hot episodes (episodes.h), recorded at
  // every Build(): thread-safe, for the web routes and the state file. The history keeps
  // the export top_k and label_max_bytes of construction (a reload does not resize it).
  History& history() { return windows_; }
  const History& history() const { return windows_; }
  EpisodeLog& episodes() { return episodes_; }
  const EpisodeLog& episodes() const { return episodes_; }
  // Hot key episodes started since construction: the daemon asks the shard at each onset
  // (shard::Prober::AskNow), so the episode's first advice comes one answer after it.
  uint64_t key_episodes_started() const { return alerter_.started(); }
  // Changes of a hot key's fix in force since construction: the daemon asks the shard at
  // each, so the key's next advice reads the shard with the new fix.
  uint64_t key_fixes_changed() const { return alerter_.fixes_changed(); }
  // On by default; off only to measure what recording costs (history_test.cc's benchmark).
  void SetHistoryEnabled(bool on) { history_enabled_ = on; }

  // The tracker the last Build() read: the receivers' trackers merged (or the only one),
  // null before any report. Valid until the next Build(); for saving state without
  // merging again.
  const sketch::HeavyHitters* merged_tracker() const { return tracker_; }

  // How many times a key's threshold has been worked out from the rules: once per tracked
  // key and configuration (a key keeps its threshold while it stays tracked and is not
  // passed over, see above; a reload forgets them all), not once per key per tick.
  uint64_t threshold_lookups() const { return threshold_lookups_; }

  // Bytes the rate history holds now (its points, spares included, and their vectors).
  size_t RateHistoryBytes() const;
  // The most RateHistoryBytes() can be with `sources` sources.
  static size_t RateHistoryBound(const config::TrackOptions& track, size_t sources);
  // The most the tracking state can hold with `sources` sources whose trackers take
  // `tracker_bytes` each (HeavyHitters::MemoryBytes(), fixed at creation): each source's
  // tracker and its at most source::ReportBuffer::kMaxReports published copies, the merged tracker
  // (with more than one source) and the rate history. Exported as
  // hotkey_memory_budget_bytes.
  static size_t MemoryBudget(const config::TrackOptions& track, size_t sources,
                             size_t tracker_bytes);

 private:
  struct SourcePoint {
    bool present = false;  // the source reported at this point
    bool fresh = true;     // everything it holds was counted since start_
    double raw_total[sketch::kNumOps] = {0, 0};
    std::vector<KeyRaw> keys;  // its table, sorted by hash
  };
  struct HistoryPoint {
    absl::Time time;
    std::vector<SourcePoint> sources;  // by report index
  };
  // A source's base for this tick: its oldest point in the window, or (point null) zero
  // counts at start_; not valid when this tick is its baseline.
  struct Base {
    bool valid = false;
    const SourcePoint* point = nullptr;
    absl::Time time;
  };

  void FillSource(const sketch::HeavyHitters& tracker, SourcePoint* out);
  HistoryPoint TakePoint(absl::Time now, size_t sources);
  const std::vector<Base>& FindBases(const HistoryPoint& point, absl::Time now);
  // Sets the key's ops/s over the window; returns whether they hold all of its ops there
  // (every source holding it has held it since the source's base).
  bool KeyWindowRates(const HistoryPoint& point, const std::vector<Base>& bases, absl::Time now,
                      KeySnapshot* k) const;
  // Each source's base for the span from `since`: its first point at or after it (zero
  // counts at start_ for a fresh source with none); written into since_bases_.
  const std::vector<Base>& BasesSince(const HistoryPoint& point, absl::Time since);
  // inputs_ with what is measured at this tick filled in (model_inputs.h): the shard's
  // busy fraction over the window, the capacity it implies at the window's ops/s, and the
  // client hosts the sources have seen.
  const ModelInputs& ResolveInputs(double window_ops, uint64_t client_hosts, absl::Time now);
  // The key's rates, share and write ratio over the window, for a shard serving `shard_ops`
  // ops/s over it.
  void WindowFigures(const HistoryPoint& point, const std::vector<Base>& bases, absl::Time now,
                     double shard_ops, KeySnapshot* k) const;
  // The projection and the held fix of a hot key whose episode began at `onset`, on the
  // figures since then (aggregator.h's opening); logs each change of fix.
  void Advise(const HistoryPoint& point, absl::Time now, absl::Time onset, const std::string& label,
              KeySnapshot* k);

  // The steps of Build(), in order.
  // The reports' trackers merged into tracker_ (or the only one read in place), and their
  // counters summed into `snap`.
  void MergeReports(std::span<const std::shared_ptr<const source::ReceiverReport>> reports,
                    Snapshot* snap);
  // The error bound, the decayed ops/s and the tracked keys of tracker_.
  void DecayedFigures(Snapshot* snap) const;
  // Fills this tick's `point` from the reports and returns each source's base; the shard's
  // ops/s over the rate window go into `snap`.
  const std::vector<Base>& WindowRates(
      std::span<const std::shared_ptr<const source::ReceiverReport>> reports, absl::Time now,
      HistoryPoint* point, Snapshot* snap);
  // The tracked keys that may be hot or exported, each with its threshold, hot state (the
  // alerter observes every one) and, when it may be hot, its advice; episodes of hot keys.
  std::vector<KeySnapshot> ObserveKeys(const HistoryPoint& point, const std::vector<Base>& bases,
                                       absl::Time now, absl::Time wall, double window_ops);
  // The kits' absorbed demand of every key the ledger holds, over kDemandSpan, by hash
  // (demand_now_).
  void GatherDemand(absl::Time now, uint64_t seed);
  // The rest of ObserveKeys() for one key whose figures from the tracker (or none, a key
  // only the kits report) are in `k`; `share` is its demand share.
  void ObserveKey(const HistoryPoint& point, const std::vector<Base>& bases, absl::Time now,
                  absl::Time wall, double window_ops, KeySnapshot k,
                  std::vector<KeySnapshot>* keys);
  // Cuts `keys` to the exported set, largest share first, each labelled and advised.
  void SelectExported(const HistoryPoint& point, const std::vector<Base>& bases, absl::Time now,
                      double window_ops, double rate_window_seconds,
                      std::vector<KeySnapshot>* keys);
  // Keeps `point` in the rate history, unless it is too close to the newest.
  void KeepPoint(HistoryPoint point, absl::Time now);
  // Slots and tags into `snap` when the sources count them; returns the bytes they may hold.
  size_t BuildSlots(std::span<const std::shared_ptr<const source::ReceiverReport>> reports,
                    absl::Time now, absl::Time wall, double window_ops, Snapshot* snap);
  // Episodes of hot slots and tags, the history's record of the tick, and their figures.
  void RecordHistory(absl::Time now, Snapshot* snap);

  const config::TrackOptions track_;
  config::ReloadableOptions reloadable_;
  const std::string label_secret_;
  std::optional<KeyLabeler> labeler_;        // from reloadable_.exporter
  std::optional<ThresholdMatcher> matcher_;  // from reloadable_.alert
  // Thresholds of the keys tracked at the last Build(), by key hash, with the tick that
  // last saw each (entries not seen are dropped, so it holds at most the tracked keys).
  struct CachedThreshold {
    double threshold;
    uint64_t tick;
  };
  absl::flat_hash_map<uint64_t, CachedThreshold> thresholds_;
  uint64_t tick_ = 0;
  uint64_t threshold_lookups_ = 0;
  const absl::Time start_;  // monotonic
  const Alerter::LogSink log_;
  Alerter alerter_;
  AdviceHold advice_hold_;
  // Slots and tags: made at the first report that carries slot counts.
  std::optional<SlotTracker> slots_;
  ClusterInputs cluster_inputs_;
  ModelInputs inputs_;            // as set
  ModelInputs resolved_;          // as used at this tick (ResolveInputs)
  BusyWindow busy_;               // the shard's answers over the rate window
  uint64_t sampled_answers_ = 0;  // ModelInputs::shard_answers last added to busy_
  absl::Time wall_;               // this tick's wall stamp, for the log lines of Advise()
  bool counts_bytes_ = false;
  DemandLedger* demand_ = nullptr;
  // This tick's absorbed demand by key hash (GatherDemand), and whether the tracker holds
  // the key.
  struct KeyDemand {
    std::string key;
    DemandLedger::Absorbed recent;
    bool tracked = false;
  };
  absl::flat_hash_map<uint64_t, KeyDemand> demand_now_;
  // SetFixesInForce(): exact keys, and the prefixes.
  absl::flat_hash_map<std::string, model::Strategy> fixes_in_force_;
  std::vector<FixInForce> prefix_fixes_in_force_;
  // The fix in force for `key` ("" for none).
  std::string_view FixInForceFor(std::string_view key) const;
  // The merge target, allocated at the first merge and copy-assigned into afterwards (same
  // shape, so no allocation); and the report whose tracker is read when there is only one.
  std::optional<sketch::HeavyHitters> merged_;
  std::shared_ptr<const source::ReceiverReport> single_;
  const sketch::HeavyHitters* tracker_ = nullptr;
  std::deque<HistoryPoint> history_;
  std::vector<HistoryPoint> spare_;  // popped points, reused with their memory
  std::vector<Base> bases_;          // scratch of Build()
  std::vector<Base> since_bases_;    // scratch of Advise()
  absl::flat_hash_set<uint64_t> exported_;
  History windows_;
  EpisodeLog episodes_;
  bool history_enabled_ = true;
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_AGGREGATOR_H_
