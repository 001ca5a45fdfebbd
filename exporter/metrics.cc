#include "hotkey/exporter/metrics.h"

#include <cmath>

#include <prometheus/text_serializer.h>

#include "hotkey/exporter/proc_stats.h"
#include "hotkey/version/build_info.h"

namespace hotkey::exporter {

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

constexpr const char* kProtocolNames[] = {"redis", "memcached"};
// By tcp::DecodeStatus, kOk (unused) first.
constexpr const char* kSkipReasons[] = {"ok",        "not_tcp",   "other_port",      "fragment",
                                        "truncated", "malformed", "unsupported_link"};

// The tap's families (tap_source.h), only when a tap runs.
void AddTapFamilies(const source::TapCounters& t, std::vector<MetricFamily>& out) {
  const MetricType kGauge = MetricType::Gauge;
  const MetricType kCounter = MetricType::Counter;
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  AddSingle(out, "hotkey_tap_packets_total", "Frames the tap read from the capture.", kCounter,
            d(t.packets));
  AddSingle(out, "hotkey_tap_captured_bytes_total",
            "Bytes of the frames the tap read, as captured (at most --tap.snaplen each).", kCounter,
            d(t.captured_bytes));
  {
    MetricFamily f = Family("hotkey_tap_capture_drops_total",
                            "Packets the capture lost (pcap_stats), by where: kernel (ps_drop, "
                            "no room in the capture ring: raise --tap.buffer-bytes) and "
                            "interface (ps_ifdrop, dropped by the interface or its driver).",
                            kCounter);
    Add(f, d(t.kernel_drops), {{"where", "kernel"}});
    Add(f, d(t.interface_drops), {{"where", "interface"}});
    out.push_back(std::move(f));
  }
  {
    MetricFamily f = Family("hotkey_tap_frames_skipped_total",
                            "Captured frames not used, by reason (not_tcp, other_port, fragment, "
                            "truncated: cut by --tap.snaplen or broken, malformed, "
                            "unsupported_link).",
                            kCounter);
    for (size_t i = 1; i < t.frames_skipped.size(); ++i) {
      Add(f, d(t.frames_skipped[i]), {{"reason", kSkipReasons[i]}});
    }
    out.push_back(std::move(f));
  }
  AddSingle(out, "hotkey_tap_flows", "TCP connections the tap tracks now.", kGauge, d(t.flows));
  AddSingle(out, "hotkey_tap_flows_opened_total", "TCP connections the tap started tracking.",
            kCounter, d(t.flows_opened));
  {
    MetricFamily f = Family("hotkey_tap_flows_ended_total",
                            "TCP connections the tap stopped tracking, by reason: closed (FIN or "
                            "RST), expired (idle past --tap.idle-timeout), evicted (the table of "
                            "--tap.max-flows was full; the least recently active went).",
                            kCounter);
    Add(f, d(t.flows_closed), {{"reason", "closed"}});
    Add(f, d(t.flows_expired), {{"reason", "expired"}});
    Add(f, d(t.flows_evicted), {{"reason", "evicted"}});
    out.push_back(std::move(f));
  }
  AddSingle(out, "hotkey_tap_flows_joined_midstream_total",
            "TCP connections first seen without their SYN (open before the tap started): each "
            "resyncs at its next request.",
            kCounter, d(t.joined_midstream));
  AddSingle(out, "hotkey_tap_gaps_total",
            "Stream bytes lost (a dropped or reordered segment): the parser resyncs after each.",
            kCounter, d(t.gaps));
  AddSingle(out, "hotkey_tap_retransmitted_bytes_total",
            "Payload bytes seen twice (TCP retransmissions), trimmed.", kCounter,
            d(t.retransmitted_bytes));
  {
    MetricFamily f = Family("hotkey_tap_resyncs_total",
                            "Searches for the next message boundary after a gap or a protocol "
                            "error, by direction (request; reply with --tap.weight=bytes).",
                            kCounter);
    Add(f, d(t.resyncs), {{"direction", "request"}});
    Add(f, d(t.reply_resyncs), {{"direction", "reply"}});
    out.push_back(std::move(f));
  }
  {
    MetricFamily f =
        Family("hotkey_tap_protocol_errors_total",
               "Bytes that did not frame as a message of the protocol, by direction.", kCounter);
    Add(f, d(t.protocol_errors), {{"direction", "request"}});
    Add(f, d(t.reply_protocol_errors), {{"direction", "reply"}});
    out.push_back(std::move(f));
  }
  {
    MetricFamily c = Family("hotkey_tap_commands_total",
                            "Requests parsed, by protocol (each queued command of MULTI/EXEC "
                            "counts; known to the command table or not).",
                            kCounter);
    MetricFamily k = Family("hotkey_tap_keys_total",
                            "Keys the parsed requests touched, by protocol and access (read, "
                            "write): MGET a b c is three reads.",
                            kCounter);
    for (size_t p = 0; p < 2; ++p) {
      Add(c, d(t.commands[p]), {{"protocol", kProtocolNames[p]}});
      Add(k, d(t.read_keys[p]), {{"protocol", kProtocolNames[p]}, {"access", "read"}});
      Add(k, d(t.write_keys[p]), {{"protocol", kProtocolNames[p]}, {"access", "write"}});
    }
    out.push_back(std::move(c));
    out.push_back(std::move(k));
  }
  AddSingle(out, "hotkey_tap_unknown_commands_total",
            "Well-framed requests whose command is not in the command table: counted, their "
            "keys not.",
            kCounter, d(t.unknown_commands));
  AddSingle(out, "hotkey_tap_excluded_requests_total",
            "Requests left out by design: replication links (PSYNC, REPLCONF), memcached's "
            "binary protocol.",
            kCounter, d(t.excluded_requests));
  AddSingle(out, "hotkey_tap_keys_dropped_total",
            "Keys longer than --tap.flow-buffer-bytes allows: not counted.", kCounter,
            d(t.keys_dropped));
  AddSingle(out, "hotkey_tap_replies_total",
            "Replies matched to their requests (--tap.weight=bytes).", kCounter, d(t.replies));
  AddSingle(out, "hotkey_tap_replies_unmatched_total",
            "Replies with no request waiting (--tap.weight=bytes): pushes, a stream joined or "
            "resynced mid-way.",
            kCounter, d(t.replies_unmatched));
  {
    MetricFamily f = Family("hotkey_tap_requests_unanswered_total",
                            "Requests charged their request bytes only (--tap.weight=bytes), by "
                            "reason: queue_full (the flow's queue of --tap.flow-buffer-bytes was "
                            "full), gap (the flow lost bytes and had not resynced), closed (the "
                            "flow ended first).",
                            kCounter);
    Add(f, d(t.unanswered_queue_full), {{"reason", "queue_full"}});
    Add(f, d(t.unanswered_gap), {{"reason", "gap"}});
    Add(f, d(t.unanswered_closed), {{"reason", "closed"}});
    out.push_back(std::move(f));
  }
  AddSingle(out, "hotkey_tap_memory_bytes",
            "Memory the tap holds now besides its tracker: flow table, parsers, reply queues.",
            kGauge, d(t.memory_bytes));
  AddSingle(
      out, "hotkey_tap_memory_bound_bytes",
      "The most memory the tap can hold besides its tracker: --tap.max-flows x "
      "(--tap.flow-buffer-bytes x 1, or 3 with bytes weight, + 1 KiB) + 2 x --tap.buffer-bytes "
      "(the capture ring).",
      kGauge, d(t.memory_bound_bytes));
  AddSingle(out, "hotkey_tap_capture_file_done",
            "1 once --tap.file was read to its end (its counts stay).", kGauge, d(t.file_done));
}

}  // namespace

