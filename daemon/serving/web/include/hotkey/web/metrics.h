// The /metrics page: Prometheus metric families built at scrape time from the current
// Snapshot, with prometheus-cpp's metric model and text serializer.
//
// Nothing here is updated per event: receivers count into their own trackers and
// counters, the aggregator publishes a Snapshot each tick, and a scrape turns the latest
// Snapshot (plus /proc and the reload status) into families. A scrape therefore costs
// O(exported keys), whatever the event rate, and never blocks a receiver.
//
// Thread-safe: Collect() reads only immutable snapshots and thread-safe sources.

#ifndef HOTKEY_WEB_METRICS_H_
#define HOTKEY_WEB_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "hotkey/aggregate/snapshot.h"
#include "hotkey/aggregate/snapshot_store.h"
#include "hotkey/http/server.h"

namespace hotkey::web {

class SnapshotCollector : public prometheus::Collectable {
 public:
  // `store` must outlive the collector. With a measured-loads file (store.measured()),
  // its families too.
  explicit SnapshotCollector(const aggregate::SnapshotStore& store) : store_(store) {}

  // The HTTP server's own figures (hotkey_http_*), exported when set. Call before the
  // first Collect; `http` must outlive the collector.
  void SetHttpServer(const http::HttpServer* http) { http_ = http; }
  // The most the serving side can hold (the feed streams' bound, FeedHub::MemoryBoundBytes),
  // added to hotkey_memory_budget_bytes. Call before the first Collect.
  void SetServingBoundBytes(size_t bytes) { serving_bound_bytes_ = bytes; }

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const aggregate::SnapshotStore& store_;
  const http::HttpServer* http_ = nullptr;
  size_t serving_bound_bytes_ = 0;
};

// The Prometheus text exposition format (version 0.0.4) of `collectable`. Every label value
// goes through text::Escape (the backslash kept: key labels are escaped already, and
// escaping is then a no-op), whoever built it: a value the shard sent (its version, a
// node's address) holds no control, line separator or invisible character either.
std::string RenderText(const prometheus::Collectable& collectable);

// The version this binary reports in hotkey_build_info and --version.
std::string_view BuildVersion();

}  // namespace hotkey::web

#endif  // HOTKEY_WEB_METRICS_H_
