// Tests of /api/v1/measured (web/web.h) over a LoadComparison (aggregate/load_comparison.h),
// and the landing page's table of the measured loads beside the projection.

#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "checkers.h"
#include "fake_clock.h"
#include "hotkey/aggregate/load_comparison.h"
#include "hotkey/aggregate/snapshot_store.h"
#include "hotkey/web/web.h"

namespace hotkey::web {
namespace {

using aggregate::LoadComparison;
using Catch::Matchers::Contains;
using model::Strategy;
using testing::Json;
using testing::ParseJson;

const absl::Time kT0 = absl::FromUnixSeconds(1'764'604'800);

// The lab's cluster: 8 shards of 1,000 ops/s, 8 app servers refreshing every second.
model::Cluster LabCluster() {
  model::Cluster c;
  c.shards = 8;
  c.capacity = 1000;
  c.app_servers = 8;
  c.replicas = 4;
  c.split = 8;
  return c;
}

absl::StatusOr<std::optional<config::MeasuredLoads>> News(absl::Time t, Strategy s,
                                                          std::vector<double> ops) {
  config::MeasuredLoads m;
  m.time = t;
  m.strategy = s;
  m.ops_per_second = std::move(ops);
  return std::optional<config::MeasuredLoads>(std::move(m));
}

Json MustParse(const std::string& body) {
  std::string error;
  std::optional<Json> j = ParseJson(body, &error);
  INFO(error << "\n" << body.substr(0, 500));
  REQUIRE(j.has_value());
  return *j;
}

TEST_CASE("Web: /api/v1/measured is 404 without a measured-loads file, else the comparison",
          "[daemon][web][load_comparison]") {
  hotkey::testing::FakeClock wall(kT0);
  aggregate::SnapshotStore none(LabCluster(), nullptr, nullptr, nullptr);
  SnapshotCollector none_metrics(none);
  WebRoutes without("/metrics", none, wall, none_metrics);
  http::HttpResponse r = without.Handle(http::HttpRequest{"GET", "/api/v1/measured", "", ""});
  CHECK(r.status == 404);
  CHECK(r.content_type == "application/json");
  CHECK_THAT(r.body, Contains("--model.measured-loads-file"));
  CHECK(without.Handle(http::HttpRequest{"POST", "/api/v1/measured", "", ""}).status == 405);

  auto cmp = std::make_shared<LoadComparison>(config::MeasuredLoadsOptions{"f", absl::Seconds(5)});
  cmp->Update(News(kT0, Strategy::kNone, {1500, 500}));
  aggregate::SnapshotStore store(LabCluster(), nullptr, nullptr, cmp.get());
  SnapshotCollector metrics(store);
  WebRoutes with("/metrics", store, wall, metrics);
  r = with.Handle(http::HttpRequest{"GET", "/api/v1/measured", "", ""});
  CHECK(r.status == 200);
  CHECK(MustParse(r.body)["measurement"]["busiest"].number == Approx(1.5));
}

TEST_CASE("Web: the landing page draws the measured loads beside the projection",
          "[daemon][web][load_comparison]") {
  const std::string page = LandingPage("/metrics");
  // Hidden until /api/v1/measured answers; one row per fix with projected and measured
  // cells, stale ones marked; a bar per shard.
  for (const char* part :
       {"<section id=\"versus\" hidden>", "fetch(\"api/v1/measured\")", "projected busiest",
        "measured busiest", "projected least busy", "measured least busy", "STALE",
        "tr.dataset.strategy = f.strategy", "id=\"versus-bars\"", "setInterval(versus, 1000)"}) {
    INFO(part);
    CHECK_THAT(page, Contains(part));
  }
}

}  // namespace
}  // namespace hotkey::web
