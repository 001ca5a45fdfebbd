#include "web.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "json.h"
#include "query.h"

namespace hotkey::daemon {

namespace {

constexpr const char* kOpNames[] = {"read", "write"};

// The playground's largest cluster, the model's own bound: the answer stays around a megabyte.
constexpr int kMaxModelShards = model::Cluster::kMaxShards;

HttpResponse Text(int status, std::string body) {
  return HttpResponse{status, "text/plain; charset=utf-8", std::move(body), {}};
}

HttpResponse Json(int status, std::string body) {
  return HttpResponse{status, "application/json", std::move(body), {{"Cache-Control", "no-store"}}};
}

std::string JsonError(std::string_view message) {
  JsonWriter w;
  w.BeginObject().Key("error").String(message).EndObject();
  return w.str();
}

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

void ByOp(JsonWriter& w, std::string_view name, const double (&v)[sketch::kNumOps]) {
  w.Key(name).BeginObject();
  for (int o = 0; o < sketch::kNumOps; ++o) w.Key(kOpNames[o]).Number(v[o]);
  w.EndObject();
}

}  // namespace

std::string SnapshotJson(const Snapshot& s) {
  JsonWriter w;
  w.BeginObject();
  w.Key("time").String(Rfc3339(s.time));
  w.Key("start_time").String(Rfc3339(s.start_time));
  w.Key("receivers").Number(s.receivers);
  w.Key("half_life_seconds").Number(s.half_life_seconds);
  w.Key("rate_window_seconds").Number(s.rate_window_seconds);
  ByOp(w, "ops_per_second", s.ops_per_second);
  ByOp(w, "decayed_ops_per_second", s.decayed_ops_per_second);
  w.Key("datagrams_received").Number(static_cast<double>(s.counters.datagrams));
  w.Key("events_received").Number(static_cast<double>(s.counters.events));
  w.Key("events_rejected").BeginObject();
  for (size_t i = 0; i < kNumRejects; ++i) {
    w.Key(RejectName(static_cast<Reject>(i))).Number(static_cast<double>(s.counters.rejected[i]));
  }
  w.EndObject();
  w.Key("datagrams_denied").Number(static_cast<double>(s.counters.datagrams_denied));
  w.Key("kernel_drops").Number(static_cast<double>(s.kernel_drops));
  w.Key("tracked_keys").Number(static_cast<double>(s.tracked_keys));
  w.Key("sketch_bytes").Number(static_cast<double>(s.sketch_bytes));
  w.Key("epsilon").Number(s.epsilon);
  w.Key("hot_keys").Number(static_cast<double>(s.hot_keys));
  w.Key("keys").BeginArray();
  for (const KeySnapshot& k : s.keys) {
    w.BeginObject();
    w.Key("key").String(k.label);
    w.Key("truncated").Bool(k.truncated);
    w.Key("share").Number(k.share);
    w.Key("share_error").Number(k.share_error);
    w.Key("write_ratio").Number(k.write_ratio);
    ByOp(w, "ops_per_second", k.ops_per_second);
    ByOp(w, "decayed_ops_per_second", k.decayed_ops_per_second);
    w.Key("threshold").Number(k.threshold);  // null when a rule ignores the key
    w.Key("hot").Bool(k.hot);
    if (k.hot) {
      w.Key("hot_since").String(Rfc3339(k.hot_since));
      w.Key("peak_share").Number(k.peak_share);
    }
    w.Key("advice").String(model::StrategyName(k.advice));
    w.Key("projected_load").BeginObject();
    for (const auto& [strategy, load] : k.projected_load) {
      w.Key(model::StrategyName(strategy)).Number(load);
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.str();
}

HttpResponse WebRoutes::Handle(const HttpRequest& req) const {
  const bool get = req.method == "GET" || req.method == "HEAD";
  if (req.path == "/-/reload") {
    if (req.method != "POST" && req.method != "PUT") {
      return Text(405, "use POST to reload the configuration\n");
    }
    const absl::Status s = hooks_.reload();
    if (!s.ok()) return Text(500, absl::StrCat("reload failed: ", s.message(), "\n"));
    return Text(200, "configuration reloaded\n");
  }
  const bool known = req.path == "/" || req.path == telemetry_path_ || req.path == "/-/healthy" ||
                     req.path == "/-/ready" || req.path == "/api/v1/top" ||
                     req.path == "/api/v1/model";
  if (!known) return Text(404, "not found\n");
  if (!get) return Text(405, "method not allowed\n");

  if (req.path == telemetry_path_) {
    return HttpResponse{
        200, "text/plain; version=0.0.4; charset=utf-8", RenderText(*hooks_.metrics), {}};
  }
  if (req.path == "/-/healthy") return Text(200, "Healthy\n");
  if (req.path == "/-/ready") {
    return hooks_.snapshot() ? Text(200, "Ready\n") : Text(503, "Not ready: no snapshot yet\n");
  }
  if (req.path == "/api/v1/top") return Top();
  if (req.path == "/api/v1/model") return Model(req.query);
  return HttpResponse{200, "text/html; charset=utf-8", std::string(LandingPage()), {}};
}

HttpResponse WebRoutes::Top() const {
  const std::shared_ptr<const Snapshot> snap = hooks_.snapshot();
  if (!snap) return Json(503, JsonError("no snapshot yet"));
  return Json(200, SnapshotJson(*snap));
}

HttpResponse WebRoutes::Model(const std::string& query) const {
  model::Cluster c = hooks_.cluster();
  model::HotKey key{0.2, 0.1};
  const absl::StatusOr<std::vector<std::pair<std::string, std::string>>> params = ParseQuery(query);
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
  absl::StatusOr<model::Projection> p = model::Project(c, key);
  if (!p.ok()) return Json(400, JsonError(std::string(p.status().message())));
  JsonWriter w;
  w.BeginObject();
  w.Key("inputs").BeginObject();
  w.Key("ops").Number(c.ops);
  w.Key("shards").Number(c.shards);
  w.Key("capacity").Number(c.capacity);
  w.Key("app_servers").Number(c.app_servers);
  w.Key("refresh").Number(c.refresh_seconds);
  w.Key("replicas").Number(c.replicas);
  w.Key("split").Number(c.split);
  w.Key("target").Number(c.target);
  w.Key("hot_share").Number(key.share);
  w.Key("write_share").Number(key.write_share);
  w.EndObject();
  w.Key("strategies").BeginArray();
  for (const model::StrategyLoad& l : p->loads) {
    w.BeginObject();
    w.Key("strategy").String(model::StrategyName(l.strategy));
    w.Key("busiest").Number(l.busiest);
    w.Key("least_busy").Number(l.least_busy);
    w.Key("shard_loads").BeginArray();
    for (double x : l.shard_loads) w.Number(x);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("advice").String(model::StrategyName(p->advice));
  w.EndObject();
  return Json(200, w.str());
}

}  // namespace hotkey::daemon
