#include "hotkey/web/metrics.h"

#include <algorithm>
#include <cmath>

#include <prometheus/text_serializer.h>

#include "hotkey/aggregate/history.h"
#include "hotkey/text/escape.h"
#include "hotkey/version/build_info.h"
#include "hotkey/web/proc_stats.h"

namespace hotkey::web {

using aggregate::ClusterNode;
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

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

constexpr const char* kOpNames[] = {"read", "write"};

MetricFamily Family(std::string name, std::string help, MetricType type) {
  return MetricFamily{std::move(name), std::move(help), type, {}};
}

void Add(MetricFamily& f, double value, std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric m;
  m.label = std::move(labels);
  if (f.type == MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(std::move(m));
}

// Appends a family of one unlabelled sample.
void AddSingle(std::vector<MetricFamily>& out, std::string name, std::string help, MetricType type,
               double value) {
  MetricFamily f = Family(std::move(name), std::move(help), type);
  Add(f, value);
  out.push_back(std::move(f));
}

// Appends the families of one kind of source's own metrics (source_metrics.h): a family
// per run of samples with one name.
void AddSourceFamilies(const source::SourceMetrics& m, std::vector<MetricFamily>& out) {
  const std::span<const source::MetricSample> samples = m.schema->samples;
  for (size_t i = 0; i < samples.size(); ++i) {
    const source::MetricSample& s = samples[i];
    if (i == 0 || samples[i - 1].family != s.family) {
      out.push_back(Family(std::string(s.family), std::string(s.help),
                           s.counter ? MetricType::Counter : MetricType::Gauge));
    }
    std::vector<ClientMetric::Label> labels;
    for (const source::MetricLabel& l : s.labels) {
      if (!l.name.empty()) labels.push_back({std::string(l.name), std::string(l.value)});
    }
    Add(out.back(), static_cast<double>(m.values[i]), std::move(labels));
  }
}

// What the advice is computed against (model_inputs.h), and the shard's own figures when it
// was asked.
void AddModelInputs(const ModelInputs& in, std::vector<MetricFamily>& out) {
  MetricFamily f = Family("hotkey_model_input",
                          "The inputs of the advice's shard load model, each measured, "
                          "configured (--cluster.* flags) or unknown (NaN: no key is advised).",
                          MetricType::Gauge);
  const struct {
    const char* input;
    double value;
    InputOrigin origin;
  } inputs[] = {
      {"capacity_ops_per_second", in.cluster.capacity, in.capacity},
      {"shards", static_cast<double>(in.cluster.shards), in.shards},
      {"app_servers", static_cast<double>(in.cluster.app_servers), in.app_servers},
  };
  for (const auto& i : inputs) {
    Add(f, i.value, {{"input", i.input}, {"origin", std::string(InputOriginName(i.origin))}});
  }
  out.push_back(std::move(f));
  if (!in.shard_asked) return;
  AddSingle(out, "hotkey_shard_up",
            "1 if the last attempt to read the shard's own figures (INFO, stats) worked and "
            "they were possible.",
            MetricType::Gauge, in.shard_up ? 1 : 0);
  MetricFamily rejected =
      Family("hotkey_shard_answers_rejected_total",
             "The shard's answers refused because a figure cannot be (reason: busy, CPU time "
             "faster than the CPUs allow; slot_range, a slot past 16383; slot_overlap, a slot "
             "listed twice; node_count, too many nodes); each counts as no answer.",
             MetricType::Counter);
  for (const auto& [reason, name] : shard::kRejectionNames) {
    Add(rejected, static_cast<double>(in.shard_rejected[static_cast<size_t>(reason)]),
        {{"reason", std::string(name)}});
  }
  out.push_back(std::move(rejected));
  const struct {
    const char* name;
    const char* help;
    double value;
  } measured[] = {
      {"hotkey_shard_cpu_busy_ratio",
       "Fraction of the CPU the shard's command threads may use that they used, as the shard "
       "reports it.",
       in.shard_busy},
      {"hotkey_shard_cpus",
       "CPUs the shard's command threads may use (one core for Redis, less under a cgroup "
       "quota).",
       in.shard_cpus},
      {"hotkey_shard_commands_per_second", "Commands per second the shard reports serving.",
       in.shard_ops},
  };
  for (const auto& m : measured) {
    if (!std::isnan(m.value)) AddSingle(out, m.name, m.help, MetricType::Gauge, m.value);
  }
  MetricFamily role = Family("hotkey_shard_role_info",
                             "1 for the tapped node's role as it last said (primary, replica, "
                             "or unknown: not answered, or a server that does not say).",
                             MetricType::Gauge);
  Add(role, 1, {{"role", in.shard_role}});
  out.push_back(std::move(role));
  if (in.shard_slots >= 0) {
    AddSingle(out, "hotkey_shard_slots",
              "Redis Cluster slots the tapped node serves (0 for a replica), as it last said.",
              MetricType::Gauge, in.shard_slots);
  }
}

// Redis Cluster slots and hash tags (slots.h): the exported ones only, at most top_k each.
void AddSlotFamilies(const SlotsSnapshot& s, std::vector<MetricFamily>& out) {
  AddSingle(out, "hotkey_hot_slots", "Redis Cluster slots currently in a hot episode.",
            MetricType::Gauge, static_cast<double>(s.hot_slots));
  AddSingle(out, "hotkey_hot_tags", "Hash tags currently in a hot episode.", MetricType::Gauge,
            static_cast<double>(s.hot_tags));
  MetricFamily share = Family("hotkey_slot_share_ratio",
                              "The slot's share of this shard's ops over the rate window (0..1); "
                              "top slots only.",
                              MetricType::Gauge);
  MetricFamily ops =
      Family("hotkey_slot_ops_per_second",
             "The slot's ops per second over the rate window; top slots only.", MetricType::Gauge);
  MetricFamily hot =
      Family("hotkey_slot_hot", "1 while the slot is in a hot episode.", MetricType::Gauge);
  MetricFamily top = Family("hotkey_slot_top_key_share_ratio",
                            "The share of the slot's ops that its busiest tracked key carries.",
                            MetricType::Gauge);
  MetricFamily top_tag = Family("hotkey_slot_top_tag_share_ratio",
                                "The share of the slot's ops that its busiest tracked hash tag "
                                "carries.",
                                MetricType::Gauge);
  MetricFamily split = Family("hotkey_slot_tag_split",
                              "For a slot advised tag: into how many tags its hot tag's keys "
                              "should be spread so that no piece is hot.",
                              MetricType::Gauge);
  MetricFamily advice = Family("hotkey_slot_advice_info",
                               "1 for a hot slot's advice, by its cause: key (one key "
                               "dominates: its own fix), tag (one hash tag dominates: re-key "
                               "it, never move it), move (the node's rebalance plan moves it, "
                               "/api/v1/slots).",
                               MetricType::Gauge);
  for (const SlotSnapshot& v : s.slots) {
    const std::string slot = std::to_string(v.slot);
    Add(share, v.share, {{"slot", slot}});
    Add(ops, v.ops_per_second, {{"slot", slot}});
    if (v.hot) Add(hot, 1, {{"slot", slot}});
    Add(top, v.top_key_share, {{"slot", slot}});
    Add(top_tag, v.top_tag_share, {{"slot", slot}});
    if (v.advice == SlotAdvice::kTag) Add(split, v.tag_split, {{"slot", slot}});
    if (v.advice != SlotAdvice::kNone) {
      Add(advice, 1, {{"slot", slot}, {"advice", std::string(SlotAdviceName(v.advice))}});
    }
  }
  AddSingle(out, "hotkey_slot_move_advised",
            "1 while moving slots off this node is advised: it is the busiest node, over its "
            "load target or clearly over its peers, and the plan brings it under its goal.",
            MetricType::Gauge, s.move ? 1 : 0);
  AddSingle(out, "hotkey_slot_move_slots", "Slots the advised plan moves (0: none advised).",
            MetricType::Gauge, s.move ? static_cast<double>(s.move->SlotCount()) : 0);
  MetricFamily move = Family("hotkey_slot_move_projected_load_ratio",
                             "The load (ops over capacity) of each node of the advised plan "
                             "after it: role from (this node) and to (each target node).",
                             MetricType::Gauge);
  MetricFamily move_ops = Family("hotkey_slot_move_projected_commands_per_second",
                                 "The commands per second of each node of the advised plan "
                                 "after it: role from (this node) and to (each target node).",
                                 MetricType::Gauge);
  if (s.move) {
    std::vector<std::pair<const char*, const cluster::MoveSide*>> sides = {{"from", &s.move->from}};
    for (const cluster::Transfer& t : s.move->to) sides.emplace_back("to", &t.to);
    for (const auto& [role, side] : sides) {
      const std::vector<ClientMetric::Label> labels = {{"address", side->address}, {"role", role}};
      if (side->load_after) Add(move, *side->load_after, labels);
      Add(move_ops, side->ops_after, labels);
    }
  }
  MetricFamily tag_share = Family("hotkey_tag_share_ratio",
                                  "The hash tag's share of this shard's ops over the rate window "
                                  "(0..1), on its slot's basis; top tags only.",
                                  MetricType::Gauge);
  MetricFamily tag_ops = Family("hotkey_tag_ops_per_second",
                                "The hash tag's ops per second over the rate window, on its "
                                "slot's basis; top tags only.",
                                MetricType::Gauge);
  MetricFamily tag_hot =
      Family("hotkey_tag_hot", "1 while the hash tag is in a hot episode.", MetricType::Gauge);
  for (const TagSnapshot& t : s.tags) {
    const std::vector<ClientMetric::Label> labels = {{"tag", t.label},
                                                     {"slot", std::to_string(t.slot)}};
    Add(tag_share, t.share, labels);
    Add(tag_ops, t.ops_per_second, labels);
    if (t.hot) Add(tag_hot, 1, labels);
  }
  for (MetricFamily* f : {&share, &ops, &hot, &top, &top_tag, &split, &advice, &move, &move_ops,
                          &tag_share, &tag_ops, &tag_hot}) {
    out.push_back(std::move(*f));
  }
  if (const ClusterNode* me = s.cluster.Myself()) {
    MetricFamily info =
        Family("hotkey_cluster_node_info",
               "1: this shard's node in its Redis Cluster (node_id, address).", MetricType::Gauge);
    Add(info, 1, {{"node_id", me->id}, {"address", me->address}});
    out.push_back(std::move(info));
    AddSingle(out, "hotkey_cluster_node_slots", "Redis Cluster slots this shard's node serves.",
              MetricType::Gauge, me->slots);
    AddSingle(out, "hotkey_cluster_peers", "The other primaries of the cluster that serve slots.",
              MetricType::Gauge, static_cast<double>(s.peers.peers));
    AddSingle(out, "hotkey_cluster_peers_up",
              "The other primaries whose load is known (answered the last two rounds).",
              MetricType::Gauge, static_cast<double>(s.peers.peers_up));
    // Without a peer's load, the families are served with no sample.
    MetricFamily peers_mean =
        Family("hotkey_cluster_peers_commands_per_second",
               "The mean commands per second of the other primaries, as they answer INFO.",
               MetricType::Gauge);
    if (s.peers.peers_mean) Add(peers_mean, *s.peers.peers_mean, {});
    out.push_back(std::move(peers_mean));
    MetricFamily ratio = Family("hotkey_cluster_peers_ratio",
                                "This node's commands per second over its peers' mean (1: even).",
                                MetricType::Gauge);
    if (s.peers.ratio) Add(ratio, *s.peers.ratio, {});
    out.push_back(std::move(ratio));
  }
}

// Appends the HTTP server's own families (hotkey/http/server.h).
void AddHttpFamilies(const http::HttpServerStats& st, std::vector<MetricFamily>& out) {
  AddSingle(out, "hotkey_http_open_connections", "HTTP connections open now.", MetricType::Gauge,
            static_cast<double>(st.open_connections));
  AddSingle(out, "hotkey_http_connections_accepted_total", "HTTP connections accepted.",
            MetricType::Counter, static_cast<double>(st.accepted));
  MetricFamily waiting = Family("hotkey_http_waiting_connections",
                                "Open HTTP connections that may be closed to make room, by state "
                                "(silent: TLS connection that has sent nothing yet; handshake: TLS "
                                "handshake in progress; auth: request queued for "
                                "its password check; idle: waiting for a request; stream: a "
                                "feed stream).",
                                MetricType::Gauge);
  for (int c = 0; c < http::kNumConnectionStates; ++c) {
    Add(waiting, static_cast<double>(st.waiting[c]), {{"state", http::kConnectionStateNames[c]}});
  }
  out.push_back(std::move(waiting));
  MetricFamily ev = Family("hotkey_http_evictions_total",
                           "HTTP connections closed to make room, by reason (connection_cap: "
                           "the cap of open connections reached; descriptors: accept() found none "
                           "left) and by what the connection was doing (silent, handshake, auth: "
                           "answered 429, idle, stream).",
                           MetricType::Counter);
  for (int r = 0; r < http::kNumEvictReasons; ++r) {
    for (int c = 0; c < http::kNumConnectionStates; ++c) {
      Add(ev, static_cast<double>(st.evictions[r][c]),
          {{"reason", http::kEvictReasonNames[r]}, {"state", http::kConnectionStateNames[c]}});
    }
  }
  out.push_back(std::move(ev));
  MetricFamily auth = Family("hotkey_http_auth_failures_total",
                             "HTTP requests refused for basic auth, by reason (invalid: 401, "
                             "wrong, missing or malformed credentials, checked; busy: 429, "
                             "unchecked, no place in the password check queue or pushed out of "
                             "it for another address; deadline: 429, the request deadline "
                             "passed while it waited for its check).",
                             MetricType::Counter);
  for (int i = 0; i < http::kNumAuthFailures; ++i) {
    Add(auth, static_cast<double>(st.auth_failures[i]), {{"reason", http::kAuthFailureNames[i]}});
  }
  out.push_back(std::move(auth));
  MetricFamily acc = Family("hotkey_http_accept_errors_total",
                            "accept() failures on the HTTP listening sockets, by reason "
                            "(descriptors: EMFILE, ENFILE, ENOBUFS or ENOMEM; other).",
                            MetricType::Counter);
  for (int i = 0; i < http::kNumAcceptErrors; ++i) {
    Add(acc, static_cast<double>(st.accept_errors[i]), {{"reason", http::kAcceptErrorNames[i]}});
  }
  out.push_back(std::move(acc));
}

}  // namespace

std::string_view BuildVersion() { return version::Build().version; }

std::vector<MetricFamily> SnapshotCollector::Collect() const {
  std::vector<MetricFamily> out;
  const std::shared_ptr<const Snapshot> snap = store_.snapshot();
  const MetricType kGauge = MetricType::Gauge;
  const MetricType kCounter = MetricType::Counter;

  {
    MetricFamily f = Family("hotkey_build_info",
                            "A metric with a constant 1 labelled by the build's version, git "
                            "revision and branch, and compiler.",
                            kGauge);
    const version::BuildInfo& b = version::Build();
    Add(f, 1,
        {{"version", std::string(b.version)},
         {"revision", std::string(b.revision)},
         {"branch", std::string(b.branch)},
         {"compiler", std::string(b.compiler)}});
    out.push_back(std::move(f));
  }
  {
    const aggregate::ReloadStatus r = store_.reload_status();
    AddSingle(out, "hotkey_config_last_reload_successful",
              "Whether the last configuration reload succeeded.", kGauge,
              r.last_successful ? 1 : 0);
    AddSingle(out, "hotkey_config_last_reload_success_timestamp_seconds",
              "Time of the last successful configuration reload.", kGauge,
              absl::ToDoubleSeconds(r.last_success - absl::UnixEpoch()));
    if (r.web_config_watched) {
      AddSingle(out, "hotkey_web_config_last_reload_successful",
                "Whether the last reading of a changed --web.config.file succeeded (on failure "
                "the previous TLS and basic auth stay in force).",
                kGauge, r.web_config_last_successful ? 1 : 0);
      AddSingle(out, "hotkey_web_config_last_reload_success_timestamp_seconds",
                "Time the --web.config.file was last read successfully.", kGauge,
                absl::ToDoubleSeconds(r.web_config_last_success - absl::UnixEpoch()));
    }
  }
  if (const aggregate::StorageStatus st = store_.storage_status(); st.enabled) {
    AddSingle(out, "hotkey_storage_last_save_success_timestamp_seconds",
              "Time the trackers' state was last saved to --storage.path.", kGauge,
              absl::ToDoubleSeconds(st.last_success - absl::UnixEpoch()));
    AddSingle(out, "hotkey_storage_save_failures_total", "Failed saves of the trackers' state.",
              kCounter, static_cast<double>(st.failures));
  }
  if (http_) AddHttpFamilies(http_->stats(), out);
  if (const aggregate::LoadComparison* m = store_.measured()) {
    std::vector<MetricFamily> f = m->Collect();
    out.insert(out.end(), std::make_move_iterator(f.begin()), std::make_move_iterator(f.end()));
  }
  if (absl::StatusOr<ProcessStats> p = ReadProcessStats(); p.ok()) {
    const struct {
      const char* name;
      const char* help;
      MetricType type;
      double value;
    } proc[] = {
        {"process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", kCounter,
         p->cpu_seconds},
        {"process_resident_memory_bytes", "Resident memory size in bytes.", kGauge,
         p->resident_bytes},
        {"process_virtual_memory_bytes", "Virtual memory size in bytes.", kGauge, p->virtual_bytes},
        {"process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
         kGauge, p->start_time_seconds},
        {"process_open_fds", "Number of open file descriptors.", kGauge, p->open_fds},
        {"process_max_fds", "Maximum number of open file descriptors.", kGauge, p->max_fds},
    };
    for (const auto& m : proc) AddSingle(out, m.name, m.help, m.type, m.value);
  }
  if (!snap) return out;

  const source::ReceiverCounters& c = snap->counters;
  AddSingle(out, "hotkey_events_received_total",
            "Event lines parsed and counted (before sampling is scaled).", kCounter,
            static_cast<double>(c.events));
  AddSingle(out, "hotkey_last_event_timestamp_seconds",
            "Unix time of the last event any source counted; 0 before the first. A feed that "
            "went silent shows as this falling behind time().",
            kGauge,
            c.last_event == absl::InfinitePast()
                ? 0
                : absl::ToDoubleSeconds(c.last_event - absl::UnixEpoch()));
  for (const source::SourceMetrics& m : snap->source_metrics) AddSourceFamilies(m, out);
  AddSingle(out, "hotkey_udp_kernel_drops_total",
            "Datagrams the kernel dropped because our receive buffer was full (/proc/net/udp).",
            kCounter, static_cast<double>(snap->kernel_drops));
  {
    MetricFamily f =
        snap->counts_bytes
            ? Family("hotkey_bytes_per_second",
                     "This shard's request and reply bytes per second over the rate window, by "
                     "op (a bytes-weighted tap).",
                     kGauge)
            : Family("hotkey_ops_per_second",
                     "This shard's ops per second over the rate window, by op, scaled by client "
                     "sampling.",
                     kGauge);
    for (int o = 0; o < sketch::kNumOps; ++o)
      Add(f, snap->ops_per_second[o], {{"op", kOpNames[o]}});
    out.push_back(std::move(f));
  }
  AddSingle(out, "hotkey_tracked_keys", "Keys held in the trackers' top-K tables.", kGauge,
            static_cast<double>(snap->tracked_keys));
  AddSingle(out, "hotkey_sketch_bytes",
            "Memory of the sources' trackers (sketches and tables), one per source.", kGauge,
            static_cast<double>(snap->sketch_bytes));
  AddSingle(out, "hotkey_merged_tracker_bytes",
            "Memory of the tracker the sources' trackers are merged into (0 with one source).",
            kGauge, static_cast<double>(snap->merged_tracker_bytes));
  AddSingle(out, "hotkey_rate_history_bytes",
            "Memory of the per-key counts kept over the rate window.", kGauge,
            static_cast<double>(snap->rate_history_bytes));
  AddSingle(out, "hotkey_memory_budget_bytes",
            "Most memory the tracking state can take with these options: trackers, their "
            "published copies, the merged tracker and the rate history; plus the tap's "
            "bound (hotkey_tap_memory_bound_bytes) when a tap runs, and the hot-key feed "
            "streams' bound (hotkey_feed_memory_bound_bytes).",
            kGauge, static_cast<double>(snap->memory_budget_bytes + serving_bound_bytes_));
  AddSingle(out, "hotkey_hot_keys", "Keys currently in a hot episode.", kGauge,
            static_cast<double>(snap->hot_keys));
  AddSingle(out, "hotkey_history_memory_bytes",
            "Memory of the history's windows and the episode log (allocated at start).", kGauge,
            static_cast<double>(snap->history_bytes));
  AddSingle(out, "hotkey_history_memory_bound_bytes",
            "Most memory the history's windows and the episode log can take: fixed by the "
            "export top-k and label length at start, whatever the number of keys.",
            kGauge, static_cast<double>(snap->history_bound_bytes));
  {
    prometheus::MetricFamily f = Family("hotkey_history_windows",
                                        "Closed windows the history holds, per resolution "
                                        "(fine: 10 s for an hour; coarse: 1 min for a day).",
                                        kGauge);
    for (const auto& [resolution, name] : aggregate::History::kResolutionNames) {
      Add(f, static_cast<double>(snap->history_windows[static_cast<size_t>(resolution)]),
          {{"resolution", std::string(name)}});
    }
    out.push_back(std::move(f));
  }
  AddSingle(out, "hotkey_history_episodes",
            "Hot key, slot and tag episodes the episode log holds (open ones included).", kGauge,
            static_cast<double>(snap->episodes));
  AddSingle(out, "hotkey_history_open_episodes", "Episodes of the log still open.", kGauge,
            static_cast<double>(snap->open_episodes));

  AddModelInputs(snap->model, out);

  MetricFamily share = Family("hotkey_key_share_ratio",
                              "The key's share of this shard's ops over the rate window (0..1); "
                              "top keys only.",
                              kGauge);
  MetricFamily threshold = Family("hotkey_key_share_threshold_ratio",
                                  "The share above which the key counts as hot.", kGauge);
  MetricFamily error = Family("hotkey_key_share_error_ratio",
                              "Upper bound on the error of the decayed share that detection "
                              "reads (the share over about one half-life).",
                              kGauge);
  MetricFamily write =
      Family("hotkey_key_write_ratio",
             "Fraction of the key's ops over the rate window that are writes.", kGauge);
  MetricFamily ops =
      snap->counts_bytes
          ? Family("hotkey_key_bytes_per_second",
                   "The key's request and reply bytes per second over the rate window, by op (a "
                   "bytes-weighted tap).",
                   kGauge)
          : Family("hotkey_key_ops_per_second",
                   "The key's ops per second over the rate window, by op, scaled by client "
                   "sampling.",
                   kGauge);
  MetricFamily absorbed =
      Family("hotkey_key_absorbed_ops_per_second",
             "The key's ops per second over the rate window that client kits reported they "
             "kept off the shard (POST /api/v1/hotkeys/demand), by op; hot keys, and keys with a "
             "report.",
             kGauge);
  MetricFamily demand = Family("hotkey_key_demand_share_ratio",
                               "The key's demand (the shard's ops of it plus what kits absorbed) "
                               "over the shard's ops plus the same, over the last seconds: what "
                               "the hot state reads.",
                               kGauge);
  MetricFamily hot = Family("hotkey_key_hot", "1 while the key is in a hot episode.", kGauge);
  MetricFamily advice =
      Family("hotkey_key_advice_info",
             "1 for the fix advised for a hot key (strategy), held by hysteresis; "
             "absent for a key that is not hot, until the shard's load since "
             "the episode's onset is known, and while the headroom is unknown.",
             kGauge);
  MetricFamily load = Family("hotkey_key_projected_load_ratio",
                             "The busiest shard's load over its capacity under each strategy, "
                             "by the shard load model; for hot keys with advice only.",
                             kGauge);
  for (const KeySnapshot& k : snap->keys) {
    Add(share, k.share, {{"key", k.label}});
    Add(threshold, std::isinf(k.threshold) ? INFINITY : k.threshold, {{"key", k.label}});
    Add(error, k.share_error, {{"key", k.label}});
    Add(write, k.write_ratio, {{"key", k.label}});
    for (int o = 0; o < sketch::kNumOps; ++o) {
      Add(ops, k.ops_per_second[o], {{"key", k.label}, {"op", kOpNames[o]}});
    }
    if (k.hot || k.absorbed_ops_per_second[0] + k.absorbed_ops_per_second[1] > 0) {
      for (int o = 0; o < sketch::kNumOps; ++o) {
        Add(absorbed, k.absorbed_ops_per_second[o], {{"key", k.label}, {"op", kOpNames[o]}});
      }
    }
    Add(demand, k.demand_share, {{"key", k.label}});
    if (k.hot) Add(hot, 1, {{"key", k.label}});
    if (!k.projected_load.empty()) {
      Add(advice, 1, {{"key", k.label}, {"strategy", std::string(model::StrategyName(k.advice))}});
    }
    for (const auto& [strategy, busiest] : k.projected_load) {
      Add(load, busiest,
          {{"key", k.label}, {"strategy", std::string(model::StrategyName(strategy))}});
    }
  }
  for (MetricFamily* f :
       {&share, &threshold, &error, &write, &ops, &absorbed, &demand, &hot, &advice, &load}) {
    out.push_back(std::move(*f));
  }
  if (snap->slots.enabled) AddSlotFamilies(snap->slots, out);
  return out;
}

std::string RenderText(const prometheus::Collectable& collectable) {
  std::vector<MetricFamily> families = collectable.Collect();
  for (MetricFamily& f : families) {
    for (ClientMetric& m : f.metric) {
      for (ClientMetric::Label& l : m.label) {
        // Most values are plain ASCII, which Escape() would return unchanged: skip the copy.
        if (std::any_of(l.value.begin(), l.value.end(), [](char c) {
              const auto u = static_cast<unsigned char>(c);
              return u < 0x20 || u >= 0x7f;
            })) {
          l.value = text::Escape(l.value, {.escape_backslash = false});
        }
      }
    }
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace hotkey::web
