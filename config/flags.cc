// The command-line flag table and parser; see flags.h.
//
// Adding a flag = adding one row to kFlags: its name, help, whether it is boolean, a
// getter (prints the value, so --help shows the defaults of DaemonOptions{}) and a setter
// (parses the text; range checks are left to DaemonOptions::Validate so that flags and the
// rules file share them).

#include "hotkey/config/flags.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl_compat.h"
#include "hotkey/config/values.h"

#ifndef HOTKEY_VERSION
#define HOTKEY_VERSION "unknown"
#endif

namespace hotkey::config {
namespace {

using hotkey::model::Strategy;
using internal::Av;

struct Flag {
  std::string_view name;  // without the leading "--"
  std::string_view help;
  bool is_bool;
  std::string (*get)(const DaemonOptions&);
  absl::Status (*set)(std::string_view, DaemonOptions&);
};

template <class T>
absl::Status Fit(absl::StatusOr<int64_t> v, std::string_view text, T* out) {
  if (!v.ok()) return v.status();
  if (*v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
      static_cast<uint64_t>(*v) > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
    return absl::InvalidArgumentError(absl::StrCat("\"", Av(text), "\" is out of range"));
  }
  *out = static_cast<T>(*v);
  return absl::OkStatus();
}

template <class T>
absl::Status SetInteger(std::string_view text, T* out) {
  return Fit(ParseInteger(text), text, out);
}

template <class T>
absl::Status SetSize(std::string_view text, T* out) {
  absl::StatusOr<uint64_t> v = ParseByteSize(text);
  if (!v.ok()) return v.status();
  if (*v > static_cast<uint64_t>(std::numeric_limits<T>::max()) ||
      *v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return absl::InvalidArgumentError(absl::StrCat("\"", Av(text), "\" is out of range"));
  }
  *out = static_cast<T>(*v);
  return absl::OkStatus();
}

absl::Status SetNumber(std::string_view text, double* out) {
  absl::StatusOr<double> v = ParseNumber(text);
  if (!v.ok()) return v.status();
  *out = *v;
  return absl::OkStatus();
}

absl::Status SetDuration(std::string_view text, absl::Duration* out) {
  absl::StatusOr<absl::Duration> v = ParseDurationText(text);
  if (!v.ok()) return v.status();
  *out = *v;
  return absl::OkStatus();
}

absl::Status SetString(std::string_view text, std::string* out) {
  *out = std::string(text);
  return absl::OkStatus();
}

std::string Dur(absl::Duration d) { return absl::FormatDuration(d); }

std::string OrderText(const std::vector<Strategy>& order) {
  return absl::StrJoin(order, ",", [](std::string* out, Strategy s) {
    absl::StrAppend(out, Av(hotkey::model::StrategyName(s)));
  });
}

// clang-format off
const Flag kFlags[] = {
    {"web.listen-address", "Address of the HTTP server (/metrics, /api/v1, /-/reload, UI): host:port or :port.", false,
     [](const DaemonOptions& o) { return o.web.listen_address; },
     [](std::string_view v, DaemonOptions& o) { return SetString(v, &o.web.listen_address); }},
    {"web.telemetry-path", "Path under which to expose metrics.", false,
     [](const DaemonOptions& o) { return o.web.telemetry_path; },
     [](std::string_view v, DaemonOptions& o) { return SetString(v, &o.web.telemetry_path); }},
    {"web.config.file", "Web configuration file (Prometheus exporter-toolkit format): TLS, basic auth, headers. Read at start.", false,
     [](const DaemonOptions& o) { return o.web.config_file; },
     [](std::string_view v, DaemonOptions& o) { return SetString(v, &o.web.config_file); }},
    {"web.health-without-auth", "Answer /-/healthy and /-/ready without credentials when basic auth is on.", true,
     [](const DaemonOptions& o) { return std::string(o.web.health_without_auth ? "true" : "false"); },
     [](std::string_view v, DaemonOptions& o) {
       absl::StatusOr<bool> b = ParseBool(v);
       if (!b.ok()) return b.status();
       o.web.health_without_auth = *b;
       return absl::OkStatus();
     }},
    {"udp.listen-address", "Address to receive event datagrams on: host:port, [ipv6]:port or :port (all interfaces).", false,
     [](const DaemonOptions& o) { return o.udp.listen_address; },
     [](std::string_view v, DaemonOptions& o) { return SetString(v, &o.udp.listen_address); }},
    {"udp.receivers", "Receiver threads, one SO_REUSEPORT socket and tracker each (1 to 64).", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.udp.receivers); },
     [](std::string_view v, DaemonOptions& o) { return SetInteger(v, &o.udp.receivers); }},
    {"udp.read-buffer", "Socket receive buffer (SO_RCVBUF) to request; capped by net.core.rmem_max.", false,
     [](const DaemonOptions& o) { return FormatByteSize(o.udp.read_buffer_bytes); },
     [](std::string_view v, DaemonOptions& o) { return SetSize(v, &o.udp.read_buffer_bytes); }},
    {"udp.batch", "Datagrams read per recvmmsg call (1 to 1024).", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.udp.batch); },
     [](std::string_view v, DaemonOptions& o) { return SetInteger(v, &o.udp.batch); }},
    {"udp.allowed-sources", "Comma-separated CIDRs allowed to send events (IPv4 or IPv6); empty allows all.", false,
     [](const DaemonOptions& o) { return absl::StrJoin(o.udp.allowed_sources, ","); },
     [](std::string_view v, DaemonOptions& o) { o.udp.allowed_sources = SplitList(v); return absl::OkStatus(); }},
    {"key.max-bytes", "Longest key accepted; longer events are rejected (key_too_long).", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.udp.max_key_bytes); },
     [](std::string_view v, DaemonOptions& o) { return SetSize(v, &o.udp.max_key_bytes); }},
    {"key.label", "How keys appear as label values: raw (made valid UTF-8), hash, or prefix (up to the last ':' plus a hash).", false,
     [](const DaemonOptions& o) { return std::string(KeyLabelModeName(o.exporter.label)); },
     [](std::string_view v, DaemonOptions& o) {
       absl::StatusOr<KeyLabelMode> m = ParseKeyLabelMode(v);
       if (!m.ok()) return m.status();
       o.exporter.label = *m;
       return absl::OkStatus();
     }},
    {"key.hash-secret-file", "File whose contents key the hash in hash and prefix labels (keeps keys unguessable).", false,
     [](const DaemonOptions& o) { return o.key_hash_secret_file; },
     [](std::string_view v, DaemonOptions& o) { return SetString(v, &o.key_hash_secret_file); }},
    {"key.label-max-bytes", "Longest key label value, in bytes (16 to 16384).", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.exporter.label_max_bytes); },
     [](std::string_view v, DaemonOptions& o) { return SetSize(v, &o.exporter.label_max_bytes); }},
    {"track.half-life", "Half-life of the decaying key weights: shares cover roughly this much recent traffic.", false,
     [](const DaemonOptions& o) { return Dur(o.track.half_life); },
     [](std::string_view v, DaemonOptions& o) { return SetDuration(v, &o.track.half_life); }},
    {"track.publish-interval", "How often trackers publish a snapshot for metrics, API and alerts.", false,
     [](const DaemonOptions& o) { return Dur(o.track.publish_interval); },
     [](std::string_view v, DaemonOptions& o) { return SetDuration(v, &o.track.publish_interval); }},
    {"track.rate-window", "Window of the exported ops/s rates (at least the publish interval).", false,
     [](const DaemonOptions& o) { return Dur(o.track.rate_window); },
     [](std::string_view v, DaemonOptions& o) { return SetDuration(v, &o.track.rate_window); }},
    {"track.candidates", "Keys tracked exactly per receiver (top-K table slots).", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.track.candidates); },
     [](std::string_view v, DaemonOptions& o) { return SetInteger(v, &o.track.candidates); }},
    {"track.sketch-bytes", "Memory of the count-min sketch per receiver.", false,
     [](const DaemonOptions& o) { return FormatByteSize(o.track.sketch_bytes); },
     [](std::string_view v, DaemonOptions& o) { return SetSize(v, &o.track.sketch_bytes); }},
    {"track.stored-key-bytes", "Key bytes stored per candidate; longer keys are kept truncated plus a hash.", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.track.stored_key_bytes); },
     [](std::string_view v, DaemonOptions& o) { return SetSize(v, &o.track.stored_key_bytes); }},
    {"export.top-k", "Most keys exported per metric (1 to 1000).", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.exporter.top_k); },
     [](std::string_view v, DaemonOptions& o) { return SetInteger(v, &o.exporter.top_k); }},
    {"export.min-share", "Share of traffic at which a key is exported, in (0, 1].", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.exporter.min_share); },
     [](std::string_view v, DaemonOptions& o) { return SetNumber(v, &o.exporter.min_share); }},
    {"export.hysteresis", "An exported key is dropped below min-share * (1 - hysteresis), in [0, 1).", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.exporter.hysteresis); },
     [](std::string_view v, DaemonOptions& o) { return SetNumber(v, &o.exporter.hysteresis); }},
    {"export.min-key-ops", "Ops/s over the rate window a key needs before it is exported (hot keys excepted); 0 turns it off.", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.exporter.min_key_ops_per_second); },
     [](std::string_view v, DaemonOptions& o) { return SetNumber(v, &o.exporter.min_key_ops_per_second); }},
    {"alert.share-threshold", "Share of traffic above which a key is hot, unless a rule in --config.file says otherwise; in (0, 1].", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.alert.default_threshold); },
     [](std::string_view v, DaemonOptions& o) { return SetNumber(v, &o.alert.default_threshold); }},
    {"alert.min-dwell", "How long a key must stay over its threshold before it is hot.", false,
     [](const DaemonOptions& o) { return Dur(o.alert.min_dwell); },
     [](std::string_view v, DaemonOptions& o) { return SetDuration(v, &o.alert.min_dwell); }},
    {"alert.hysteresis", "A hot key cools below threshold * (1 - hysteresis), in [0, 1).", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.alert.hysteresis); },
     [](std::string_view v, DaemonOptions& o) { return SetNumber(v, &o.alert.hysteresis); }},
    {"alert.min-ops", "Idle guard: no key is hot while the shard serves fewer ops/s than this.", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.alert.min_ops_per_second); },
     [](std::string_view v, DaemonOptions& o) { return SetNumber(v, &o.alert.min_ops_per_second); }},
    {"cluster.shards", "Shards in the cluster (N), for the advice model.", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.cluster.shards); },
     [](std::string_view v, DaemonOptions& o) { return SetInteger(v, &o.cluster.shards); }},
    {"cluster.capacity", "Ops/s one shard can serve (C).", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.cluster.capacity); },
     [](std::string_view v, DaemonOptions& o) { return SetNumber(v, &o.cluster.capacity); }},
    {"cluster.app-servers", "App servers that would cache a hot key (A).", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.cluster.app_servers); },
     [](std::string_view v, DaemonOptions& o) { return SetInteger(v, &o.cluster.app_servers); }},
    {"cluster.refresh", "Refresh interval of a cached hot key.", false,
     [](const DaemonOptions& o) { return Dur(absl::Seconds(o.cluster.refresh_seconds)); },
     [](std::string_view v, DaemonOptions& o) {
       absl::StatusOr<absl::Duration> d = ParseDurationText(v);
       if (!d.ok()) return d.status();
       o.cluster.refresh_seconds = absl::ToDoubleSeconds(*d);
       return absl::OkStatus();
     }},
    {"cluster.replicas", "Copies of a replicated hot key (R, at most shards).", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.cluster.replicas); },
     [](std::string_view v, DaemonOptions& o) { return SetInteger(v, &o.cluster.replicas); }},
    {"cluster.split", "Sub-keys of a split hot key (S, at most shards).", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.cluster.split); },
     [](std::string_view v, DaemonOptions& o) { return SetInteger(v, &o.cluster.split); }},
    {"cluster.target", "Advised fixes keep the busiest shard at or below this fraction of capacity.", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.cluster.target); },
     [](std::string_view v, DaemonOptions& o) { return SetNumber(v, &o.cluster.target); }},
    {"cluster.order", "Comma-separated strategies to advise, cheapest first (none, cache, replicate, split, split_cache); isolate is implied last.", false,
     [](const DaemonOptions& o) { return OrderText(o.cluster.order); },
     [](std::string_view v, DaemonOptions& o) {
       std::vector<Strategy> order;
       for (const std::string& name : SplitList(v)) {
         absl::StatusOr<Strategy> s = hotkey::model::ParseStrategy(name);
         if (!s.ok()) return s.status();
         order.push_back(*s);
       }
       o.cluster.order = std::move(order);
       return absl::OkStatus();
     }},
    {"storage.path", "File the trackers' state is saved to (periodically and on shutdown) and restored from at start; empty: none.", false,
     [](const DaemonOptions& o) { return o.storage.path; },
     [](std::string_view v, DaemonOptions& o) { return SetString(v, &o.storage.path); }},
    {"storage.interval", "How often the trackers' state is saved to --storage.path.", false,
     [](const DaemonOptions& o) { return Dur(o.storage.interval); },
     [](std::string_view v, DaemonOptions& o) { return SetDuration(v, &o.storage.interval); }},
    {"config.file", "YAML rules file (thresholds per key pattern, alert, export and cluster settings); re-read on SIGHUP and POST /-/reload.", false,
     [](const DaemonOptions& o) { return o.config_file; },
     [](std::string_view v, DaemonOptions& o) { return SetString(v, &o.config_file); }},
    {"demo", "Send built-in demo traffic to our own UDP port: three celebrity keys (hot reads, hot writes, both) over a Zipf background.", true,
     [](const DaemonOptions& o) { return std::string(o.demo ? "true" : "false"); },
     [](std::string_view v, DaemonOptions& o) {
       absl::StatusOr<bool> b = ParseBool(v);
       if (!b.ok()) return b.status();
       o.demo = *b;
       return absl::OkStatus();
     }},
    {"demo.rate", "Demo events per second.", false,
     [](const DaemonOptions& o) { return absl::StrCat(o.demo_rate); },
     [](std::string_view v, DaemonOptions& o) { return SetNumber(v, &o.demo_rate); }},
    {"log.level", "Least severe log messages to print: debug, info, warn or error.", false,
     [](const DaemonOptions& o) { return o.log_level; },
     [](std::string_view v, DaemonOptions& o) { return SetString(v, &o.log_level); }},
};
// clang-format on

