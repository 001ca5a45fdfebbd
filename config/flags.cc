// hotkeyd's flag table; see flags.h. The parsing is FlagParser's (flag_parser.h).
//
// Adding a flag = adding one line to Register: its name, help and the DaemonOptions field
// it sets (whose value in DaemonOptions{} is the default --help shows). Range checks are
// left to DaemonOptions::Validate so that flags and the rules file share them.

#include "hotkey/config/flags.h"

#include <algorithm>
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

// A flag that no longer exists and where its setting lives now: a rules file key
// (`file_key`) or another flag (`new_flag`).
struct MovedFlag {
  std::string_view flag;
  std::string_view file_key;
  std::string_view new_flag;
};

// Names that are not flags of hotkeyd, with their setting's home: a policy setting lives in
// the rules file only (one home, reloadable there); the stored length of a key is
// --key.max-bytes.
constexpr MovedFlag kMovedFlags[] = {
    {"alert.share-threshold", "alert.share_threshold", ""},
    {"alert.min-dwell", "alert.min_dwell", ""},
    {"alert.hysteresis", "alert.hysteresis", ""},
    {"alert.min-ops", "alert.min_ops", ""},
    {"export.top-k", "export.top_k", ""},
    {"export.min-share", "export.min_share", ""},
    {"export.hysteresis", "export.hysteresis", ""},
    {"export.min-key-ops", "export.min_key_ops", ""},
    {"key.label", "export.key_label", ""},
    {"key.label-max-bytes", "export.label_max_bytes", ""},
    {"track.stored-key-bytes", "", "key.max-bytes"},
};

// Records which measurable cluster inputs the flags set (DaemonOptions::cluster_given).
void MarkClusterGiven(const std::vector<std::string>& given, DaemonOptions& o) {
  for (const std::string& name : given) {
    o.cluster_given.capacity |= name == "cluster.capacity";
    o.cluster_given.shards |= name == "cluster.shards";
    o.cluster_given.app_servers |= name == "cluster.app-servers";
  }
}

std::string MovedMessage(const MovedFlag& m) {
  if (!m.new_flag.empty()) {
    return absl::StrCat("--", Av(m.flag), " was renamed: use --", Av(m.new_flag));
  }
  return absl::StrCat("--", Av(m.flag),
                      " moved to the rules file (--config.file): ", Av(m.file_key),
                      " (config/example-rules.yml shows every key)");
}

