// The `hotkey-sim model` table and JSON (see model_report.h).

#include "model_report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hotkey::sim {
namespace {

// The bar is kBarWidth columns for loads 0 .. kBarScale * C: 150% leaves room to see how
// far past capacity a strategy goes; longer bars end in '>'.
constexpr int kBarWidth = 45;
constexpr double kBarScale = 1.5;

std::string Num(double x) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), x);
  return std::string(buf, end - buf);
}

std::string Name(model::Strategy s) { return std::string(model::StrategyName(s)); }

std::string Bar(double load, double target) {
  const auto column = [](double x) {
    return static_cast<int>(std::lround(x / kBarScale * kBarWidth));
  };
  const int filled = std::min(column(load), kBarWidth);
  const int capacity_col = column(1.0);
  const int target_col = column(target);
  std::string bar(kBarWidth, ' ');
  for (int i = 0; i < filled; ++i) bar[i] = '#';
  if (target_col < kBarWidth) bar[target_col] = ':';
  if (capacity_col < kBarWidth) bar[capacity_col] = '|';
  if (load > kBarScale) bar[kBarWidth - 1] = '>';
  return bar;
}

bool Fits(const model::StrategyLoad& row, double target) {
  return row.busiest <= target * (1 + 1e-12);  // as in the model's own comparison
}

}  // namespace

std::string ModelTable(const model::Cluster& c, const model::HotKey& key,
                       const model::Projection& p) {
  std::string out = absl::StrFormat(
      "cluster: T=%g ops/s over N=%d shards of C=%g ops/s (%.1f%% busy on average)\n"
      "hot key: h=%g of ops (%g ops/s), w=%g writes\n"
      "fixes:   cache on A=%d app servers every %gs, replicate R=%d, split S=%d; "
      "target %g%% of C\n\n",
      c.ops, c.shards, c.capacity, 100 * c.ops / (c.shards * c.capacity), key.share,
      c.ops * key.share, key.write_share, c.app_servers, c.refresh_seconds, c.replicas, c.split,
      100 * c.target);
  absl::StrAppendFormat(&out, "%-12s %9s %11s  %s\n", "strategy", "busiest", "least busy",
                        "busiest shard, 0-150% of C (: target, | capacity)");
  for (const model::StrategyLoad& row : p.loads) {
    absl::StrAppendFormat(&out, "%-12s %8.1f%% %10.1f%%  [%s]%s\n", Name(row.strategy),
                          100 * row.busiest, 100 * row.least_busy, Bar(row.busiest, c.target),
                          Fits(row, c.target) ? " fits" : "");
  }
  if (p.advice == model::Strategy::kIsolate) {
    absl::StrAppendFormat(&out,
                          "\nadvice: isolate (no strategy keeps the busiest shard at or "
                          "under %g%% of capacity: give the key capacity of its own)\n",
                          100 * c.target);
  } else {
    double busiest = 0;
    for (const model::StrategyLoad& row : p.loads) {
      if (row.strategy == p.advice) busiest = row.busiest;
    }
    absl::StrAppendFormat(&out,
                          "\nadvice: %s (the first in order that keeps the busiest shard at "
                          "or under %g%% of capacity: %.1f%%)\n",
                          Name(p.advice), 100 * c.target, 100 * busiest);
  }
  return out;
}

std::string ModelJson(const model::Cluster& c, const model::HotKey& key,
                      const model::Projection& p) {
  std::string order;
  for (model::Strategy s : c.order) {
    absl::StrAppend(&order, order.empty() ? "" : ",", "\"", Name(s), "\"");
  }
  std::string out =
      absl::StrCat("{\"cluster\":{\"ops\":", Num(c.ops), ",\"shards\":", c.shards,
                   ",\"capacity\":", Num(c.capacity), ",\"app_servers\":", c.app_servers,
                   ",\"refresh_seconds\":", Num(c.refresh_seconds), ",\"replicas\":", c.replicas,
                   ",\"split\":", c.split, ",\"target\":", Num(c.target), ",\"order\":[", order,
                   "]},", "\"hot_key\":{\"share\":", Num(key.share),
                   ",\"write_share\":", Num(key.write_share), "},\"strategies\":[");
  for (size_t i = 0; i < p.loads.size(); ++i) {
    const model::StrategyLoad& row = p.loads[i];
    absl::StrAppend(&out, i ? "," : "", "{\"strategy\":\"", Name(row.strategy),
                    "\",\"shard_loads\":[");
    for (size_t j = 0; j < row.shard_loads.size(); ++j) {
      absl::StrAppend(&out, j ? "," : "", Num(row.shard_loads[j]));
    }
    absl::StrAppend(&out, "],\"busiest\":", Num(row.busiest),
                    ",\"least_busy\":", Num(row.least_busy),
                    ",\"fits\":", Fits(row, c.target) ? "true" : "false", "}");
  }
  absl::StrAppend(&out, "],\"advice\":\"", Name(p.advice), "\"}\n");
  return out;
}

}  // namespace hotkey::sim
