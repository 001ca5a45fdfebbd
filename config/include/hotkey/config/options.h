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
// Plain values; thread-compatible (const access from many threads is safe).

#ifndef HOTKEY_CONFIG_OPTIONS_H_
#define HOTKEY_CONFIG_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hotkey/model/shard_model.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "hotkey/text/enum_names.h"

namespace hotkey::config {

// The UDP ingest side (daemon receivers).
struct UdpOptions {
  // host:port, [v6-host]:port or :port (all interfaces). Port 0 asks the kernel for one.
  // Empty: no UDP receiver (another source, the tap or the demo, must be on).
  std::string listen_address = "127.0.0.1:10111";
  // Receiver threads, each with its own SO_REUSEPORT socket and Tracker; in [1, 64].
  int receivers = 1;
  // SO_RCVBUF requested per socket; the kernel caps it at net.core.rmem_max.
  // In [4 KiB, 1 GiB]: 16 MiB holds ~0.2 s of 1 Gbit/s of datagrams, riding out scrapes.
  size_t read_buffer_bytes = size_t{16} << 20;
  // Datagrams per recvmmsg call; in [1, 1024] (the kernel's UIO_MAXIOV).
  int batch = 64;
  // Source networks allowed to send, as CIDRs ("10.0.0.0/8", "::1/128", or a bare
  // address); empty allows every source. Compile them with ParseCidr (values.h).
  std::vector<std::string> allowed_sources;

  // The largest UDP payload. No key in a datagram is longer, so the receiver rejects none
  // as too long: a key longer than --key.max-bytes (TrackOptions::stored_key_bytes) is
  // tracked as its prefix plus a hash, as from every other source.
  static constexpr size_t kMaxPayloadBytes = 65507;

  // Whether the daemon receives UDP events at all.
  bool enabled() const { return !listen_address.empty(); }

  absl::Status Validate() const;
  friend bool operator==(const UdpOptions&, const UdpOptions&) = default;
};

// The tap (daemon/input/tap/tap_source.h): the shard's own TCP traffic, captured with libpcap on
// its port, reassembled and parsed into events, with no client change.
enum class TapProtocol { kRedis, kMemcached };
// ops: each key a request touches weighs 1. bytes: a request weighs its request bytes
// plus its reply's bytes, split evenly over its keys.
enum class TapWeight { kOps, kBytes };
// The names of --tap.protocol, --shard.protocol and --tap.weight, and of their labels.
inline constexpr text::EnumName<TapProtocol> kTapProtocolNames[] = {
    {TapProtocol::kRedis, "redis"}, {TapProtocol::kMemcached, "memcached"}};
inline constexpr text::EnumName<TapWeight> kTapWeightNames[] = {{TapWeight::kOps, "ops"},
                                                                {TapWeight::kBytes, "bytes"}};
constexpr std::string_view TapProtocolName(TapProtocol protocol) {
  return text::NameOf(kTapProtocolNames, protocol);
}
constexpr std::string_view TapWeightName(TapWeight weight) {
  return text::NameOf(kTapWeightNames, weight);
}

struct TapOptions {
  // The interface to capture on (lo, eth0, any); empty: no live capture.
  std::string interface;
  // A capture file (pcap or pcapng) read instead of an interface, through the same path;
  // at its end the source keeps its counts. Empty: none. Not with `interface`.
  std::string file;
  // The shard's server port, in [1, 65535]: exactly one when the tap is on. One tap is one
  // shard: a share is of one server's traffic, so two instances on one host need two
  // hotkeyds (a systemd template unit, a sidecar per pod), each tapping its own port. A
  // vector for the capture code (tcp::DecodeFrame's port list), of one element.
  std::vector<uint16_t> ports;
  TapProtocol protocol = TapProtocol::kRedis;
  TapWeight weight = TapWeight::kOps;
  // The kernel's capture ring (pcap_set_buffer_size); in [64 KiB, 1 GiB]. 16 MiB, as for
  // UDP: 4 MiB dropped packets beside redis-benchmark -P 16 on 2 busy cores.
  size_t buffer_bytes = size_t{16} << 20;
  // Bytes captured per frame (pcap_set_snaplen); in [128, 262144]. A frame cut short is
  // counted (truncated) and its flow resyncs.
  int snaplen = 262144;
  // Flows (client to server connections) tracked at once; a new one when the table is
  // full evicts the least recently active. In [1, 1048576].
  uint32_t max_flows = 10'000;
  // Bytes one flow direction's parser may hold (a partial request, its keys); with
  // --tap.weight=bytes also the bytes of one flow's requests awaiting their replies.
  // In [256 B, 16 MiB].
  size_t flow_buffer_bytes = size_t{16} << 10;
  // A flow idle this long is forgotten; in [1s, 24h].
  absl::Duration idle_timeout = absl::Minutes(5);