// Registers every flag on `p`, bound to the fields of `o`: the table, one flag a line, in
// the sections --help lists. Policy (alert, export, key labels) lives in the rules file
// only (rules_file.h); the names in kMovedFlags are registered as moved, so that giving
// one says where its setting lives.
// clang-format off
void Register(FlagParser& p, DaemonOptions& o) {
  p.Section("Web");
  p.AddCustom("web.listen-address", "Address of the HTTP server (/metrics, /api/v1, /-/reload, UI): host:port, [ipv6]:port or :port; repeat the flag to listen on several. Limits (docs/web-limits.md): 64 open connections (plus --feed.max-subscribers), past which a new one closes a waiting one (a silent TLS connection, then a TLS handshake, then a request queued for its password check behind others of its address, then an idle connection, then any queued request, then a feed stream); 10 s per request, its password check included; 5 s per TLS handshake; out of descriptors, accept() closes a waiting connection or pauses 100 ms.",
      absl::StrJoin(o.web.listen_addresses, ","),
      [&o, given = std::make_shared<bool>(false)](std::string_view v) {
       if (!*given) o.web.listen_addresses.clear();  // the first one given replaces the default
       *given = true;
       o.web.listen_addresses.emplace_back(v);
       return absl::OkStatus();});
  p.AddBool("web.systemd-socket", "Serve on the listening sockets systemd passes (socket activation, deploy/systemd/hotkeyd.socket) instead of --web.listen-address.", &o.web.systemd_socket);
  p.AddBool("web.enable-lifecycle", "Enable POST /-/reload (without it the endpoint answers 403); SIGHUP reloads either way.", &o.web.enable_lifecycle);
  p.AddString("web.telemetry-path", "Path under which to expose metrics.", &o.web.telemetry_path);
  p.AddString("web.config.file", "Web configuration file (Prometheus exporter-toolkit format): TLS, basic auth, headers. Read at start, then re-read on SIGHUP and when it, or a file it names, changes (checked every 2 s); a broken new file keeps the old one. With basic auth, credentials not verified before wait for one bcrypt worker in a queue of 16 fair between addresses (IPv4, or IPv6 /64): addresses take turns, and a request that finds no place, is pushed out or passes its deadline gets 429 with Retry-After, never 401 unchecked; a 401 or 429 closes its connection.", &o.web.config_file);
  p.AddBool("web.health-without-auth", "Answer /-/healthy and /-/ready without credentials when basic auth is on.", &o.web.health_without_auth);

  p.Section("Hot-key feed (GET /api/v1/hotkeys, for client kits; policy in the rules file)");
  p.AddInteger("feed.max-subscribers", "Hot-key feed streams (GET /api/v1/hotkeys/stream) served at once, 1 to 10000; the next is answered 503. The HTTP connection cap grows by as many, and a stream is closed to make room for another connection before a scrape is refused (docs/web-limits.md).", &o.feed_max_subscribers);
  p.AddBool("feed.require-auth", "Serve the hot-key feed (GET /api/v1/hotkeys and its stream) only to requests that passed basic auth. hotkeyd then refuses to start, and keeps the previous web config on a re-read, when --web.config.file has no basic_auth_users.", &o.feed_require_auth);

  p.Section("Rules file (alert and export policy)");
  p.AddString("config.file", "YAML rules file: when a key is hot (alert, thresholds per key pattern) and which keys are exported and how they are labelled (export); config/example-rules.yml has every key. Re-read on SIGHUP and POST /-/reload (--web.enable-lifecycle). Empty: the defaults.", &o.config_file);
  p.AddBool("check-config", "Check the flags, --config.file, --web.config.file (certificates included), --key.hash-secret-file, the tap's capture (opened as a start opens it, then closed) and the shard (asked once), print the result and exit (0: valid, 1: not) without binding any socket.", &o.check_config);

  p.Section("UDP events");
  p.AddString("udp.listen-address", "Address to receive event datagrams on: host:port, [ipv6]:port or :port (all interfaces). Empty: no UDP (with the tap or --demo). Off by default with --tap.weight=bytes, and refused with it: one hotkeyd counts one unit.", &o.udp.listen_address);
  p.AddInteger("udp.receivers", "Receiver threads, one SO_REUSEPORT socket and tracker each (1 to 64).", &o.udp.receivers);
  p.AddCustom("udp.allowed-sources", "Comma-separated CIDRs allowed to send events (IPv4 or IPv6); empty allows all.",
      absl::StrJoin(o.udp.allowed_sources, ","),
      [&o](std::string_view v) { o.udp.allowed_sources = SplitList(v); return absl::OkStatus();});
  p.AddSize("udp.read-buffer", "Socket receive buffer (SO_RCVBUF) to request; capped by net.core.rmem_max.", &o.udp.read_buffer_bytes).Advanced();
  p.AddInteger("udp.batch", "Datagrams read per recvmmsg call (1 to 1024).", &o.udp.batch).Advanced();

  p.Section("Tap (the shard's own traffic, libpcap)");
  p.AddString("tap.interface", "Capture the shard's own traffic on this interface (lo, eth0, any) with libpcap: no client change. Needs CAP_NET_RAW. With --tap.port.", &o.tap.interface);
  p.AddString("tap.file", "Read this capture file (pcap, e.g. from tcpdump -w) through the tap instead of an interface; needs no privilege. With --tap.port.", &o.tap.file);
  p.AddCustom("tap.port", "The shard's server port to tap, 1 to 65535: one port, one server. For several instances on one host run one hotkeyd per instance (deploy/systemd/hotkeyd@.service, or a sidecar per pod).",
      absl::StrJoin(o.tap.ports, ","),
      [&o](std::string_view v) {
       if (v.empty()) return absl::OkStatus();  // the default: none
       if (v.find(',') != std::string_view::npos) {
         return absl::InvalidArgumentError(absl::StrCat("\"", Av(v), "\": --tap.port takes one port; run one hotkeyd per server instance (deploy/systemd/hotkeyd@.service, or a sidecar per pod)"));
       }
       absl::StatusOr<int64_t> n = ParseInteger(v);
       if (!n.ok() || *n < 1 || *n > 65535) {
         return absl::InvalidArgumentError(absl::StrCat("\"", Av(v), "\" is not a port (1 to 65535)"));
       }
       o.tap.ports.push_back(static_cast<uint16_t>(*n));
       return absl::OkStatus();});
  p.AddCustom("tap.protocol", "The tapped server's protocol: redis (RESP2 and RESP3) or memcached (text, meta and binary requests, each counted with its keys).",
      std::string(TapProtocolName(o.tap.protocol)),
      [&o](std::string_view v) {
       absl::StatusOr<TapProtocol> p = ParseTapProtocol(v);
       if (!p.ok()) return p.status();
       o.tap.protocol = *p;
       return absl::OkStatus();});
  p.AddCustom("tap.weight", "What a tapped request weighs: ops (each key it touches counts 1) or bytes (its request bytes plus its reply's bytes, split evenly over its keys; captures the replies too).",
      std::string(TapWeightName(o.tap.weight)),
      [&o](std::string_view v) {
       absl::StatusOr<TapWeight> w = ParseTapWeight(v);
       if (!w.ok()) return w.status();
       o.tap.weight = *w;
       return absl::OkStatus();});
  p.AddInteger("tap.max-flows", "TCP connections tracked at once, 1 to 1048576; past it the least recently active is evicted (counted).", &o.tap.max_flows).Advanced();
  p.AddSize("tap.buffer-bytes", "The kernel's capture ring (pcap_set_buffer_size; libpcap may map up to twice this), 64KiB to 1GiB; packets past it are dropped and counted.", &o.tap.buffer_bytes).Advanced();
  p.AddSize("tap.flow-buffer-bytes", "Bytes one connection direction may hold (a partial request and its keys; with bytes weight also the requests awaiting replies), 256B to 16MiB. Worst-case tap memory: max-flows x (this x 1, or 3 with bytes weight, + 1KiB) + 112KiB (client hosts) + 2 x buffer-bytes (hotkey_tap_memory_bound_bytes).", &o.tap.flow_buffer_bytes).Advanced();
  p.AddInteger("tap.snaplen", "Bytes captured per frame, 128 to 262144; a frame cut short is counted and its flow resyncs.", &o.tap.snaplen).Advanced();
  p.AddDuration("tap.idle-timeout", "A connection idle this long is forgotten (1s to 24h).", &o.tap.idle_timeout).Advanced();

  p.Section("Shard (measured inputs of the advice model)");
  p.AddString("shard.address", "The shard to ask for its load and shape (INFO, CLUSTER NODES, stats): host:port, [ipv6]:port or a Unix socket path. Empty: 127.0.0.1:<first --tap.port> with --tap.interface, else none (a --tap.file capture was recorded elsewhere).", &o.shard.address);
  p.AddCustom("shard.protocol", "The shard's protocol: redis or memcached; empty: as --tap.protocol.", "",
      [&o](std::string_view v) {
       if (v.empty()) {  // as the tap
         o.shard.protocol.reset();
         return absl::OkStatus();
       }
       absl::StatusOr<TapProtocol> p = ParseTapProtocol(v);
       if (!p.ok()) {
         return absl::InvalidArgumentError(absl::StrCat(internal::QuoteForError(v), " is not a shard protocol (redis, memcached)"));
       }
       o.shard.protocol = *p;
       return absl::OkStatus();});
  p.AddString("shard.password-file", "File holding the shard's password, or \"user password\" (a Redis ACL user; memcached -Y).", &o.shard.password_file);
  p.AddBool("shard.tls", "Connect to the shard over TLS.", &o.shard.tls);
  p.AddString("shard.tls-ca-file", "CA certificates to verify the shard with; empty: the system's.", &o.shard.tls_ca_file);
  p.AddString("shard.tls-cert-file", "Client certificate for the shard (with --shard.tls-key-file).", &o.shard.tls_cert_file);
  p.AddString("shard.tls-key-file", "Key of --shard.tls-cert-file.", &o.shard.tls_key_file);
  p.AddString("shard.tls-server-name", "Name the shard's certificate must hold (and SNI); empty: the address's host.", &o.shard.tls_server_name);
  p.AddNumber("shard.cpus", "CPUs the shard's bottleneck may use; 0: measured (1 for Redis, memcached's threads, less under a cgroup CPU quota).", &o.shard.cpus);
  p.AddDuration("shard.interval", "How often the shard is asked (1s to 1h); once more when a key turns hot, and twice, a second apart, when a hot key's fix in force changes.", &o.shard.interval).Advanced();

  p.Section("Keys");
  p.AddSize("key.max-bytes", "Key bytes kept per tracked key (16 to 65536). A longer key is tracked, not rejected: as its first max-bytes bytes plus a hash of the whole key, so long keys with one prefix stay apart.", &o.track.max_key_bytes)
      .Shown(absl::StrCat(o.track.max_key_bytes));
  p.AddString("key.hash-secret-file", "File whose contents key the hash in hash and prefix labels (export.key_label in the rules file), so that labels cannot be guessed from candidate keys.", &o.key_hash_secret_file);

  p.Section("Tracking");
  p.AddDuration("track.half-life", "Half-life of the decaying key weights: shares cover roughly this much recent traffic.", &o.track.half_life);
  p.AddDuration("track.rate-window", "Window of the exported ops/s rates (at least the publish interval).", &o.track.rate_window);
  p.AddDuration("track.publish-interval", "How often trackers publish a snapshot for metrics, API and alerts.", &o.track.publish_interval).Advanced();
  p.AddInteger("track.candidates", "Keys tracked exactly per receiver (top-K table slots).", &o.track.candidates).Advanced();
  p.AddSize("track.sketch-bytes", "Memory of the count-min sketch per receiver.", &o.track.sketch_bytes).Advanced();
  p.AddInteger("track.sketch-depth", "Rows of the count-min sketch (1 to 16). Its width is as many columns as --track.sketch-bytes holds at this depth: fewer rows are wider, and the width is what ranks flat traffic.", &o.track.sketch_depth).Advanced();
  p.AddCustom("track.slots", "Also track Redis Cluster slots and hash tags (hot slots, hot tags, slot moves): true, false, or auto (counted only while the shard (--shard.address, or the tapped Redis) says it is a Redis Cluster node; never for a memcached-only tap or the bytes unit).",
      "auto",
      [&o](std::string_view v) {
       if (v == "auto") {
         o.track.slots.reset();
       } else if (v == "true" || v == "false") {
         o.track.slots = v == "true";
       } else {
         return absl::InvalidArgumentError(absl::StrCat(internal::QuoteForError(v), " is not auto, true or false"));
       }
       return absl::OkStatus();});

  p.Section("Cluster (the advice model)");
  p.AddInteger("cluster.shards", "Shards in the cluster (N), for the advice model.", &o.cluster.shards);
  p.AddNumber("cluster.capacity",
              "Ops/s one shard can serve (C). Given, it replaces the shard's measured "
              "load; not given and no shard asked, the headroom is unknown and no key is "
              "advised (--demo's shard serves this).",
              &o.cluster.capacity);
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
  p.AddString("model.measured-loads-file", "JSON file of each shard's measured ops/s (docs/model.md: measured loads), re-read when it changes; the landing page shows it beside the model's projection for each fix. Empty: none.", &o.measured_loads.file);
  p.AddDuration("model.measured-loads-max-age", "A measurement older than this (by its timestamp) is shown as stale (1s to 24h).", &o.measured_loads.max_age).Advanced();

  p.Section("Storage");
  p.AddString("storage.path", "File the trackers' state is saved to (periodically and on shutdown) and restored from at start; empty: none.", &o.storage.path);
  p.AddDuration("storage.interval", "How often the trackers' state is saved to --storage.path.", &o.storage.interval).Advanced();

  p.Section("Demo");
  p.AddBool("demo", "Generate demo traffic in-process: three celebrity keys (hot reads, hot writes, both) over a Zipf background.", &o.demo);
  p.AddNumber("demo.rate", "Demo events per second.", &o.demo_rate).Advanced();

  p.Section("Privileges");
  p.AddString("run-as", "Once the capture, the listening sockets and the files are open, switch to this user (setgroups, setgid, setuid on every thread) and drop every capability, with no_new_privs; without root, capabilities (such as a unit's CAP_NET_RAW) are dropped all the same. auto: started as root, the hotkeyd user, or nobody where there is no hotkeyd user (said in the log); the start fails, naming the command that creates the hotkeyd user, where neither exists. root: keep root and every capability (dangerous: only this value keeps root). The user must be able to read --config.file, --web.config.file (and its certificates) and --model.measured-loads-file, and to write --storage.path's directory; the files read as root before the switch must not be writable by the user (the state file is read after it); the start fails, saying which, if not. A changed --tap.* flag needs a restart.", &o.run_as);

  p.Section("Logging");
  p.AddString("log.level", "Least severe log messages to print: debug, info, warn or error.", &o.log_level);
  p.AddString("log.format", "Output format of log messages: logfmt or json (one object a line).", &o.log_format);

  for (const MovedFlag& m : kMovedFlags) p.AddMoved(m.flag, MovedMessage(m));
}
// clang-format on

}  // namespace

