#include "daemon.h"

#include <optional>

#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hotkey/loadgen/sender.h"
#include "proc_stats.h"

namespace hotkey::daemon {

namespace asio = boost::asio;

namespace {

sketch::HeavyHittersOptions TrackerOptions(const config::TrackOptions& t) {
  sketch::HeavyHittersOptions o;
  o.candidates = t.candidates;
  o.sketch_bytes = t.sketch_bytes;
  o.max_key_bytes = t.stored_key_bytes;
  o.half_life = t.half_life;
  return o;
}

std::string Endpoint(const auto& ep) {
  const auto a = ep.address();
  return a.is_v6() ? absl::StrCat("[", a.to_string(), "]:", ep.port())
                   : absl::StrCat(a.to_string(), ":", ep.port());
}

}  // namespace

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Create(const config::DaemonOptions& options,
                                                       Inputs inputs, const Clock& clock,
                                                       LogSink log) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  RulesLoader load_rules = std::move(inputs.load_rules);
  if (!load_rules) load_rules = [options] { return config::ReloadableFrom(options); };
  std::unique_ptr<Daemon> d(new Daemon(options, clock, std::move(log), std::move(load_rules)));
  if (absl::Status s = d->Init(std::move(inputs)); !s.ok()) return s;
  return d;
}

Daemon::Daemon(const config::DaemonOptions& options, const Clock& clock, LogSink log,
               RulesLoader load_rules)
    : options_(options),
      clock_(clock),
      log_(std::move(log)),
      load_rules_(std::move(load_rules)),
      cluster_(options.cluster) {}

absl::Status Daemon::Init(Inputs inputs) {
  absl::StatusOr<config::ReloadableOptions> reloadable = load_rules_();
  if (!reloadable.ok()) return reloadable.status();
  cluster_ = reloadable->cluster;
  reload_status_ = ReloadStatus{true, clock_.Now()};
  aggregator_ = std::make_unique<Aggregator>(options_.track, *reloadable,
                                             std::move(inputs.label_secret), clock_.Now(), log_);

  // Receivers: with port 0 the first socket picks the port and the others join it.
  config::UdpOptions udp = options_.udp;
  for (int i = 0; i < options_.udp.receivers; ++i) {
    absl::StatusOr<std::unique_ptr<UdpReceiver>> r = UdpReceiver::Create(
        udp, TrackerOptions(options_.track), options_.track.publish_interval, clock_, [this] {
          if (!build_pending_.exchange(true)) asio::post(io_, [this] { Build(); });
        });
    if (!r.ok()) return r.status();
    if (i == 0) {
      absl::StatusOr<config::HostPort> hp = config::ParseListenAddress(udp.listen_address);
      if (hp.ok() && hp->port == 0) {
        const std::string host =
            hp->host.find(':') != std::string::npos ? absl::StrCat("[", hp->host, "]") : hp->host;
        udp.listen_address = absl::StrCat(host, ":", (*r)->local_endpoint().port());
      }
    }
    inodes_.push_back((*r)->socket_inode());
    receivers_.push_back(*std::move(r));
  }

  if (!options_.storage.path.empty()) {
    store_ = std::make_unique<StateStore>(options_.storage.path);
    storage_status_.enabled = true;
    RestoreState();
  }
  collector_ = std::make_unique<SnapshotCollector>([this] { return snapshot(); },
                                                   [this] {
                                                     std::lock_guard<std::mutex> l(mu_);
                                                     return reload_status_;
                                                   },
                                                   [this] {
                                                     std::lock_guard<std::mutex> l(mu_);
                                                     return storage_status_;
                                                   });
  WebHooks hooks;
  hooks.snapshot = [this] { return snapshot(); };
  hooks.reload = [this] { return Reload(); };
  hooks.cluster = [this] {
    std::lock_guard<std::mutex> l(mu_);
    return cluster_;
  };
  hooks.metrics = collector_.get();
  routes_ = std::make_unique<WebRoutes>(options_.web.telemetry_path, std::move(hooks));
  absl::StatusOr<std::unique_ptr<HttpServer>> http = HttpServer::Create(
      io_, options_.web, inputs.web_config, HttpLimits{},
      [routes = routes_.get()](const HttpRequest& r) { return routes->Handle(r); });
  if (!http.ok()) return http.status();
  http_ = *std::move(http);
  return absl::OkStatus();
}