  // The tap's table of client hosts (hotkey/source/client_hosts.h, 4096 addresses with
  // their last-seen times); daemon/input/tap/ asserts it holds no more.
  static constexpr uint64_t kClientHostsBytes = 112 << 10;
  // Upper bound of one flow's state besides its buffers (the reassembler's slot, the
  // parsers' objects, the reply queue's bookkeeping); tests/daemon/input/tap pins it.
  static constexpr size_t kFlowStateBytes = 1024;
  // libpcap maps up to this many times buffer_bytes for the ring: TPACKET_V3 maps what is
  // asked (tests/daemon/input/tap/tap_live_test.cc pins it within the factor), but where libpcap
  // falls back to TPACKET_V2 it rounds up to whole frames of the snap length or the MTU, e.g. 8 MiB
  // for 4 MiB asked on lo.
  static constexpr uint64_t kRingFactor = 2;
  // Tap memory is refused above this (64 GiB).
  static constexpr uint64_t kMaxMemoryBytes = uint64_t{64} << 30;

  bool enabled() const { return !interface.empty() || !file.empty(); }
  // Buffers of flow_buffer_bytes one flow may hold: the request parser's (ops), plus the
  // reply parser's and the reply queue's (bytes).
  int BuffersPerFlow() const { return weight == TapWeight::kBytes ? 3 : 1; }
  // The tap's worst-case memory besides its tracker: max_flows x (flow_buffer_bytes x
  // BuffersPerFlow() + kFlowStateBytes) + kClientHostsBytes + kRingFactor x buffer_bytes
  // (the capture ring, live capture only). 0 when the tap is off.
  uint64_t MemoryBoundBytes() const;

  absl::Status Validate() const;
  friend bool operator==(const TapOptions&, const TapOptions&) = default;
};

// The HTTP server.
struct WebOptions {
  // Addresses the HTTP server listens on, each host:port, [ipv6]:port or :port; at least
  // one. Ignored with systemd_socket.
  std::vector<std::string> listen_addresses = {":10110"};
  // Serve on the listening sockets systemd passes (socket activation, sd_listen_fds(3):
  // LISTEN_PID, LISTEN_FDS, from fd 3 on) instead of binding listen_addresses.
  bool systemd_socket = false;
  // POST /-/reload answers 403 unless this is set (as in Prometheus and its exporters);
  // SIGHUP reloads either way.
  bool enable_lifecycle = false;
  // Path of the Prometheus endpoint: starts with '/', is not "/" and is not under the
  // paths the server itself uses ("/-/", "/api/").
  std::string telemetry_path = "/metrics";
  // A Prometheus exporter-toolkit web configuration file (TLS, basic auth); empty = plain
  // HTTP with no authentication.
  std::string config_file;
  // With basic auth configured, /-/healthy and /-/ready still answer without credentials
  // (for probes that cannot authenticate). Off unless the operator asks.
  bool health_without_auth = false;

  absl::Status Validate() const;
  friend bool operator==(const WebOptions&, const WebOptions&) = default;
};

// The per-receiver Tracker (sketch + decaying top-K) and its publishing.
struct TrackOptions {
  // Exponential decay half-life of key weights: a share means "share of the traffic over
  // roughly the last half-life". In [1ms, 24h]. The defaults of the tracker's fields are
  // sketch::HeavyHittersOptions', one home for both. 500 ms: a key that jumps to 30% of
  // 500 sampled events/s crosses a 10% threshold after 0.29 s (0.585 half-lives), so with
  // the dwell and a publish tick it is reported hot within a second.
  absl::Duration half_life = sketch::HeavyHittersOptions{}.half_life;
  // How often trackers publish a merged snapshot; in [10ms, 1h]. Below 10 ms the merge
  // cost dominates the receivers' CPU.
  absl::Duration publish_interval = absl::Milliseconds(250);
  // Window of the exported ops/s rates; at least publish_interval, at most 1h.
  absl::Duration rate_window = absl::Seconds(10);
  // Top-K table slots per receiver (the keys tracked exactly); in [1, 1048576].
  uint32_t candidates = sketch::HeavyHittersOptions{}.candidates;
  // Memory of the count-min sketch per receiver; in [1 KiB, 1 GiB].
  size_t sketch_bytes = sketch::HeavyHittersOptions{}.sketch_bytes;
  // --key.max-bytes: key bytes stored per candidate, from every source. A longer key is
  // not rejected: it is tracked as its first stored_key_bytes bytes plus the hash of the
  // whole key, so two long keys with one prefix stay distinct. In [16, 65536]: below 16
  // the hash suffix leaves no room for a readable prefix. 128 by default: the default
  // ExportOptions::label_max_bytes, so a stored key fills a raw label.
  uint32_t stored_key_bytes = sketch::HeavyHittersOptions{}.max_key_bytes;
  // --track.slots: also count every source's traffic by Redis Cluster slot and hash tag
  // (cluster/slot_counts.h); nullopt ("auto"): DaemonOptions::TracksSlots() decides.
  std::optional<bool> slots;