absl::StatusOr<FlagsResult> ParseFlags(int argc, const char* const* argv) {
  FlagsResult result;
  // --help and --version win over anything else on the line, even bad flags.
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help" || arg == "--help-all") {
      result.action = FlagsResult::Action::kPrintHelp;
      result.text = UsageText(arg == "--help-all" ? FlagParser::HelpScope::kAll
                                                  : FlagParser::HelpScope::kCommon);
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
  absl::StatusOr<FlagParser::Parsed> parsed = parser.Parse(argc, argv);
  if (!parsed.ok()) {
    status = parsed.status();
  } else {
    MarkClusterGiven(parsed->given, options);
    // A bytes-weighted tap is the daemon's one unit: UDP (ops) stays off unless asked for,
    // and asking for both is refused by Validate().
    const bool udp_given = std::find(parsed->given.begin(), parsed->given.end(),
                                     "udp.listen-address") != parsed->given.end();
    if (options.CountsBytes() && !udp_given) options.udp.listen_address.clear();
    if (absl::Status s = options.Validate(); !s.ok()) {
      status = absl::InvalidArgumentError(absl::StrCat("invalid flags: ", s.message()));
    }
  }
  if (checking || options.check_config) {
    result.action = FlagsResult::Action::kCheckConfig;
    result.flags_status = status;
    return result;
  }
  if (!status.ok()) return status;
  return result;
}

