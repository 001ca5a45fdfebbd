#include "hotkey/aggregate/load_comparison.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "hotkey/text/json.h"

namespace hotkey::aggregate {

namespace {

namespace json = boost::json;
using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

// The busiest and least busy shard of `m`, as fractions of `capacity`.
struct Extremes {
  double busiest = 0;
  size_t busiest_shard = 0;
  double least_busy = 0;
};

Extremes Of(const config::MeasuredLoads& m, double capacity) {
  const auto& v = m.ops_per_second;  // never empty (ParseMeasuredLoads)
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return Extremes{*hi / capacity, static_cast<size_t>(hi - v.begin()), *lo / capacity};
}

// The members every measured entry has: when, how old, whether stale, and its extremes.
void AddMeasured(json::object& o, const config::MeasuredLoads& m, double capacity, absl::Time now,
                 absl::Duration max_age) {
  const Extremes e = Of(m, capacity);
  o["time"] = Rfc3339(m.time);
  o["age_seconds"] = absl::ToDoubleSeconds(now - m.time);
  o["stale"] = now - m.time > max_age;
  // null while the capacity is unknown (NaN) or an idle shard's (+inf): no fraction of it.
  const bool known = std::isfinite(capacity);
  o["busiest"] = known ? json::value(e.busiest) : json::value(nullptr);
  o["busiest_shard"] = e.busiest_shard;
  o["least_busy"] = known ? json::value(e.least_busy) : json::value(nullptr);
}

MetricFamily Single(std::string name, std::string help, MetricType type, double value) {
  MetricFamily f{std::move(name), std::move(help), type, {}};
  ClientMetric m;
  if (type == MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(std::move(m));
  return f;
}

}  // namespace

void LoadComparison::Observe(const Snapshot& snap, const model::Cluster& cluster) {
  std::lock_guard<std::mutex> l(mu_);
  cluster_ = cluster;
  const std::string* named = latest_ && !latest_->key.empty() ? &latest_->key : nullptr;
  const KeySnapshot* key = nullptr;
  for (const KeySnapshot& k : snap.keys) {  // largest share first
    if (named ? k.label == *named : k.hot) {
      key = &k;
      break;
    }
  }
  // No capacity to project on: unknown (no shard, no flag) or an idle shard's.
  if (key == nullptr || !std::isfinite(cluster.capacity)) return;
  // The aggregator's own call and figures for the key's advice (aggregator.cc).
  const double shard_ops = snap.ops_per_second[0] + snap.ops_per_second[1];
  absl::StatusOr<model::Projection> p =
      model::ProjectShare(cluster, shard_ops, key->share, key->write_ratio);
  if (!p.ok()) return;  // the cluster is validated at load; a share is in [0, 1]
  noted_.push_back(Noted{snap.time, key->label, shard_ops, key->share, key->write_ratio,
                         *std::move(p), 1, cluster.capacity});
  while (noted_.size() > kMaxNoted) noted_.pop_front();
}

void LoadComparison::Update(const absl::StatusOr<std::optional<config::MeasuredLoads>>& polled) {
  std::lock_guard<std::mutex> l(mu_);
  if (!polled.ok()) {
    last_read_successful_ = false;
    last_error_ = std::string(polled.status().message());
    ++read_errors_;
    return;
  }
  if (!polled->has_value()) return;
  last_read_successful_ = true;
  last_error_.clear();
  const config::MeasuredLoads& m = **polled;
  latest_ = m;
  if (m.strategy == model::Strategy::kNone) {
    // Unfixed traffic: the projection is re-made from the figures noted while it was
    // measured, and the fixes' rows start over.
    const Noted* latest = nullptr;  // the latest noted at or before m.time, of the key
    for (auto it = noted_.rbegin(); it != noted_.rend() && latest == nullptr; ++it) {
      if (it->time > m.time || m.time - it->time > options_.max_age) continue;
      if (!m.key.empty() && it->key != m.key) continue;
      latest = &*it;
    }
    if (latest != nullptr) {
      // Sums of rates: the model is linear in B, Hr and Hw, so the mean figures' projection
      // is the mean projection.
      double ops = 0, key_ops = 0, write_ops = 0;
      int n = 0;
      for (const Noted& x : noted_) {
        if (x.time > m.time || x.time < m.time - m.interval || x.key != latest->key) continue;
        ops += x.shard_ops;
        key_ops += x.share * x.shard_ops;
        write_ops += x.write_share * x.share * x.shard_ops;
        ++n;
      }
      Noted p = *latest;
      if (n > 1 && ops > 0) {
        p.shard_ops = ops / n;
        p.share = key_ops / ops;
        p.write_share = key_ops > 0 ? write_ops / key_ops : 0;
        p.samples = n;
        model::Cluster at = cluster_;
        at.capacity = p.capacity;
        absl::StatusOr<model::Projection> mean =
            model::ProjectShare(at, p.shard_ops, p.share, p.write_share);
        if (mean.ok()) p.projection = *std::move(mean);
      }
      projection_ = std::move(p);
    }
    by_strategy_.clear();
  }
  by_strategy_[m.strategy] = m;
}

std::string LoadComparison::Json(const model::Cluster& given, absl::Time now) const {
  std::lock_guard<std::mutex> l(mu_);
  // Measured loads are divided by the capacity the projection was made with, so both are
  // fractions of one figure (a measured capacity moves with the shard's load).
  model::Cluster cluster = given;
  if (projection_) cluster.capacity = projection_->capacity;
  json::object o;
  o["file"] = options_.file;
  o["max_age_seconds"] = absl::ToDoubleSeconds(options_.max_age);
  o["last_read_successful"] = last_read_successful_;
  o["read_errors_total"] = read_errors_;
  if (last_error_.empty()) {
    o["last_error"] = nullptr;
  } else {
    o["last_error"] = last_error_;
  }
  if (latest_) {
    json::object m;
    AddMeasured(m, *latest_, cluster.capacity, now, options_.max_age);
    m["strategy"] = model::StrategyName(latest_->strategy);
    m["key"] = latest_->key;
    m["source"] = latest_->source;
    m["shards"] = latest_->ops_per_second.size();
    m["cluster_shards"] = cluster.shards;
    m["ops_per_second"] =
        json::array(latest_->ops_per_second.begin(), latest_->ops_per_second.end());
    json::array loads;
    for (double ops : latest_->ops_per_second) {
      if (std::isfinite(cluster.capacity)) {
        loads.emplace_back(ops / cluster.capacity);
      } else {
        loads.emplace_back(nullptr);
      }
    }
    m["loads"] = std::move(loads);
    o["measurement"] = std::move(m);
  } else {
    o["measurement"] = nullptr;
  }
  if (projection_) {
    o["projection"] = json::object{{"key", projection_->key},
                                   {"time", Rfc3339(projection_->time)},
                                   {"samples", projection_->samples},
                                   {"shard_ops", projection_->shard_ops},
                                   {"capacity", projection_->capacity},
                                   {"hot_share", projection_->share},
                                   {"write_share", projection_->write_share},
                                   {"advice", model::StrategyName(projection_->projection.advice)}};
  } else {
    o["projection"] = nullptr;
  }
  std::vector<model::Strategy> order = cluster.order;
  for (const auto& [s, m] : by_strategy_) {
    if (std::find(order.begin(), order.end(), s) == order.end()) order.push_back(s);
  }
  json::array fixes;
  for (model::Strategy s : order) {
    json::object f;
    f["strategy"] = model::StrategyName(s);
    f["in_force"] = latest_ && latest_->strategy == s;
    f["projected"] = nullptr;
    if (projection_) {
      for (const model::StrategyLoad& load : projection_->projection.loads) {
        if (load.strategy != s) continue;
        f["projected"] = json::object{{"busiest", load.busiest}, {"least_busy", load.least_busy}};
      }
    }
    if (auto it = by_strategy_.find(s); it != by_strategy_.end()) {
      json::object m;
      AddMeasured(m, it->second, cluster.capacity, now, options_.max_age);
      f["measured"] = std::move(m);
    } else {
      f["measured"] = nullptr;
    }
    fixes.push_back(std::move(f));
  }
  o["fixes"] = std::move(fixes);
  return text::JsonText(std::move(o));
}

std::vector<MetricFamily> LoadComparison::Collect() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<MetricFamily> out;
  out.push_back(Single("hotkey_measured_loads_last_read_successful",
                       "Whether the last change of --model.measured-loads-file was read and "
                       "parsed (1), or not (0: the last good measurement stays, and goes stale).",
                       MetricType::Gauge, last_read_successful_ ? 1 : 0));
  out.push_back(Single("hotkey_measured_loads_read_errors_total",
                       "Changes of --model.measured-loads-file that could not be read or parsed.",
                       MetricType::Counter, static_cast<double>(read_errors_)));
  if (latest_) {
    out.push_back(Single("hotkey_measured_loads_timestamp_seconds",
                         "Timestamp of the last measurement read from --model.measured-loads-file.",
                         MetricType::Gauge,
                         absl::ToDoubleSeconds(latest_->time - absl::UnixEpoch())));
  }
  return out;
}

}  // namespace hotkey::aggregate
