// Daemon: hotkeyd assembled. Receivers (one thread each) feed trackers; on every publish
// the main io_context builds a Snapshot (aggregator.h); the HTTP server (same io_context)
// serves it; SIGHUP or POST /-/reload re-reads the rules file; SIGTERM/SIGINT stop it.
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
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "aggregator.h"
#include "hotkey/clock/clock.h"
#include "hotkey/config/options.h"
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

  // Binds every socket; errors (a port in use, a bad rules file) are returned, not thrown.
  static absl::StatusOr<std::unique_ptr<Daemon>> Create(const config::DaemonOptions& options,
                                                        const clock::Clock& clock, LogSink log);
  ~Daemon();

  // Serves until Shutdown() (or a signal, with handle_signals). Blocks.
  void Run(bool handle_signals);
  void Shutdown();

  // Re-reads --config.file; on error the old configuration stays and the error is returned.
  absl::Status Reload();

  std::shared_ptr<const Snapshot> snapshot() const;
  boost::asio::ip::tcp::endpoint web_endpoint() const { return http_->local_endpoint(); }
  boost::asio::ip::udp::endpoint udp_endpoint() const { return receivers_[0]->local_endpoint(); }

 private:
  Daemon(const config::DaemonOptions& options, const clock::Clock& clock, LogSink log);
  absl::Status Init();
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
  const clock::Clock& clock_;
  const LogSink log_;
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