std::string UsageText(FlagParser::HelpScope scope) {
  DaemonOptions defaults;
  FlagParser parser("hotkeyd");
  Register(parser, defaults);
  std::string out =
      "usage: hotkeyd [<flags>]\n"
      "\n"
      "Finds the hot keys of a cache or database from key-access events sent over\n"
      "UDP (\"r <key>\" / \"w <key>\" lines), or from the shard's own traffic tapped\n"
      "with libpcap (--tap.interface=lo --tap.port=6379: Redis or memcached, no\n"
      "client change), exports their shares to Prometheus and advises a fix for\n"
      "each hot key.\n"
      "\n"
      "Process settings are flags; policy (when a key is hot, which keys are exported\n"
      "and how they are labelled) is in the rules file, --config.file.\n"
      "Sizes take B, KiB, MiB, GiB (or KB, MB, GB); durations take ms, s, m, h\n"
      "(250ms, 1m30s).\n"
      "\n"
      "General:\n"
      "  -h, --help\n"
      "        Show this help and exit.\n"
      "  --help-all\n"
      "        Show this help with the tuning flags too, and exit.\n"
      "  --version\n"
      "        Show the version, git branch and revision, build user, compiler and the\n"
      "        commit's date (shown as the build date; SOURCE_DATE_EPOCH when set), and\n"
      "        exit.\n"
      "\n";
  out += parser.Help(scope);
  if (scope != FlagParser::HelpScope::kAll) {
    absl::StrAppend(&out, "\n", parser.AdvancedCount(),
                    " tuning flags (udp.batch, tap.snaplen, track.publish-interval, ...) are\n"
                    "listed by --help-all.\n");
  }
  return out;
}

std::string VersionText() { return version::VersionText("hotkeyd"); }

}  // namespace hotkey::config