  // Points the aggregator's rate history holds at most, spares included: a point per tick
  // over rate_window, kept at least publish_interval / 2 apart (a tick closer to the last
  // point is not kept), the point being built, and two spares: 2 * ceil(rate_window /
  // publish_interval) + 4. 84 by default.
  uint64_t MaxRatePoints() const;

  absl::Status Validate() const;
  friend bool operator==(const TrackOptions&, const TrackOptions&) = default;
};

// How keys appear as label values.
enum class KeyLabelMode {
  kRaw,     // the key, made valid UTF-8 and cut to label_max_bytes
  kHash,    // a hex hash of the key only (keys may be user ids)
  kPrefix,  // the key up to its last ':' (or its first label_max_bytes bytes) plus a hash
};

// The values of the rules file's export.key_label.
inline constexpr text::EnumName<KeyLabelMode> kKeyLabelModeNames[] = {
    {KeyLabelMode::kRaw, "raw"}, {KeyLabelMode::kHash, "hash"}, {KeyLabelMode::kPrefix, "prefix"}};
constexpr std::string_view KeyLabelModeName(KeyLabelMode mode) {
  return text::NameOf(kKeyLabelModeNames, mode);
}

// Which keys reach /metrics, and how they are labelled.
struct ExportOptions {
  // Keys exported per snapshot, largest share first; in [1, 1000]. At most
  // TrackOptions::candidates keys exist to export.
  uint32_t top_k = 10;
  // A key enters the exported set at this share of the shard's traffic; in (0, 1].
  double min_share = 0.01;
  // A key leaves the exported set when its share falls below
  // min_share * (1 - hysteresis), so label sets do not churn; in [0, 1).
  double hysteresis = 0.2;
  // Evidence a key needs to enter the exported set (hot keys excepted): its ops/s over the
  // rate window (hotkey_key_ops_per_second, sampling-scaled; until the window has filled,
  // its ops so far over the whole window); in [0, 1e12], 0 turns it off.
  // On a quiet shard one request is a large share, so without it every stray key would
  // get its own series for a while. 2: a key needs 10 requests in the default 5 s window;
  // on a 21 ops/s shard of random keys that takes out every stray key (pinned by
  // aggregator_test.cc), while a key at 2 ops/s or more is exported as before.
  double min_key_ops_per_second = 2;
  KeyLabelMode label = KeyLabelMode::kRaw;
  // Upper bound on a key label's length in bytes; in [16, 16384].
  size_t label_max_bytes = 128;

  absl::Status Validate() const;
  friend bool operator==(const ExportOptions&, const ExportOptions&) = default;
};

// One per-pattern threshold of the rules file.
struct ThresholdRule {
  enum Kind {
    kPrefix,  // the key starts with `pattern`
    kGlob,    // `pattern` matches the whole key: `*` any bytes, `?` one byte, `[a-z]`,
              // `[!a-z]` / `[^a-z]` a byte class, `\c` the byte c itself
  };
  Kind kind = kPrefix;
  std::string pattern;  // not empty; bytes, compared unsigned
  double share = 0.0;   // the key's threshold, in (0, 1]; unused when `ignore`
  bool ignore = false;  // keys matching are never hot