std::string_view BuildVersion() { return version::Build().version; }

std::vector<MetricFamily> SnapshotCollector::Collect() const {
  std::vector<MetricFamily> out;
  const std::shared_ptr<const Snapshot> snap = snapshot_();
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
    const ReloadStatus r = reload_();
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
  if (const StorageStatus st = storage_ ? storage_() : StorageStatus{}; st.enabled) {
    AddSingle(out, "hotkey_storage_last_save_success_timestamp_seconds",
              "Time the trackers' state was last saved to --storage.path.", kGauge,
              absl::ToDoubleSeconds(st.last_success - absl::UnixEpoch()));
    AddSingle(out, "hotkey_storage_save_failures_total", "Failed saves of the trackers' state.",
              kCounter, static_cast<double>(st.failures));
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
  AddSingle(out, "hotkey_datagrams_received_total", "UDP datagrams received.", kCounter,
            static_cast<double>(c.datagrams));
  {
    MetricFamily f = Family("hotkey_datagrams_rejected_total",
                            "Datagrams dropped whole, by reason: bad_header (an unknown "
                            "protocol version), source_denied (outside --udp.allowed-sources).",
                            kCounter);
    Add(f, static_cast<double>(c.rejected[static_cast<size_t>(parsers::Reject::kBadHeader)]),
        {{"reason", "bad_header"}});
    Add(f, static_cast<double>(c.datagrams_denied), {{"reason", "source_denied"}});
    out.push_back(std::move(f));
  }
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
  {
    MetricFamily f =
        Family("hotkey_events_rejected_total", "Event lines rejected, by reason.", kCounter);
    for (size_t i = 0; i < parsers::kNumRejects; ++i) {
      if (static_cast<parsers::Reject>(i) == parsers::Reject::kBadHeader)
        continue;  // counted per datagram
      Add(f, static_cast<double>(c.rejected[i]),
          {{"reason", std::string(parsers::RejectName(static_cast<parsers::Reject>(i)))}});
    }
    out.push_back(std::move(f));
  }
  AddSingle(out, "hotkey_udp_receive_errors_total",
            "Receive system calls that failed for a reason other than no data.", kCounter,
            static_cast<double>(c.receive_errors));
  AddSingle(out, "hotkey_udp_kernel_drops_total",
            "Datagrams the kernel dropped because our receive buffer was full (/proc/net/udp).",
            kCounter, static_cast<double>(snap->kernel_drops));
  {
    MetricFamily f = Family("hotkey_ops_per_second",
                            "This shard's ops per second over the rate window, by op, scaled "
                            "by client sampling.",
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
            "bound (hotkey_tap_memory_bound_bytes) when a tap runs.",
            kGauge, static_cast<double>(snap->memory_budget_bytes));
  AddSingle(out, "hotkey_hot_keys", "Keys currently in a hot episode.", kGauge,
            static_cast<double>(snap->hot_keys));

  if (const source::TapCounters& t = c.tap; t.taps > 0) AddTapFamilies(t, out);

  MetricFamily share = Family("hotkey_key_share_ratio",
                              "The key's share of this shard's traffic (0..1), decayed over "
                              "about one half-life; top keys only.",
                              kGauge);
  MetricFamily threshold = Family("hotkey_key_share_threshold_ratio",
                                  "The share above which the key counts as hot.", kGauge);
  MetricFamily error = Family("hotkey_key_share_error_ratio",
                              "Upper bound on the error of hotkey_key_share_ratio.", kGauge);
  MetricFamily write =
      Family("hotkey_key_write_ratio", "Fraction of the key's ops that are writes.", kGauge);
  MetricFamily ops = Family("hotkey_key_ops_per_second",
                            "The key's ops per second over the rate window, by op, scaled by "
                            "client sampling.",
                            kGauge);
  MetricFamily hot =
      Family("hotkey_key_hot", "1 while the key is in a hot episode; strategy is the advised fix.",
             kGauge);
  MetricFamily load = Family("hotkey_key_projected_load_ratio",
                             "The busiest shard's load over its capacity under each strategy, "
                             "by the shard load model.",
                             kGauge);
  for (const KeySnapshot& k : snap->keys) {
    Add(share, k.share, {{"key", k.label}});
    Add(threshold, std::isinf(k.threshold) ? INFINITY : k.threshold, {{"key", k.label}});
    Add(error, k.share_error, {{"key", k.label}});
    Add(write, k.write_ratio, {{"key", k.label}});
    for (int o = 0; o < sketch::kNumOps; ++o) {
      Add(ops, k.ops_per_second[o], {{"key", k.label}, {"op", kOpNames[o]}});
    }
    if (k.hot) {
      Add(hot, 1, {{"key", k.label}, {"strategy", std::string(model::StrategyName(k.advice))}});
    }
    for (const auto& [strategy, busiest] : k.projected_load) {
      Add(load, busiest,
          {{"key", k.label}, {"strategy", std::string(model::StrategyName(strategy))}});
    }
  }
  for (MetricFamily* f : {&share, &threshold, &error, &write, &ops, &hot, &load}) {
    out.push_back(std::move(*f));
  }
  return out;
}

std::string RenderText(const prometheus::Collectable& collectable) {
  return prometheus::TextSerializer().Serialize(collectable.Collect());
}

}  // namespace hotkey::exporter
