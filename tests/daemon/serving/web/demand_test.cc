// Tests of the demand intake (web/demand.h): POST /api/v1/hotkeys/demand checked, bounded,
// counted, and added to the ledger for the feed's keys only.

#include "hotkey/web/demand.h"

#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "fake_clock.h"
#include "hotkey/web/web.h"

namespace hotkey::web {
namespace {

using Result = DemandIntake::Result;
using KeyResult = DemandIntake::KeyResult;

std::string Body(const std::string& key, int64_t reads, int64_t writes, double interval = 1.0) {
  return absl::StrCat(R"({"interval_seconds":)", interval, R"(,"keys":[{"key_b64":")",
                      absl::Base64Escape(key), R"(","reads":)", reads, R"(,"writes":)", writes,
                      "}]}");
}

http::HttpRequest Post(std::string body) {
  http::HttpRequest r;
  r.method = "POST";
  r.path = std::string(kDemandPath);
  r.body = std::move(body);
  return r;
}

// A feed with "pinned" and the prefix "flash:" pinned, on a fake clock.
struct World {
  testing::FakeClock clock;
  config::ReloadableOptions options = [] {
    config::ReloadableOptions o;
    o.feed.pins = {{{config::FeedPattern::kKey, "pinned"}, model::Strategy::kCache},
                   {{config::FeedPattern::kPrefix, "flash:"}, model::Strategy::kCache}};
    return o;
  }();
  FeedHub feed{4, "secret", options, clock.Now()};
  aggregate::DemandLedger ledger{absl::Seconds(10), 2};
  DemandIntake intake{ledger, feed, clock, 64, 4};
  World() { feed.Update(aggregate::Snapshot{}, clock.Now()); }
};

TEST_CASE("Demand: a report of the feed's keys is accepted and lands in the ledger",
          "[web][demand]") {
  World w;
  w.clock.Advance(absl::Seconds(1));
  http::HttpResponse r = w.intake.Handle(Post(Body("pinned", 1000, 5)));
  CHECK(r.status == 204);
  CHECK(r.body.empty());
  r = w.intake.Handle(Post(Body("flash:sale", 10, 0)));
  CHECK(r.status == 204);
  // Not in the feed: ignored and counted, still 204 (a kit a little behind the feed).
  r = w.intake.Handle(Post(Body("other", 10, 0)));
  CHECK(r.status == 204);
  CHECK(w.intake.reports(Result::kAccepted) == 3);
  CHECK(w.intake.keys(KeyResult::kAccepted) == 2);
  CHECK(w.intake.keys(KeyResult::kIgnored) == 1);
  std::optional<aggregate::DemandLedger::Absorbed> a =
      w.ledger.Over("pinned", w.clock.Now() - absl::Seconds(3), w.clock.Now());
  REQUIRE(a);
  CHECK(a->ops_per_second[0] == Approx(1000));
  CHECK(a->ops_per_second[1] == Approx(5));
  CHECK_FALSE(w.ledger.Over("other", w.clock.Now() - absl::Seconds(3), w.clock.Now()));
  // The ledger holds two keys: a third is refused, counted, and the report still accepted.
  w.clock.Advance(absl::Seconds(1));
  CHECK(w.intake.Handle(Post(Body("flash:other", 10, 0))).status == 204);
  CHECK(w.intake.keys(KeyResult::kFull) == 1);
  // A key with both counts 0 is passed over.
  w.clock.Advance(absl::Seconds(1));
  CHECK(w.intake.Handle(Post(Body("other", 0, 0))).status == 204);
  CHECK(w.intake.keys(KeyResult::kIgnored) == 1);
}