  // True if `key` matches. A glob is compiled on each call (it allocates); to match many
  // keys use aggregate::ThresholdMatcher, which compiles each rule once.
  bool Matches(std::string_view key) const;
  absl::Status Validate() const;
  friend bool operator==(const ThresholdRule&, const ThresholdRule&) = default;
};

// When a key is hot.
struct AlertOptions {
  // Share of the shard's traffic above which a key is hot, unless a rule says otherwise;
  // in (0, 1].
  double default_threshold = 0.10;
  // A key must stay above its threshold this long before it is reported hot; in [0, 1h].
  absl::Duration min_dwell = absl::Milliseconds(250);
  // A hot key cools when its share < threshold * (1 - hysteresis); in [0, 1).
  double hysteresis = 0.2;
  // A key's advised fix changes only once another fix has been the model's answer for this
  // long, so a load that is steady over the rate window gives one fix; in [0, 1h].
  absl::Duration advice_dwell = absl::Seconds(30);
  // Idle guard: no key is hot while the shard's ops/s over the rate window
  // (TrackOptions::rate_window, sampling-scaled like hotkey_shard_ops_per_second) are
  // under this, nor while they are 0, whatever this says; hot keys end when the shard
  // falls under it. In [0, 1e12].
  // 1: a feed that stopped (or trickles) ends its episodes within one rate window, since
  // shares alone never move without traffic (decayed weight over decayed total). Rates
  // are sampling-scaled, so one sampled event in the window counts 1/(p * window) ops/s:
  // at p = 1 and the default 5 s window, 1 ops/s is 5 events in the window, too few for a
  // share to mean anything; at p <= 0.2 any sampled event clears it, so for a sampled
  // feed it guards only against silence. Set it to what a real shard never goes under
  // (the example rules use 100).
  double min_ops_per_second = 1;
  // Tried in order; the first matching rule wins. At most kMaxRules.
  std::vector<ThresholdRule> rules;

  // Bounds the cost of working out one key's threshold: at most kMaxRules matches. The
  // daemon does it once per tracked key and configuration (aggregate/aggregator.h), not per tick.
  static constexpr size_t kMaxRules = 1024;

  // The threshold for `key` (arbitrary bytes): the first matching rule's share, +infinity
  // if that rule says ignore, else default_threshold. Compiles glob rules on each call; to
  // look up many keys build an aggregate::ThresholdMatcher once.
  double ThresholdFor(std::string_view key) const;
  absl::Status Validate() const;
  friend bool operator==(const AlertOptions&, const AlertOptions&) = default;
};

// One key pattern of the rules file's feed section: an exact key, a prefix, or a glob (as
// ThresholdRule's).
struct FeedPattern {
  enum Kind { kKey, kPrefix, kGlob };
  Kind kind = kKey;
  std::string pattern;  // not empty; bytes

  // True if `key` matches. A glob is compiled on each call (it allocates).
  bool Matches(std::string_view key) const;
  absl::Status Validate() const;
  friend bool operator==(const FeedPattern&, const FeedPattern&) = default;
};

// A key (kKey) or every key starting with some bytes (kPrefix) that the feed always carries
// with `mode`, whatever is measured.
struct FeedPin {
  FeedPattern match;                                                 // kKey or kPrefix
  hotkey::model::Strategy mode = hotkey::model::Strategy::kIsolate;  // not kNone

  absl::Status Validate() const;
  friend bool operator==(const FeedPin&, const FeedPin&) = default;
};

// The hot-key feed's policy (GET /api/v1/hotkeys and its stream): the rules file's feed
// section.
struct FeedOptions {
  // An entry a client has not seen renewed for this long is void; in [1s, 1h]. The stream
  // renews every entry with a heartbeat every lease / kHeartbeatsPerLease.
  absl::Duration lease = absl::Seconds(10);
  // refresh_seconds given to clients for cache and split_cache entries; unset: the cluster
  // model's refresh (--cluster.refresh), so the clients apply the fix the advice projected.
  // In [1ms, 1h].
  std::optional<absl::Duration> refresh;
  // split_factor given for split and split_cache entries; unset: the cluster model's split
  // (--cluster.split), at least 2. In [2, 1024].
  std::optional<int> split_factor;
  // An advised entry stays while its key is hot, even when the advice says none since (the
  // fix in force lowers what the shard sees of the key; FeedState::NextFix); it leaves once
  // the key has not been hot for this long. 0s: at the first tick it is not hot. In [0s, 1h]
  // (feed.h, FeedState).
  absl::Duration hold = absl::Seconds(60);
  std::vector<FeedPin> pins;        // at most kMaxRules
  std::vector<FeedPattern> blocks;  // at most kMaxRules

