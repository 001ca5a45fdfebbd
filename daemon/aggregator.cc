#include "aggregator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace hotkey::daemon {

namespace {

using sketch::kNumOps;

// Undecayed weight over (then, now] per second; 0 before any time has passed.
double Rate(double delta, absl::Duration span) {
  const double s = absl::ToDoubleSeconds(span);
  return s > 0 && delta > 0 ? delta / s : 0;
}

void Project(const model::Cluster& cluster, double shard_ops, KeySnapshot* k) {
  const double key_ops = k->share * shard_ops;
  absl::StatusOr<model::Projection> p =
      model::ProjectMeasured(cluster, std::max(0.0, shard_ops - key_ops), key_ops, k->write_ratio);
  k->projected_load.clear();
  if (!p.ok()) return;  // cluster options are validated at load; nothing to advise
  k->advice = p->advice;
  for (const model::StrategyLoad& l : p->loads)
    k->projected_load.emplace_back(l.strategy, l.busiest);
}

}  // namespace

Aggregator::Aggregator(const config::TrackOptions& track,
                       const config::ReloadableOptions& reloadable, std::string label_secret,
                       absl::Time start, Alerter::LogSink log)
    : track_(track),
      reloadable_(reloadable),
      label_secret_(std::move(label_secret)),
      start_(start),
      alerter_(reloadable.alert, std::move(log)) {
  labeler_.emplace(reloadable.exporter.label, reloadable.exporter.label_max_bytes, label_secret_);
  matcher_.emplace(reloadable.alert);
}

void Aggregator::SetReloadable(const config::ReloadableOptions& reloadable) {
  reloadable_ = reloadable;
  labeler_.emplace(reloadable.exporter.label, reloadable.exporter.label_max_bytes, label_secret_);
  matcher_.emplace(reloadable.alert);
  thresholds_.clear();
  alerter_.SetOptions(reloadable.alert);
}

