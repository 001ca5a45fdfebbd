// hotkeyd's flag table; see flags.h. The parsing is FlagParser's (flag_parser.h).
//
// Adding a flag = adding one line to Register: its name, help and the DaemonOptions field
// it sets (whose value in DaemonOptions{} is the default --help shows). Range checks are
// left to DaemonOptions::Validate so that flags and the rules file share them.

#include "hotkey/config/flags.h"

#include <memory>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl_compat.h"
#include "hotkey/config/flag_parser.h"
#include "hotkey/config/values.h"
#include "hotkey/version/build_info.h"

namespace hotkey::config {
namespace {

using hotkey::model::Strategy;
using internal::Av;

std::string Dur(absl::Duration d) { return absl::FormatDuration(d); }

std::string OrderText(const std::vector<Strategy>& order) {
  return absl::StrJoin(order, ",", [](std::string* out, Strategy s) {
    absl::StrAppend(out, Av(hotkey::model::StrategyName(s)));
  });
}

// Registers every flag on `p`, bound to the fields of `o`: the table, one flag a line.
// clang-format off
void Register(FlagParser& p, DaemonOptions& o) {
  p.AddCustom("web.listen-address", "Address of the HTTP server (/metrics, /api/v1, /-/reload, UI): host:port, [ipv6]:port or :port. Repeat the flag to listen on several addresses.",
      absl::StrJoin(o.web.listen_addresses, ","),
      [&o, given = std::make_shared<bool>(false)](std::string_view v) {
       if (!*given) o.web.listen_addresses.clear();  // the first one given replaces the default
       *given = true;
       o.web.listen_addresses.emplace_back(v);
       return absl::OkStatus();});
  p.AddBool("web.systemd-socket", "Serve on the listening sockets systemd passes (socket activation, deploy/systemd/hotkeyd.socket) instead of --web.listen-address.", &o.web.systemd_socket);
  p.AddBool("web.enable-lifecycle", "Enable POST /-/reload (without it the endpoint answers 403); SIGHUP reloads either way.", &o.web.enable_lifecycle);
  p.AddString("web.telemetry-path", "Path under which to expose metrics.", &o.web.telemetry_path);
  p.AddString("web.config.file", "Web configuration file (Prometheus exporter-toolkit format): TLS, basic auth, headers. Read at start.", &o.web.config_file);
  p.AddBool("web.health-without-auth", "Answer /-/healthy and /-/ready without credentials when basic auth is on.", &o.web.health_without_auth);
  p.AddString("udp.listen-address", "Address to receive event datagrams on: host:port, [ipv6]:port or :port (all interfaces).", &o.udp.listen_address);
  p.AddInteger("udp.receivers", "Receiver threads, one SO_REUSEPORT socket and tracker each (1 to 64).", &o.udp.receivers);
  p.AddSize("udp.read-buffer", "Socket receive buffer (SO_RCVBUF) to request; capped by net.core.rmem_max.", &o.udp.read_buffer_bytes);
  p.AddInteger("udp.batch", "Datagrams read per recvmmsg call (1 to 1024).", &o.udp.batch);
  p.AddCustom("udp.allowed-sources", "Comma-separated CIDRs allowed to send events (IPv4 or IPv6); empty allows all.",
      absl::StrJoin(o.udp.allowed_sources, ","),
      [&o](std::string_view v) { o.udp.allowed_sources = SplitList(v); return absl::OkStatus();});
  p.AddString("tap.interface", "Capture the shard's own traffic on this interface (lo, eth0, any) with libpcap: no client change. Needs CAP_NET_RAW. With --tap.port.", &o.tap.interface);
  p.AddString("tap.file", "Read this capture file (pcap, e.g. from tcpdump -w) through the tap instead of an interface; needs no privilege. With --tap.port.", &o.tap.file);
  p.AddCustom("tap.port", "The shard's server port(s) to tap, 1 to 65535: repeat the flag or separate with commas (at most 64).",
      absl::StrJoin(o.tap.ports, ","),
      [&o](std::string_view v) {
       for (const std::string& item : SplitList(v)) {
         absl::StatusOr<int64_t> n = ParseInteger(item);
         if (!n.ok() || *n < 1 || *n > 65535) {
           return absl::InvalidArgumentError(absl::StrCat("\"", item, "\" is not a port (1 to 65535)"));
         }
         o.tap.ports.push_back(static_cast<uint16_t>(*n));
       }
       return absl::OkStatus();});
  p.AddCustom("tap.protocol", "The tapped server's protocol: redis (RESP2 and RESP3) or memcached (text and meta; binary is counted and skipped).",
      std::string(TapProtocolName(o.tap.protocol)),
      [&o](std::string_view v) {
       if (v == "redis") { o.tap.protocol = TapProtocol::kRedis; return absl::OkStatus(); }
       if (v == "memcached") { o.tap.protocol = TapProtocol::kMemcached; return absl::OkStatus(); }
       return absl::InvalidArgumentError(absl::StrCat("\"", Av(v), "\" is not redis or memcached"));});
  p.AddCustom("tap.weight", "What a tapped request weighs: ops (each key it touches counts 1) or bytes (its request bytes plus its reply's bytes, split evenly over its keys; captures the replies too).",
      std::string(TapWeightName(o.tap.weight)),
      [&o](std::string_view v) {
       if (v == "ops") { o.tap.weight = TapWeight::kOps; return absl::OkStatus(); }
       if (v == "bytes") { o.tap.weight = TapWeight::kBytes; return absl::OkStatus(); }
       return absl::InvalidArgumentError(absl::StrCat("\"", Av(v), "\" is not ops or bytes"));});
  p.AddSize("tap.buffer-bytes", "The kernel's capture ring (pcap_set_buffer_size; libpcap may map up to twice this), 64KiB to 1GiB; packets past it are dropped and counted.", &o.tap.buffer_bytes);
  p.AddInteger("tap.snaplen", "Bytes captured per frame, 128 to 262144; a frame cut short is counted and its flow resyncs.", &o.tap.snaplen);
  p.AddInteger("tap.max-flows", "TCP connections tracked at once, 1 to 1048576; past it the least recently active is evicted (counted).", &o.tap.max_flows);
  p.AddSize("tap.flow-buffer-bytes", "Bytes one connection direction may hold (a partial request and its keys; with bytes weight also the requests awaiting replies), 256B to 16MiB. Worst-case tap memory: max-flows x (this x 1, or 3 with bytes weight, + 1KiB) + 2 x buffer-bytes (hotkey_tap_memory_bound_bytes).", &o.tap.flow_buffer_bytes);
  p.AddDuration("tap.idle-timeout", "A connection idle this long is forgotten (1s to 24h).", &o.tap.idle_timeout);
  p.AddSize("key.max-bytes", "Longest key accepted; longer events are rejected (key_too_long).", &o.udp.max_key_bytes)
      .Shown(absl::StrCat(o.udp.max_key_bytes));
  p.AddCustom("key.label", "How keys appear as label values: raw (made valid UTF-8), hash, or prefix (up to the last ':' plus a hash).",
      std::string(KeyLabelModeName(o.exporter.label)),
      [&o](std::string_view v) {
       absl::StatusOr<KeyLabelMode> m = ParseKeyLabelMode(v);
       if (!m.ok()) return m.status();
       o.exporter.label = *m;
       return absl::OkStatus();});
  p.AddString("key.hash-secret-file", "File whose contents key the hash in hash and prefix labels (keeps keys unguessable).", &o.key_hash_secret_file);
  p.AddSize("key.label-max-bytes", "Longest key label value, in bytes (16 to 16384).", &o.exporter.label_max_bytes)
      .Shown(absl::StrCat(o.exporter.label_max_bytes));
  p.AddDuration("track.half-life", "Half-life of the decaying key weights: shares cover roughly this much recent traffic.", &o.track.half_life);
  p.AddDuration("track.publish-interval", "How often trackers publish a snapshot for metrics, API and alerts.", &o.track.publish_interval);
  p.AddDuration("track.rate-window", "Window of the exported ops/s rates (at least the publish interval).", &o.track.rate_window);
  p.AddInteger("track.candidates", "Keys tracked exactly per receiver (top-K table slots).", &o.track.candidates);
  p.AddSize("track.sketch-bytes", "Memory of the count-min sketch per receiver.", &o.track.sketch_bytes);
  p.AddInteger("track.lobby", "Keyless entries (16 bytes each) per receiver that track more keys than the table holds, for flat traffic; 0: none.", &o.track.lobby);
  p.AddSize("track.stored-key-bytes", "Key bytes stored per candidate; longer keys are kept truncated plus a hash.", &o.track.stored_key_bytes)
      .Shown(absl::StrCat(o.track.stored_key_bytes));
  p.AddInteger("export.top-k", "Most keys exported per metric (1 to 1000).", &o.exporter.top_k);
  p.AddNumber("export.min-share", "Share of traffic at which a key is exported, in (0, 1].", &o.exporter.min_share);
  p.AddNumber("export.hysteresis", "An exported key is dropped below min-share * (1 - hysteresis), in [0, 1).", &o.exporter.hysteresis);
  p.AddNumber("export.min-key-ops", "Ops/s over the rate window a key needs before it is exported (hot keys excepted); 0 turns it off.", &o.exporter.min_key_ops_per_second);
  p.AddNumber("alert.share-threshold", "Share of traffic above which a key is hot, unless a rule in --config.file says otherwise; in (0, 1].", &o.alert.default_threshold);
  p.AddDuration("alert.min-dwell", "How long a key must stay over its threshold before it is hot.", &o.alert.min_dwell);
  p.AddNumber("alert.hysteresis", "A hot key cools below threshold * (1 - hysteresis), in [0, 1).", &o.alert.hysteresis);
  p.AddNumber("alert.min-ops", "Idle guard: no key is hot while the shard serves fewer ops/s than this over --track.rate-window (or none); hot keys end below it.", &o.alert.min_ops_per_second);
  p.AddInteger("cluster.shards", "Shards in the cluster (N), for the advice model.", &o.cluster.shards);
  p.AddNumber("cluster.capacity", "Ops/s one shard can serve (C).", &o.cluster.capacity);
  p.AddInteger("cluster.app-servers", "App servers that would cache a hot key (A).", &o.cluster.app_servers);
  p.AddCustom("cluster.refresh", "Refresh interval of a cached hot key.",
      Dur(absl::Seconds(o.cluster.refresh_seconds)),
      [&o](std::string_view v) {
       absl::StatusOr<absl::Duration> d = ParseDurationText(v);
       if (!d.ok()) return d.status();
       o.cluster.refresh_seconds = absl::ToDoubleSeconds(*d);
       return absl::OkStatus();});
  p.AddInteger("cluster.replicas", "Copies of a replicated hot key (R, at most shards).", &o.cluster.replicas);
  p.AddInteger("cluster.split", "Sub-keys of a split hot key (S, at most shards).", &o.cluster.split);
  p.AddNumber("cluster.target", "Advised fixes keep the busiest shard at or below this fraction of capacity.", &o.cluster.target);
  p.AddCustom("cluster.order", "Comma-separated strategies to advise, cheapest first (none, cache, replicate, split, split_cache); isolate is implied last.",
      OrderText(o.cluster.order),
      [&o](std::string_view v) {
       std::vector<Strategy> order;
       for (const std::string& name : SplitList(v)) {
         absl::StatusOr<Strategy> s = hotkey::model::ParseStrategy(name);
         if (!s.ok()) return s.status();
         order.push_back(*s);
       }
       o.cluster.order = std::move(order);
       return absl::OkStatus();});
  p.AddString("model.measured-loads-file", "JSON file of each shard's measured ops/s (timestamp, ops_per_second, optional strategy in force, key, source; README: The measured loads), re-read when it changes; the landing page shows it beside the model's projection for each fix. Empty: none.", &o.measured_loads.file);
  p.AddDuration("model.measured-loads-max-age", "A measurement older than this (by its timestamp) is shown as stale (1s to 24h).", &o.measured_loads.max_age);
  p.AddString("storage.path", "File the trackers' state is saved to (periodically and on shutdown) and restored from at start; empty: none.", &o.storage.path);
  p.AddDuration("storage.interval", "How often the trackers' state is saved to --storage.path.", &o.storage.interval);
  p.AddString("config.file", "YAML rules file (thresholds per key pattern, alert, export and cluster settings); re-read on SIGHUP and POST /-/reload (--web.enable-lifecycle).", &o.config_file);
  p.AddBool("demo", "Generate built-in demo traffic in-process (no socket): three celebrity keys (hot reads, hot writes, both) over a Zipf background.", &o.demo);
  p.AddNumber("demo.rate", "Demo events per second.", &o.demo_rate);
  p.AddString("log.level", "Least severe log messages to print: debug, info, warn or error.", &o.log_level);
  p.AddString("log.format", "Output format of log messages: logfmt or json (one object a line).", &o.log_format);
  p.AddBool("check-config", "Check the flags, --config.file and --web.config.file, print the result and exit (0: valid, 1: not) without binding any socket.", &o.check_config);
}
// clang-format on

}  // namespace

absl::StatusOr<FlagsResult> ParseFlags(int argc, const char* const* argv) {
  FlagsResult result;
  // --help and --version win over anything else on the line, even bad flags.
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      result.action = FlagsResult::Action::kPrintHelp;
      result.text = UsageText();
      return result;
    }
    if (arg == "--version") {
      result.action = FlagsResult::Action::kPrintVersion;
      result.text = VersionText();
      return result;
    }
  }
  // With --check-config a bad flag is a result to report (exit 1), not a usage error.
  bool checking = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    checking |= arg == "--check-config" || arg == "--check-config=true";
  }
  DaemonOptions& options = result.options;
  FlagParser parser("hotkeyd");
  Register(parser, options);
  absl::Status status;
  if (absl::StatusOr<FlagParser::Parsed> parsed = parser.Parse(argc, argv); !parsed.ok()) {
    status = parsed.status();
  } else if (absl::Status s = options.Validate(); !s.ok()) {
    status = absl::InvalidArgumentError(absl::StrCat("invalid flags: ", s.message()));
  }
  if (checking || options.check_config) {
    result.action = FlagsResult::Action::kCheckConfig;
    result.flags_status = status;
    return result;
  }
  if (!status.ok()) return status;
  return result;
}

std::string UsageText() {
  std::string out =
      "usage: hotkeyd [<flags>]\n"
      "\n"
      "Finds the hot keys of a cache or database from key-access events sent over UDP\n"
      "(\"r <key>\" / \"w <key>\" lines), or from the shard's own traffic tapped with libpcap\n"
      "(--tap.interface=lo --tap.port=6379: Redis or memcached, no client change), exports\n"
      "their shares to Prometheus and advises a fix for each hot key.\n"
      "\n"
      "Sizes take B, KiB, MiB, GiB (or KB, MB, GB); durations take ms, s, m, h (250ms, 1m30s).\n"
      "\n"
      "Flags:\n"
      "  -h, --help\n"
      "        Show this help and exit.\n"
      "  --version\n"
      "        Show the version and exit.\n";
  DaemonOptions defaults;
  FlagParser parser("hotkeyd");
  Register(parser, defaults);
  out += parser.Help();
  return out;
}

std::string VersionText() { return version::VersionText("hotkeyd"); }

}  // namespace hotkey::config