  static constexpr int kHeartbeatsPerLease = 5;
  static constexpr size_t kMaxRules = 1024;
  static constexpr int kMaxSplitFactor = 1024;

  absl::Duration heartbeat() const { return lease / kHeartbeatsPerLease; }
  absl::Status Validate() const;
  friend bool operator==(const FeedOptions&, const FeedOptions&) = default;
};

// Everything main needs. Built by ParseFlags (flags.h).
// Restarts lose nothing: the trackers' state is written here periodically and on shutdown,
// and read back on start.
struct StorageOptions {
  // A file path; empty = no persistence.
  std::string path;
  // How often the state is written while running; in [1s, 24h].
  absl::Duration interval = absl::Minutes(1);

  absl::Status Validate() const;
  friend bool operator==(const StorageOptions&, const StorageOptions&) = default;
};

// Per-shard loads measured outside hotkeyd (measured_loads.h), shown on the landing page
// beside the shard load model's projection for each fix.
struct MeasuredLoadsOptions {
  // The measured-loads file (measured_loads.h), re-read when it changes; empty: none.
  std::string file;
  // A measurement older than this (by its timestamp) is shown as stale; in [1s, 24h].
  // 30 s: two missed writes of a feed that measures every 10 s, or every 15 s scrape.
  absl::Duration max_age = absl::Seconds(30);

  absl::Status Validate() const;
  friend bool operator==(const MeasuredLoadsOptions&, const MeasuredLoadsOptions&) = default;
};

// The shard itself, asked every `interval` for its load and shape (shard/prober.h): Redis's
// INFO and CLUSTER NODES, memcached's stats. The advice model takes what it measures before
// the --cluster.* flags.
struct ShardOptions {
  // host:port, [ipv6]:port, or a Unix socket path (starting with '/'). Empty: the daemon
  // asks 127.0.0.1:<--tap.port> when the tap captures an interface, and nothing otherwise
  // (Resolved()).
  std::string address;
  // The shard's protocol; unset: the tap's (--tap.protocol).
  std::optional<TapProtocol> protocol;
  // A file holding the password ("password"), or an ACL user and its password ("user
  // password"), on its first line; empty: no AUTH. Read at each connect, never a flag's value,
  // so it stays off the command line.
  std::string password_file;
  // TLS to the shard (TCP only). The CA file verifies the server (empty: the system's
  // default CAs); the certificate and key, given together, are the client's; the server
  // name is checked against the server's certificate and sent as SNI (empty: the address's
  // host).
  bool tls = false;
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_server_name;
  // CPUs the shard's bottleneck may use; 0: measured (Redis's main thread: 1 core, or its
  // cgroup's CPU quota where that is less; memcached: its threads or the quota). In [0, 1024].
  double cpus = 0;
  // How often the shard is asked; in [1s, 1h].
  absl::Duration interval = absl::Seconds(5);
  // Bound on connecting (TCP, TLS handshake, AUTH) and on each reply; in [1ms, 1h], and at
  // most the interval once Resolved().
  // Not a flag: a shard slower than this to answer INFO is no state to measure.
  absl::Duration timeout = absl::Seconds(2);

  // The most CPUs a flag may name.
  static constexpr double kMaxCpus = 1024;

  // True when `address` is a Unix socket path.
  bool unix_socket() const { return address.starts_with("/"); }
  // These options with the tap's defaults filled in: the address (127.0.0.1:<first tap
  // port>, when the tap is on and `address` is empty) and the protocol. An empty address
  // afterwards means: no probing.
  ShardOptions Resolved(const TapOptions& tap) const;

  absl::Status Validate() const;
  friend bool operator==(const ShardOptions&, const ShardOptions&) = default;
};

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
  // The user to run as once setup is done (privilege/drop.h): "auto" (the hotkeyd user
  // when started as root and it exists), a user name, or "" / "root" to keep root.
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
  // Whether the sources count slots and tags: track.slots when given, else ("auto") unless
  // the one source is a memcached tap (memcached has no slots) or the unit is bytes.
  bool TracksSlots() const {
    if (track.slots) return *track.slots;
    const bool memcached_only =
        tap.enabled() && tap.protocol == TapProtocol::kMemcached && !udp.enabled() && !demo;
    return !memcached_only && !CountsBytes();
  }
  // Key entries the rate history holds at most: track.MaxRatePoints() x track.candidates x
  // Sources(), each of 40 bytes (aggregate/aggregator.h). Validate() rejects more than
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