std::shared_ptr<const Snapshot> Aggregator::Build(
    std::span<const std::shared_ptr<const ReceiverReport>> reports, absl::Time now,
    uint64_t kernel_drops) {
  auto snap = std::make_shared<Snapshot>();
  snap->time = now;
  snap->start_time = start_;
  snap->kernel_drops = kernel_drops;
  snap->half_life_seconds = absl::ToDoubleSeconds(track_.half_life);

  // Merge: one receiver's tracker is read in place; more are merged into merged_, which is
  // copy-assigned (not re-created) from the first so its memory is reused tick after tick.
  tracker_ = nullptr;
  single_.reset();
  for (const auto& r : reports) {
    if (!r) continue;
    ++snap->receivers;
    snap->counters.Add(r->counters);
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
  const sketch::HeavyHitters* tracker = tracker_;
  if (!tracker) return snap;
  ++tick_;
  snap->epsilon = tracker->ErrorBound() / std::max(tracker->Total(), 1e-300);

  // Decayed figures: weight over the decay window.
  const double window = tracker->DecayedWindowSeconds();
  const double total = tracker->Total();
  for (int o = 0; o < kNumOps; ++o) {
    snap->decayed_ops_per_second[o] =
        window > 0 ? tracker->Total(static_cast<sketch::Op>(o)) / window : 0;
  }
  const double shard_ops = snap->decayed_ops_per_second[0] + snap->decayed_ops_per_second[1];

  std::vector<sketch::HeavyHitter> all = tracker->TopK(tracker->size());
  snap->tracked_keys = all.size();

  // Fixed-window figures: differences of undecayed counts against the oldest point kept.
  // With no point yet, the base is zero counts at start_, unless the tracker holds counts
  // from before start_ (state restored from a previous run): then this first point is only
  // the baseline, or lifetime totals would be counted as one tick of traffic.
  while (!history_.empty() && history_.front().time < now - track_.rate_window) {
    history_.pop_front();
  }
  const HistoryPoint* base = history_.empty() ? nullptr : &history_.front();
  const bool baseline_only =
      !base && std::any_of(all.begin(), all.end(),
                           [&](const sketch::HeavyHitter& h) { return h.admitted < start_; });
  const absl::Time base_time = base ? base->time : baseline_only ? now : start_;
  snap->rate_window_seconds = absl::ToDoubleSeconds(now - base_time);
  for (int o = 0; o < kNumOps; ++o) {
    const double raw = tracker->RawTotal(static_cast<sketch::Op>(o));
    snap->ops_per_second[o] = Rate(raw - (base ? base->raw_total[o] : 0), now - base_time);
  }

  HistoryPoint point{now, {}, {}};
  point.keys.reserve(all.size());
  for (int o = 0; o < kNumOps; ++o)
    point.raw_total[o] = tracker->RawTotal(static_cast<sketch::Op>(o));

  const config::AlertOptions& alert = reloadable_.alert;
  const config::ExportOptions& exp = reloadable_.exporter;
  const KeyLabeler& labeler = *labeler_;
  std::vector<KeySnapshot> keys;
  keys.reserve(all.size());
  alerter_.Begin(now, shard_ops);
  for (sketch::HeavyHitter& h : all) {
    KeySnapshot k;
    k.key = std::move(h.key);
    k.truncated = h.truncated;
    k.hash = h.hash;
    k.share = total > 0 ? h.estimate / total : 0;
    k.share_error = total > 0 ? std::max(0.0, h.estimate - h.lower_bound) / total : 0;
    const double seen = h.weight[0] + h.weight[1];
    k.write_ratio = seen > 0 ? h.weight[1] / seen : 0;
    const double key_ops = window > 0 ? h.estimate / window : 0;
    k.decayed_ops_per_second[0] = key_ops * (1 - k.write_ratio);
    k.decayed_ops_per_second[1] = key_ops * k.write_ratio;
    // Window rate: against the base point if the key was already tracked then (and not
    // re-admitted since), else since it was admitted.
    const KeyRaw* then = nullptr;
    if (base) {
      auto it = base->keys.find(h.hash);
      if (it != base->keys.end() && it->second.admitted == h.admitted) then = &it->second;
    }
    for (int o = 0; o < kNumOps && !baseline_only; ++o) {
      k.ops_per_second[o] = then ? Rate(h.raw_weight[o] - then->raw[o], now - base_time)
                                 : Rate(h.raw_weight[o], now - std::max(h.admitted, start_));
    }
    point.keys.emplace(h.hash, KeyRaw{{h.raw_weight[0], h.raw_weight[1]}, h.admitted});

    auto [cached, fresh] = thresholds_.try_emplace(k.hash, CachedThreshold{0, tick_});
    if (fresh) {
      cached->second.threshold = matcher_->ThresholdFor(k.key);
      ++threshold_lookups_;
    }
    cached->second.tick = tick_;
    k.threshold = cached->second.threshold;
    // Advice is worked out for keys that may be hot (it goes into the episode's log line);
    // exported keys get theirs below.
    if (k.share > k.threshold * (1 - alert.hysteresis)) Project(reloadable_.cluster, shard_ops, &k);
    k.hot = alerter_.Observe(
        h.hash, k.share, k.threshold, [&] { return labeler.Label(k.key, k.truncated, k.hash); },
        k.projected_load.empty() ? "" : model::StrategyName(k.advice));
    if (const Alerter::KeyState* s = alerter_.Find(h.hash); s && s->hot) {
      k.hot_since = s->hot_since;
      k.peak_share = s->peak_share;
    }
    keys.push_back(std::move(k));
  }
  alerter_.Finish();
  for (auto it = thresholds_.begin(); it != thresholds_.end();) {
    auto cur = it++;
    if (cur->second.tick != tick_) thresholds_.erase(cur);
  }
  snap->hot_keys = alerter_.hot_count();
  history_.push_back(std::move(point));

  // The exported set: hot keys, and keys over min_share (or, already exported, over
  // min_share * (1 - hysteresis)); at most top_k, largest share first.
  const double stay = exp.min_share * (1 - exp.hysteresis);
  std::erase_if(keys, [&](const KeySnapshot& k) {
    return !(k.hot || k.share >= exp.min_share || (k.share >= stay && exported_.contains(k.hash)));
  });
  std::stable_sort(keys.begin(), keys.end(), [](const KeySnapshot& a, const KeySnapshot& b) {
    return a.hot != b.hot ? a.hot : a.share > b.share;
  });
  if (keys.size() > exp.top_k) keys.resize(exp.top_k);
  std::stable_sort(keys.begin(), keys.end(),
                   [](const KeySnapshot& a, const KeySnapshot& b) { return a.share > b.share; });
  exported_.clear();
  for (KeySnapshot& k : keys) {
    exported_.insert(k.hash);
    k.label = labeler.Label(k.key, k.truncated, k.hash);
    if (k.projected_load.empty()) Project(reloadable_.cluster, shard_ops, &k);
  }
  snap->keys = std::move(keys);
  return snap;
}

}  // namespace hotkey::daemon
