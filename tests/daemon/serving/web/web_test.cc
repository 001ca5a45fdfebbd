// Tests of WebRoutes (web/web.h) and the /metrics collector (web/metrics.h), without
// sockets: status codes, the reload hook, the model playground, and that /api/v1/top and
// /metrics stay valid JSON and valid Prometheus text whatever the key labels hold.

#include "hotkey/web/web.h"

#include "fake_clock.h"
#include "hotkey/aggregate/snapshot_store.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>

#include <zlib.h>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "checkers.h"
#include "hotkey/aggregate/aggregator.h"
#include "hotkey/source/udp_counters.h"
#include "hotkey/text/escape.h"
#include "hotkey/text/json.h"
#include "hotkey/web/metrics.h"

namespace hotkey::web {
namespace {

using aggregate::Aggregator;
using aggregate::KeySnapshot;
using aggregate::Snapshot;

using testing::Exposition;
using testing::Json;
using testing::ParseExposition;
using testing::ParseJson;

// A snapshot with two keys; the first label holds every character that needs escaping.
std::shared_ptr<Snapshot> MakeSnapshot(const std::string& tricky_label) {
  auto s = std::make_shared<Snapshot>();
  s->time = absl::FromUnixSeconds(1'700'000'100);
  s->start_time = absl::FromUnixSeconds(1'700'000'000);
  s->receivers = 1;
  s->half_life_seconds = 1;
  s->rate_window_seconds = 5;
  s->ops_per_second[0] = 900;
  s->ops_per_second[1] = 100;
  s->counters.events = 98765432;
  s->counters.last_event = absl::FromUnixSeconds(1'699'999'990);
  source::UdpCounters udp;
  udp.datagrams = 1234567;
  udp.rejected[static_cast<size_t>(parsers::Reject::kBadNumber)] = 3;
  udp.rejected[static_cast<size_t>(parsers::Reject::kBadHeader)] = 2;
  udp.datagrams_denied = 1;
  udp.Fill(s->counters.own);
  s->sources = {s->counters};
  s->source_metrics = {s->counters.own};
  s->kernel_drops = 4;
  s->tracked_keys = 77;
  s->sketch_bytes = 40000;
  s->hot_keys = 1;
  KeySnapshot hot;
  hot.key = "raw";
  hot.label = tricky_label;
  hot.share = 0.3;
  hot.share_error = 0.001;
  hot.write_ratio = 0.25;
  hot.ops_per_second[0] = 225;
  hot.ops_per_second[1] = 75;
  hot.threshold = 0.1;
  hot.hot = true;
  hot.hot_since = absl::FromUnixSeconds(1'700'000'050);
  hot.peak_share = 0.35;
  hot.advice = model::Strategy::kCache;
  hot.projected_load = {{model::Strategy::kNone, 1.2}, {model::Strategy::kCache, 0.5}};
  s->keys.push_back(hot);
  KeySnapshot ignored;
  ignored.key = "healthcheck";
  ignored.label = "healthcheck";
  ignored.share = 0.05;
  ignored.threshold = INFINITY;  // a rule ignores it
  s->keys.push_back(ignored);
  return s;
}

const std::string kTricky = "q\"uote \\back\\slash caf\xc3\xa9 \xf0\x9f\x94\xa5 new\nline\ttab";

// The routes over a store the test fills: Handle() publishes `snapshot`, `cluster` and
// `reload_status` into it first, as the daemon's tick and reloads would.
struct Fixture {
  Fixture()
      : routes("/metrics", store, wall, collector, nullptr, [this] {
          ++reloads;
          return reload_result;
        }) {}

  http::HttpResponse Handle(const http::HttpRequest& req) {
    store.NoteReload(reload_status.last_successful ? absl::OkStatus() : absl::UnknownError("bad"),
                     cluster, reload_status.last_success);
    store.Publish(snapshot);
    return routes.Handle(req);
  }
  http::HttpResponse Get(const std::string& path, const std::string& query = "") {
    return Handle(http::HttpRequest{"GET", path, query, ""});
  }
  http::HttpResponse Post(const std::string& path) {
    return Handle(http::HttpRequest{"POST", path, "", ""});
  }

  std::shared_ptr<const Snapshot> snapshot;
  aggregate::ReloadStatus reload_status{.last_successful = true,
                                        .last_success = absl::FromUnixSeconds(1'700'000'000)};
  absl::Status reload_result = absl::OkStatus();
  int reloads = 0;
  model::Cluster cluster;
  hotkey::testing::FakeClock wall;
  aggregate::SnapshotStore store{model::Cluster{}, nullptr, nullptr, nullptr};
  SnapshotCollector collector{store};
  WebRoutes routes;
};

Json MustParse(const std::string& body) {
  std::string error;
  std::optional<Json> j = ParseJson(body, &error);
  INFO(error << "\n" << body.substr(0, 500));
  REQUIRE(j.has_value());
  return *j;
}

Exposition MustParseMetrics(const std::string& text) {
  std::string error;
  std::optional<Exposition> e = ParseExposition(text, &error);
  INFO(error);
  REQUIRE(e.has_value());
  return *e;
}

TEST_CASE("Web: the test's JSON checker rejects what RFC 8259 rejects", "[daemon][web]") {
  std::string e;
  CHECK(ParseJson(R"({"a":[1,-2.5e3,true,null,"x\u00e9\ud83d\udd25"]})", &e).has_value());
  for (const char* bad :
       {"", "{", "{\"a\":1,}", "[1,]", "01", "1.", "NaN", "inf", "'x'", "\"a\nb\"", "\"\\x41\"",
        "{\"a\":1,\"a\":2}", "[1] [2]", "\"\xff\"", "\"\\ud800\""}) {
    INFO(bad);
    CHECK_FALSE(ParseJson(bad, &e).has_value());
  }
}

TEST_CASE("Web: the test's Prometheus text checker rejects malformed lines", "[daemon][web]") {
  std::string e;
  CHECK(ParseExposition("# HELP a_b x\\\\y\n# TYPE a_b gauge\na_b{k=\"v\\\"\\n\"} +Inf\n", &e)
            .has_value());
  for (const char* bad :
       {"a b\n", "1a 1\n", "a{k=\"v} 1\n", "a{k=\"\\x\"} 1\n", "a{1k=\"v\"} 1\n", "a 1", "a\n",
        "# TYPE a foo\n", "a{k=\"v\"}1\n", "a 1 x\n", "a{k=\"\xff\"} 1\n"}) {
    INFO(bad);
    CHECK_FALSE(ParseExposition(bad, &e).has_value());
  }
}

TEST_CASE("Web: /-/ready is 503 before the first snapshot and 200 after", "[daemon][web]") {
  Fixture f;
  CHECK(f.Get("/-/ready").status == 503);
  CHECK(f.Get("/api/v1/top").status == 503);
  f.snapshot = MakeSnapshot("k");
  CHECK(f.Get("/-/ready").status == 200);
  CHECK(f.Get("/api/v1/top").status == 200);
}

TEST_CASE("Web: /-/healthy is 200 even before a snapshot", "[daemon][web]") {
  Fixture f;
  const http::HttpResponse r = f.Get("/-/healthy");
  CHECK(r.status == 200);
  CHECK(r.body == "Healthy\n");
}

TEST_CASE("Web: unknown paths are 404 and wrong methods 405", "[daemon][web]") {
  Fixture f;
  f.snapshot = MakeSnapshot("k");
  CHECK(f.Get("/nope").status == 404);
  CHECK(f.Get("/metrics/").status == 404);
  CHECK(f.Get("/api/v1/top/x").status == 404);
  CHECK(f.Get("/-/reload").status == 405);
  CHECK(f.reloads == 0);  // a GET must not reload
  CHECK(f.Post("/metrics").status == 405);
  CHECK(f.Post("/api/v1/top").status == 405);
  CHECK(f.Post("/").status == 405);
  CHECK(f.Handle(http::HttpRequest{"HEAD", "/-/healthy", "", ""}).status == 200);
}

namespace {

std::string HeaderOf(const http::HttpResponse& r, std::string_view name) {
  for (const auto& [n, v] : r.headers) {
    if (n == name) return v;
  }
  return "";
}

// The gzip member's content, through zlib's own decoder; nullopt if it is not valid gzip.
std::optional<std::string> Gunzip(std::string_view gz) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return std::nullopt;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  std::string out;
  char buf[16384];
  int rc;
  do {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  } while (rc == Z_OK);
  inflateEnd(&z);
  if (rc != Z_STREAM_END || z.avail_in != 0) return std::nullopt;
  return out;
}

// The exposition without the process_ series, which change from one render to the next.
std::string WithoutProcessSeries(std::string_view text) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    if (absl::StrContains(line, "process_")) continue;
    out.append(line.data(), line.size()).push_back('\n');
  }
  return out;
}

}  // namespace

TEST_CASE("Web: a 405 carries Allow with the methods the path answers", "[daemon][web]") {
  Fixture f;
  f.snapshot = MakeSnapshot("k");
  CHECK(HeaderOf(f.Get("/-/reload"), "Allow") == "POST, PUT");
  for (const char* path : {"/metrics", "/api/v1/top", "/api/v1/model", "/", "/-/healthy"}) {
    INFO(path);
    const http::HttpResponse r = f.Post(path);
    CHECK(r.status == 405);
    CHECK(HeaderOf(r, "Allow") == "GET, HEAD");
  }
  CHECK(HeaderOf(f.Get("/nope"), "Allow").empty());  // a 404 has none
}

TEST_CASE("Web: /metrics is gzip-compressed when Accept-Encoding admits gzip", "[daemon][web]") {
  Fixture f;
  f.snapshot = MakeSnapshot(kTricky);
  const http::HttpResponse plain = f.Get("/metrics");
  CHECK(HeaderOf(plain, "Content-Encoding").empty());
  CHECK(HeaderOf(plain, "Vary") == "Accept-Encoding");

  // What Prometheus sends.
  http::HttpRequest req{"GET", "/metrics", "", "", "gzip"};
  const http::HttpResponse gz = f.Handle(req);
  CHECK(gz.status == 200);
  CHECK(HeaderOf(gz, "Content-Encoding") == "gzip");
  CHECK(HeaderOf(gz, "Vary") == "Accept-Encoding");
  const std::optional<std::string> text = Gunzip(gz.body);
  REQUIRE(text.has_value());
  CHECK(WithoutProcessSeries(*text) == WithoutProcessSeries(plain.body));
  CHECK(gz.body.size() * 3 < plain.body.size());

  for (const char* ae : {"gzip, deflate, br", "deflate, gzip;q=0.5", "*", "GZIP", "x-gzip"}) {
    INFO(ae);
    req.accept_encoding = ae;
    CHECK(HeaderOf(f.Handle(req), "Content-Encoding") == "gzip");
  }
  for (const char* ae :
       {"", "identity", "deflate, br", "gzip;q=0", "*, gzip;q=0", "gzip;q=0.0", "*;q=0", "gzipx"}) {
    INFO(ae);
    req.accept_encoding = ae;
    const http::HttpResponse r = f.Handle(req);
    CHECK(HeaderOf(r, "Content-Encoding").empty());
    CHECK(WithoutProcessSeries(r.body) == WithoutProcessSeries(plain.body));
  }
}

TEST_CASE("Web: the landing page links to the configured telemetry path", "[daemon][web]") {
  Fixture f;
  CHECK(f.Get("/").body.find("<a href=\"metrics\">/metrics</a>") != std::string::npos);
  WebRoutes prom("/prom", f.store, f.wall, f.collector);
  const std::string page = prom.Handle(http::HttpRequest{"GET", "/", "", ""}).body;
  CHECK(page.find("<a href=\"prom\">/prom</a>") != std::string::npos);
  CHECK(page.find("href=\"metrics\"") == std::string::npos);
  // The link resolves, relative to the page at "/", to a path the routes serve.
  CHECK(prom.Handle(http::HttpRequest{"GET", "/prom", "", ""}).status == 200);
  // Bytes that mean something in HTML are escaped.
  WebRoutes odd("/m&\"<x>", f.store, f.wall, f.collector);
  const std::string odd_page = odd.Handle(http::HttpRequest{"GET", "/", "", ""}).body;
  CHECK(odd_page.find("<a href=\"m&amp;&quot;&lt;x&gt;\">/m&amp;&quot;&lt;x&gt;</a>") !=
        std::string::npos);
}

TEST_CASE("Web: the landing page is self-contained HTML naming hotkeyd", "[daemon][web]") {
  Fixture f;
  const http::HttpResponse r = f.Get("/");
  CHECK(r.status == 200);
  CHECK(r.content_type.starts_with("text/html"));
  CHECK(r.body.find("hotkeyd") != std::string::npos);
  CHECK(r.body.find("<script src=\"http") == std::string::npos);
  CHECK(r.body.find("<link") == std::string::npos);
}

TEST_CASE("Web: POST /-/reload calls the hook; an error is a 500 carrying its message",
          "[daemon][web]") {
  Fixture f;
  http::HttpResponse r = f.Post("/-/reload");
  CHECK(r.status == 200);
  CHECK(f.reloads == 1);
  f.reload_result = absl::InvalidArgumentError("rules.yml:3: unknown key \"sahre\"");
  r = f.Post("/-/reload");
  CHECK(r.status == 500);
  CHECK(f.reloads == 2);
  CHECK(r.body.find("rules.yml:3: unknown key \"sahre\"") != std::string::npos);
}

TEST_CASE("Web: /api/v1/model returns the loads model::Project computes", "[daemon][web]") {
  Fixture f;
  f.cluster.shards = 6;
  const http::HttpResponse r =
      f.Get("/api/v1/model", "ops=120000&capacity=25000&hot_share=0.3&write_share=0.2&split=3");
  REQUIRE(r.status == 200);
  CHECK(r.content_type == "application/json");
  const Json j = MustParse(r.body);
  model::Cluster c = f.cluster;
  c.ops = 120000;
  c.capacity = 25000;
  c.split = 3;
  absl::StatusOr<model::Projection> p = model::Project(c, model::HotKey{0.3, 0.2});
  REQUIRE(p.ok());
  CHECK(j["inputs"]["shards"].number == 6);  // from the configured cluster
  CHECK(j["advice"].string == model::StrategyName(p->advice));
  const std::vector<Json>& strategies = j["strategies"].array;
  REQUIRE(strategies.size() == p->loads.size());
  for (size_t i = 0; i < strategies.size(); ++i) {
    const model::StrategyLoad& want = p->loads[i];
    INFO(model::StrategyName(want.strategy));
    CHECK(strategies[i]["strategy"].string == model::StrategyName(want.strategy));
    CHECK(strategies[i]["busiest"].number == Approx(want.busiest).epsilon(1e-5));
    CHECK(strategies[i]["least_busy"].number == Approx(want.least_busy).epsilon(1e-5));
    const std::vector<Json>& loads = strategies[i]["shard_loads"].array;
    REQUIRE(loads.size() == 6);
    for (size_t s = 0; s < loads.size(); ++s) {
      CHECK(loads[s].number == Approx(want.shard_loads[s]).epsilon(1e-5));
    }
  }
}

TEST_CASE("Web: /api/v1/model with no parameters answers for the configured cluster",
          "[daemon][web]") {
  Fixture f;
  f.cluster.shards = 32;
  f.cluster.capacity = 12500;
  f.cluster.app_servers = 120;
  f.cluster.refresh_seconds = 2.5;
  f.cluster.replicas = 3;
  f.cluster.split = 16;
  f.cluster.target = 0.7;
  f.cluster.ops = 200000;
  f.cluster.order = {model::Strategy::kNone, model::Strategy::kSplit, model::Strategy::kCache};
  REQUIRE(f.cluster.Validate().ok());
  const http::HttpResponse r = f.Get("/api/v1/model");
  REQUIRE(r.status == 200);
  const Json j = MustParse(r.body);
  const Json& in = j["inputs"];
  CHECK(in["mode"].string == "cluster");
  CHECK(in["shards"].number == 32);
  CHECK(in["capacity"].number == 12500);
  CHECK(in["app_servers"].number == 120);
  CHECK(in["refresh"].number == 2.5);
  CHECK(in["replicas"].number == 3);
  CHECK(in["split"].number == 16);
  CHECK(in["target"].number == 0.7);
  CHECK(in["ops"].number == 200000);
  REQUIRE(in["order"].array.size() == 3);
  CHECK(in["order"].array[0].string == "none");
  CHECK(in["order"].array[1].string == "split");
  CHECK(in["order"].array[2].string == "cache");
  // The answer is for those inputs: a row per configured strategy, a bar per shard.
  const std::vector<Json>& strategies = j["strategies"].array;
  REQUIRE(strategies.size() == 3);
  CHECK(strategies[1]["strategy"].string == "split");
  for (const Json& s : strategies) CHECK(s["shard_loads"].array.size() == 32);
}

// A snapshot the real aggregator builds: on 8 shards of 10,000 ops/s, a key with 90% of a
// 20,000 ops/s shard, `write_share` of its ops writes (as in aggregator_test.cc). Ticks every
// 100 ms for 3 s with a 1 s rate window: the key is hot from the first ticks, so its advice
// is read over the whole window, the figures /api/v1/top shows.
std::shared_ptr<const Snapshot> AggregatedSnapshot(const model::Cluster& cluster,
                                                   double write_share) {
  sketch::HeavyHittersOptions o;
  o.candidates = 256;
  o.sketch_bytes = 32 << 10;
  o.max_key_bytes = 64;
  o.half_life = absl::InfiniteDuration();
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  absl::StatusOr<sketch::HeavyHitters> h = sketch::HeavyHitters::Create(o, t0);
  REQUIRE(h.ok());
  source::ReceiverCounters counters;
  const int writes = static_cast<int>(std::lround(1800 * write_share));
  config::TrackOptions track;
  track.publish_interval = absl::Milliseconds(100);
  track.rate_window = absl::Seconds(1);
  track.half_life = absl::Seconds(1);
  config::ReloadableOptions r;
  r.exporter.top_k = 10;
  r.exporter.min_share = 0.01;
  r.alert.default_threshold = 0.1;
  r.cluster = cluster;
  Aggregator agg(track, r, "secret", t0, nullptr);
  std::shared_ptr<const Snapshot> snap;
  for (int tick = 1; tick <= 30; ++tick) {
    for (int i = 0; i < 1800; ++i) {
      const bool w =
          (static_cast<long>(i) * writes) / 1800 != (static_cast<long>(i + 1) * writes) / 1800;
      h->Update("celebrity", w ? sketch::Op::kWrite : sketch::Op::kRead, 1);
      if (i % 9 == 0) h->Update(absl::StrCat("bg:", i % 200), sketch::Op::kRead, 1);
    }
    const absl::Time now = t0 + absl::Milliseconds(100 * tick);
    h->Advance(now);
    std::vector<std::shared_ptr<const source::ReceiverReport>> reports = {
        std::make_shared<const source::ReceiverReport>(
            source::ReceiverReport{now, *h, counters, {}})};
    snap = agg.Build(reports, now, 0);
  }
  return snap;
}

TEST_CASE(
    "Web: /api/v1/model on a key's figures from /api/v1/top gives the key's advice and "
    "projected loads",
    "[daemon][web]") {
  Fixture f;
  f.cluster.shards = 8;
  f.cluster.capacity = 10000;
  f.cluster.app_servers = 10;
  f.cluster.refresh_seconds = 1;
  f.cluster.replicas = 4;
  f.cluster.split = 4;
  f.cluster.target = 0.8;
  REQUIRE(f.cluster.Validate().ok());
  std::set<std::string> advices;
  for (double write_share : {0.05, 0.95, 0.5}) {
    INFO("write share " << write_share);
    f.snapshot = AggregatedSnapshot(f.cluster, write_share);
    // What the landing page reads from /api/v1/top when the key is clicked.
    const Json top = MustParse(f.Get("/api/v1/top").body);
    const Json* key = nullptr;
    for (const Json& k : top["keys"].array) {
      if (k["key"].string == "celebrity") key = &k;
    }
    REQUIRE(key);
    const double shard_ops =
        top["ops_per_second"]["read"].number + top["ops_per_second"]["write"].number;
    // Every double as its shortest round-trip text, as JavaScript's String() writes it.
    const std::string query = absl::StrCat(
        "shard_ops=", text::JsonText(boost::json::value(shard_ops)),
        "&hot_share=", text::JsonText(boost::json::value((*key)["share"].number)),
        "&write_share=", text::JsonText(boost::json::value((*key)["write_ratio"].number)));
    INFO(query);
    const http::HttpResponse r = f.Get("/api/v1/model", query);
    REQUIRE(r.status == 200);
    const Json m = MustParse(r.body);
    CHECK(m["inputs"]["mode"].string == "measured");
    CHECK(m["advice"].string == (*key)["advice"].string);
    advices.insert(m["advice"].string);
    const std::vector<Json>& strategies = m["strategies"].array;
    REQUIRE(strategies.size() == (*key)["projected_load"].object.size());
    for (const Json& s : strategies) {
      INFO(s["strategy"].string);
      REQUIRE((*key)["projected_load"].Has(s["strategy"].string));
      CHECK(s["busiest"].number == (*key)["projected_load"][s["strategy"].string].number);
      // One bar per shard: the busiest load on the shards the key touches, the background's
      // on the others.
      const std::vector<Json>& loads = s["shard_loads"].array;
      REQUIRE(loads.size() == 8);
      CHECK(loads[0].number == s["busiest"].number);
      CHECK(loads[7].number == s["least_busy"].number);
      double most = 0;
      for (const Json& l : loads) most = std::max(most, l.number);
      CHECK(most == s["busiest"].number);
    }
  }
  // The three write mixes need three different fixes (cache, split, split+cache).
  CHECK(advices.size() == 3);
}

TEST_CASE("Web: /api/v1/model's measured mode rejects what it cannot model", "[daemon][web]") {
  Fixture f;
  for (const char* q : {"shard_ops=-1", "shard_ops=1000&ops=5000", "shard_ops=1000&hot_share=1.5",
                        "shard_ops=1000&hot_share=-0.1", "shard_ops=1000&write_share=2",
                        "shard_ops=inf", "shard_ops=1000&replicas=99"}) {
    INFO(q);
    const http::HttpResponse r = f.Get("/api/v1/model", q);
    CHECK(r.status == 400);
    const Json j = MustParse(r.body);
    CHECK_FALSE(j["error"].string.empty());
  }
  // No traffic is a valid measurement: every shard idle.
  const Json j = MustParse(f.Get("/api/v1/model", "shard_ops=0&hot_share=0.5").body);
  CHECK(j["advice"].string == "none");
}

TEST_CASE("Web: bad /api/v1/model parameters are a 400 with a JSON error", "[daemon][web]") {
  Fixture f;
  for (const char* q : {"ops=abc", "ops=", "hot_share=1.5", "shards=0", "speed=3", "ops=inf",
                        "ops=nan", "replicas=99", "shards=1e300", "shards=-1e300",
                        "app_servers=4294967297", "split=1e10", "shards=2.5"}) {
    INFO(q);
    const http::HttpResponse r = f.Get("/api/v1/model", q);
    CHECK(r.status == 400);
    const Json j = MustParse(r.body);
    CHECK(j["error"].kind == Json::kString);
    CHECK_FALSE(j["error"].string.empty());
  }
}

TEST_CASE("Web: /api/v1/model answers for at most 1024 shards, so one request stays small",
          "[daemon][web]") {
  Fixture f;
  // Every strategy on, replicas and split at their widest: the largest answer at the cap.
  const std::string wide = "ops=1000000&capacity=1000&replicas=1024&split=1024&shards=";
  const http::HttpResponse at_cap = f.Get("/api/v1/model", wide + "1024");
  REQUIRE(at_cap.status == 200);
  const Json j = MustParse(at_cap.body);
  CHECK(j["inputs"]["shards"].number == 1024);
  for (const Json& s : j["strategies"].array) CHECK(s["shard_loads"].array.size() == 1024);
  // Each shard's load is one JSON number per strategy: the whole answer stays under
  // 5 strategies * 1024 shards * 24 bytes = 120 KiB.
  CHECK(at_cap.body.size() < 5 * 1024 * 24);
  for (const char* shards : {"1025", "10000"}) {
    INFO(shards);
    const http::HttpResponse over = f.Get("/api/v1/model", wide + shards);
    CHECK(over.status == 400);
    CHECK(MustParse(over.body)["error"].string == "parameter shards: at most 1024");
  }
}

TEST_CASE("Web: /api/v1/model and /api/v1/slots stay bounded whatever cluster was measured",
          "[daemon][web]") {
  Fixture f;
  auto snap = std::make_shared<Snapshot>();
  // The largest cluster the model takes, as a shard could claim it, and as many nodes as
  // CLUSTER NODES may list, the answering one last.
  snap->model.cluster.shards = model::Cluster::kMaxShards;
  snap->slots.enabled = true;
  for (int i = 0; i < 16384; ++i) {
    aggregate::ClusterNode n;
    n.id = absl::StrFormat("%040x", i);
    n.address = absl::StrCat("10.0.", i / 256, ".", i % 256, ":6379");
    n.myself = i == 16383;
    n.slots = 1;
    snap->slots.cluster.nodes.push_back(std::move(n));
  }
  f.snapshot = snap;
  const http::HttpResponse model = f.Get("/api/v1/model");
  REQUIRE(model.status == 200);
  const Json m = MustParse(model.body);
  CHECK(m["inputs"]["shards"].number == model::Cluster::kMaxShards);
  CHECK(m["shard_loads_listed"].number == 1024);
  CHECK(m["shard_loads_truncated"].boolean);
  for (const Json& st : m["strategies"].array) CHECK(st["shard_loads"].array.size() == 1024);
  CHECK(model.body.size() < 5 * 1024 * 24);  // as at the query's own cap
  const http::HttpResponse slots = f.Get("/api/v1/slots");
  REQUIRE(slots.status == 200);
  const Json j = MustParse(slots.body);
  const Json& cluster = j["cluster"];
  CHECK(cluster["nodes_total"].number == 16384);
  CHECK(cluster["nodes_truncated"].boolean);
  REQUIRE(cluster["nodes"].array.size() == 1000);
  CHECK(cluster["nodes"].array.back()["myself"].boolean);  // kept, though listed last
  // About 200 bytes a node (an id of 40, an address, six more fields).
  CHECK(slots.body.size() < 1000 * 256);
}

TEST_CASE("Web: a malformed /api/v1/model query is a 400 with a JSON error", "[daemon][web]") {
  Fixture f;
  for (const char* q : {"ops=%zz", "ops=1%", "ops=1&split=\"3\""}) {
    INFO(q);
    const http::HttpResponse r = f.Get("/api/v1/model", q);
    CHECK(r.status == 400);
    const Json j = MustParse(r.body);
    CHECK(j["error"].string.find("malformed query string") == 0);
  }
  // Escapes and '+' are decoded before the numbers are read.
  CHECK(f.Get("/api/v1/model", "ops=%31%32%30%30%30&split=+3").status == 200);
}

TEST_CASE("Web: /api/v1/model errors are valid UTF-8 JSON whatever bytes the query holds",
          "[daemon][web]") {
  Fixture f;
  // %ff decodes to a lone 0xFF byte, %c3%28 to a broken two-byte sequence, %ed%a0%80 to an
  // encoded surrogate: none of them may reach the body as they are.
  for (const char* q : {"%ff=1", "ops=%ff", "%c3%28=2", "shards=%ed%a0%80", "x%f0%9f%94=1"}) {
    INFO(q);
    const http::HttpResponse r = f.Get("/api/v1/model", q);
    CHECK(r.status == 400);
    CHECK(testing::IsValidUtf8(r.body));
    const Json j = MustParse(r.body);  // strict: every string must be valid UTF-8
    // Each byte that is not part of a valid sequence reads as U+FFFD.
    CHECK(j["error"].string.find("\xef\xbf\xbd") != std::string::npos);
  }
  // Valid UTF-8 in a parameter name is echoed as it is.
  const Json j = MustParse(f.Get("/api/v1/model", "caf%c3%a9=1").body);
  CHECK(j["error"].string == "unknown parameter caf\xc3\xa9");
}

TEST_CASE(
    "Web: /api/v1/top is valid JSON that round-trips labels with quotes, backslashes, "
    "control characters and unicode",
    "[daemon][web]") {
  Fixture f;
  f.snapshot = MakeSnapshot(kTricky);
  const http::HttpResponse r = f.Get("/api/v1/top");
  REQUIRE(r.status == 200);
  const Json j = MustParse(r.body);
  REQUIRE(j["keys"].array.size() == 2);
  const Json& k = j["keys"].array[0];
  CHECK(k["key"].string == kTricky);
  CHECK(k["share"].number == Approx(0.3));
  CHECK(k["hot"].boolean);
  CHECK(k["advice"].string == "cache");
  CHECK(k["projected_load"]["none"].number == Approx(1.2));
  CHECK(k["ops_per_second"]["write"].number == Approx(75));
  CHECK(k["hot_since"].string == "2023-11-14T22:14:10.000Z");
  // An ignored key's infinite threshold is null, not "inf".
  CHECK(j["keys"].array[1]["threshold"].kind == Json::kNull);
  CHECK_FALSE(j["keys"].array[1].Has("hot_since"));
  CHECK(j["events_rejected"]["bad_number"].number == 3);
  CHECK(j["ops_per_second"]["read"].number == 900);
}

TEST_CASE("Web: /api/v1/top reports counters exactly, not rounded to six digits", "[daemon][web]") {
  Fixture f;
  f.snapshot = MakeSnapshot("k");
  const Json j = MustParse(f.Get("/api/v1/top").body);
  CHECK(j["datagrams_received"].number == 1234567);
  CHECK(j["events_received"].number == 98765432);
}

TEST_CASE("Web: text::JsonText writes every double so that it reads back the same",
          "[daemon][web]") {
  for (double v : {0.0, -0.0, 1.0, 0.1, 1.0 / 3, 123456789.0, 9007199254740993.0, 1e-300, 5e-324,
                   1.7976931348623157e308, -2.5e-7, 18446744073709551615.0, -42.0,
                   9007199254740992.0, 0.30000000000000004}) {
    const std::string text = text::JsonText(boost::json::array{v});
    INFO(text);
    const Json j = MustParse(text);
    CHECK(j.array.at(0).number == v);
    CHECK(std::signbit(j.array.at(0).number) == std::signbit(v));
  }
  // JSON has no infinity or NaN.
  CHECK(text::JsonText(boost::json::array{INFINITY, -INFINITY, NAN}) == "[null,null,null]");
  // Whole numbers read as integers, as counters are.
  CHECK(text::JsonText(boost::json::array{1234567.0, -3.0, 0.0}) == "[1234567,-3,0]");
}

TEST_CASE("Web: text::JsonText makes every string and member name valid UTF-8", "[daemon][web]") {
  const std::string bad =
      "a\xff"
      "b\xc3(\xed\xa0\x80";
  const std::string fixed =
      "a\xef\xbf\xbd"
      "b\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd";
  boost::json::object inner;
  inner[bad] = bad;
  const std::string text = text::JsonText(boost::json::object{
      {"list", boost::json::array{bad, kTricky}}, {"inner", std::move(inner)}, {bad, 1}});
  INFO(text);
  CHECK(testing::IsValidUtf8(text));
  const Json j = MustParse(text);
  CHECK(j["list"].array.at(0).string == fixed);
  CHECK(j["list"].array.at(1).string == kTricky);  // valid text is unchanged
  CHECK(j["inner"][fixed].string == fixed);
  CHECK(j[fixed].number == 1);
}

TEST_CASE("Web: /metrics has every documented family, typed, in valid text format",
          "[daemon][web]") {
  Fixture f;
  f.snapshot = MakeSnapshot("k");
  const http::HttpResponse r = f.Get("/metrics");
  REQUIRE(r.status == 200);
  CHECK(r.content_type.starts_with("text/plain; version=0.0.4"));
  const Exposition e = MustParseMetrics(r.body);
  const std::map<std::string, std::string> families = {
      {"hotkey_key_share_ratio", "gauge"},
      {"hotkey_key_share_threshold_ratio", "gauge"},
      {"hotkey_key_share_error_ratio", "gauge"},
      {"hotkey_key_write_ratio", "gauge"},
      {"hotkey_key_ops_per_second", "gauge"},
      {"hotkey_key_hot", "gauge"},
      {"hotkey_key_projected_load_ratio", "gauge"},
      {"hotkey_hot_keys", "gauge"},
      {"hotkey_ops_per_second", "gauge"},
      {"hotkey_datagrams_received_total", "counter"},
      {"hotkey_datagrams_rejected_total", "counter"},
      {"hotkey_events_received_total", "counter"},
      {"hotkey_events_rejected_total", "counter"},
      {"hotkey_last_event_timestamp_seconds", "gauge"},
      {"hotkey_udp_kernel_drops_total", "counter"},
      {"hotkey_tracked_keys", "gauge"},
      {"hotkey_sketch_bytes", "gauge"},
      {"hotkey_config_last_reload_successful", "gauge"},
      {"hotkey_config_last_reload_success_timestamp_seconds", "gauge"},
      {"hotkey_build_info", "gauge"},
      {"process_cpu_seconds_total", "counter"},
      {"process_resident_memory_bytes", "gauge"},
      {"process_virtual_memory_bytes", "gauge"},
      {"process_start_time_seconds", "gauge"},
      {"process_open_fds", "gauge"},
      {"process_max_fds", "gauge"},
  };
  for (const auto& [name, type] : families) {
    INFO(name);
    CHECK(e.types.count(name) == 1);
    if (e.types.count(name)) CHECK(e.types.at(name) == type);
    CHECK_FALSE(e.Find(name).empty());
  }
  CHECK(e.Value("hotkey_datagrams_received_total") == 1234567);
  CHECK(e.Value("hotkey_events_received_total") == 98765432);
  CHECK(e.Value("hotkey_last_event_timestamp_seconds") == 1'699'999'990);
  CHECK(e.Value("hotkey_events_rejected_total", {{"reason", "bad_number"}}) == 3);
  CHECK(e.Value("hotkey_events_rejected_total", {{"reason", "empty_line"}}) == 0);
  CHECK(e.Find("hotkey_events_rejected_total", {{"reason", "bad_header"}}).empty());
  CHECK(e.Value("hotkey_datagrams_rejected_total", {{"reason", "bad_header"}}) == 2);
  CHECK(e.Value("hotkey_datagrams_rejected_total", {{"reason", "source_denied"}}) == 1);
  CHECK(e.Value("hotkey_udp_kernel_drops_total") == 4);
  CHECK(e.Value("hotkey_ops_per_second", {{"op", "read"}}) == 900);
  CHECK(e.Value("hotkey_ops_per_second", {{"op", "write"}}) == 100);
  CHECK(e.Value("hotkey_key_share_ratio", {{"key", "k"}}) == 0.3);
  CHECK(e.Value("hotkey_key_ops_per_second", {{"key", "k"}, {"op", "write"}}) == 75);
  CHECK(e.Value("hotkey_key_hot", {{"key", "k"}}) == 1);
  CHECK(e.Value("hotkey_key_advice_info", {{"key", "k"}, {"strategy", "cache"}}) == 1);
  CHECK(e.Find("hotkey_key_advice_info", {{"key", "k"}}).size() == 1);  // one fix, held
  CHECK(e.Find("hotkey_key_hot", {{"key", "healthcheck"}}).empty());    // only hot keys
  CHECK(e.Value("hotkey_key_projected_load_ratio", {{"key", "k"}, {"strategy", "none"}}) == 1.2);
  const std::optional<double> ignored =
      e.Value("hotkey_key_share_threshold_ratio", {{"key", "healthcheck"}});
  REQUIRE(ignored);
  CHECK(std::isinf(*ignored));
  CHECK(e.Value("hotkey_config_last_reload_successful") == 1);
  CHECK(e.Value("hotkey_config_last_reload_success_timestamp_seconds") == 1'700'000'000);
  CHECK(e.Value("hotkey_hot_keys") == 1);
  CHECK(e.Value("hotkey_tracked_keys") == 77);
  const std::vector<testing::Sample> build = e.Find("hotkey_build_info");
  REQUIRE(build.size() == 1);
  CHECK(build[0].labels.count("version") == 1);
  CHECK(build[0].labels.count("compiler") == 1);
  CHECK(e.Value("process_resident_memory_bytes").value_or(0) > 0);
}

TEST_CASE("Web: /metrics before the first snapshot still serves self and process metrics",
          "[daemon][web]") {
  Fixture f;
  f.reload_status.last_successful = false;
  const Exposition e = MustParseMetrics(f.Get("/metrics").body);
  CHECK(e.Value("hotkey_config_last_reload_successful") == 0);
  CHECK(e.Find("hotkey_build_info").size() == 1);
  CHECK(e.Find("hotkey_key_share_ratio").empty());
}

TEST_CASE(
    "Web: label values with quotes, backslashes and newlines are escaped per the text "
    "format and decode back to the label text::Escape gives",
    "[daemon][web]") {
  Fixture f;
  // A label the key labeler did not make: /metrics escapes it all the same (metrics.h).
  f.snapshot = MakeSnapshot(kTricky);
  const std::string text = f.Get("/metrics").body;
  const Exposition e = MustParseMetrics(text);
  const std::string shown = text::Escape(kTricky, {.escape_backslash = false});
  REQUIRE(shown != kTricky);
  CHECK(e.Value("hotkey_key_share_ratio", {{"key", shown}}) == 0.3);
  CHECK(e.Value("hotkey_key_hot", {{"key", shown}}) == 1);
  CHECK(e.Value("hotkey_key_advice_info", {{"key", shown}, {"strategy", "cache"}}) == 1);
  // The raw newline never reaches the output inside a sample line.
  for (const testing::Sample& s : e.samples) {
    if (s.labels.count("key")) CHECK(s.labels.at("key").size() < 200);
  }
  CHECK(text.find("new\nline") == std::string::npos);
}

// A kind of source the exporter knows nothing about: its families and JSON fields come from
// its schema alone.
constexpr source::MetricSample kProbeSamples[] = {
    {"hotkey_probe_frames_total",
     "Frames the probe saw, by lane.",
     true,
     {{{"lane", "a"}}},
     "frames",
     true},
    {"hotkey_probe_frames_total",
     "Frames the probe saw, by lane.",
     true,
     {{{"lane", "b"}}},
     "frames",
     true},
    {"hotkey_probe_queue", "Frames queued now.", false, {}, "detail.queue"},
};
const source::MetricSchema kProbe = {"probe", kProbeSamples};

TEST_CASE("Web: a source's own metrics are served from its schema, per source and summed",
          "[daemon][web]") {
  Fixture f;
  auto s = std::make_shared<Snapshot>();
  source::SourceCounters demo;  // no metrics of its own
  demo.events = 5;
  source::SourceCounters p1, p2;
  p1.own.schema = p2.own.schema = &kProbe;
  p1.own.values[0] = 3, p1.own.values[1] = 4, p1.own.values[2] = 7;
  p2.own.values[0] = 10, p2.own.values[1] = 20, p2.own.values[2] = 1;
  s->sources = {demo, p1, p2};
  s->source_metrics = {p1.own};
  s->source_metrics[0].Add(p2.own);
  f.snapshot = s;

  const Exposition e = MustParseMetrics(f.Get("/metrics").body);
  CHECK(e.types.at("hotkey_probe_frames_total") == "counter");
  CHECK(e.types.at("hotkey_probe_queue") == "gauge");
  CHECK(e.Value("hotkey_probe_frames_total", {{"lane", "a"}}) == 13);
  CHECK(e.Value("hotkey_probe_frames_total", {{"lane", "b"}}) == 24);
  CHECK(e.Value("hotkey_probe_queue") == 8);
  // No UDP receiver in this snapshot: no UDP families.
  CHECK(e.types.count("hotkey_datagrams_received_total") == 0);

  const Json j = MustParse(f.Get("/api/v1/top").body);
  const std::vector<Json>& sources = j["sources"].array;
  REQUIRE(sources.size() == 3);
  CHECK(sources[0]["events_received"].number == 5);
  CHECK_FALSE(sources[0].Has("kind"));
  CHECK(sources[1]["kind"].string == "probe");
  CHECK(sources[1]["frames"].number == 7);  // both lanes
  CHECK(sources[1]["detail"]["queue"].number == 7);
  CHECK(sources[2]["frames"].number == 30);
  CHECK(j["frames"].number == 37);  // marked to be summed at the top level
  CHECK_FALSE(j.Has("detail"));     // not so marked
}

}  // namespace
}  // namespace hotkey::web

namespace hotkey::web {
namespace {

TEST_CASE("Web: with require_auth the feed answers only requests that passed basic auth",
          "[web][feed]") {
  hotkey::testing::FakeClock wall;
  aggregate::SnapshotStore store{model::Cluster{}, nullptr, nullptr, nullptr};
  SnapshotCollector collector{store};
  FeedHub open(4, "secret", config::ReloadableOptions{}, wall.Now());
  FeedHub strict(4, "secret", config::ReloadableOptions{}, wall.Now(), /*require_auth=*/true);
  const WebRoutes open_routes("/metrics", store, wall, collector, &open);
  const WebRoutes strict_routes("/metrics", store, wall, collector, &strict);
  for (const char* path : {"/api/v1/hotkeys", "/api/v1/hotkeys/stream"}) {
    http::HttpRequest r;
    r.method = "GET";
    r.path = path;
    INFO(path);
    CHECK(open_routes.Handle(r).status == 200);
    CHECK(strict_routes.Handle(r).status == 403);
    r.authenticated = true;
    CHECK(strict_routes.Handle(r).status == 200);
  }
  CHECK(strict.stats().subscribers == 1);  // the authenticated stream only
}

}  // namespace
}  // namespace hotkey::web
