// DaemonOptions and ReloadableOptions: the checks across components, and reloads; see
// options.h. Each component's own options are validated in its own file (udp_options.cc, ...).

#include "hotkey/config/options.h"

#include "absl/strings/str_cat.h"
#include "range.h"

namespace hotkey::config {

using internal::InRange;
using internal::OutOfRange;

namespace {

// The model's messages name bare fields ("replicas must be ..."); say whose they are.
absl::Status ValidateCluster(const hotkey::model::Cluster& cluster) {
  absl::Status s = cluster.Validate();
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("cluster: ", s.message()));
}

}  // namespace

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