TEST_CASE("Demand: malformed reports are 400 with a one-line reason, and counted",
          "[web][demand]") {
  World w;
  const std::string good_b64 = absl::Base64Escape("pinned");
  for (const std::string& body : {
           std::string("not json"),
           std::string("[]"),
           std::string(R"({"keys":[]})"),
           std::string(R"({"interval_seconds":0,"keys":[]})"),
           std::string(R"({"interval_seconds":61,"keys":[]})"),
           std::string(R"({"interval_seconds":"1","keys":[]})"),
           std::string(R"({"interval_seconds":1})"),
           std::string(R"({"interval_seconds":1,"keys":[1]})"),
           std::string(R"({"interval_seconds":1,"keys":[{"key_b64":"***","reads":1,"writes":0}]})"),
           std::string(
               R"({"interval_seconds":1,"keys":[{"key_b64":"cGlubmVkMQ","reads":1,"writes":0}]})"),
           Body("pinned", -1, 0),
           absl::StrCat(R"({"interval_seconds":1,"keys":[{"key_b64":")", good_b64,
                        R"(","reads":1.5,"writes":0}]})"),
           absl::StrCat(R"({"interval_seconds":1,"keys":[{"key_b64":")", good_b64,
                        R"(","reads":1}]})"),
       }) {
    INFO(body);
    w.clock.Advance(absl::Seconds(1));
    const http::HttpResponse r = w.intake.Handle(Post(body));
    CHECK(r.status == 400);
    CHECK(r.body.find("\"error\"") != std::string::npos);
    CHECK(r.body.find('\n') == std::string::npos);
  }
  CHECK(w.intake.reports(Result::kMalformed) == 13);
  CHECK(w.ledger.size() == 0);
}

TEST_CASE("Demand: reports over 1,024 keys or 256 KiB are 413, past the rate 429",
          "[web][demand]") {
  World w;
  std::string many = R"({"interval_seconds":1,"keys":[)";
  for (int i = 0; i <= 1024; ++i) {
    absl::StrAppend(&many, i ? "," : "", R"({"key_b64":"YQ==","reads":1,"writes":0})");
  }
  many += "]}";
  CHECK(w.intake.Handle(Post(many)).status == 413);
  CHECK(w.intake.Handle(Post(std::string(256 * 1024 + 1, ' '))).status == 413);
  CHECK(w.intake.reports(Result::kTooLarge) == 2);
  // 4 a second, 4 at once: two more pass, then 429 with Retry-After until time refills.
  CHECK(w.intake.Handle(Post(Body("pinned", 1, 0))).status == 204);
  CHECK(w.intake.Handle(Post(Body("pinned", 1, 0))).status == 204);
  const http::HttpResponse r = w.intake.Handle(Post(Body("pinned", 1, 0)));
  CHECK(r.status == 429);
  CHECK(std::find(r.headers.begin(), r.headers.end(),
                  std::pair<std::string, std::string>{"Retry-After", "1"}) != r.headers.end());
  CHECK(w.intake.reports(Result::kLimited) == 1);
  w.clock.Advance(absl::Milliseconds(250));
  CHECK(w.intake.Handle(Post(Body("pinned", 1, 0))).status == 204);
}

TEST_CASE("Demand: the route answers POST only, and 404 without an intake", "[web][demand]") {
  World w;
  aggregate::SnapshotStore store{model::Cluster{}, nullptr, nullptr, nullptr};
  testing::FakeClock wall;
  const WebRoutes without("/metrics", store, wall, w.feed, &w.feed);
  CHECK(without.Handle(Post(Body("pinned", 1, 0))).status == 404);
  const WebRoutes with("/metrics", store, wall, w.feed, &w.feed, nullptr, &w.intake);
  CHECK(with.Handle(Post(Body("pinned", 1, 0))).status == 204);
  http::HttpRequest get = Post("");
  get.method = "GET";
  const http::HttpResponse r = with.Handle(get);
  CHECK(r.status == 405);
  // Its families: hotkey_demand_reports_total{result}, hotkey_demand_keys_total{result} and
  // hotkey_demand_absorbed_ops_total{op}.
  const std::string text = RenderText(w.intake);
  CHECK(text.find(R"(hotkey_demand_reports_total{result="accepted"} 1)") != std::string::npos);
  CHECK(text.find(R"(hotkey_demand_keys_total{result="accepted"} 1)") != std::string::npos);
  CHECK(text.find(R"(hotkey_demand_absorbed_ops_total{op="read"} 1)") != std::string::npos);
}

}  // namespace
}  // namespace hotkey::web