Daemon::~Daemon() { DoShutdown(); }

void Daemon::Log(std::string_view level, std::string_view msg, std::string_view fields) {
  if (!log_) return;
  std::string line =
      absl::StrFormat("ts=%s level=%s msg=\"%s\"",
                      absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", clock_.Now(), absl::UTCTimeZone()),
                      std::string(level), std::string(msg));
  if (!fields.empty()) absl::StrAppend(&line, " ", std::string(fields));
  log_(line);
}

void Daemon::Run(bool handle_signals) {
  if (handle_signals) {
    signals_ = std::make_unique<asio::signal_set>(io_, SIGINT, SIGTERM, SIGHUP);
    WaitForSignal();
  }
  http_->Start();
  for (auto& r : receivers_) r->Start();
  Log("info", "hotkeyd started",
      absl::StrFormat("version=%s web=%s udp=%s receivers=%d udp_read_buffer=%d",
                      std::string(BuildVersion()), Endpoint(http_->local_endpoint()),
                      Endpoint(receivers_[0]->local_endpoint()), receivers_.size(),
                      receivers_[0]->receive_buffer_bytes()));
  if (options_.demo) StartDemo();
  if (store_) ArmStorageTimer();
  io_.run();
}

void Daemon::WaitForSignal() {
  signals_->async_wait([this](boost::system::error_code ec, int sig) {
    if (ec) return;
    if (sig == SIGHUP) {
      (void)Reload();  // logs its outcome; the old configuration stays on error
      WaitForSignal();
      return;
    }
    Log("info", "shutting down", absl::StrCat("signal=", sig));
    DoShutdown();
  });
}

void Daemon::Shutdown() {
  asio::post(io_, [this] { DoShutdown(); });
}

void Daemon::DoShutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (http_) http_->Stop();
  if (signals_) {
    boost::system::error_code ec;
    signals_->cancel(ec);
  }
  demo_stop_ = true;
  if (demo_thread_.joinable()) demo_thread_.join();
  for (auto& r : receivers_) r->Stop();
  // The last reports, so a final scrape would see everything counted. A daemon whose
  // Init() failed early (a bad rules file) has no aggregator to build with.
  if (aggregator_) Build();
  if (storage_timer_) storage_timer_->cancel();
  if (store_) SaveState();  // after the receivers' last reports: nothing counted is lost
  io_.stop();
}

void Daemon::StartDemo() {
  loadgen::SendOptions o;
  const auto ep = receivers_[0]->local_endpoint();
  const bool any = ep.address().is_unspecified();
  o.to = ep.address().is_v6() && !any
             ? absl::StrCat("[", ep.address().to_string(), "]:", ep.port())
             : absl::StrCat(any ? "127.0.0.1" : ep.address().to_string(), ":", ep.port());
  o.rate = options_.demo_rate;
  o.background_keys = 100000;
  o.zipf_s = 1.0;
  o.background_write_share = 0.1;
  // Three celebrities, one per fix. At 9,500 ops/s on a 10,000 ops/s shard (the defaults),
  // with B = the shard's load without the key and H its ops/s (shard_model.h):
  //   profile, 3% writes, H = 2090: cache leaves B + Hw + A/refresh = 7410 + 63 + 50 = 0.75 C
  //   likes, 95% writes, H = 2375: cache 0.95 C, replicate 0.94 C; split B + Hw/8 + Hr = 0.75 C
  //   stock, 50% writes, H = 2375: split 0.85 C; split+cache B + Hw/8 + A/refresh = 0.73 C
  o.celebrities = {{"user:celebrity:profile", 0.22, 0.03},
                   {"post:viral:likes", 0.25, 0.95},
                   {"item:flash-sale:stock", 0.25, 0.5}};
  absl::StatusOr<std::unique_ptr<loadgen::Sender>> s = loadgen::Sender::Create(o);
  if (!s.ok()) {
    Log("error", "demo load not started", absl::StrCat("err=\"", s.status().message(), "\""));
    return;
  }
  demo_ = *std::move(s);
  demo_thread_ = std::thread([this] { (void)demo_->Run(demo_stop_); });
  Log("info", "demo load started", absl::StrFormat("to=%s rate=%g", o.to, o.rate));
}

