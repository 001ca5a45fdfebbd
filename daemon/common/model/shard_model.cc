// The shard load model: implementation of shard_model.h (formulas are documented there).
//
// Cost: Project() is O(N) per strategy, N = shards, and allocates one vector of N doubles
// per strategy (hotkey-sim and the playground show every shard). ProjectMeasured() is O(1)
// per strategy: the touched shards all carry B + extra and the others B, so the busiest
// and least busy loads follow without the vector. Everything is validated first, so the arithmetic
// below never sees NaN, a non-positive capacity or an index outside [0, N).

#include "hotkey/model/shard_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"

namespace hotkey::model {
namespace {

// A strategy fits when its busiest shard is at most target * C. The comparison allows a
// relative 1e-12 so that a load computed to be exactly the target (say 8000 of 10000 at
// target 0.8) is not rejected by the last bit of a floating-point rounding.
constexpr double kFitTolerance = 1e-12;

bool Finite(double x) { return std::isfinite(x); }

// Debian's Abseil 20220623 is built with its own absl::string_view, which StrCat does not
// take from a std::string_view implicitly.
absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// Everything in Cluster::Validate() except `ops`, which ProjectMeasured() ignores.
absl::Status ValidateShape(const Cluster& c) {
  if (c.shards < 1 || c.shards > Cluster::kMaxShards) {
    return absl::InvalidArgumentError(
        absl::StrCat("shards must be in [1, ", Cluster::kMaxShards, "], got ", c.shards));
  }
  if (!Finite(c.capacity) || c.capacity <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("capacity must be a positive number of ops/s, got ", c.capacity));
  }
  if (c.app_servers < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("app_servers must be >= 1, got ", c.app_servers));
  }
  if (!Finite(c.refresh_seconds) || c.refresh_seconds <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("refresh_seconds must be positive, got ", c.refresh_seconds));
  }
  if (c.replicas < 1 || c.replicas > c.shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("replicas must be in [1, shards=", c.shards, "], got ", c.replicas));
  }
  if (c.split < 1 || c.split > c.shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("split must be in [1, shards=", c.shards, "], got ", c.split));
  }
  if (!Finite(c.target) || c.target <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("target must be a positive fraction of capacity, got ", c.target));
  }
  if (c.order.empty()) {
    return absl::InvalidArgumentError("order must name at least one strategy");
  }
  std::array<bool, std::size(kStrategyNames)> seen{};
  for (Strategy s : c.order) {
    const auto i = static_cast<size_t>(s);
    if (i >= seen.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("order holds an unknown strategy value ", static_cast<int>(s)));
    }
    if (s == Strategy::kIsolate) {
      return absl::InvalidArgumentError(
          "order must not contain isolate: it is the implied last resort");
    }
    if (seen[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("order names strategy '", Sv(StrategyName(s)), "' more than once"));
    }
    seen[i] = true;
  }
  return absl::OkStatus();
}

absl::Status ValidateShare(std::string_view what, double x) {
  if (!Finite(x) || x < 0 || x > 1) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(what), " must be in [0, 1], got ", x));
  }
  return absl::OkStatus();
}

// The model proper, on validated inputs: B = background ops/s per shard, H = key ops/s.
// `capacity` is C (Cluster::capacity, or a measured one, possibly +infinity for an idle
// shard: every load is then 0).
Projection Compute(const Cluster& c, double capacity, double b, double h, double w,
                   bool per_shard) {
  const double hr = h * (1.0 - w);
  const double hw = h * w;
  const double refresh_load = c.app_servers / c.refresh_seconds;
  Projection p;
  p.loads.reserve(c.order.size());
  bool advised = false;
  for (Strategy s : c.order) {
    // The key's extra load on each of the first `touched` shards; the others carry B only.
    int touched = 1;
    double extra = 0;
    switch (s) {
      case Strategy::kNone:
        extra = h;
        break;
      case Strategy::kCache:
        extra = hw + refresh_load;
        break;
      case Strategy::kReplicate:
        touched = c.replicas;
        extra = hr / c.replicas + hw;
        break;
      case Strategy::kSplit:
        touched = c.split;
        extra = hw / c.split + hr;
        break;
      case Strategy::kSplitCache:
        touched = c.split;
        extra = hw / c.split + refresh_load;
        break;
      case Strategy::kIsolate:  // rejected by validation
        break;
    }
    StrategyLoad load;
    load.strategy = s;
    // extra >= 0 (h, w >= 0 and refresh_load > 0), so the touched shards are the busiest;
    // the least busy is an untouched one, if any. The same expressions as the per-shard
    // values, so both paths give identical doubles.
    const double touched_load = (b + extra) / capacity;
    const double other_load = b / capacity;
    load.busiest = touched_load;
    load.least_busy = touched < c.shards ? other_load : touched_load;
    if (per_shard) {
      load.shard_loads.assign(c.shards, other_load);
      for (int i = 0; i < touched; ++i) load.shard_loads[i] = touched_load;
    }
    if (!advised && load.busiest <= c.target * (1.0 + kFitTolerance)) {
      p.advice = s;
      advised = true;
    }
    p.loads.push_back(std::move(load));
  }
  if (!advised) p.advice = Strategy::kIsolate;
  return p;
}

}  // namespace

