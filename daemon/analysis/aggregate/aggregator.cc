#include "hotkey/aggregate/aggregator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hotkey/log/log.h"
#include "hotkey/source/report_buffer.h"

namespace hotkey::aggregate {

namespace {

using sketch::kNumOps;

// The shortest span a key's advice is read over against a configured capacity (or the
// rate window, if shorter): one answer of a shard at the default --shard.interval, the
// span a measured load gives, so both give a first advice at the same pace. Shorter spans
// let a start-up's lagging rate (a source still catching up) decide a fix that the
// hysteresis then keeps.
constexpr absl::Duration kMinAdviceSpan = absl::Seconds(5);

// The span of the kits' reports a key's demand share (its hot state) reads: kits report
// once a second, so three seconds hold two or three reports of each, and the figure ends
// within three seconds of the last report. The decayed share it is added to moves within
// the half-life; a span of one report would follow each report's jitter.
constexpr absl::Duration kDemandSpan = absl::Seconds(3);

// How long a hot key with a fix advised stays hot under its cooling line, where kits may
// report their absorbed demand (SetDemand). A kit reports what it absorbed once a second,
// so the shard stops seeing a key it caches up to a second before the first report says
// why, and at the default half-life the key's decayed share can fall past the line within
// that second. Twice the report period bridges one late report; a key whose demand really
// ended cools this much later.
constexpr absl::Duration kFixCoolGrace = absl::Seconds(2);

// The key's demand share: `share` of a shard serving `shard_ops` ops/s, plus `absorbed`
// ops/s the kits kept off it.
double DemandShare(double share, double shard_ops, double absorbed) {
  if (absorbed <= 0) return share;
  return std::min(1.0, (share * shard_ops + absorbed) / (shard_ops + absorbed));
}

// Undecayed weight over (then, now] per second; 0 before any time has passed.
double Rate(double delta, absl::Duration span) {
  const double s = absl::ToDoubleSeconds(span);
  return s > 0 && delta > 0 ? delta / s : 0;
}

// The key's entry in a source's point (keys sorted by hash), or null.
const Aggregator::KeyRaw* FindKeyRaw(const std::vector<Aggregator::KeyRaw>& keys, uint64_t hash) {
  auto it = std::lower_bound(keys.begin(), keys.end(), hash,
                             [](const Aggregator::KeyRaw& k, uint64_t h) { return k.hash < h; });
  return it != keys.end() && it->hash == hash ? &*it : nullptr;
}

}  // namespace

void Aggregator::FillSource(const sketch::HeavyHitters& tracker, SourcePoint* out) {
  out->present = true;
  out->fresh = true;
  for (int o = 0; o < kNumOps; ++o)
    out->raw_total[o] = tracker.RawTotal(static_cast<sketch::Op>(o));
  out->keys.clear();
  // Exactly the table's size at most, so a point never holds more than `candidates` keys.
  out->keys.reserve(tracker.options().candidates);
  tracker.ForEach([&](const sketch::HeavyHitter& h) {
    out->keys.push_back(KeyRaw{h.hash, {h.raw_weight[0], h.raw_weight[1]}, h.admitted});
    if (h.admitted < start_) out->fresh = false;
  });
  std::sort(out->keys.begin(), out->keys.end(),
            [](const KeyRaw& a, const KeyRaw& b) { return a.hash < b.hash; });
}

Aggregator::HistoryPoint Aggregator::TakePoint(absl::Time now, size_t sources) {
  HistoryPoint p;
  if (!spare_.empty()) {
    p = std::move(spare_.back());
    spare_.pop_back();
  }
  p.time = now;
  p.sources.resize(sources);
  for (SourcePoint& s : p.sources) {
    s.present = false;
    s.keys.clear();
  }
  return p;
}

const std::vector<Aggregator::Base>& Aggregator::FindBases(const HistoryPoint& point,
                                                           absl::Time now) {
  auto recycle = [this] {
    spare_.push_back(std::move(history_.front()));
    history_.pop_front();
  };
  while (!history_.empty() && history_.front().time < now - track_.rate_window) recycle();
  // The receivers are fixed at start; if their number changes, the history means nothing.
  while (!history_.empty() && history_.front().sources.size() != point.sources.size()) recycle();
  // Points keep one tick's worth of spares: the window's points are all in use.
  if (spare_.size() > 2) spare_.resize(2);

  bases_.assign(point.sources.size(), Base{});
  for (size_t i = 0; i < point.sources.size(); ++i) {
    const SourcePoint& now_i = point.sources[i];
    if (!now_i.present) continue;
    Base& b = bases_[i];
    bool replaced = false;
    for (const HistoryPoint& h : history_) {
      if (!h.sources[i].present) continue;
      const SourcePoint& then = h.sources[i];
      if (now_i.raw_total[0] < then.raw_total[0] || now_i.raw_total[1] < then.raw_total[1]) {
        // Counts went backwards: the source's tracker was replaced. Its older points are
        // no base for the new one.
        for (HistoryPoint& old : history_) old.sources[i].present = false;
        replaced = true;
        break;
      }
      b = Base{true, &then, h.time};
      break;
    }
    // No earlier point: zero counts at start_, if all the source holds was counted since
    // (else, restored state or a replaced tracker, this point is only the baseline).
    if (!b.valid && !replaced && now_i.fresh) b = Base{true, nullptr, start_};
  }
  return bases_;
}

bool Aggregator::KeyWindowRates(const HistoryPoint& point, const std::vector<Base>& bases,
                                absl::Time now, KeySnapshot* k) const {
  for (int o = 0; o < kNumOps; ++o) k->ops_per_second[o] = 0;
  bool whole = true;
  for (size_t i = 0; i < bases.size(); ++i) {
    if (!bases[i].valid) continue;
    const KeyRaw* cur = FindKeyRaw(point.sources[i].keys, k->hash);
    if (!cur) continue;  // not in this source's table: its ops there are not known
    const KeyRaw* then = bases[i].point ? FindKeyRaw(bases[i].point->keys, k->hash) : nullptr;
    if (then && then->admitted != cur->admitted) then = nullptr;  // re-admitted since
    // All of the key's ops are counted if the base point held it, or if the base is the
    // start and the key was tracked from the start.
    if (bases[i].point ? !then : cur->admitted > bases[i].time) whole = false;
    const absl::Duration span = now - bases[i].time;
    for (int o = 0; o < kNumOps; ++o) {
      double delta = cur->raw[o] - (then ? then->raw[o] : 0);
      // Admitted after the base, or re-admitted at the base's own instant: the ops since
      // admission are all inside the window.
      if (delta < 0) delta = cur->raw[o];
      k->ops_per_second[o] += Rate(delta, span);
    }
  }
  return whole;
}

const std::vector<Aggregator::Base>& Aggregator::BasesSince(const HistoryPoint& point,
                                                            absl::Time since) {
  since_bases_.assign(point.sources.size(), Base{});
  for (size_t i = 0; i < point.sources.size(); ++i) {
    const SourcePoint& now_i = point.sources[i];
    if (!now_i.present) continue;
    Base& b = since_bases_[i];
    for (const HistoryPoint& h : history_) {
      if (h.time < since || !h.sources[i].present) continue;
      const SourcePoint& then = h.sources[i];
      // Counts that went backwards (a replaced tracker) make no base.
      if (now_i.raw_total[0] >= then.raw_total[0] && now_i.raw_total[1] >= then.raw_total[1]) {
        b = Base{true, &then, h.time};
      }
      break;
    }
    if (!b.valid && history_.empty() && now_i.fresh && since <= start_) {
      b = Base{true, nullptr, start_};
    }
  }
  return since_bases_;
}

void Aggregator::WindowFigures(const HistoryPoint& point, const std::vector<Base>& bases,
                               absl::Time now, double shard_ops, KeySnapshot* k) const {
  KeyWindowRates(point, bases, now, k);
  const double key_ops = k->ops_per_second[0] + k->ops_per_second[1];
  k->share = shard_ops > 0 ? std::min(1.0, key_ops / shard_ops) : 0;
  if (key_ops > 0) k->write_ratio = k->ops_per_second[1] / key_ops;
}

void Aggregator::Advise(const HistoryPoint& point, absl::Time now, absl::Time onset,
                        const std::string& label, KeySnapshot* k) {
  k->projected_load.clear();
  if (counts_bytes_ || resolved_.capacity == InputOrigin::kUnknown) return;
  const bool measured = resolved_.capacity == InputOrigin::kMeasured;
  // The episode's own time: from its onset, and, on a measured shard, from the start of the
  // oldest answer the load is read from (all begun since the onset), within the window.
  absl::Time since = onset;
  std::optional<BusyWindow::Sample> busy;
  if (measured) {
    busy = busy_.Over(now, onset);
    if (!busy) return;  // no answer of the shard covers the episode's own time yet
    since = std::max(since, busy->start);
  }
  since = std::max(since, now - track_.rate_window);
  // A span of a few ticks at least: a share over one or two ticks follows their jitter. (A
  // measured load spans one answer of the shard already.)
  if (!measured && now - since < std::min(kMinAdviceSpan, track_.rate_window)) return;
  const std::vector<Base>& bases = BasesSince(point, since);
  KeySnapshot own;
  own.hash = k->hash;
  // All of the key's ops in the span, or its share is still climbing.
  if (!KeyWindowRates(point, bases, now, &own)) return;
  double shard_ops = 0;
  for (size_t i = 0; i < bases.size(); ++i) {
    if (!bases[i].valid) continue;
    for (int o = 0; o < kNumOps; ++o) {
      const double then = bases[i].point ? bases[i].point->raw_total[o] : 0;
      shard_ops += Rate(point.sources[i].raw_total[o] - then, now - bases[i].time);
    }
  }
  // The projections are of the shard as it measures itself, the fix in force included: a
  // fix that works lowers them, so a page on the load with no fix resolves once the kits
  // apply it. What the kits absorbed keeps the key hot and its entry alive (the demand,
  // above), and is reported beside the figures the advice used.
  DemandLedger::Absorbed absorbed;
  if (demand_) {
    if (std::optional<DemandLedger::Absorbed> a = demand_->Over(k->key, since, now)) absorbed = *a;
  }
  if (shard_ops <= 0) return;
  const double key_total = own.ops_per_second[0] + own.ops_per_second[1];
  if (key_total <= 0) return;
  const double share = std::min(1.0, key_total / shard_ops);
  const double writes = own.ops_per_second[1] / key_total;
  const double busy_no_fix = busy ? busy->busy : 0;
  absl::StatusOr<model::Projection> p =
      measured ? model::ProjectBusy(resolved_.cluster, busy_no_fix, shard_ops, share, writes)
               : model::ProjectShare(resolved_.cluster, shard_ops, share, writes);
  if (!p.ok()) return;  // the inputs are validated where they are set; nothing to advise
  for (const model::StrategyLoad& l : p->loads)
    k->projected_load.emplace_back(l.strategy, l.busiest);
  k->advised_on = {shard_ops,
                   absorbed.total(),
                   share,
                   writes,
                   !measured        ? resolved_.cluster.capacity
                   : busy->busy > 0 ? shard_ops / busy->busy
                                    : std::numeric_limits<double>::infinity(),
                   absl::ToDoubleSeconds(now - since)};
  const AdviceHold::Decision d =
      advice_hold_.Observe(k->hash, *p, resolved_.cluster.target, !measured || busy_.Settled(now));
  k->advice = d.fix;
  if (!d.changed || !log_) return;
  log::LogLine line(wall_, "info", "advised fix changed");
  line.Quoted("key", label)
      .Value("from", d.from ? model::StrategyName(*d.from) : "pending")
      .Value("to", model::StrategyName(d.fix));
  for (const model::StrategyLoad& l : p->loads) {
    line.Value(std::string("load_").append(model::StrategyName(l.strategy)),
               absl::StrFormat("%.3f", l.busiest));
  }
  line.Value("target", absl::StrFormat("%g", resolved_.cluster.target))
      .Value("share", absl::StrFormat("%.4f", share))
      .Value("write_ratio", absl::StrFormat("%.3f", writes))
      .Value("ops_per_second", absl::StrFormat("%.0f", shard_ops))
      .Value("absorbed_ops_per_second", absl::StrFormat("%.0f", absorbed.total()))
      .Value("span", absl::FormatDuration(absl::Trunc(now - since, absl::Milliseconds(1))));
  if (busy) {
    line.Value("busy", absl::StrFormat("%.3f", busy->busy));
  } else {
    line.Value("capacity", absl::StrFormat("%g", resolved_.cluster.capacity))
        .Value("capacity_origin", InputOriginName(resolved_.capacity));
  }
  log_(line.text());
}

void Aggregator::SetModelInputs(ModelInputs inputs) { inputs_ = std::move(inputs); }

const ModelInputs& Aggregator::ResolveInputs(double window_ops, uint64_t client_hosts,
                                             absl::Time now) {
  resolved_ = inputs_;
  if (inputs_.measure_capacity) {
    if (inputs_.shard_answers != sampled_answers_) {
      sampled_answers_ = inputs_.shard_answers;
      busy_.Add({inputs_.shard_load_start, inputs_.shard_load_end, inputs_.shard_busy});
    }
    // Once the shard's answers are older than the window (it stopped answering, or asks
    // less often than the window is long), the headroom is unknown again: no stale load
    // drives the advice.
    if (std::optional<BusyWindow::Sample> b = busy_.Over(now); b && window_ops > 0) {
      resolved_.capacity = InputOrigin::kMeasured;
      resolved_.capacity_reason.clear();
      resolved_.cluster.capacity =
          b->busy > 0 ? window_ops / b->busy : std::numeric_limits<double>::infinity();
    } else if (inputs_.shard_up && inputs_.shard_answers > 0) {
      resolved_.capacity_reason = "the shard's last load is older than the rate window";
    }
  }
  if (inputs_.measure_app_servers && client_hosts > 0) {
    resolved_.cluster.app_servers =
        static_cast<int>(std::min<uint64_t>(client_hosts, std::numeric_limits<int>::max()));
    resolved_.app_servers = InputOrigin::kMeasured;
    resolved_.app_servers_reason.clear();
  }
  return resolved_;
}

Aggregator::Aggregator(const config::TrackOptions& track,
                       const config::ReloadableOptions& reloadable, std::string label_secret,
                       absl::Time start, Alerter::LogSink log)
    : track_(track),
      reloadable_(reloadable),
      label_secret_(std::move(label_secret)),
      start_(start),
      log_(log),
      alerter_(reloadable.alert, std::move(log)),
      advice_hold_(reloadable.alert.advice_margin),
      busy_(track.rate_window),
      windows_(HistoryOptions::ForExport(reloadable.exporter.top_k,
                                         reloadable.exporter.label_max_bytes)),
      episodes_(EpisodeLog::kDefaultCapacity, windows_.options().label_bytes) {
  inputs_.cluster = reloadable.cluster;
  resolved_ = inputs_;
  labeler_.emplace(reloadable.exporter.label, reloadable.exporter.label_max_bytes, label_secret_);
  matcher_.emplace(reloadable.alert);
}

void Aggregator::SetReloadable(const config::ReloadableOptions& reloadable) {
  reloadable_ = reloadable;
  labeler_.emplace(reloadable.exporter.label, reloadable.exporter.label_max_bytes, label_secret_);
  matcher_.emplace(reloadable.alert);
  thresholds_.clear();
  alerter_.SetOptions(reloadable.alert);
  advice_hold_.SetMargin(reloadable.alert.advice_margin);
  if (slots_) slots_->SetReloadable(reloadable);
}

void Aggregator::SetClusterInputs(ClusterInputs inputs) {
  cluster_inputs_ = std::move(inputs);
  if (slots_) slots_->SetClusterInputs(cluster_inputs_);
}

namespace {

// A monotonic reading `t` as a wall stamp: `wall` less its distance from `now`.
absl::Time Stamp(absl::Time t, absl::Time now, absl::Time wall) {
  return t == absl::InfinitePast() || t == absl::InfiniteFuture() ? t : wall - (now - t);
}

}  // namespace

std::shared_ptr<const Snapshot> Aggregator::Build(
    std::span<const std::shared_ptr<const source::ReceiverReport>> reports, absl::Time now,
    absl::Time wall, uint64_t kernel_drops) {
  auto snap = std::make_shared<Snapshot>();
  snap->time = wall;
  snap->start_time = Stamp(start_, now, wall);
  snap->kernel_drops = kernel_drops;
  snap->half_life_seconds = absl::ToDoubleSeconds(track_.half_life);
  snap->counts_bytes = counts_bytes_;
  MergeReports(reports, snap.get());
  snap->counters.last_event = Stamp(snap->counters.last_event, now, wall);
  if (!tracker_) return snap;
  ++tick_;
  DecayedFigures(snap.get());
  HistoryPoint point = TakePoint(now, reports.size());
  const std::vector<Base>& bases = WindowRates(reports, now, &point, snap.get());
  // The idle guard reads the fixed-window rate: the decayed rate of a stopped feed only
  // halves every half-life and never reaches 0, and shares (decayed weight over decayed
  // total) stay where they were, so only the window says that the traffic stopped.
  const double window_ops = snap->ops_per_second[0] + snap->ops_per_second[1];
  wall_ = wall;
  if (demand_) demand_->Expire(now);
  snap->model = ResolveInputs(window_ops, snap->counters.client_hosts, now);
  std::vector<KeySnapshot> keys = ObserveKeys(point, bases, now, wall, window_ops);
  snap->absorbed_keys.reserve(demand_now_.size());
  for (const auto& [hash, d] : demand_now_) snap->absorbed_keys.push_back(d.key);
  std::sort(snap->absorbed_keys.begin(), snap->absorbed_keys.end());
  snap->hot_keys = alerter_.hot_count();
  // A shard with no traffic over a whole rate window exports no key shares: they are the
  // last traffic's, frozen, and would read as the present. Until a whole window has passed
  // since start (a restored tracker's shares, before new traffic) the shares stand. (Not
  // the window's span: with ticks a little late the oldest point stays under the window.)
  if (window_ops <= 0 && now - start_ >= track_.rate_window) keys.clear();
  SelectExported(point, bases, now, window_ops, snap->rate_window_seconds, &keys);
  KeepPoint(std::move(point), now);
  snap->keys = std::move(keys);
  const size_t slot_bytes = BuildSlots(reports, now, wall, window_ops, snap.get());
  RecordHistory(now, snap.get());
  snap->merged_tracker_bytes = merged_ ? merged_->MemoryBytes() : 0;
  snap->rate_history_bytes = RateHistoryBytes();
  snap->memory_budget_bytes = MemoryBudget(track_, reports.size(), tracker_->MemoryBytes()) +
                              snap->counters.memory_bound_bytes + slot_bytes;
  return snap;
}

void Aggregator::MergeReports(
    std::span<const std::shared_ptr<const source::ReceiverReport>> reports, Snapshot* snap) {
  // One receiver's tracker is read in place; more are merged into merged_, which is
  // copy-assigned (not re-created) from the first so its memory is reused tick after tick.
  tracker_ = nullptr;
  single_.reset();
  for (const auto& r : reports) {
    if (!r) continue;
    ++snap->receivers;
    snap->counters.Add(r->counters);
    if (snap->sources.empty()) snap->sources.reserve(reports.size());
    snap->sources.push_back(r->counters);
    if (const source::SourceMetrics& own = r->counters.own; own.schema != nullptr) {
      auto same =
          std::find_if(snap->source_metrics.begin(), snap->source_metrics.end(),
                       [&](const source::SourceMetrics& m) { return m.schema == own.schema; });
      if (same == snap->source_metrics.end()) {
        snap->source_metrics.push_back(own);
      } else {
        same->Add(own);
      }
    }
    snap->sketch_bytes += r->tracker.MemoryBytes();
    if (!tracker_) {
      single_ = r;
      tracker_ = &r->tracker;
      continue;
    }
    if (!merged_ || tracker_ != &*merged_) {
      if (merged_) {
        *merged_ = *tracker_;
      } else {
        merged_.emplace(*tracker_);
      }
      tracker_ = &*merged_;
    }
    (void)merged_->Merge(r->tracker);  // fails only for another shape, checked first
  }
}

void Aggregator::DecayedFigures(Snapshot* snap) const {
  const sketch::HeavyHitters& tracker = *tracker_;
  snap->epsilon = tracker.ErrorBound() / std::max(tracker.Total(), 1e-300);
  const double window = tracker.DecayedWindowSeconds();
  for (int o = 0; o < kNumOps; ++o) {
    snap->decayed_ops_per_second[o] =
        window > 0 ? tracker.Total(static_cast<sketch::Op>(o)) / window : 0;
  }
  snap->tracked_keys = tracker.size();
}

const std::vector<Aggregator::Base>& Aggregator::WindowRates(
    std::span<const std::shared_ptr<const source::ReceiverReport>> reports, absl::Time now,
    HistoryPoint* point, Snapshot* snap) {
  // Per source (see aggregator.h): this tick's point, then each source's base.
  for (size_t i = 0; i < reports.size(); ++i) {
    if (!reports[i]) continue;
    FillSource(reports[i]->tracker, &point->sources[i]);
  }
  const std::vector<Base>& bases = FindBases(*point, now);
  for (size_t i = 0; i < bases.size(); ++i) {
    if (!bases[i].valid) continue;
    const absl::Duration span = now - bases[i].time;
    snap->rate_window_seconds = std::max(snap->rate_window_seconds, absl::ToDoubleSeconds(span));
    for (int o = 0; o < kNumOps; ++o) {
      const double then = bases[i].point ? bases[i].point->raw_total[o] : 0;
      snap->ops_per_second[o] += Rate(point->sources[i].raw_total[o] - then, span);
    }
  }
  return bases;
}

void Aggregator::SetFixesInForce(const std::vector<FixInForce>& fixes) {
  fixes_in_force_.clear();
  prefix_fixes_in_force_.clear();
  for (const FixInForce& f : fixes) {
    if (f.mode == model::Strategy::kNone) continue;
    if (f.prefix) {
      prefix_fixes_in_force_.push_back(f);
    } else {
      fixes_in_force_.insert_or_assign(f.key, f.mode);
    }
  }
}

std::string_view Aggregator::FixInForceFor(std::string_view key) const {
  if (auto it = fixes_in_force_.find(absl::string_view(key.data(), key.size()));
      it != fixes_in_force_.end()) {
    return model::StrategyName(it->second);
  }
  for (const FixInForce& f : prefix_fixes_in_force_) {
    if (key.starts_with(f.key)) return model::StrategyName(f.mode);
  }
  return "";
}

void Aggregator::GatherDemand(absl::Time now, uint64_t seed) {
  demand_now_.clear();
  if (!demand_) return;
  demand_->ForEachKey([&](const std::string& key) {
    std::optional<DemandLedger::Absorbed> a = demand_->Over(key, now - kDemandSpan, now);
    if (!a || a->total() <= 0) return;
    demand_now_.try_emplace(sketch::HashKey(key, seed), KeyDemand{key, *a, false});
  });
}

std::vector<KeySnapshot> Aggregator::ObserveKeys(const HistoryPoint& point,
                                                 const std::vector<Base>& bases, absl::Time now,
                                                 absl::Time wall, double window_ops) {
  const sketch::HeavyHitters& tracker = *tracker_;
  const config::ExportOptions& exp = reloadable_.exporter;
  const double window = tracker.DecayedWindowSeconds();
  const double total = tracker.Total();
  // The shard's decayed ops/s, which a key's decayed share is of.
  const double decayed_ops = window > 0 ? total / window : 0;
  std::vector<KeySnapshot> keys;
  alerter_.Begin(now, window_ops, wall);
  advice_hold_.Begin();
  if (history_enabled_) episodes_.Begin(wall);
  GatherDemand(now, tracker.options().seed);
  // A key at or under every threshold and under min_share * (1 - hysteresis), and unknown
  // to the alerter, can be neither hot, nor pending, nor exported: it is passed over with
  // no KeySnapshot, no threshold lookup and no copy of its bytes. At 100,000 candidates
  // and the defaults that cut Build about 5x (hotkey-bench-daemon-cost --mode tick).
  const double min_threshold = matcher_->MinThreshold();
  const double stay = exp.min_share * (1 - exp.hysteresis);
  tracker.ForEach([&](const sketch::HeavyHitter& h) {
    const double share = total > 0 ? h.estimate / total : 0;
    double demand = share;
    KeyDemand* d = nullptr;
    if (!demand_now_.empty()) {
      if (auto it = demand_now_.find(h.hash); it != demand_now_.end() && !h.truncated) {
        d = &it->second;
        d->tracked = true;
        demand = DemandShare(share, decayed_ops, d->recent.total());
      }
    }
    if (demand <= min_threshold && demand < stay && !alerter_.Find(h.hash)) return;
    KeySnapshot k;
    k.key = h.key;
    k.truncated = h.truncated;
    k.hash = h.hash;
    k.decayed_share = share;
    k.demand_share = demand;
    k.share_error = total > 0 ? std::max(0.0, h.estimate - h.lower_bound) / total : 0;
    const double seen = h.weight[0] + h.weight[1];
    k.write_ratio = seen > 0 ? h.weight[1] / seen : 0;
    const double key_ops = window > 0 ? h.estimate / window : 0;
    k.decayed_ops_per_second[0] = key_ops * (1 - k.write_ratio);
    k.decayed_ops_per_second[1] = key_ops * k.write_ratio;
    ObserveKey(point, bases, now, wall, window_ops, std::move(k), &keys);
  });
  // Keys the kits absorb so well that the tracker no longer holds them: their demand alone.
  for (const auto& [hash, d] : demand_now_) {
    if (d.tracked) continue;
    const double demand = DemandShare(0, decayed_ops, d.recent.total());
    if (demand <= min_threshold && demand < stay && !alerter_.Find(hash)) continue;
    KeySnapshot k;
    k.key = d.key;
    k.hash = hash;
    k.demand_share = demand;
    k.write_ratio = d.recent.ops_per_second[1] / d.recent.total();
    ObserveKey(point, bases, now, wall, window_ops, std::move(k), &keys);
  }
  alerter_.Finish();
  advice_hold_.Finish();
  for (auto it = thresholds_.begin(); it != thresholds_.end();) {
    auto cur = it++;
    if (cur->second.tick != tick_) thresholds_.erase(cur);
  }
  return keys;
}

void Aggregator::ObserveKey(const HistoryPoint& point, const std::vector<Base>& bases,
                            absl::Time now, absl::Time wall, double window_ops, KeySnapshot k,
                            std::vector<KeySnapshot>* keys) {
  const KeyLabeler& labeler = *labeler_;
  auto [cached, fresh] = thresholds_.try_emplace(k.hash, CachedThreshold{0, tick_});
  if (fresh) {
    cached->second.threshold = matcher_->ThresholdFor(k.key);
    ++threshold_lookups_;
  }
  cached->second.tick = tick_;
  k.threshold = cached->second.threshold;
  if (demand_ && !demand_now_.empty() && demand_now_.contains(k.hash)) {
    if (std::optional<DemandLedger::Absorbed> a =
            demand_->Over(k.key, now - track_.rate_window, now)) {
      for (int o = 0; o < kNumOps; ++o) k.absorbed_ops_per_second[o] = a->ops_per_second[o];
    }
  }
  // Advice is worked out for hot keys only, on their episode's own figures; the alerter
  // keeps the fix advised and the fix in force for the episode's log lines, as the
  // history does. Looked up for pending and hot keys only (the few the alerter holds), and
  // noted before the observation, so that an episode's first line names a fix the kits
  // still apply from the one before.
  const Alerter::KeyState* before = alerter_.Find(k.hash);
  const std::string_view in_force = before ? FixInForceFor(k.key) : "";
  const uint64_t fixes_changed = alerter_.fixes_changed();
  alerter_.NoteInForce(k.hash, in_force);
  if (alerter_.fixes_changed() != fixes_changed) busy_.ChangeAt(now);
  // Only where kits may report (a ledger is set) is there a first report to wait for.
  const bool fixed = demand_ && before && before->hot &&
                     ((!before->strategy.empty() &&
                       before->strategy != model::StrategyName(model::Strategy::kNone)) ||
                      !in_force.empty());
  k.hot = alerter_.Observe(
      k.hash, k.demand_share, k.threshold,
      [&] { return labeler.Label(k.key, k.truncated, k.hash); }, "",
      fixed ? kFixCoolGrace : absl::ZeroDuration());
  if (const Alerter::KeyState* s = alerter_.Find(k.hash); s && s->hot) {
    k.hot_since = Stamp(s->hot_since, now, wall);
    k.peak_share = s->peak_share;
    WindowFigures(point, bases, now, window_ops, &k);
    Advise(point, now, s->over_since, s->label, &k);
    if (!k.projected_load.empty()) alerter_.NoteFix(k.hash, model::StrategyName(k.advice));
    if (history_enabled_) {
      episodes_.Hot(EpisodeLog::Kind::kKey, k.hash, s->label, k.demand_share,
                    k.ops_per_second[0] + k.ops_per_second[1], k.threshold, s->strategy, in_force);
    }
  }
  keys->push_back(std::move(k));
}

void Aggregator::SelectExported(const HistoryPoint& point, const std::vector<Base>& bases,
                                absl::Time now, double window_ops, double rate_window_seconds,
                                std::vector<KeySnapshot>* keys) {
  const config::ExportOptions& exp = reloadable_.exporter;
  const double stay = exp.min_share * (1 - exp.hysteresis);
  // The exported set: hot keys; keys already exported while over min_share * (1 -
  // hysteresis); and keys over min_share with the evidence of min_key_ops_per_second in the
  // rate window. At most top_k, largest share first.
  std::erase_if(*keys, [&](KeySnapshot& k) {
    if (k.hot) return false;
    if (exported_.contains(k.hash)) return k.decayed_share < stay;
    if (k.decayed_share < exp.min_share) return true;
    if (exp.min_key_ops_per_second <= 0) return false;
    // Over the whole rate window even before it has filled (at start), so that a key
    // needs min_key_ops_per_second * rate_window ops from the start on.
    KeyWindowRates(point, bases, now, &k);
    const double ops = (k.ops_per_second[0] + k.ops_per_second[1]) * rate_window_seconds;
    return ops < exp.min_key_ops_per_second * absl::ToDoubleSeconds(track_.rate_window);
  });
  // Ties in share break by hash, then by the bytes, not by the table's order: slots are
  // renumbered by Merge() and Deserialize(), and the order of the exported keys must not
  // change when their figures do not.
  auto before = [](const KeySnapshot& x, const KeySnapshot& y) {
    if (x.decayed_share != y.decayed_share) return x.decayed_share > y.decayed_share;
    if (x.hot != y.hot) return x.hot;
    if (x.hash != y.hash) return x.hash < y.hash;
    return std::tie(x.key, x.truncated) < std::tie(y.key, y.truncated);
  };
  // The top_k by (hot first, then share): selected by index, so that only the kept keys
  // move.
  if (keys->size() > exp.top_k) {
    std::vector<uint32_t> order(keys->size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::partial_sort(order.begin(), order.begin() + exp.top_k, order.end(),
                      [keys, &before](uint32_t a, uint32_t b) {
                        const KeySnapshot& x = (*keys)[a];
                        const KeySnapshot& y = (*keys)[b];
                        if (x.hot != y.hot) return x.hot;
                        return before(x, y);
                      });
    order.resize(exp.top_k);
    std::vector<KeySnapshot> kept;
    kept.reserve(exp.top_k);
    for (uint32_t i : order) kept.push_back(std::move((*keys)[i]));
    *keys = std::move(kept);
  }
  std::sort(keys->begin(), keys->end(), before);
  exported_.clear();
  const KeyLabeler& labeler = *labeler_;
  for (KeySnapshot& k : *keys) {
    exported_.insert(k.hash);
    k.label = labeler.Label(k.key, k.truncated, k.hash);
    WindowFigures(point, bases, now, window_ops, &k);
  }
}

void Aggregator::KeepPoint(HistoryPoint point, absl::Time now) {
  // A tick closer than half a publish interval to the newest point is not kept (its figures
  // are out; it is only not a base for later ticks), so the points stay at least that far
  // apart and the history holds at most track_.MaxRatePoints() however often Build() runs
  // (each source's publish asks for one).
  if (!history_.empty() && now - history_.back().time < track_.publish_interval / 2) {
    if (spare_.size() < 2) spare_.push_back(std::move(point));
  } else {
    history_.push_back(std::move(point));
  }
}

size_t Aggregator::BuildSlots(
    std::span<const std::shared_ptr<const source::ReceiverReport>> reports, absl::Time now,
    absl::Time wall, double window_ops, Snapshot* snap) {
  const source::SourceReport* with_slots = nullptr;
  for (const auto& r : reports) {
    if (r && r->slots) with_slots = r.get();
  }
  // A shard that said it is not in a cluster has no slots to report, nor do counts switched
  // off (--track.slots=auto before the shard says it is a cluster node).
  if (!with_slots || inputs_.shard_standalone || !with_slots->slots->counting()) return 0;
  if (!slots_) {
    slots_.emplace(track_, reloadable_, log_);
    slots_->SetClusterInputs(cluster_inputs_);
  }
  const model::Cluster& c = snap->model.cluster;
  snap->slots =
      slots_->Build(reports, *tracker_, now, wall, window_ops, c.target,
                    c.capacity > 0 ? std::optional<double>(c.capacity) : std::nullopt, *labeler_);
  // Each source's counts and their report copies, and the tracker's arrays.
  const size_t counts = with_slots->slots->MemoryBytes();
  return reports.size() * (1 + source::ReportBuffer::kMaxReports) * counts +
         SlotTracker::MemoryBound(with_slots->slots->tags().MemoryBytes());
}

void Aggregator::RecordHistory(absl::Time now, Snapshot* snap) {
  if (history_enabled_) {
    const double threshold = reloadable_.alert.default_threshold;
    for (const SlotSnapshot& sl : snap->slots.slots) {
      if (!sl.hot) continue;
      episodes_.Hot(EpisodeLog::Kind::kSlot, sl.slot, absl::StrCat(sl.slot), sl.decayed_share,
                    sl.ops_per_second, threshold, SlotAdviceName(sl.advice));
    }
    for (const TagSnapshot& t : snap->slots.tags) {
      if (!t.hot) continue;
      episodes_.Hot(EpisodeLog::Kind::kTag, t.hash, t.label, t.decayed_share, t.ops_per_second,
                    threshold, "");
    }
    episodes_.Finish();
    windows_.Record(*snap, now);
  }
  snap->history_bytes = windows_.MemoryBytes() + episodes_.MemoryBytes();
  snap->history_bound_bytes =
      History::MemoryBound(windows_.options()) +
      EpisodeLog::MemoryBound(episodes_.capacity(), windows_.options().label_bytes);
  snap->history_windows[0] = windows_.fine_count();
  snap->history_windows[1] = windows_.coarse_count();
  snap->episodes = episodes_.count();
  snap->open_episodes = episodes_.open_count();
}

size_t Aggregator::RateHistoryBytes() const {
  size_t n = 0;
  auto add = [&n](const HistoryPoint& p) {
    n += sizeof(HistoryPoint) + p.sources.capacity() * sizeof(SourcePoint);
    for (const SourcePoint& s : p.sources) n += s.keys.capacity() * sizeof(KeyRaw);
  };
  for (const HistoryPoint& p : history_) add(p);
  for (const HistoryPoint& p : spare_) add(p);
  return n;
}

// options.h and the README state the rate history's entries as 40 bytes each.
static_assert(sizeof(Aggregator::KeyRaw) == 40);

size_t Aggregator::RateHistoryBound(const config::TrackOptions& track, size_t sources) {
  return track.MaxRatePoints() *
         (sizeof(HistoryPoint) +
          sources * (sizeof(SourcePoint) + track.candidates * sizeof(KeyRaw)));
}

size_t Aggregator::MemoryBudget(const config::TrackOptions& track, size_t sources,
                                size_t tracker_bytes) {
  const size_t copies = sources * (1 + source::ReportBuffer::kMaxReports) + (sources > 1 ? 1 : 0);
  return copies * tracker_bytes + RateHistoryBound(track, sources);
}

}  // namespace hotkey::aggregate