const Flag* FindFlag(std::string_view name) {
  for (const Flag& f : kFlags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

absl::Status UnknownFlag(std::string_view name) {
  const Flag* best = nullptr;
  size_t best_distance = 4;  // beyond 3 edits a suggestion is more confusing than helpful
  for (const Flag& f : kFlags) {
    size_t d = EditDistance(name, f.name);
    if (d < best_distance) {
      best = &f;
      best_distance = d;
    }
  }
  std::string hint = best ? absl::StrCat("; did you mean --", Av(best->name), "?") : "";
  return absl::InvalidArgumentError(
      absl::StrCat("unknown flag --", Av(name), hint, " (see --help)"));
}

std::string Quoted(const std::string& value) { return value.empty() ? "\"\"" : value; }

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
  DaemonOptions& options = result.options;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (!arg.starts_with("--") || arg == "--") {
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected argument \"", Av(arg), "\": hotkeyd takes only --flags (see --help)"));
    }
    std::string_view name = arg.substr(2);
    std::string_view value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string_view::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const Flag* flag = FindFlag(name);
    if (flag == nullptr) return UnknownFlag(name);
    if (!has_value) {
      if (flag->is_bool) {
        value = "true";
      } else if (i + 1 < argc && !std::string_view(argv[i + 1]).starts_with("--")) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag --", Av(name), " needs a value (--",
                                                       Av(name), "=VALUE or --", Av(name),
                                                       " VALUE)"));
      }
    }
    if (absl::Status s = flag->set(value, options); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("flag --", Av(name), ": ", s.message()));
    }
  }
  if (absl::Status s = options.Validate(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid flags: ", s.message()));
  }
  return result;
}

