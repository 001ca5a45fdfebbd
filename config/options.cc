// Validation and threshold lookup for the options structs; see options.h.

#include "hotkey/config/options.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl_compat.h"
#include "hotkey/config/values.h"

namespace hotkey::config {
namespace {

using internal::Av;

absl::Status OutOfRange(std::string_view what, std::string_view range, const auto& got) {
  return absl::InvalidArgumentError(
      absl::StrCat(Av(what), " must be in ", Av(range), "; got ", got));
}

template <class T>
bool InRange(T v, T lo, T hi) {
  return lo <= v && v <= hi;
}

bool IsShare(double v) { return v > 0 && v <= 1; }
bool IsHysteresis(double v) { return v >= 0 && v < 1; }

// The model's messages name bare fields ("replicas must be ..."); say whose they are.
absl::Status ValidateCluster(const hotkey::model::Cluster& cluster) {
  absl::Status s = cluster.Validate();
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("cluster: ", s.message()));
}

}  // namespace

absl::Status UdpOptions::Validate() const {
  // Off (empty), there is no address to check; the rest is checked all the same.
  if (auto a = ParseListenAddress(listen_address); enabled() && !a.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("udp: ", a.status().message()));
  }
  if (!InRange(receivers, 1, 64)) return OutOfRange("udp receivers", "[1, 64]", receivers);
  if (!InRange<size_t>(read_buffer_bytes, size_t{4} << 10, size_t{1} << 30)) {
    return OutOfRange("udp read buffer", "[4KiB, 1GiB]", FormatByteSize(read_buffer_bytes));
  }
  if (!InRange(batch, 1, 1024)) return OutOfRange("udp batch", "[1, 1024]", batch);
  for (const std::string& source : allowed_sources) {
    if (auto c = ParseCidr(source); !c.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("udp allowed sources: ", c.status().message()));
    }
  }
  return absl::OkStatus();
}

uint64_t TapOptions::MemoryBoundBytes() const {
  if (!enabled()) return 0;
  const uint64_t per_flow = uint64_t{flow_buffer_bytes} * BuffersPerFlow() + kFlowStateBytes;
  return uint64_t{max_flows} * per_flow + kClientHostsBytes +
         (file.empty() ? kRingFactor * uint64_t{buffer_bytes} : 0);
}

absl::Status TapOptions::Validate() const {
  if (!interface.empty() && !file.empty()) {
    return absl::InvalidArgumentError(
        "tap: give --tap.interface or --tap.file, not both (a file replaces the capture)");
  }
  if (enabled() && ports.empty()) {
    return absl::InvalidArgumentError(
        "tap: --tap.port is required with --tap.interface or --tap.file (the shard's server "
        "port, e.g. --tap.port=6379)");
  }
  if (ports.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tap: --tap.port takes one port, not ", ports.size(),
        ": one hotkeyd taps one server, so that a share is of that server's traffic. Run one "
        "hotkeyd per instance (a systemd template unit such as hotkeyd@.service, or a sidecar "
        "per pod), each with its own --tap.port and --web.listen-address"));
  }
  for (uint16_t port : ports) {
    if (port == 0) return OutOfRange("tap port", "[1, 65535]", port);
  }
  if (protocol != TapProtocol::kRedis && protocol != TapProtocol::kMemcached) {
    return absl::InvalidArgumentError("tap protocol is not redis or memcached");
  }
  if (weight != TapWeight::kOps && weight != TapWeight::kBytes) {
    return absl::InvalidArgumentError("tap weight is not ops or bytes");
  }
  if (!InRange<size_t>(buffer_bytes, size_t{64} << 10, size_t{1} << 30)) {
    return OutOfRange("tap buffer bytes", "[64KiB, 1GiB]", FormatByteSize(buffer_bytes));
  }
  if (!InRange(snaplen, 128, 262144)) return OutOfRange("tap snaplen", "[128, 262144]", snaplen);
  if (!InRange<uint32_t>(max_flows, 1, 1u << 20)) {
    return OutOfRange("tap max flows", "[1, 1048576]", max_flows);
  }
  if (!InRange<size_t>(flow_buffer_bytes, 256, size_t{16} << 20)) {
    return OutOfRange("tap flow buffer bytes", "[256B, 16MiB]", FormatByteSize(flow_buffer_bytes));
  }
  if (!InRange(idle_timeout, absl::Seconds(1), absl::Hours(24))) {
    return OutOfRange("tap idle timeout", "[1s, 24h]", absl::FormatDuration(idle_timeout));
  }
  if (MemoryBoundBytes() > kMaxMemoryBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tap memory too large: ", max_flows, " --tap.max-flows x (",
        FormatByteSize(flow_buffer_bytes), " --tap.flow-buffer-bytes x ", BuffersPerFlow(), " + ",
        kFlowStateBytes, " B) + ", FormatByteSize(kClientHostsBytes), " (client hosts) + ",
        FormatByteSize(file.empty() ? buffer_bytes : 0),
        " --tap.buffer-bytes = ", FormatByteSize(MemoryBoundBytes()), ", over the maximum of ",
        FormatByteSize(kMaxMemoryBytes), "; track fewer flows or give each a smaller buffer"));
  }
  return absl::OkStatus();
}