absl::StatusOr<Strategy> ParseStrategy(std::string_view name) {
  return text::ParseName(kStrategyNames, name, "strategy");
}

absl::Status Cluster::Validate() const {
  if (!Finite(ops) || ops <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ops must be a positive number of ops/s, got ", ops));
  }
  return ValidateShape(*this);
}

absl::StatusOr<Projection> Project(const Cluster& cluster, const HotKey& key) {
  if (absl::Status s = cluster.Validate(); !s.ok()) return s;
  if (absl::Status s = ValidateShare("share", key.share); !s.ok()) return s;
  if (absl::Status s = ValidateShare("write_share", key.write_share); !s.ok()) return s;
  const double b = cluster.ops * (1.0 - key.share) / cluster.shards;
  const double h = cluster.ops * key.share;
  return Compute(cluster, cluster.capacity, b, h, key.write_share, /*per_shard=*/true);
}

absl::StatusOr<Projection> ProjectMeasured(const Cluster& cluster, double background_ops,
                                           double key_ops, double write_share) {
  if (absl::Status s = ValidateShape(cluster); !s.ok()) return s;
  if (!Finite(background_ops) || background_ops < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("background_ops must be >= 0, got ", background_ops));
  }
  if (!Finite(key_ops) || key_ops < 0) {
    return absl::InvalidArgumentError(absl::StrCat("key_ops must be >= 0, got ", key_ops));
  }
  if (absl::Status s = ValidateShare("write_share", write_share); !s.ok()) return s;
  return Compute(cluster, cluster.capacity, background_ops, key_ops, write_share,
                 /*per_shard=*/false);
}

absl::StatusOr<Projection> ProjectShare(const Cluster& cluster, double shard_ops, double share,
                                        double write_share) {
  if (!(share >= 0 && share <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("hot_share must be in [0, 1], got ", share));
  }
  const double key_ops = share * shard_ops;
  return ProjectMeasured(cluster, std::max(0.0, shard_ops - key_ops), key_ops, write_share);
}

absl::StatusOr<Projection> ProjectBusy(const Cluster& cluster, double busy, double shard_ops,
                                       double share, double write_share) {
  // Capacity is not validated: it is the measured one below.
  Cluster shape = cluster;
  shape.capacity = 1;
  if (absl::Status s = ValidateShape(shape); !s.ok()) return s;
  if (!Finite(busy) || busy < 0) {
    return absl::InvalidArgumentError(absl::StrCat("busy must be >= 0, got ", busy));
  }
  if (!Finite(shard_ops) || shard_ops <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard_ops must be a positive number of ops/s, got ", shard_ops));
  }
  if (!(share >= 0 && share <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("hot_share must be in [0, 1], got ", share));
  }
  if (absl::Status s = ValidateShare("write_share", write_share); !s.ok()) return s;
  // busy / shard_ops per op: with no fix the shard's own (b + h) ops give `busy` back.
  const double capacity = busy > 0 ? shard_ops / busy : std::numeric_limits<double>::infinity();
  const double key_ops = share * shard_ops;
  return Compute(cluster, capacity, std::max(0.0, shard_ops - key_ops), key_ops, write_share,
                 /*per_shard=*/false);
}

}  // namespace hotkey::model