std::string UsageText() {
  const DaemonOptions defaults;
  std::string out =
      "usage: hotkeyd [<flags>]\n"
      "\n"
      "Finds the hot keys of a cache or database from key-access events sent over UDP\n"
      "(\"r <key>\" / \"w <key>\" lines), exports their shares to Prometheus and advises a fix\n"
      "for each hot key.\n"
      "\n"
      "Sizes take B, KiB, MiB, GiB (or KB, MB, GB); durations take ms, s, m, h (250ms, 1m30s).\n"
      "\n"
      "Flags:\n"
      "  -h, --help\n"
      "        Show this help and exit.\n"
      "  --version\n"
      "        Show the version and exit.\n";
  for (const Flag& f : kFlags) {
    if (f.is_bool) {
      absl::StrAppend(&out, "  --", Av(f.name), "\n        ", Av(f.help),
                      " (default: ", f.get(defaults), ")\n");
    } else {
      absl::StrAppend(&out, "  --", Av(f.name), "=", Quoted(f.get(defaults)), "\n        ",
                      Av(f.help), "\n");
    }
  }
  return out;
}

std::string VersionText() {
#if defined(__clang__)
  constexpr std::string_view kCompiler = "clang++ " __clang_version__;
#elif defined(__GNUC__)
  constexpr std::string_view kCompiler = "g++ " __VERSION__;
#else
  constexpr std::string_view kCompiler = "unknown compiler";
#endif
  return absl::StrCat("hotkeyd, version ", HOTKEY_VERSION, " (", Av(kCompiler), ")\n");
}

}  // namespace hotkey::config
