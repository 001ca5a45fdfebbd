// Options structs: everything hotkeyd can be told, as plain validated values.
//
// Each component takes its options struct by value in its constructor and keeps it const;
// only `main` builds them (from flags, see flags.h, then the rules file, see rules_file.h).
// Defaults here are the documented defaults: the usage text prints them from these
// initialisers, so the two cannot disagree.
//
// Every struct has `Validate()`, which returns the first problem found, naming the setting
// and the allowed range; a validated struct needs no further checks by its user.
//
// Each struct has its own header, named for what it configures (udp_options.h, web_options.h,
// ...), so a component includes its own options and nothing else: the HTTP server, the listen
// sockets and the shard client compile without the tracker or the load model (the structs
// that need them, track_options.h and feed_options.h, are in hotkey::config; the others in
// hotkey::config_base, which links neither). This header gathers them all, with
// DaemonOptions (everything main needs) and ReloadableOptions, for main and the aggregator.
//
// Plain values; thread-compatible (const access from many threads is safe).

#ifndef HOTKEY_CONFIG_OPTIONS_H_
#define HOTKEY_CONFIG_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "hotkey/config/alert_options.h"
#include "hotkey/config/export_options.h"
#include "hotkey/config/feed_options.h"
#include "hotkey/config/measured_loads_options.h"
#include "hotkey/config/shard_options.h"
#include "hotkey/config/storage_options.h"
#include "hotkey/config/tap_options.h"
#include "hotkey/config/track_options.h"
#include "hotkey/config/udp_options.h"
#include "hotkey/config/web_options.h"
#include "hotkey/model/shard_model.h"

namespace hotkey::config {

// Everything main needs. Built by ParseFlags (flags.h).
struct DaemonOptions {
  UdpOptions udp;
  WebOptions web;
  TrackOptions track;
  ExportOptions exporter;
  AlertOptions alert;
  hotkey::model::Cluster cluster;
  // Which of the model's inputs that the daemon can measure a --cluster.* flag set: a flag
  // given overrides the measurement.
  struct ClusterGiven {
    bool capacity = false;
    bool shards = false;
    bool app_servers = false;
  } cluster_given;
  StorageOptions storage;
  TapOptions tap;
  ShardOptions shard;
  MeasuredLoadsOptions measured_loads;
  // The hot-key feed's policy (rules file) and the most streams served at once
  // (--feed.max-subscribers, in [1, 10000]): the next is answered 503.
  FeedOptions feed;
  uint32_t feed_max_subscribers = 64;
  // --feed.require-auth: the feed (GET /api/v1/hotkeys and its stream) answers only requests
  // that passed basic auth, and hotkeyd refuses to start, or to take a re-read web config,
  // without basic_auth_users.
  bool feed_require_auth = false;
  // A file holding the secret that keys the hash of export.key_label hash|prefix labels, so
  // nobody can hash candidate keys to find which one a label stands for. Empty: a fixed,
  // public key (labels stay stable but are guessable).
  std::string key_hash_secret_file;
  // The YAML rules file (rules_file.h), read at start and on every reload; empty = none.
  std::string config_file;
  // Generate Zipf-distributed demo traffic in-process instead of (besides) listening.
  bool demo = false;
  // Demo events per second; in (0, 1e7]. 9500 loads this shard to 95% of the default
  // cluster capacity (10,000 ops/s), so each demo celebrity gets a distinct advice.
  double demo_rate = 9500;
  std::string log_level = "info";     // debug | info | warn | error
  std::string log_format = "logfmt";  // logfmt | json
  // The user to run as once setup is done (privilege/drop.h): "auto" (as root, the hotkeyd
  // user, else nobody, else the start fails), a user name, or "root" to keep root.
  std::string run_as = "auto";
  // --check-config: validate the flags and the files they name, report, exit; bind nothing.
  bool check_config = false;

  // Sources the daemon merges: the UDP receivers (none with an empty
  // --udp.listen-address), the demo source with --demo and the tap with --tap.interface or
  // --tap.file.
  int Sources() const {
    return (udp.enabled() ? udp.receivers : 0) + (demo ? 1 : 0) + (tap.enabled() ? 1 : 0);
  }
  // The daemon's unit: true when its one tracked quantity is bytes (a tap with
  // --tap.weight=bytes), false when it is operations (UDP events, the demo, a tap by ops).
  // One daemon never mixes the two: Validate() refuses UDP or the demo beside a
  // bytes-weighted tap, so every share, rate and advice of the daemon is in this unit.
  bool CountsBytes() const { return tap.enabled() && tap.weight == TapWeight::kBytes; }
  // Whether the sources hold slot and tag counts: track.slots when given, else ("auto")
  // unless the one source is a memcached tap (memcached has no slots) or the unit is bytes.
  // With "auto" they count only while the shard says it is a Redis Cluster node (the daemon
  // switches them, source/slot_counts.h).
  bool TracksSlots() const {
    if (track.slots) return *track.slots;
    const bool memcached_only =
        tap.enabled() && tap.protocol == TapProtocol::kMemcached && !udp.enabled() && !demo;
    return !memcached_only && !CountsBytes();
  }
  // Key entries the rate history holds at most: track.MaxRatePoints() x track.candidates x
  // Sources(), each of 40 bytes (exporter/aggregator.h). Validate() rejects more than
  // kMaxRateHistoryKeys (2.5 GiB of entries): 16,800 by default.
  uint64_t RateHistoryKeys() const;
  static constexpr uint64_t kMaxRateHistoryKeys = uint64_t{1} << 26;

  // Validates every part, the rate history's size (RateHistoryKeys()), the tap's memory
  // (TapOptions::MemoryBoundBytes(), at most TapOptions::kMaxMemoryBytes), that there is a
  // source at all, and that the sources share one unit (CountsBytes()).
  absl::Status Validate() const;
};

// What a reload (SIGHUP, POST /-/reload) hands the daemon: the rules file's policy (alert,
// exporter), and the cluster model from the --cluster.* flags, which the rules file cannot
// set, so a reload leaves it as it was. The rest needs a restart.
struct ReloadableOptions {
  AlertOptions alert;
  ExportOptions exporter;
  hotkey::model::Cluster cluster;
  FeedOptions feed;

  absl::Status Validate() const;
};

// The reloadable part of `options`.
ReloadableOptions ReloadableFrom(const DaemonOptions& options);
// `options` with its reloadable part replaced by `reloadable`.
DaemonOptions WithReloadable(DaemonOptions options, const ReloadableOptions& reloadable);

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_OPTIONS_H_
