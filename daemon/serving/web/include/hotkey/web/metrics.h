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

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "hotkey/aggregate/snapshot.h"
#include "hotkey/http/server.h"

namespace hotkey::web {

struct ReloadStatus {
  bool last_successful = true;
  absl::Time last_success;
  // The --web.config.file, re-read when it changes; exported only when there is one.
  bool web_config_watched = false;
  bool web_config_last_successful = true;
  absl::Time web_config_last_success = absl::UnixEpoch();
};

// --storage.path: how saving the trackers' state goes.
struct StorageStatus {
  bool enabled = false;
  absl::Time last_success = absl::UnixEpoch();
  uint64_t failures = 0;
};

class SnapshotCollector : public prometheus::Collectable {
 public:
  using SnapshotSource = std::function<std::shared_ptr<const aggregate::Snapshot>()>;
  using ReloadSource = std::function<ReloadStatus()>;
  using StorageSource = std::function<StorageStatus()>;

  SnapshotCollector(SnapshotSource snapshot, ReloadSource reload, StorageSource storage = {})
      : snapshot_(std::move(snapshot)), reload_(std::move(reload)), storage_(std::move(storage)) {}

  // The HTTP server's own figures (hotkey_http_*), exported when set. Call before the
  // first Collect.
  void SetHttpSource(std::function<http::HttpServerStats()> http) { http_ = std::move(http); }

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  SnapshotSource snapshot_;
  ReloadSource reload_;
  StorageSource storage_;
  std::function<http::HttpServerStats()> http_;
};

// The Prometheus text exposition format (version 0.0.4) of `collectable`.
std::string RenderText(const prometheus::Collectable& collectable);

// The version this binary reports in hotkey_build_info and --version.
std::string_view BuildVersion();

}  // namespace hotkey::web

#endif  // HOTKEY_WEB_METRICS_H_