absl::Status WebOptions::Validate() const {
  if (listen_addresses.empty() && !systemd_socket) {
    return absl::InvalidArgumentError("web: no listen address");
  }
  for (const std::string& address : listen_addresses) {
    if (auto a = ParseListenAddress(address); !a.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("web: ", a.status().message()));
    }
  }
  auto bad_path = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("web telemetry path \"", telemetry_path, "\" ", Av(why)));
  };
  if (!absl::StartsWith(telemetry_path, "/")) return bad_path("must start with '/'");
  if (telemetry_path == "/") return bad_path("must not be \"/\" (the landing page)");
  if (absl::StartsWith(telemetry_path, "/-/") || absl::StartsWith(telemetry_path, "/api/")) {
    return bad_path("must not be under /-/ or /api/ (used by the server)");
  }
  for (char c : telemetry_path) {
    if (static_cast<unsigned char>(c) <= ' ' || c == '?' || c == '#' || c == 0x7f) {
      return bad_path("must not contain spaces, control bytes, '?' or '#'");
    }
  }
  return absl::OkStatus();
}

absl::Status TrackOptions::Validate() const {
  if (!InRange(half_life, absl::Milliseconds(1), absl::Hours(24))) {
    return OutOfRange("track half-life", "[1ms, 24h]", absl::FormatDuration(half_life));
  }
  if (!InRange(publish_interval, absl::Milliseconds(10), absl::Hours(1))) {
    return OutOfRange("track publish interval", "[10ms, 1h]",
                      absl::FormatDuration(publish_interval));
  }
  if (!InRange(rate_window, publish_interval, absl::Hours(1))) {
    return OutOfRange(
        "track rate window",
        absl::StrCat("[publish interval (", absl::FormatDuration(publish_interval), "), 1h]"),
        absl::FormatDuration(rate_window));
  }
  if (!InRange<uint32_t>(candidates, 1, 1u << 20)) {
    return OutOfRange("track candidates", "[1, 1048576]", candidates);
  }
  if (!InRange<size_t>(sketch_bytes, size_t{1} << 10, size_t{1} << 30)) {
    return OutOfRange("track sketch bytes", "[1KiB, 1GiB]", FormatByteSize(sketch_bytes));
  }
  if (!InRange<uint32_t>(stored_key_bytes, 16, 65536)) {
    return OutOfRange("key max bytes (--key.max-bytes)", "[16, 65536]", stored_key_bytes);
  }
  return absl::OkStatus();
}

