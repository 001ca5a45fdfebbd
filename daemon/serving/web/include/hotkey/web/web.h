// WebRoutes: what each HTTP path answers. Pure request -> response over the current
// snapshot store (aggregate/snapshot_store.h), so it is tested without sockets.
//
//   GET  /                 landing page: live top keys, the history and its episodes, and the
//                          shard-model playground (LandingPage)
//   GET  <telemetry path>  Prometheus metrics (default /metrics), gzip-compressed when the
//                          request's Accept-Encoding admits gzip
//   GET  /-/healthy        200 while the process serves HTTP
//   GET  /-/ready          200 once the first snapshot is published, else 503
//   POST /-/reload         reload --config.file; 200, or 500 with the error (old config kept);
//                          403 "Lifecycle API is not enabled." without a reload action (the
//                          daemon gives one with --web.enable-lifecycle only)
//   GET  /api/v1/top       the snapshot as JSON
//   GET  /api/v1/measured  the shards' measured loads beside the model's projection for
//                          each fix (load_comparison.h); 404 without
//                          --model.measured-loads-file
//   GET  /api/v1/history   the history's windows (history.h): ?from=&to= (Unix seconds or
//                          RFC 3339), &step= (the ring), &format=rows; 400 for a range wider
//                          than the ring, 404 without a history
//   GET  /api/v1/episodes  the episode log (episodes.h), newest first; ?limit= (default and
//                          most: all it holds)
//   GET  /api/v1/model     the shard load model for query parameters (the playground's);
//                          unset ones are those the daemon's advice used at the last tick
//                          (Snapshot::model), and the answer's "inputs" lists every figure
//                          used. With shard_ops (this shard's ops/s over the rate window,
//                          as /api/v1/top gives it), hot_share and
//                          write_share of one key, it is model::ProjectMeasured on the
//                          figures the daemon's advice for that key uses, so the advice
//                          and busiest loads equal the key's in /api/v1/top.
//   GET  /api/v1/hotkeys   the hot-key feed's set (feed.h, docs/feed.md); raw key bytes only
//                          with key_label raw or to a request that passed basic auth
//   GET  /api/v1/hotkeys/stream  the feed's Server-Sent Events: a snapshot, then add /
//                          change / remove and heartbeats; 503 past --feed.max-subscribers
//   POST /api/v1/hotkeys/demand  what kits absorbed of the feed's keys (demand.h): 204, 400,
//                          413, 429; 404 without a feed
//
// A known path asked with a method it does not answer is 405 with an Allow header.
//
// Thread-safe as the store is, and the reload action (the feed's routes: on the hub's
// thread only).

#ifndef HOTKEY_WEB_WEB_H_
#define HOTKEY_WEB_WEB_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/aggregate/episodes.h"
#include "hotkey/aggregate/history.h"
#include "hotkey/aggregate/snapshot.h"
#include "hotkey/aggregate/snapshot_store.h"
#include "hotkey/clock/clock.h"
#include "hotkey/http/server.h"
#include "hotkey/web/demand.h"
#include "hotkey/web/feed.h"
#include "hotkey/web/metrics.h"

namespace hotkey::web {

// The landing page: daemon/serving/web/page/'s index.html with page.css and page.js inlined at
// build time (embed_page.cmake), so it is one self-contained response: no external scripts,
// styles or fonts. Its metrics link points at `telemetry_path` (an absolute path, as WebOptions
// validates), HTML-escaped.
std::string LandingPage(std::string_view telemetry_path);

class WebRoutes {
 public:
  // Reloading the configuration is the program's to do: it owns the rules loader and the
  // threads the new options go to. So POST /-/reload is the one request serving cannot answer
  // from analysis, and the program hands in this one callback for it; null: /-/reload
  // answers 403 (the daemon gives one with --web.enable-lifecycle only).
  using ReloadAction = std::function<absl::Status()>;

  // What the routes read: the snapshot, the history, the episodes and the measured loads
  // (`store`); the wall clock, for a history query's range; the families of /metrics
  // (`metrics`); the hot-key feed (null: /api/v1/hotkeys answers 404), whose routes run
  // on the hub's thread; the kits' demand reports (null: the demand path answers 404),
  // received on the same thread. All must outlive the routes.
  WebRoutes(std::string telemetry_path, const aggregate::SnapshotStore& store,
            const clock::Clock& wall, const prometheus::Collectable& metrics,
            FeedHub* feed = nullptr, ReloadAction reload = nullptr, DemandIntake* demand = nullptr)
      : telemetry_path_(std::move(telemetry_path)),
        landing_page_(LandingPage(telemetry_path_)),
        store_(store),
        wall_(wall),
        metrics_(metrics),
        feed_(feed),
        reload_(std::move(reload)),
        demand_(demand) {}

  http::HttpResponse Handle(const http::HttpRequest& request) const;

 private:
  http::HttpResponse Top() const;
  http::HttpResponse Model(const std::string& query) const;
  http::HttpResponse Feed(const http::HttpRequest& request) const;

  http::HttpResponse Metrics(const http::HttpRequest& request) const;
  // /api/v1/history and /api/v1/episodes.
  http::HttpResponse HistoryRoute(const std::string& query) const;
  http::HttpResponse EpisodesRoute(const std::string& query) const;

  const std::string telemetry_path_;
  const std::string landing_page_;
  const aggregate::SnapshotStore& store_;
  const clock::Clock& wall_;
  const prometheus::Collectable& metrics_;
  FeedHub* const feed_;
  const ReloadAction reload_;
  DemandIntake* const demand_;
};

// The snapshot as the JSON of /api/v1/top.
std::string SnapshotJson(const aggregate::Snapshot& snap);
// The snapshot's slots, tags, cluster and move plan as the JSON of /api/v1/slots.
std::string SlotsJson(const aggregate::Snapshot& snap);

// Parses /api/v1/history's query ("from", "to": Unix seconds or RFC 3339; "step": seconds
// or a duration such as "10s", "1m": the ring whose step is the largest not above it,
// the fine one by default) against wall `now`. A range wider than the chosen ring of
// `history` holds (step * windows) is InvalidArgument: the answer stays bounded.
absl::StatusOr<aggregate::History::Query> ParseHistoryQuery(const aggregate::History& history,
                                                            std::string_view query, absl::Time now);

}  // namespace hotkey::web

#endif  // HOTKEY_WEB_WEB_H_