void Daemon::Build() {
  build_pending_ = false;
  std::vector<std::shared_ptr<const ReceiverReport>> reports;
  reports.reserve(receivers_.size());
  for (const auto& r : receivers_) reports.push_back(r->Latest());
  auto snap = aggregator_->Build(reports, clock_.Now(), ReadUdpDrops(inodes_));
  std::lock_guard<std::mutex> l(mu_);
  snapshot_ = std::move(snap);
}

void Daemon::RestoreState() {
  StateStore::Loaded l = store_->Load(TrackerOptions(options_.track), clock_.Now());
  if (!l.problem.empty()) {
    Log("error", "saved state unusable; starting empty",
        absl::StrCat("file=\"", store_->path(), "\" err=\"", l.problem, "\" moved_to=\"",
                     l.moved_to, "\""));
  }
  if (!l.tracker) return;
  const size_t keys = l.tracker->size();
  receivers_[0]->Restore(*std::move(l.tracker));
  Log("info", "state restored", absl::StrCat("file=\"", store_->path(), "\" keys=", keys));
}

void Daemon::ArmStorageTimer() {
  if (!storage_timer_) storage_timer_ = std::make_unique<asio::steady_timer>(io_);
  storage_timer_->expires_after(absl::ToChronoNanoseconds(options_.storage.interval));
  storage_timer_->async_wait([this](boost::system::error_code ec) {
    if (ec || shut_down_) return;
    SaveState();
    ArmStorageTimer();
  });
}

void Daemon::SaveState() {
  // The receivers' latest published trackers, merged (each receiver sees its own senders).
  std::optional<sketch::HeavyHitters> merged;
  for (const auto& r : receivers_) {
    const std::shared_ptr<const ReceiverReport> report = r->Latest();
    if (!report) continue;
    if (!merged) {
      merged.emplace(report->tracker);
    } else {
      (void)merged->Merge(report->tracker);  // same options by construction
    }
  }
  if (!merged) return;
  const absl::Status s = store_->Save(*merged);
  std::lock_guard<std::mutex> l(mu_);
  if (s.ok()) {
    storage_status_.last_success = clock_.Now();
  } else {
    ++storage_status_.failures;
    Log("error", "cannot save state", absl::StrCat("err=\"", s.message(), "\""));
  }
}

std::shared_ptr<const Snapshot> Daemon::snapshot() const {
  std::lock_guard<std::mutex> l(mu_);
  return snapshot_;
}

absl::Status Daemon::Reload() {
  const absl::StatusOr<config::ReloadableOptions> reloadable = load_rules_();
  const absl::Status status = reloadable.status();
  if (status.ok()) {
    aggregator_->SetReloadable(*reloadable);
    {
      std::lock_guard<std::mutex> l(mu_);
      cluster_ = reloadable->cluster;
      reload_status_ = ReloadStatus{true, clock_.Now()};
    }
    Log("info", "configuration reloaded", absl::StrCat("file=\"", options_.config_file, "\""));
  } else {
    {
      std::lock_guard<std::mutex> l(mu_);
      reload_status_.last_successful = false;
    }
    Log("error", "configuration reload failed; the previous configuration stays in force",
        absl::StrCat("file=\"", options_.config_file, "\" err=\"", status.message(), "\""));
  }
  return status;
}

}  // namespace hotkey::daemon
