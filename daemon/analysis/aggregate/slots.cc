#include "hotkey/aggregate/slots.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "absl/strings/str_cat.h"

namespace hotkey::aggregate {

using cluster::kSlots;

const ClusterNode* ClusterInputs::Myself() const {
  for (const ClusterNode& n : nodes) {
    if (n.myself) return &n;
  }
  return nullptr;
}

SlotTracker::SlotTracker(const config::TrackOptions& track,
                         const config::ReloadableOptions& reloadable, Alerter::LogSink log)
    : track_(track),
      reloadable_(reloadable),
      slot_alerter_(reloadable.alert, log, "slot"),
      tag_alerter_(reloadable.alert, log, "tag"),
      last_(kSlots, 0.0),
      sum_(kSlots, 0.0),
      decayed_(kSlots, 0.0),
      ring_(static_cast<size_t>(kBuckets + 1) * kSlots, 0.0f),
      bucket_start_(kBuckets + 1, absl::InfiniteFuture()),
      bucket_total_(kBuckets + 1, 0.0) {}

void SlotTracker::SetReloadable(const config::ReloadableOptions& reloadable) {
  reloadable_ = reloadable;
  slot_alerter_.SetOptions(reloadable.alert);
  tag_alerter_.SetOptions(reloadable.alert);
}

size_t SlotTracker::MemoryBound(size_t tracker_bytes) {
  return 3 * kSlots * sizeof(double) + (kBuckets + 1) * kSlots * sizeof(float) +
         (kBuckets + 1) * (sizeof(absl::Time) + sizeof(double)) + tracker_bytes;
}

size_t SlotTracker::MemoryBytes() const {
  return MemoryBound(merged_tags_ ? merged_tags_->MemoryBytes() : 0);
}

void SlotTracker::TakeCounts(std::span<const std::shared_ptr<const source::SourceReport>> reports,
                             absl::Time now) {
  std::fill(sum_.begin(), sum_.end(), 0.0);
  int sources = 0;
  for (const auto& r : reports) {
    if (!r || !r->slots) continue;
    ++sources;
    const std::vector<double>& c = r->slots->counts();
    for (int s = 0; s < kSlots; ++s) sum_[s] += c[s];
  }
  // A new set of sources, or a count that went back: this tick is only the base.
  bool base_only = sources != last_sources_;
  for (int s = 0; !base_only && s < kSlots; ++s) base_only = sum_[s] < last_[s];
  const double dt = last_sources_ < 0 ? 0 : absl::ToDoubleSeconds(now - last_time_);
  last_sources_ = sources;
  last_time_ = now;
  if (base_only || dt <= 0) {
    std::swap(last_, sum_);
    return;
  }
  // Decay to now, then add what arrived since the last tick, each event weighed as the
  // trackers weigh it at now: as if spread evenly over the interval, by the mean of
  // 2^-(age/h) over it, so a slot's decayed rate and its keys' agree.
  const double h = absl::ToDoubleSeconds(track_.half_life);
  const double f = std::exp2(-dt / h);
  const double g = (1 - f) / (dt / h * std::numbers::ln2);
  decayed_window_ = decayed_window_ * f + h / std::numbers::ln2 * (1 - f);
  // The window's bucket: a new one once the current is rate_window / kBuckets old.
  const absl::Duration width = track_.rate_window / kBuckets;
  if (bucket_start_[bucket_] == absl::InfiniteFuture()) {
    bucket_start_[bucket_] = now - absl::Seconds(dt);
  } else if (now - bucket_start_[bucket_] >= width) {
    bucket_ = (bucket_ + 1) % (kBuckets + 1);
    std::fill_n(ring_.begin() + static_cast<size_t>(bucket_) * kSlots, kSlots, 0.0f);
    bucket_start_[bucket_] = now - absl::Seconds(dt);
    bucket_total_[bucket_] = 0;
  }
  float* bucket = ring_.data() + static_cast<size_t>(bucket_) * kSlots;
  double total = 0;
  for (int s = 0; s < kSlots; ++s) {
    const double delta = sum_[s] - last_[s];
    decayed_[s] = decayed_[s] * f + delta * g;
    total += delta;
    bucket[s] += static_cast<float>(delta);
  }
  decayed_total_ = decayed_total_ * f + total * g;
  bucket_total_[bucket_] += total;
  std::swap(last_, sum_);
}

const sketch::HeavyHitters* SlotTracker::MergeTags(
    std::span<const std::shared_ptr<const source::SourceReport>> reports) {
  const sketch::HeavyHitters* tags = nullptr;
  for (const auto& r : reports) {
    if (!r || !r->slots) continue;
    if (!tags) {
      tags = &r->slots->tags();
      continue;
    }
    if (!merged_tags_ || tags != &*merged_tags_) {
      if (merged_tags_) {
        *merged_tags_ = *tags;
      } else {
        merged_tags_.emplace(*tags);
      }
      tags = &*merged_tags_;
    }
    (void)merged_tags_->Merge(r->slots->tags());  // one shape: every source's from one prototype
  }
  return tags;
}

SlotsSnapshot SlotTracker::Build(
    std::span<const std::shared_ptr<const source::SourceReport>> reports,
    const sketch::HeavyHitters& keys, absl::Time now, absl::Time wall, double shard_ops,
    double target_load, std::optional<double> capacity_ops, const KeyLabeler& labeler) {
  SlotsSnapshot out;
  out.cluster = cluster_;
  for (ClusterNode& n : out.cluster.nodes) {
    if (n.myself && capacity_ops) n.capacity_ops = capacity_ops;
  }
  TakeCounts(reports, now);
  out.enabled = last_sources_ > 0;
  const auto stamp = [&](absl::Time t) {
    return t == absl::InfiniteFuture() ? t : wall - (now - t);
  };
  const config::AlertOptions& alert = reloadable_.alert;
  const config::ExportOptions& exp = reloadable_.exporter;
  const double threshold = alert.default_threshold;
  const double stay = exp.min_share * (1 - exp.hysteresis);
  const double cool = threshold * (1 - alert.hysteresis);

  // The window: every bucket in use, from the oldest start to now.
  absl::Time window_start = now;
  double window_total = 0;
  for (int b = 0; b <= kBuckets; ++b) {
    if (bucket_start_[b] == absl::InfiniteFuture()) continue;
    window_start = std::min(window_start, bucket_start_[b]);
    window_total += bucket_total_[b];
  }
  const double span = absl::ToDoubleSeconds(now - window_start);
  const auto window_ops = [&](uint16_t slot) {
    double sum = 0;
    for (int b = 0; b <= kBuckets; ++b) sum += ring_[static_cast<size_t>(b) * kSlots + slot];
    return std::max(0.0, sum);
  };

  // Slots that may be hot or exported; the rest are passed over.
  slot_alerter_.Begin(now, shard_ops, wall);
  std::vector<SlotSnapshot> slots;
  for (int s = 0; s < kSlots && decayed_total_ > 0; ++s) {
    const double share = decayed_[s] / decayed_total_;
    if (share <= cool && share < stay && !slot_alerter_.Find(s)) continue;
    SlotSnapshot v;
    v.slot = static_cast<uint16_t>(s);
    v.decayed_share = share;
    v.hot = slot_alerter_.Observe(
        s, share, threshold, [&] { return absl::StrCat(s); }, "");
    if (const Alerter::KeyState* st = slot_alerter_.Find(s); st && st->hot) {
      v.hot_since = stamp(st->hot_since);
    }
    slots.push_back(std::move(v));
  }
  slot_alerter_.Finish();
  out.hot_slots = slot_alerter_.hot_count();
  std::erase_if(slots, [&](const SlotSnapshot& v) {
    if (v.hot) return false;
    if (exported_slots_.contains(v.slot)) return v.decayed_share < stay;
    return v.decayed_share < exp.min_share;
  });
  const auto slot_before = [](const SlotSnapshot& x, const SlotSnapshot& y) {
    if (x.hot != y.hot) return x.hot;
    if (x.decayed_share != y.decayed_share) return x.decayed_share > y.decayed_share;
    return x.slot < y.slot;
  };
  std::sort(slots.begin(), slots.end(), slot_before);
  if (slots.size() > exp.top_k) slots.resize(exp.top_k);
  std::sort(slots.begin(), slots.end(), [](const SlotSnapshot& x, const SlotSnapshot& y) {
    if (x.decayed_share != y.decayed_share) return x.decayed_share > y.decayed_share;
    return x.slot < y.slot;
  });
  exported_slots_.clear();

  // Idle: shares stay where the last traffic left them; none is exported (as keys).
  if (shard_ops <= 0) slots.clear();
  // Each exported slot's busiest tracked key and tag (a truncated one's slot is not known).
  absl::flat_hash_map<uint16_t, std::optional<sketch::HeavyHitter>> best, best_tag;
  for (const SlotSnapshot& v : slots) {
    best[v.slot];
    best_tag[v.slot];
  }
  const auto keep_best = [](auto& map, const sketch::HeavyHitter& h) {
    if (h.truncated) return;
    auto it = map.find(cluster::KeySlot(h.key));
    if (it == map.end() || (it->second && h.estimate <= it->second->estimate)) return;
    it->second = h;
  };
  const sketch::HeavyHitters* tags = MergeTags(reports);
  if (!best.empty()) {
    keys.ForEach([&](const sketch::HeavyHitter& h) { keep_best(best, h); });
    if (tags) tags->ForEach([&](const sketch::HeavyHitter& h) { keep_best(best_tag, h); });
  }
  const double key_window = keys.DecayedWindowSeconds();
  const double tag_window = tags ? tags->DecayedWindowSeconds() : 0;
  const auto slot_rate = [&](uint16_t slot) {
    return decayed_window_ > 0 ? decayed_[slot] / decayed_window_ : 0;
  };
  // A key's or tag's part of its slot's decayed ops: both decay as the slots do.
  const auto part = [&](const std::optional<sketch::HeavyHitter>& h, double window, uint16_t slot) {
    const double rate = slot_rate(slot);
    return h && rate > 0 && window > 0 ? std::min(1.0, h->estimate / window / rate) : 0.0;
  };
  const double tag_total = keys.Total();
  bool cause_is_one = false;  // a hot slot advised `key` or `tag`
  for (SlotSnapshot& v : slots) {
    exported_slots_.insert(v.slot);
    const double ops = window_ops(v.slot);
    v.share = window_total > 0 ? ops / window_total : 0;
    v.ops_per_second = span > 0 ? ops / span : 0;
    if (const std::optional<sketch::HeavyHitter>& k = best[v.slot]) {
      v.top_key = labeler.Label(k->key, k->truncated, k->hash);
      v.top_key_share = part(k, key_window, v.slot);
    }
    const std::optional<sketch::HeavyHitter>& t = best_tag[v.slot];
    if (t) {
      v.top_tag = labeler.Label(t->key, t->truncated, t->hash);
      v.top_tag_share = part(t, tag_window, v.slot);
    }
    if (!v.hot) continue;
    // Past kKeyDominates the key's (or tag's) fix; under kKeyReleases neither; between, as
    // before.
    SlotAdvice& a = advice_[v.slot];
    if (v.top_key_share >= kKeyDominates ||
        (a == SlotAdvice::kKey && v.top_key_share >= kKeyReleases)) {
      a = SlotAdvice::kKey;
    } else if (v.top_tag_share >= kKeyDominates ||
               (a == SlotAdvice::kTag && v.top_tag_share >= kKeyReleases)) {
      a = SlotAdvice::kTag;
    } else {
      a = SlotAdvice::kNone;  // `move` once the plan moves it
    }
    v.advice = a;
    if (a == SlotAdvice::kTag && tag_total > 0) {
      const double tag_share = t->estimate / tag_total;
      v.tag_split = std::max(2, static_cast<int>(std::ceil(tag_share / cool)));
    }
    cause_is_one = cause_is_one || a != SlotAdvice::kNone;
  }
  for (auto it = advice_.begin(); it != advice_.end();) {
    auto cur = it++;
    const bool hot = std::any_of(slots.begin(), slots.end(), [&](const SlotSnapshot& v) {
      return v.hot && v.slot == cur->first;
    });
    if (!hot) advice_.erase(cur);
  }

  // The node against its peers.
  const ClusterNode* self = cluster_.Myself();
  double peers_sum = 0;
  std::vector<cluster::NodeLoad> others;
  for (const ClusterNode& n : cluster_.nodes) {
    if (n.myself) continue;
    ++out.peers.peers;
    if (!n.up || !n.ops_per_second) continue;
    others.push_back({n.id, n.address, *n.ops_per_second, n.capacity_ops});
    peers_sum += *n.ops_per_second;
  }
  out.peers.peers_up = others.size();
  if (self) out.peers.ops_per_second = self->ops_per_second;
  if (!others.empty()) {
    out.peers.peers_mean = peers_sum / static_cast<double>(others.size());
    if (self && self->ops_per_second && *out.peers.peers_mean > 0) {
      out.peers.ratio = *self->ops_per_second / *out.peers.peers_mean;
    }
  }

  // The plan: every slot the node serves, on its part of the node's commands over the window.
  std::optional<cluster::MovePlan> plan;
  if (!cause_is_one && self && self->ops_per_second && !others.empty() && window_total > 0 &&
      shard_ops > 0) {
    // The own capacity as the advice measures it (over the rate window), else the last answer's.
    cluster::NodeLoad me{self->id, self->address, *self->ops_per_second,
                         capacity_ops ? capacity_ops : self->capacity_ops};
    std::vector<cluster::SlotOps> movable;
    const auto add = [&](int s) {
      const double ops = window_ops(static_cast<uint16_t>(s));
      if (ops > 0) {
        movable.push_back({static_cast<uint16_t>(s), ops / window_total * *self->ops_per_second});
      }
    };
    if (cluster_.my_slots.empty()) {
      for (int s = 0; s < kSlots; ++s) add(s);
    } else {
      for (const cluster::SlotRange& r : cluster_.my_slots) {
        for (int s = r.first; s <= r.last && s < kSlots; ++s) add(s);
      }
    }
    cluster::MoveOptions options;
    options.target_load = target_load;
    options.tls = cluster_.tls;
    plan = cluster::PlanRebalance(me, others, movable, options, plan_ ? &*plan_ : nullptr);
  }
  plan_ = plan;
  out.move = std::move(plan);
  if (out.move) {
    for (SlotSnapshot& v : slots) {
      if (!v.hot || v.advice != SlotAdvice::kNone) continue;
      for (const cluster::Transfer& t : out.move->to) {
        if (std::find(t.slots.begin(), t.slots.end(), v.slot) != t.slots.end()) {
          v.advice = SlotAdvice::kMove;
        }
      }
    }
  }
  out.slots = std::move(slots);

  // Tags.
  tag_alerter_.Begin(now, shard_ops, wall);
  std::vector<TagSnapshot> tag_list;
  if (tags && tag_total > 0 && shard_ops > 0) {
    tags->ForEach([&](const sketch::HeavyHitter& h) {
      const double share = h.estimate / tag_total;
      if (share <= cool && share < stay && !tag_alerter_.Find(h.hash)) return;
      TagSnapshot t;
      t.tag = h.key;
      t.hash = h.hash;
      t.truncated = h.truncated;
      t.slot = h.truncated ? 0 : cluster::KeySlot(h.key);
      t.decayed_share = share;
      if (!h.truncated) {
        const double of_slot = part(h, tag_window, t.slot);
        const double ops = window_ops(t.slot) * of_slot;
        t.share = window_total > 0 ? ops / window_total : 0;
        t.ops_per_second = span > 0 ? ops / span : 0;
      }
      t.hot = tag_alerter_.Observe(
          h.hash, share, threshold, [&] { return labeler.Label(h.key, h.truncated, h.hash); }, "");
      if (!t.hot) {
        if (exported_tags_.contains(h.hash) ? share < stay : share < exp.min_share) return;
      }
      t.label = labeler.Label(h.key, h.truncated, h.hash);
      tag_list.push_back(std::move(t));
    });
  }
  tag_alerter_.Finish();
  out.hot_tags = tag_alerter_.hot_count();
  std::sort(tag_list.begin(), tag_list.end(), [](const TagSnapshot& x, const TagSnapshot& y) {
    if (x.hot != y.hot) return x.hot;
    if (x.decayed_share != y.decayed_share) return x.decayed_share > y.decayed_share;
    return x.tag < y.tag;
  });
  if (tag_list.size() > exp.top_k) tag_list.resize(exp.top_k);
  std::sort(tag_list.begin(), tag_list.end(), [](const TagSnapshot& x, const TagSnapshot& y) {
    return x.decayed_share != y.decayed_share ? x.decayed_share > y.decayed_share : x.tag < y.tag;
  });
  exported_tags_.clear();
  for (const TagSnapshot& t : tag_list) exported_tags_.insert(t.hash);
  out.tags = std::move(tag_list);
  out.memory_bytes = MemoryBytes();
  return out;
}

}  // namespace hotkey::aggregate
