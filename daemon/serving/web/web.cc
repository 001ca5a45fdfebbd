#include "hotkey/web/web.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "hotkey/http/gzip.h"
#include "hotkey/http/query.h"
#include "hotkey/text/json.h"

namespace hotkey::web {

using aggregate::ClusterNode;
using aggregate::History;
using aggregate::InputOrigin;
using aggregate::InputOriginName;
using aggregate::KeySnapshot;
using aggregate::ModelInputs;
using aggregate::SlotAdvice;
using aggregate::SlotAdviceName;
using aggregate::SlotSnapshot;
using aggregate::SlotsSnapshot;
using aggregate::Snapshot;
using aggregate::TagSnapshot;

namespace {

namespace json = boost::json;

constexpr const char* kOpNames[] = {"read", "write"};

// The largest cluster /api/v1/model answers for. The answer lists every shard's load under
// each strategy, built on the thread that serves scrapes, so its work and size grow with
// the shard count: at the model's own bound (model::Cluster::kMaxShards) one request would
// hold that thread many times as long as at this one. The playground's slider stops at 64
// shards; web_test.cc pins the size of an answer at this cap.
constexpr int kMaxModelShards = 1024;
static_assert(kMaxModelShards <= model::Cluster::kMaxShards);
// The nodes /api/v1/slots lists, the answering node first: Redis's own suggested maximum
// for a cluster. The shard decides how many nodes its CLUSTER NODES answer holds (up to
// cluster::kMaxNodes, one slot each), and the answer's size must not be its to decide; the
// answer says how many there were and whether some were left out.
constexpr size_t kMaxListedNodes = 1000;

http::HttpResponse Text(int status, std::string body) {
  return http::HttpResponse{status, "text/plain; charset=utf-8", std::move(body), {}};
}

// RFC 9110 section 15.5.6: a 405 lists the methods the resource answers.
http::HttpResponse MethodNotAllowed(std::string body, std::string allow) {
  http::HttpResponse r = Text(405, std::move(body));
  r.headers.emplace_back("Allow", std::move(allow));
  return r;
}

http::HttpResponse Json(int status, std::string body) {
  return http::HttpResponse{
      status, "application/json", std::move(body), {{"Cache-Control", "no-store"}}};
}

std::string JsonError(std::string_view message) {
  // The message may echo request bytes (a parameter's name or value); text::JsonText makes them
  // valid UTF-8.
  return text::JsonText(json::object{{"error", message}});
}

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

json::object ByOp(const double (&v)[sketch::kNumOps]) {
  json::object o;
  for (int op = 0; op < sketch::kNumOps; ++op) o[kOpNames[op]] = v[op];
  return o;
}

// Adds a source's own metrics that have a JSON field (MetricSample::json) to `o`; with
// `totals_only`, those summed at the snapshot's top level.
void AddSourceFields(const source::SourceMetrics& m, bool totals_only, json::object& o) {
  for (size_t i = 0; i < m.schema->samples.size(); ++i) {
    const source::MetricSample& sample = m.schema->samples[i];
    if (sample.json.empty() || (totals_only && !sample.json_total)) continue;
    json::object* into = &o;
    std::string_view name = sample.json;
    if (const size_t dot = name.find('.'); dot != std::string_view::npos) {
      json::value& outer = o[name.substr(0, dot)];
      if (!outer.is_object()) outer = json::object();
      into = &outer.as_object();
      name = name.substr(dot + 1);
    }
    json::value& field = (*into)[name];
    field = (field.is_uint64() ? field.as_uint64() : uint64_t{0}) + m.values[i];
  }
}

// NaN (not measured) as null.
json::value Measured(double v) { return std::isnan(v) ? json::value(nullptr) : json::value(v); }

// The advice's inputs (model_inputs.h): each with its value and origin, and the shard's
// own figures.
json::object ModelJson(const ModelInputs& m) {
  // The value (null when unknown, or infinite: an idle shard's capacity), its origin, and
  // why it is configured or unknown.
  auto input = [](double value, InputOrigin origin, const std::string& reason) {
    json::object i{{"value", std::isfinite(value) ? json::value(value) : json::value(nullptr)},
                   {"origin", InputOriginName(origin)}};
    if (!reason.empty()) i["reason"] = reason;
    return i;
  };
  json::object o;
  o["capacity"] = input(m.cluster.capacity, m.capacity, m.capacity_reason);
  o["shards"] = input(m.cluster.shards, m.shards, m.shards_reason);
  o["app_servers"] = input(m.cluster.app_servers, m.app_servers, m.app_servers_reason);
  o["refresh"] = m.cluster.refresh_seconds;
  o["replicas"] = m.cluster.replicas;
  o["split"] = m.cluster.split;
  o["target"] = m.cluster.target;
  json::array order;
  for (model::Strategy st : m.cluster.order) order.emplace_back(model::StrategyName(st));
  o["order"] = std::move(order);
  json::object shard{{"asked", m.shard_asked}};
  if (m.shard_asked) {
    shard["up"] = m.shard_up;
    if (!m.shard_error.empty()) shard["error"] = m.shard_error;
    // The last answer's figures were impossible: refused, and unknown below.
    if (!m.shard_rejected_reason.empty()) shard["rejected"] = m.shard_rejected_reason;
    json::object refused;
    for (const auto& [reason, name] : shard::kRejectionNames) {
      refused[name] = m.shard_rejected[static_cast<size_t>(reason)];
    }
    shard["answers_rejected"] = std::move(refused);
    if (!m.server.empty()) shard["server"] = m.server;
    shard["busy"] = Measured(m.shard_busy);
    shard["cpus"] = Measured(m.shard_cpus);
    if (!m.cpus_origin.empty()) shard["cpus_origin"] = m.cpus_origin;
    shard["commands_per_second"] = Measured(m.shard_ops);
    shard["role"] = m.shard_role;
    if (m.shard_slots >= 0) shard["slots"] = m.shard_slots;
  }
  o["shard"] = std::move(shard);
  return o;
}

}  // namespace

std::string SlotsJson(const Snapshot& s) {
  const SlotsSnapshot& v = s.slots;
  json::object o;
  o["time"] = Rfc3339(s.time);
  o["enabled"] = v.enabled;
  o["rate_window_seconds"] = s.rate_window_seconds;
  o["hot_slots"] = v.hot_slots;
  o["hot_tags"] = v.hot_tags;
  const auto optional = [](const std::optional<double>& d) -> json::value {
    if (d) return *d;
    return nullptr;
  };
  if (const ClusterNode* me = v.cluster.Myself()) {
    json::object c{{"node_id", me->id}, {"address", me->address}, {"slots", me->slots}};
    json::array nodes;
    // In the topology's order; the answering node always, the others while there is room.
    size_t room = kMaxListedNodes - 1;
    for (const ClusterNode& n : v.cluster.nodes) {
      if (&n != me) {
        if (room == 0) continue;
        --room;
      }
      nodes.push_back(json::object{{"id", n.id},
                                   {"address", n.address},
                                   {"myself", n.myself},
                                   {"slots", n.slots},
                                   {"up", n.asked ? json::value(n.up) : json::value(nullptr)},
                                   {"ops_per_second", optional(n.ops_per_second)},
                                   {"busy", optional(n.busy)},
                                   {"capacity_ops", optional(n.capacity_ops)}});
    }
    c["ops_per_second"] = optional(v.peers.ops_per_second);
    c["peers_mean_ops_per_second"] = optional(v.peers.peers_mean);
    c["peers_ratio"] = optional(v.peers.ratio);
    c["peers"] = v.peers.peers;
    c["peers_up"] = v.peers.peers_up;
    c["nodes_total"] = v.cluster.nodes.size();
    c["nodes_truncated"] = v.cluster.nodes.size() > nodes.size();
    c["nodes"] = std::move(nodes);
    o["cluster"] = std::move(c);
  } else {
    o["cluster"] = nullptr;
  }
  json::array slots;
  for (const SlotSnapshot& x : v.slots) {
    json::object j{{"slot", x.slot},
                   {"share", x.share},
                   {"decayed_share", x.decayed_share},
                   {"ops_per_second", x.ops_per_second},
                   {"hot", x.hot},
                   {"top_key", x.top_key},
                   {"top_key_share", x.top_key_share},
                   {"top_tag", x.top_tag},
                   {"top_tag_share", x.top_tag_share}};
    if (x.hot) j["hot_since"] = Rfc3339(x.hot_since);
    if (x.advice == SlotAdvice::kNone) {
      j["advice"] = nullptr;
    } else {
      j["advice"] = SlotAdviceName(x.advice);
    }
    if (x.advice == SlotAdvice::kTag) j["tag_split"] = x.tag_split;
    slots.push_back(std::move(j));
  }
  o["slots"] = std::move(slots);
  json::array tags;
  for (const TagSnapshot& t : v.tags) {
    tags.push_back(json::object{{"tag", t.label},
                                {"truncated", t.truncated},
                                {"slot", t.slot},
                                {"share", t.share},
                                {"decayed_share", t.decayed_share},
                                {"ops_per_second", t.ops_per_second},
                                {"hot", t.hot}});
  }
  o["tags"] = std::move(tags);
  if (v.move) {
    const auto side = [&](const cluster::MoveSide& m) {
      return json::object{{"id", m.id},
                          {"address", m.address},
                          {"ops_per_second_before", m.ops_before},
                          {"ops_per_second_after", m.ops_after},
                          {"load_before", optional(m.load_before)},
                          {"load_after", optional(m.load_after)}};
    };
    json::array to;
    for (const cluster::Transfer& t : v.move->to) {
      json::object j = side(t.to);
      json::array slots;
      for (uint16_t slot : t.slots) slots.push_back(slot);
      j["slots"] = std::move(slots);
      j["slots_ops_per_second"] = t.ops_per_second;
      to.push_back(std::move(j));
    }
    o["move"] = json::object{{"reason", cluster::MoveReasonName(v.move->reason)},
                             {"in_load", v.move->in_load},
                             {"goal", v.move->goal},
                             {"peers_mean", v.move->peers_mean},
                             {"slot_count", v.move->SlotCount()},
                             {"from", side(v.move->from)},
                             {"to", std::move(to)},
                             {"commands", v.move->commands}};
  } else {
    o["move"] = nullptr;
  }
  return text::JsonText(std::move(o));
}

std::string SnapshotJson(const Snapshot& s) {
  json::object o;
  o["time"] = Rfc3339(s.time);
  o["start_time"] = Rfc3339(s.start_time);
  o["receivers"] = s.receivers;
  o["half_life_seconds"] = s.half_life_seconds;
  o["rate_window_seconds"] = s.rate_window_seconds;
  // What the rates count: "ops", or "bytes" with a bytes-weighted tap (the *_per_second
  // fields then hold bytes per second, and there is no advice).
  o["unit"] = s.counts_bytes ? "bytes" : "ops";
  o["ops_per_second"] = ByOp(s.ops_per_second);
  o["decayed_ops_per_second"] = ByOp(s.decayed_ops_per_second);
  o["events_received"] = s.counters.events;
  json::array sources;
  for (const source::SourceCounters& c : s.sources) {
    json::object src{{"events_received", c.events}};
    if (c.own.schema != nullptr) {
      src["kind"] = c.own.schema->kind;
      AddSourceFields(c.own, /*totals_only=*/false, src);
    }
    sources.push_back(std::move(src));
  }
  o["sources"] = std::move(sources);
  for (const source::SourceMetrics& m : s.source_metrics) {
    AddSourceFields(m, /*totals_only=*/true, o);
  }
  o["kernel_drops"] = s.kernel_drops;
  o["tracked_keys"] = s.tracked_keys;
  o["sketch_bytes"] = s.sketch_bytes;
  o["epsilon"] = s.epsilon;
  o["hot_keys"] = s.hot_keys;
  o["model"] = ModelJson(s.model);
  json::array keys;
  keys.reserve(s.keys.size());
  for (const KeySnapshot& k : s.keys) {
    json::object key;
    key["key"] = k.label;
    key["truncated"] = k.truncated;
    key["share"] = k.share;
    key["decayed_share"] = k.decayed_share;
    key["share_error"] = k.share_error;
    key["write_ratio"] = k.write_ratio;
    key["ops_per_second"] = ByOp(k.ops_per_second);
    key["decayed_ops_per_second"] = ByOp(k.decayed_ops_per_second);
    key["absorbed_ops_per_second"] = ByOp(k.absorbed_ops_per_second);
    key["demand_share"] = k.demand_share;
    key["threshold"] = k.threshold;  // null when a rule ignores the key (infinite)
    key["hot"] = k.hot;
    if (k.hot) {
      key["hot_since"] = Rfc3339(k.hot_since);
      key["peak_share"] = k.peak_share;
    }
    // null for a key that is not hot, and until its episode's figures are known (snapshot.h)
    if (k.projected_load.empty()) {
      key["advice"] = nullptr;
    } else {
      key["advice"] = model::StrategyName(k.advice);
    }
    json::object projected;
    for (const auto& [strategy, load] : k.projected_load) {
      projected[model::StrategyName(strategy)] = load;
    }
    key["projected_load"] = std::move(projected);
    // What the advice was computed from (snapshot.h), for the playground to redo it.
    if (!k.projected_load.empty()) {
      const KeySnapshot::AdviceFigures& a = k.advised_on;
      key["advised_on"] = json::object{
          {"shard_ops", a.shard_ops},
          {"absorbed_ops", a.absorbed_ops},
          {"share", a.share},
          {"write_ratio", a.write_ratio},
          {"capacity", std::isfinite(a.capacity) ? json::value(a.capacity) : json::value(nullptr)},
          {"seconds", a.seconds}};
    }
    keys.emplace_back(std::move(key));
  }
  o["keys"] = std::move(keys);
  return text::JsonText(std::move(o));
}

http::HttpResponse WebRoutes::Handle(const http::HttpRequest& req) const {
  const bool get = req.method == "GET" || req.method == "HEAD";
  if (req.path == "/-/reload") {
    if (req.method != "POST" && req.method != "PUT") {
      return MethodNotAllowed("use POST to reload the configuration\n", "POST, PUT");
    }
    // As Prometheus answers without --web.enable-lifecycle.
    if (!reload_) return Text(403, "Lifecycle API is not enabled.\n");
    const absl::Status s = reload_();
    if (!s.ok()) return Text(500, absl::StrCat("reload failed: ", s.message(), "\n"));
    return Text(200, "configuration reloaded\n");
  }
  if (req.path == kDemandPath) {
    if (req.method != "POST") return MethodNotAllowed("use POST to report demand\n", "POST");
    if (demand_ == nullptr) return Json(404, JsonError("no hot-key feed"));
    return demand_->Handle(req);
  }
  const bool known = req.path == "/" || req.path == telemetry_path_ || req.path == "/-/healthy" ||
                     req.path == "/-/ready" || req.path == "/api/v1/top" ||
                     req.path == "/api/v1/model" || req.path == "/api/v1/measured" ||
                     req.path == "/api/v1/slots" || req.path == "/api/v1/history" ||
                     req.path == "/api/v1/episodes" || req.path == "/api/v1/hotkeys" ||
                     req.path == "/api/v1/hotkeys/stream";
  if (!known) return Text(404, "not found\n");
  if (!get) return MethodNotAllowed("method not allowed\n", "GET, HEAD");

  if (req.path == telemetry_path_) return Metrics(req);
  if (req.path == "/-/healthy") return Text(200, "Healthy\n");
  if (req.path == "/-/ready") {
    return store_.snapshot() ? Text(200, "Ready\n") : Text(503, "Not ready: no snapshot yet\n");
  }
  if (req.path == "/api/v1/top") return Top();
  if (req.path == "/api/v1/slots") {
    const std::shared_ptr<const Snapshot> snap = store_.snapshot();
    if (!snap) return Json(503, JsonError("no snapshot yet"));
    return Json(200, SlotsJson(*snap));
  }
  if (req.path == "/api/v1/history") return HistoryRoute(req.query);
  if (req.path == "/api/v1/episodes") return EpisodesRoute(req.query);
  if (req.path == "/api/v1/model") return Model(req.query);
  if (req.path == "/api/v1/hotkeys" || req.path == "/api/v1/hotkeys/stream") return Feed(req);
  if (req.path == "/api/v1/measured") {
    const aggregate::LoadComparison* measured = store_.measured();
    if (measured == nullptr) {
      return Json(404, JsonError("no measured loads: hotkeyd runs without "
                                 "--model.measured-loads-file"));
    }
    // Loads as fractions of the capacity the advice used, as the comparison noted them.
    return Json(200, measured->Json(store_.advice_cluster(), wall_.Now()));
  }
  return http::HttpResponse{200, "text/html; charset=utf-8", landing_page_, {}};
}

http::HttpResponse WebRoutes::Feed(const http::HttpRequest& req) const {
  if (feed_ == nullptr) return Json(404, JsonError("no hot-key feed"));
  // With basic auth every request reaching here passed it; this refuses the feed should a
  // request come through without (a web config without users).
  if (feed_->require_auth() && !req.authenticated) {
    return Json(403, JsonError("the feed requires credentials (--feed.require-auth)"));
  }
  const bool raw_keys = RawKeysFor(feed_->label_mode(), req.authenticated);
  if (req.path == "/api/v1/hotkeys") return Json(200, feed_->SetJson(raw_keys));
  std::shared_ptr<http::EventStream> stream = feed_->Subscribe(raw_keys);
  if (!stream) {
    http::HttpResponse r =
        Json(503, JsonError("too many feed subscribers (--feed.max-subscribers); retry later"));
    r.headers.emplace_back("Retry-After", "5");
    return r;
  }
  http::HttpResponse r{200, "text/event-stream; charset=utf-8", "", {}};
  r.stream = std::move(stream);
  return r;
}

http::HttpResponse WebRoutes::Metrics(const http::HttpRequest& req) const {
  http::HttpResponse r{200,
                       "text/plain; version=0.0.4; charset=utf-8",
                       RenderText(metrics_),
                       {{"Vary", "Accept-Encoding"}}};
  if (http::AcceptsGzip(req.accept_encoding)) {
    // zlib fails only without memory for its state; the scrape is then served plain.
    if (absl::StatusOr<std::string> gz = http::Gzip(r.body); gz.ok()) {
      r.body = *std::move(gz);
      r.headers.emplace_back("Content-Encoding", "gzip");
    }
  }
  return r;
}

http::HttpResponse WebRoutes::Top() const {
  const std::shared_ptr<const Snapshot> snap = store_.snapshot();
  if (!snap) return Json(503, JsonError("no snapshot yet"));
  return Json(200, SnapshotJson(*snap));
}

http::HttpResponse WebRoutes::Model(const std::string& query) const {
  // Unset parameters are the cluster the daemon's advice used at the last tick (measured
  // where it could be), so the playground starts from the daemon's own answer.
  const std::shared_ptr<const Snapshot> snap = store_.snapshot();
  model::Cluster c = snap ? snap->model.cluster : store_.cluster();
  // An unknown headroom (NaN) or an idle shard's (+inf) is no capacity to play with: the
  // configured one stands in, and the answer's inputs say which was used.
  if (!std::isfinite(c.capacity)) c.capacity = store_.cluster().capacity;
  model::HotKey key{0.2, 0.1};
  // Set by shard_ops: the measured mode, the model on this shard's figures as the daemon's
  // advice uses them.
  std::optional<double> shard_ops;
  bool ops_given = false;
  const absl::StatusOr<std::vector<std::pair<std::string, std::string>>> params =
      http::ParseQuery(query);
  if (!params.ok()) return Json(400, JsonError(std::string(params.status().message())));
  for (const auto& [name, value] : *params) {
    double v;
    if (!absl::SimpleAtod(value, &v) || !std::isfinite(v)) {
      return Json(400,
                  JsonError(absl::StrCat("parameter ", name, ": \"", value, "\" is not a number")));
    }
    // Counts must be whole numbers an int holds: casting 1e300 to int is undefined
    // behaviour, and truncating 2.5 shards to 2 would answer another question.
    const bool count =
        name == "shards" || name == "app_servers" || name == "replicas" || name == "split";
    if (count && (v != std::floor(v) || v < 0 || v > std::numeric_limits<int>::max())) {
      return Json(400, JsonError(absl::StrCat("parameter ", name, ": \"", value,
                                              "\" is not a whole number in range")));
    }
    // The answer lists every shard's load under each strategy: an unbounded count would let
    // any client make the daemon allocate (and send) gigabytes.
    if (name == "shards" && v > kMaxModelShards) {
      return Json(400, JsonError(absl::StrCat("parameter shards: at most ", kMaxModelShards)));
    }
    if (name == "ops") {
      c.ops = v;
      ops_given = true;
    } else if (name == "shard_ops") {
      if (v < 0) {
        return Json(400, JsonError(absl::StrCat("parameter shard_ops: \"", value,
                                                "\" is not a rate (ops/s >= 0)")));
      }
      shard_ops = v;
    } else if (name == "shards") {
      c.shards = static_cast<int>(v);
    } else if (name == "capacity") {
      c.capacity = v;
    } else if (name == "app_servers") {
      c.app_servers = static_cast<int>(v);
    } else if (name == "refresh") {
      c.refresh_seconds = v;
    } else if (name == "replicas") {
      c.replicas = static_cast<int>(v);
    } else if (name == "split") {
      c.split = static_cast<int>(v);
    } else if (name == "target") {
      c.target = v;
    } else if (name == "hot_share") {
      key.share = v;
    } else if (name == "write_share") {
      key.write_share = v;
    } else {
      return Json(400, JsonError(absl::StrCat("unknown parameter ", name)));
    }
  }
  if (shard_ops && ops_given) {
    return Json(400, JsonError("parameters ops and shard_ops exclude each other: ops models "
                               "the cluster's total, shard_ops this shard's measured rate"));
  }
  absl::StatusOr<model::Projection> p;
  double key_ops = 0, background_ops = 0;
  if (shard_ops) {
    // The call the aggregator makes for an exported key (model::ProjectShare), so the
    // advice is the key's; key and background ops are echoed in the answer's inputs.
    p = model::ProjectShare(c, *shard_ops, key.share, key.write_share);
    key_ops = key.share * *shard_ops;
    background_ops = std::max(0.0, *shard_ops - key_ops);
    if (p.ok()) {
      // ProjectMeasured gives the busiest and least busy loads only; the bars are the layout
      // shard_model.h states: the shards the key touches at the busiest load, the others at
      // the background's.
      for (model::StrategyLoad& l : p->loads) {
        int touched = 1;
        if (l.strategy == model::Strategy::kReplicate) touched = c.replicas;
        if (l.strategy == model::Strategy::kSplit || l.strategy == model::Strategy::kSplitCache) {
          touched = c.split;
        }
        l.shard_loads.assign(c.shards, background_ops / c.capacity);
        std::fill_n(l.shard_loads.begin(), touched, l.busiest);
      }
    }
  } else {
    p = model::Project(c, key);
  }
  if (!p.ok()) return Json(400, JsonError(std::string(p.status().message())));
  json::object inputs;
  inputs["mode"] = shard_ops ? "measured" : "cluster";
  if (shard_ops) {
    inputs["shard_ops"] = *shard_ops;
    inputs["key_ops"] = key_ops;
    inputs["background_ops"] = background_ops;
  } else {
    inputs["ops"] = c.ops;
  }
  inputs["shards"] = c.shards;
  inputs["capacity"] = c.capacity;
  inputs["app_servers"] = c.app_servers;
  inputs["refresh"] = c.refresh_seconds;
  inputs["replicas"] = c.replicas;
  inputs["split"] = c.split;
  inputs["target"] = c.target;
  json::array order;
  for (model::Strategy s : c.order) order.emplace_back(model::StrategyName(s));
  inputs["order"] = std::move(order);
  inputs["hot_share"] = key.share;
  inputs["write_share"] = key.write_share;
  json::array strategies;
  strategies.reserve(p->loads.size());
  // The shards' loads are listed for at most kMaxModelShards shards: a measured cluster may
  // hold more (model::Cluster::kMaxShards), and the answer's size stays bounded whatever the
  // shard says. busiest and least_busy are over every shard.
  size_t listed = 0;
  for (const model::StrategyLoad& l : p->loads) {
    const size_t n = std::min<size_t>(l.shard_loads.size(), kMaxModelShards);
    listed = std::max(listed, n);
    json::array shard_loads(l.shard_loads.begin(), l.shard_loads.begin() + n);
    strategies.emplace_back(json::object{{"strategy", model::StrategyName(l.strategy)},
                                         {"busiest", l.busiest},
                                         {"least_busy", l.least_busy},
                                         {"shard_loads", std::move(shard_loads)}});
  }
  json::object body;
  body["inputs"] = std::move(inputs);
  body["shard_loads_listed"] = listed;
  body["shard_loads_truncated"] = c.shards > static_cast<int>(listed);
  body["strategies"] = std::move(strategies);
  body["advice"] = model::StrategyName(p->advice);
  return Json(200, text::JsonText(std::move(body)));
}

// The history's routes (history.h, episodes.h).

http::HttpResponse WebRoutes::HistoryRoute(const std::string& query) const {
  const History* history = store_.history();
  if (history == nullptr) return Json(404, JsonError("no history"));
  absl::StatusOr<History::Query> q = ParseHistoryQuery(*history, query, wall_.Now());
  if (!q.ok()) return Json(400, JsonError(std::string(q.status().message())));
  return Json(200, history->Json(*q));
}

http::HttpResponse WebRoutes::EpisodesRoute(const std::string& query) const {
  const aggregate::EpisodeLog* episodes = store_.episodes();
  if (episodes == nullptr) return Json(404, JsonError("no episode log"));
  size_t limit = episodes->capacity();
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> params = http::ParseQuery(query);
  if (!params.ok()) return Json(400, JsonError(std::string(params.status().message())));
  for (const auto& [name, value] : *params) {
    uint64_t n = 0;
    if (name != "limit" || !absl::SimpleAtoi(absl::string_view(value.data(), value.size()), &n)) {
      return Json(400, JsonError("the episodes take one parameter: limit, a whole number"));
    }
    limit = std::min<uint64_t>(n, limit);
  }
  return Json(200, episodes->Json(limit));
}

}  // namespace hotkey::web
