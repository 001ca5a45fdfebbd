// Daemon: hotkeyd assembled. Receivers (one thread each) feed trackers; on every publish
// the main io_context builds a Snapshot (aggregator.h); the HTTP server (same io_context)
// serves it; SIGHUP or POST /-/reload reload the rules (through the loader it is given: the
// daemon reads no configuration file itself); SIGTERM/SIGINT stop it.
//
// Shutdown, in phases: stop accepting HTTP; stop input (each receiver closes its socket
// after draining what the kernel holds and publishes a last report); stop the demo load;
// build a last snapshot; leave Run(). Takes well under a second.
//
// Thread-safe: Shutdown(), snapshot() and the endpoints may be called from any thread;
// Run() from one.

#ifndef HOTKEY_DAEMON_DAEMON_H_
#define HOTKEY_DAEMON_DAEMON_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "aggregator.h"
#include "clock.h"
#include "hotkey/config/hash_secret.h"
#include "hotkey/config/options.h"
#include "hotkey/config/web_config.h"
#include "http_server.h"
#include "metrics.h"
#include "receiver.h"
#include "storage.h"
#include "web.h"

namespace hotkey::loadgen {
class Sender;
}

namespace hotkey::daemon {

class Daemon {
 public:
  using LogSink = std::function<void(std::string_view line)>;
  using RulesLoader = std::function<absl::StatusOr<config::ReloadableOptions>()>;

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
  };

  // Binds every socket; errors (a port in use, a bad rules file) are returned, not thrown.
  static absl::StatusOr<std::unique_ptr<Daemon>> Create(const config::DaemonOptions& options,
                                                        Inputs inputs, const Clock& clock,
                                                        LogSink log);
  ~Daemon();

  // Serves until Shutdown() (or a signal, with handle_signals). Blocks.
  void Run(bool handle_signals);
  void Shutdown();

  // Reloads the rules (Inputs::load_rules); on error the old configuration stays and the
  // error is returned.
  absl::Status Reload();

  std::shared_ptr<const Snapshot> snapshot() const;
  boost::asio::ip::tcp::endpoint web_endpoint() const { return http_->local_endpoint(); }
  boost::asio::ip::udp::endpoint udp_endpoint() const { return receivers_[0]->local_endpoint(); }

 private:
  Daemon(const config::DaemonOptions& options, const Clock& clock, LogSink log,
         RulesLoader load_rules);
  absl::Status Init(Inputs inputs);
  void Build();
  void Log(std::string_view level, std::string_view msg, std::string_view fields = "");
  void StartDemo();
  void DoShutdown();
  // SIGHUP reloads; SIGTERM and SIGINT shut down.
  void WaitForSignal();
  // Restores the trackers from --storage.path, if there is usable state.
  void RestoreState();
  // Saves the receivers' merged trackers now.
  void SaveState();
  void ArmStorageTimer();

  const config::DaemonOptions options_;
  const Clock& clock_;
  const LogSink log_;
  const RulesLoader load_rules_;
  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::signal_set> signals_;
  std::vector<std::unique_ptr<UdpReceiver>> receivers_;
  std::vector<uint64_t> inodes_;
  std::unique_ptr<Aggregator> aggregator_;
  std::unique_ptr<SnapshotCollector> collector_;
  std::unique_ptr<WebRoutes> routes_;
  std::unique_ptr<HttpServer> http_;
  std::atomic<bool> build_pending_{false};
  std::unique_ptr<StateStore> store_;  // null without --storage.path
  std::unique_ptr<boost::asio::steady_timer> storage_timer_;
  bool shut_down_ = false;  // io thread only

  std::unique_ptr<loadgen::Sender> demo_;
  std::thread demo_thread_;
  std::atomic<bool> demo_stop_{false};

  mutable std::mutex mu_;
  std::shared_ptr<const Snapshot> snapshot_;  // guarded by mu_
  ReloadStatus reload_status_;                // guarded by mu_
  StorageStatus storage_status_;              // guarded by mu_
  model::Cluster cluster_;                    // guarded by mu_
};

}  // namespace hotkey::daemon

#endif  // HOTKEY_DAEMON_DAEMON_H_
