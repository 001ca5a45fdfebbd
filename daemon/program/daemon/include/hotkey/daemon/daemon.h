// Daemon: hotkeyd assembled. Event sources (event_source.h: the UDP receivers, and any
// given to Create, such as the demo load; one thread each) feed trackers; on every publish
// the daemon's io_context builds a Snapshot (aggregate/aggregator.h); the HTTP server (same
// io_context) serves it; SIGHUP or POST /-/reload (with --web.enable-lifecycle) reload the rules
// (through the loader it is given: the daemon reads no configuration file itself); SIGTERM/SIGINT
// stop it.
//
// The state file (--storage.path) is read when Run() starts, not by Create: main switches
// users between the two, so a daemon started as root never parses a file the unprivileged
// user can write. A daemon destroyed without running leaves the file as it was.
//
// Shutdown, in phases: stop accepting HTTP; stop input (each source stops: a receiver
// closes its socket after draining what the kernel holds; each publishes a last report);
// build a last snapshot; save state; leave Run(). Takes well under a second.
//
// Thread-safe: Shutdown(), Reload(), snapshot() and the endpoints may be called from any
// thread; Run() from one. Destroy the Daemon after Run() has returned (or without ever
// running it): the destructor shuts down on its own thread, which is safe only while no
// thread runs the io_context.
//
// Time: every periodic job (the publish tick that asks each source for a report, the
// storage interval, the web-config and measured-loads polls) runs on one clock::Ticker
// (clock/ticker.h) on the monotonic clock, from Create's reading of it: a test on a
// FakeClock fires them by advancing it. When several fall due at once the file polls and
// the save are handed to the io thread before the sources are asked to publish, so the
// snapshot of a tick is built after that tick's polls.

#ifndef HOTKEY_DAEMON_DAEMON_H_
#define HOTKEY_DAEMON_DAEMON_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The endpoint types of web_endpoint() and udp_endpoint(); everything else of Asio stays
// behind the Impl.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/clock/clock.h"
#include "hotkey/config/hash_secret.h"
#include "hotkey/config/measured_loads.h"
#include "hotkey/config/options.h"
#include "hotkey/config/web_config.h"
#include "hotkey/source/event_source.h"

namespace hotkey::aggregate {
struct Snapshot;
}  // namespace hotkey::aggregate

namespace hotkey::daemon {

class Daemon {
 public:
  using LogSink = std::function<void(std::string_view line)>;
  using RulesLoader = std::function<absl::StatusOr<config::ReloadableOptions>()>;
  // A new web config when the file changed (config::WebConfigWatcher::Poll), nullopt when
  // it did not, or the error loading the changed file gave.
  using WebConfigPoller = std::function<absl::StatusOr<std::optional<config::WebConfig>>()>;
  // A new measurement when the file changed (config::MeasuredLoadsWatcher::Poll), nullopt
  // when it did not, or the error reading the changed file.
  using MeasuredLoadsPoller = std::function<absl::StatusOr<std::optional<config::MeasuredLoads>>()>;

  // What the daemon is given from files, read by the caller with config/'s loaders: the
  // daemon itself reads no configuration file.
  struct Inputs {
    // Keys hashed key labels: config::LoadKeyHashSecret(options.key_hash_secret_file).
    std::string label_secret{config::kPublicLabelKey};
    // TLS, basic auth and headers: config::LoadWebConfigFile(options.web.config_file).
    // The default is plain HTTP without authentication.
    config::WebConfig web_config;
    // Gives the reloadable options, e.g. [options] { return config::LoadReloadable(options); }
    // to re-read --config.file. Called by Create (an error fails it) and by every Reload
    // (an error keeps the options in force). Null: the flags' options, no rules file.
    RulesLoader load_rules;
    // With options.web.systemd_socket: the listening sockets systemd passed
    // (net::TakeSystemdListenFds, systemd_socket.h), served instead of binding
    // web.listen_addresses. The daemon owns them from Create on.
    std::vector<int> web_listen_fds;
    // Polled every kWebConfigPollInterval and on SIGHUP, so certificates and passwords
    // rotate without a restart: a changed config is swapped in for new connections; a
    // broken one keeps the old, and is logged and exported
    // (hotkey_web_config_last_reload_successful). Null: never re-read.
    WebConfigPoller poll_web_config;
    // With options.measured_loads.file: polled every kMeasuredLoadsPollInterval; each new
    // measurement is shown on the landing page and /api/v1/measured beside the model's
    // projection (load_comparison.h); a file that cannot be used is logged and counted
    // (hotkey_measured_loads_read_errors_total), and the last good measurement stays, going
    // stale. Null: no measured loads.
    MeasuredLoadsPoller poll_measured_loads;
  };
  static constexpr absl::Duration kWebConfigPollInterval = absl::Seconds(2);
  // Twice a second: a feed that writes every second is shown within half a second of it.
  static constexpr absl::Duration kMeasuredLoadsPollInterval = absl::Milliseconds(500);

  // Binds every socket; errors (a port in use, a bad rules file) are returned, not thrown.
  // `sources` are started, stopped and merged with the UDP receivers (e.g. the demo load,
  // demo.h); they must read `mono` too. `mono` (clock::SteadyClock in main) times every
  // duration: tracker decay, rate windows, alert dwell, publish and poll ticks. `wall`
  // (clock::RealClock) only stamps output: the snapshot's times, log lines, success
  // timestamps, the state file's save time. Both must outlive the daemon.
  static absl::StatusOr<std::unique_ptr<Daemon>> Create(
      const config::DaemonOptions& options, Inputs inputs, const clock::Clock& mono,
      const clock::Clock& wall, LogSink log,
      std::vector<std::unique_ptr<source::EventSource>> sources = {});
  ~Daemon();

  // Serves until Shutdown() (or a signal, with handle_signals). Blocks.
  void Run(bool handle_signals);
  void Shutdown();

  // Reloads the rules (Inputs::load_rules); on error the old configuration stays and the
  // error is returned. The new rules reach the aggregator through the io thread and take effect at
  // the next snapshot.
  absl::Status Reload();

  // The latest snapshot (aggregate/snapshot.h); null before the first publish.
  std::shared_ptr<const aggregate::Snapshot> snapshot() const;
  // The HTTP server's first listening address, and every one (one per
  // --web.listen-address, or per socket systemd passed).
  boost::asio::ip::tcp::endpoint web_endpoint() const;
  std::vector<boost::asio::ip::tcp::endpoint> web_endpoints() const;
  boost::asio::ip::udp::endpoint udp_endpoint() const;

 private:
  class Impl;
  explicit Daemon(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// What http::HttpServer::Create would refuse in `web_config` (config::LoadWebConfigFile of
// web.config_file) without binding a socket: a certificate, key or CA file OpenSSL
// cannot use. For --check-config. Thread-safe.
absl::Status CheckWebConfig(const config::WebOptions& web, const config::WebConfig& web_config);

// FailedPrecondition when --feed.require-auth is given and `web_config` has no basic auth
// users (no request could pass it). The daemon refuses to start, or keeps its web config,
// on it; --check-config reports it. Thread-safe.
absl::Status CheckFeedAuth(const config::DaemonOptions& options,
                           const config::WebConfig& web_config);

}  // namespace hotkey::daemon

#endif  // HOTKEY_DAEMON_DAEMON_H_