absl::Status ExportOptions::Validate() const {
  if (!InRange<uint32_t>(top_k, 1, 1000)) return OutOfRange("export top-k", "[1, 1000]", top_k);
  if (!IsShare(min_share)) return OutOfRange("export min share", "(0, 1]", min_share);
  if (!IsHysteresis(hysteresis)) return OutOfRange("export hysteresis", "[0, 1)", hysteresis);
  if (!(min_key_ops_per_second >= 0) || min_key_ops_per_second > 1e12) {
    return OutOfRange("export min key ops", "[0, 1e12]", min_key_ops_per_second);
  }
  switch (label) {
    case KeyLabelMode::kRaw:
    case KeyLabelMode::kHash:
    case KeyLabelMode::kPrefix:
      break;
    default:
      return absl::InvalidArgumentError("key label mode is not raw, hash or prefix");
  }
  if (!InRange<size_t>(label_max_bytes, 16, 16384)) {
    return OutOfRange("key label max bytes", "[16, 16384]", label_max_bytes);
  }
  return absl::OkStatus();
}

bool ThresholdRule::Matches(std::string_view key) const {
  return kind == kPrefix ? key.starts_with(pattern) : GlobMatch(pattern, key);
}

absl::Status ThresholdRule::Validate() const {
  if (kind != kPrefix && kind != kGlob) {
    return absl::InvalidArgumentError("threshold rule kind is not prefix or glob");
  }
  if (pattern.empty()) {
    return absl::InvalidArgumentError(
        "threshold rule pattern is empty (the default threshold covers every key)");
  }
  if (kind == kGlob) {
    if (absl::Status s = ValidateGlob(pattern); !s.ok()) return s;
  }
  if (!ignore && !IsShare(share)) {
    return OutOfRange(absl::StrCat("share of threshold rule \"", pattern, "\""), "(0, 1]", share);
  }
  return absl::OkStatus();
}

bool FeedPattern::Matches(std::string_view key) const {
  switch (kind) {
    case kKey:
      return key == pattern;
    case kPrefix:
      return key.starts_with(pattern);
    case kGlob:
      return GlobMatch(pattern, key);
  }
  return false;
}

absl::Status FeedPattern::Validate() const {
  if (kind != kKey && kind != kPrefix && kind != kGlob) {
    return absl::InvalidArgumentError("feed pattern kind is not key, prefix or glob");
  }
  if (pattern.empty()) return absl::InvalidArgumentError("feed pattern is empty");
  if (kind == kGlob) return ValidateGlob(pattern);
  return absl::OkStatus();
}

absl::Status FeedPin::Validate() const {
  if (match.kind == FeedPattern::kGlob) {
    return absl::InvalidArgumentError(
        "a feed pin names a key or a prefix, not a glob (clients match keys by bytes)");
  }
  if (absl::Status s = match.Validate(); !s.ok()) return s;
  if (mode == hotkey::model::Strategy::kNone) {
    return absl::InvalidArgumentError(
        "a feed pin's mode is one of cache, replicate, split, split_cache, isolate");
  }
  return absl::OkStatus();
}

