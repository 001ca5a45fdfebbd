// The shard load model: what one hot key does to a sharded cluster, and which fix helps.
//
// A cluster of N shards, each able to serve C ops/s, receives T ops/s. One key takes share
// h of them, a fraction w of its ops being writes; the rest spreads evenly over all N
// shards. With H = T*h, Hr = H(1 - w), Hw = H*w and background B = T(1 - h)/N per shard,
// the load on each shard under each strategy is:
//   none        the key's shard B + H; the others B.
//   cache       A app servers cache the key, refreshing once per interval:
//               the key's shard B + Hw + A/interval; the others B.
//   replicate   R copies; reads spread over them, every copy applies every write:
//               each of R shards B + Hr/R + Hw; the others B.
//   split       S sub-keys on S shards; a write goes to one, a read fetches all S:
//               each of S shards B + Hw/S + Hr; the others B.
//   split_cache split, and the total cached by the A app servers (a refresh reads all S):
//               each of S shards B + Hw/S + A/interval; the others B.
// Advice: the first strategy in `order` (by operational cost) that brings the busiest
// shard to at most `target` * C; if none does, kIsolate (give the key its own capacity).
// Note that kIsolate is also the advice when the background alone (B > target * C) already
// overloads every shard: no per-key fix helps then, and the cluster needs more shards.
//
// The shards the key touches are shard_loads[0 .. k-1] (k = 1, R or S); which physical
// shards they are does not matter to the model.
//
// Pure functions of their inputs; thread-safe. Used by hotkey-sim, the daemon's per-key
// advice, and the playground page, so all three always agree.

#ifndef HOTKEY_MODEL_SHARD_MODEL_H_
#define HOTKEY_MODEL_SHARD_MODEL_H_

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hotkey/text/enum_names.h"

namespace hotkey::model {

enum class Strategy { kNone, kCache, kReplicate, kSplit, kSplitCache, kIsolate };

// The label values used in metrics, JSON and config files.
inline constexpr text::EnumName<Strategy> kStrategyNames[] = {
    {Strategy::kNone, "none"},
    {Strategy::kCache, "cache"},
    {Strategy::kReplicate, "replicate"},
    {Strategy::kSplit, "split"},
    {Strategy::kSplitCache, "split_cache"},
    {Strategy::kIsolate, "isolate"}};
constexpr std::string_view StrategyName(Strategy s) { return text::NameOf(kStrategyNames, s); }
// InvalidArgument naming every strategy unless `name` is one.
absl::StatusOr<Strategy> ParseStrategy(std::string_view name);

// The cluster around the shard, and the strategies' parameters.
struct Cluster {
  // Most shards the model takes: a projection holds one load per shard, so this bounds its
  // memory whatever a request or a rules file asks for.
  static constexpr int kMaxShards = 10000;

  double ops = 50000;            // T: total ops/s over the cluster
  int shards = 8;                // N
  double capacity = 10000;       // C: ops/s one shard can serve
  int app_servers = 50;          // A: app servers that would cache the key
  double refresh_seconds = 1.0;  // cache refresh interval
  int replicas = 4;              // R, in [1, N]
  int split = 8;                 // S, in [1, N]
  double target = 0.8;           // advised strategies keep the busiest shard <= target * C
  // Strategies tried for advice, cheapest first; kIsolate is implied last.
  std::vector<Strategy> order = {Strategy::kNone, Strategy::kCache, Strategy::kReplicate,
                                 Strategy::kSplit, Strategy::kSplitCache};

  // Clear errors (InvalidArgument) for non-positive or non-finite ops, capacity,
  // refresh_seconds or target, shards or app_servers < 1, R or S outside [1, N], and an
  // order that is empty, repeats a strategy or contains kIsolate.
  absl::Status Validate() const;
};

// The hot key, as shares of T.
struct HotKey {
  double share = 0.0;        // h in [0, 1]
  double write_share = 0.0;  // w in [0, 1]
};

struct StrategyLoad {
  Strategy strategy;
  // N entries, each as a fraction of C, from Project(); empty from ProjectMeasured().
  std::vector<double> shard_loads;
  double busiest = 0;     // the busiest shard's load / C: max of shard_loads
  double least_busy = 0;  // the least busy shard's load / C: min of shard_loads
};

struct Projection {
  std::vector<StrategyLoad> loads;  // one per strategy in Cluster::order, in that order
  Strategy advice = Strategy::kNone;
};

// The model from shares: B = T(1 - h)/N, H = T*h, with every shard's load (O(N) per
// strategy). InvalidArgument when the cluster is invalid or a share is outside [0, 1].
absl::StatusOr<Projection> Project(const Cluster& cluster, const HotKey& key);

// The model from what one shard measures: `background_ops` is B (this shard's ops/s without
// the key), `key_ops` is H and `write_share` is w. Cluster::ops is ignored (not even
// validated). Gives busiest and least_busy only (shard_loads stays empty): O(1) per
// strategy, for the daemon's advice on every exported key at every tick.
// InvalidArgument for a negative or non-finite rate, or w outside [0, 1].
absl::StatusOr<Projection> ProjectMeasured(const Cluster& cluster, double background_ops,
                                           double key_ops, double write_share);

// ProjectMeasured for a key that takes `share` of a shard serving `shard_ops` ops/s: the
// key's ops are share * shard_ops and the background the rest. The one place the daemon's
// advice and the playground's measured mode turn a share into rates, so both name the same
// fix. InvalidArgument for share outside [0, 1], and as ProjectMeasured.
absl::StatusOr<Projection> ProjectShare(const Cluster& cluster, double shard_ops, double share,
                                        double write_share);

// ProjectShare for a shard that measures its own load: `busy` is the fraction of its CPU
// it used while serving `shard_ops` ops/s, so the load with no fix is `busy` itself and
// each op costs busy / shard_ops of the shard; Cluster::capacity is ignored (the capacity
// is shard_ops / busy, however small busy is). A shard at 3% busy projects 0.03 with no
// fix, and is advised kNone at any target over that, whatever its ops/s. busy 0 (an idle
// shard, or one whose CPU clock did not move) projects 0 everywhere. InvalidArgument for a
// busy that is negative or not finite, shard_ops not positive, and as ProjectShare.
absl::StatusOr<Projection> ProjectBusy(const Cluster& cluster, double busy, double shard_ops,
                                       double share, double write_share);

}  // namespace hotkey::model

#endif  // HOTKEY_MODEL_SHARD_MODEL_H_
