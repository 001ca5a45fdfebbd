// Tests of the history's routes (web/web.h): /api/v1/history and /api/v1/episodes answer
// the History's and EpisodeLog's JSON, refuse bad or unbounded queries, and are 404 without.

#include <string>

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include "fake_clock.h"
#include "hotkey/aggregate/episodes.h"
#include "hotkey/aggregate/history.h"
#include "hotkey/aggregate/snapshot_store.h"
#include "hotkey/web/web.h"

namespace hotkey::web {
namespace {

using aggregate::EpisodeLog;
using aggregate::History;
using aggregate::HistoryOptions;
using aggregate::KeySnapshot;
using aggregate::Snapshot;

namespace json = boost::json;

const absl::Time kWall0 = absl::FromUnixSeconds(1'800'000'000);

struct Fixture {
  History history{HistoryOptions{}};
  EpisodeLog episodes{10, 128};
  hotkey::testing::FakeClock wall{kWall0 + absl::Minutes(1)};
  aggregate::SnapshotStore store;
  SnapshotCollector metrics{store};
  WebRoutes routes{"/metrics", store, wall, metrics};
  explicit Fixture(bool with = true)
      : store(model::Cluster{}, with ? &history : nullptr, with ? &episodes : nullptr, nullptr) {
    for (int i = 0; i <= 30; ++i) {
      Snapshot s;
      s.time = kWall0 + absl::Seconds(i);
      s.ops_per_second[0] = 1000;
      KeySnapshot k;
      k.hash = 9;
      k.label = "user:42";
      k.ops_per_second[0] = 250;
      k.share = 0.25;
      s.keys.push_back(k);
      history.Record(s, absl::FromUnixSeconds(1000 + i));
      episodes.Begin(s.time);
      if (i >= 10 && i < 20) episodes.Hot(EpisodeLog::Kind::kKey, 9, "user:42", 0.25, 250, 0.1, "");
      episodes.Finish();
    }
  }
  http::HttpResponse Get(std::string path, std::string query = "") {
    return routes.Handle(http::HttpRequest{"GET", std::move(path), std::move(query), ""});
  }
};

TEST_CASE("History routes: /api/v1/history answers the history's windows as JSON",
          "[web][history]") {
  Fixture f;
  const http::HttpResponse r = f.Get("/api/v1/history", "from=1800000000&to=1800000015");
  REQUIRE(r.status == 200);
  CHECK(r.content_type.find("application/json") == 0);
  json::value v = json::parse(r.body);
  const json::array& w = v.at("windows").as_array();
  REQUIRE(w.size() == 2);  // starting at 0 s and 10 s
  CHECK(w[0].at("keys").at(0).at("key").as_string() == "user:42");
  CHECK(w[0].at("keys").at(0).at("share").to_number<double>() == Approx(0.25));
  const json::value rows = json::parse(f.Get("/api/v1/history", "format=rows").body);
  CHECK(rows.at("rows").as_array().size() == 3);
  CHECK(rows.at("rows").at(0).at("time").as_string() == "2027-01-15T08:00:00.000Z");
}

TEST_CASE("History routes: a range wider than the ring, or a bad parameter, is 400",
          "[web][history]") {
  Fixture f;
  CHECK(f.Get("/api/v1/history", "from=1790000000").status == 400);
  CHECK(f.Get("/api/v1/history", "from=soon").status == 400);
  const http::HttpResponse r = f.Get("/api/v1/history", "bogus=1");
  CHECK(r.status == 400);
  CHECK(json::parse(r.body).at("error").is_string());
}

TEST_CASE("History routes: /api/v1/episodes answers the log, newest first, with a limit",
          "[web][history]") {
  Fixture f;
  const http::HttpResponse r = f.Get("/api/v1/episodes");
  REQUIRE(r.status == 200);
  json::value v = json::parse(r.body);
  REQUIRE(v.at("episodes").as_array().size() == 1);
  CHECK(v.at("episodes").at(0).at("duration_seconds").to_number<double>() == 10);
  CHECK(json::parse(f.Get("/api/v1/episodes", "limit=0").body).at("episodes").as_array().empty());
  CHECK(f.Get("/api/v1/episodes", "limit=x").status == 400);
  CHECK(f.routes.Handle(http::HttpRequest{"POST", "/api/v1/episodes", "", ""}).status == 405);
}

TEST_CASE("History routes: without a history both are 404", "[web][history]") {
  Fixture f(/*with=*/false);
  CHECK(f.Get("/api/v1/history").status == 404);
  CHECK(f.Get("/api/v1/episodes").status == 404);
}

// A tick of a shard at 1000 ops/s with one key at 100 ops/s.
Snapshot Snap(absl::Duration t) {
  Snapshot s;
  s.time = kWall0 + t;
  s.ops_per_second[0] = 1000;
  KeySnapshot k;
  k.hash = 100;
  k.label = "k0";
  k.ops_per_second[0] = 100;
  k.share = 0.1;
  s.keys.push_back(k);
  return s;
}

TEST_CASE(
    "History query: takes Unix seconds or RFC 3339, and refuses a range the ring "
    "does not hold",
    "[web][history]") {
  History h(HistoryOptions{});
  for (int i = 0; i <= 60; ++i) {
    h.Record(Snap(absl::Seconds(i)), absl::FromUnixSeconds(1000) + absl::Seconds(i));
  }
  const absl::Time now = kWall0 + absl::Minutes(2);
  absl::StatusOr<History::Query> q =
      ParseHistoryQuery(h, "from=1800000020&to=2027-01-15T08:00:40Z", now);
  REQUIRE(q.ok());
  CHECK(q->from == kWall0 + absl::Seconds(20));
  CHECK(q->resolution == History::Resolution::kFine);
  // Windows start at 0, 10, ..., 50 s: from 20 s on, four.
  absl::StatusOr<History::Query> from20 = ParseHistoryQuery(h, "from=1800000020", now);
  REQUIRE(from20.ok());
  CHECK(json::parse(h.Json(*from20)).at("windows").as_array().size() == 4);

  CHECK(ParseHistoryQuery(h, "step=10s", now)->resolution == History::Resolution::kFine);
  CHECK(ParseHistoryQuery(h, "step=5m", now)->resolution == History::Resolution::kCoarse);
  // An hour and a second of fine windows is more than the fine ring holds.
  CHECK_FALSE(ParseHistoryQuery(h, "from=1800000000&to=1800003601", now).ok());
  CHECK(ParseHistoryQuery(h, "from=1800000000&to=1800003601&step=60", now).ok());
  CHECK_FALSE(ParseHistoryQuery(h, "from=1800000000&to=1800090000&step=60", now).ok());
  // Without "to", the range ends now.
  CHECK_FALSE(ParseHistoryQuery(h, "from=1700000000", now).ok());
  CHECK_FALSE(ParseHistoryQuery(h, "from=yesterday", now).ok());
  CHECK_FALSE(ParseHistoryQuery(h, "step=-1", now).ok());
  CHECK_FALSE(ParseHistoryQuery(h, "from=20&to=10", now).ok());
  CHECK_FALSE(ParseHistoryQuery(h, "limit=3", now).ok());
  CHECK_FALSE(ParseHistoryQuery(h, "from=%zz", now).ok());
}

}  // namespace
}  // namespace hotkey::web