absl::Status FeedOptions::Validate() const {
  if (!InRange(lease, absl::Seconds(1), absl::Hours(1))) {
    return OutOfRange("feed lease", "[1s, 1h]", absl::FormatDuration(lease));
  }
  if (refresh && !InRange(*refresh, absl::Milliseconds(1), absl::Hours(1))) {
    return OutOfRange("feed refresh", "[1ms, 1h]", absl::FormatDuration(*refresh));
  }
  if (!InRange(hold, absl::ZeroDuration(), absl::Hours(1))) {
    return OutOfRange("feed hold", "[0s, 1h]", absl::FormatDuration(hold));
  }
  if (split_factor && !InRange(*split_factor, 2, kMaxSplitFactor)) {
    return OutOfRange("feed split_factor", "[2, 1024]", *split_factor);
  }
  if (pins.size() > kMaxRules || blocks.size() > kMaxRules) {
    return absl::InvalidArgumentError(
        absl::StrCat("feed: at most ", kMaxRules, " pins and ", kMaxRules, " blocks"));
  }
  for (const FeedPin& p : pins) {
    if (absl::Status s = p.Validate(); !s.ok()) return s;
  }
  for (const FeedPattern& b : blocks) {
    if (absl::Status s = b.Validate(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

double AlertOptions::ThresholdFor(std::string_view key) const {
  for (const ThresholdRule& rule : rules) {
    if (!rule.Matches(key)) continue;
    return rule.ignore ? std::numeric_limits<double>::infinity() : rule.share;
  }
  return default_threshold;
}

absl::Status AlertOptions::Validate() const {
  if (!IsShare(default_threshold)) {
    return OutOfRange("alert share threshold", "(0, 1]", default_threshold);
  }
  if (!InRange(min_dwell, absl::ZeroDuration(), absl::Hours(1))) {
    return OutOfRange("alert min dwell", "[0s, 1h]", absl::FormatDuration(min_dwell));
  }
  if (!IsHysteresis(hysteresis)) return OutOfRange("alert hysteresis", "[0, 1)", hysteresis);
  if (!InRange(advice_dwell, absl::ZeroDuration(), absl::Hours(1))) {
    return OutOfRange("alert advice dwell", "[0s, 1h]", absl::FormatDuration(advice_dwell));
  }
  if (!(min_ops_per_second >= 0) || min_ops_per_second > 1e12) {
    return OutOfRange("alert min ops", "[0, 1e12]", min_ops_per_second);
  }
  if (rules.size() > kMaxRules) {
    return absl::InvalidArgumentError(
        absl::StrCat("too many threshold rules: ", rules.size(), " (at most ", kMaxRules, ")"));
  }
  for (const ThresholdRule& rule : rules) {
    if (absl::Status s = rule.Validate(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status StorageOptions::Validate() const {
  if (interval < absl::Seconds(1) || interval > absl::Hours(24)) {
    return absl::InvalidArgumentError(absl::StrCat("storage interval must be in [1s, 24h], got ",
                                                   absl::FormatDuration(interval)));
  }
  return absl::OkStatus();
}

ShardOptions ShardOptions::Resolved(const TapOptions& tap) const {
  ShardOptions out = *this;
  // A capture file is traffic recorded elsewhere: no shard to ask here.
  if (out.address.empty() && !tap.interface.empty() && !tap.ports.empty()) {
    out.address = absl::StrCat("127.0.0.1:", tap.ports.front());
  }
  if (!out.protocol) out.protocol = tap.protocol;
  out.timeout = std::min(out.timeout, out.interval);  // a round ends before the next one
  return out;
}

absl::Status ShardOptions::Validate() const {
  if (!address.empty() && !unix_socket()) {
    absl::StatusOr<HostPort> a = ParseListenAddress(address);
    if (!a.ok() || a->host.empty() || a->port == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shard address \"", address,
                       "\" is not host:port, [ipv6]:port (port 1 to 65535) or a Unix socket path"));
    }
  }
  if (protocol && *protocol != TapProtocol::kRedis && *protocol != TapProtocol::kMemcached) {
    return absl::InvalidArgumentError("shard protocol is not redis or memcached");
  }
  if (!tls) {
    const std::pair<std::string_view, const std::string*> tls_settings[] = {
        {"tls-ca-file", &tls_ca_file},
        {"tls-cert-file", &tls_cert_file},
        {"tls-key-file", &tls_key_file},
        {"tls-server-name", &tls_server_name}};
    for (const auto& [flag, value] : tls_settings) {
      if (!value->empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--shard.", Av(flag), " is given without --shard.tls"));
      }
    }
  } else if (unix_socket()) {
    return absl::InvalidArgumentError(
        "--shard.tls with a Unix socket address: Redis and memcached serve TLS on TCP only");
  }
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--shard.tls-cert-file and --shard.tls-key-file go together (the client's certificate "
        "and its key)");
  }
  if (!(cpus >= 0) || cpus > kMaxCpus) {
    return OutOfRange("shard cpus", "[0, 1024] (0: measured)", cpus);
  }
  if (!InRange(interval, absl::Seconds(1), absl::Hours(1))) {
    return OutOfRange("shard interval", "[1s, 1h]", absl::FormatDuration(interval));
  }
  if (!InRange(timeout, absl::Milliseconds(1), absl::Hours(1))) {
    return OutOfRange("shard timeout", "[1ms, 1h]", absl::FormatDuration(timeout));
  }
  return absl::OkStatus();
}

absl::Status MeasuredLoadsOptions::Validate() const {
  if (!InRange(max_age, absl::Seconds(1), absl::Hours(24))) {
    return OutOfRange("measured loads max age", "[1s, 24h]", absl::FormatDuration(max_age));
  }
  return absl::OkStatus();
}

uint64_t TrackOptions::MaxRatePoints() const {
  absl::Duration rest;
  const int64_t ticks = absl::IDivDuration(rate_window, publish_interval, &rest);
  return 2 * static_cast<uint64_t>(ticks + (rest > absl::ZeroDuration() ? 1 : 0)) + 4;
}

uint64_t DaemonOptions::RateHistoryKeys() const {
  return track.MaxRatePoints() * track.candidates * static_cast<uint64_t>(Sources());
}

absl::Status DaemonOptions::Validate() const {
  for (absl::Status s :
       {udp.Validate(), web.Validate(), track.Validate(), exporter.Validate(), alert.Validate(),
        ValidateCluster(cluster), storage.Validate(), tap.Validate(), shard.Validate(),
        measured_loads.Validate(), feed.Validate()}) {
    if (!s.ok()) return s;
  }
  if (!InRange<uint32_t>(feed_max_subscribers, 1, 10000)) {
    return OutOfRange("--feed.max-subscribers", "[1, 10000]", feed_max_subscribers);
  }
  if (!udp.enabled() && !tap.enabled() && !demo) {
    return absl::InvalidArgumentError(
        "no event source: --udp.listen-address is empty (UDP off) and neither --tap.interface, "
        "--tap.file nor --demo is given");
  }
  if (CountsBytes() && udp.enabled()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tap.weight=bytes and --udp.listen-address=", udp.listen_address,
        " cannot share one hotkeyd: the tap would count bytes and UDP events operations, into "
        "one tracker with one unit. Run two hotkeyds (one tapping with --tap.weight=bytes, one "
        "receiving UDP), or use --tap.weight=ops"));
  }
  if (CountsBytes() && demo) {
    return absl::InvalidArgumentError(
        "--tap.weight=bytes and --demo cannot share one hotkeyd: the tap would count bytes and "
        "the demo operations, into one tracker with one unit. Use --tap.weight=ops, or run the "
        "demo in its own hotkeyd");
  }
  if (RateHistoryKeys() > kMaxRateHistoryKeys) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rate history too large: ", track.MaxRatePoints(),
        " points (2 x --track.rate-window / --track.publish-interval + 4) x ", track.candidates,
        " --track.candidates x ", Sources(),
        " sources (--udp.receivers, plus 1 with --demo, plus 1 with the tap) = ", RateHistoryKeys(),
        " key entries, over the maximum of ", kMaxRateHistoryKeys,
        " (2.5 GiB); shorten the window, lengthen the interval or track fewer candidates"));
  }
  if (!(demo_rate > 0) || demo_rate > 1e7) return OutOfRange("demo rate", "(0, 1e7]", demo_rate);
  if (log_level != "debug" && log_level != "info" && log_level != "warn" && log_level != "error") {
    return absl::InvalidArgumentError(
        absl::StrCat("log level \"", log_level, "\" is not one of debug, info, warn, error"));
  }
  if (log_format != "logfmt" && log_format != "json") {
    return absl::InvalidArgumentError(
        absl::StrCat("log format \"", log_format, "\" is not one of logfmt, json"));
  }
  return absl::OkStatus();
}

absl::Status ReloadableOptions::Validate() const {
  for (absl::Status s :
       {alert.Validate(), exporter.Validate(), ValidateCluster(cluster), feed.Validate()}) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

ReloadableOptions ReloadableFrom(const DaemonOptions& options) {
  return ReloadableOptions{options.alert, options.exporter, options.cluster, options.feed};
}

DaemonOptions WithReloadable(DaemonOptions options, const ReloadableOptions& reloadable) {
  options.alert = reloadable.alert;
  options.exporter = reloadable.exporter;
  options.cluster = reloadable.cluster;
  options.feed = reloadable.feed;
  return options;
}

}  // namespace hotkey::config
