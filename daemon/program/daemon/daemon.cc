#include "hotkey/daemon/daemon.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "hotkey/aggregate/advice_inputs.h"
#include "hotkey/aggregate/aggregator.h"
#include "hotkey/aggregate/load_comparison.h"
#include "hotkey/aggregate/snapshot.h"
#include "hotkey/aggregate/snapshot_store.h"
#include "hotkey/aggregate/storage.h"
#include "hotkey/clock/ticker.h"
#include "hotkey/http/server.h"
#include "hotkey/http/tls.h"
#include "hotkey/log/log.h"
#include "hotkey/shard/peers.h"
#include "hotkey/shard/prober.h"
#include "hotkey/source/slot_counts.h"
#include "hotkey/source/tracker_options.h"
#include "hotkey/source/udp_receiver.h"
#include "hotkey/web/metrics.h"
#include "hotkey/web/proc_stats.h"
#include "hotkey/web/web.h"

namespace hotkey::daemon {

using aggregate::AdviceInputs;
using aggregate::Aggregator;
using aggregate::ClusterInputs;
using aggregate::ClusterNode;
using aggregate::DescribeAdviceInputs;
using aggregate::LoadComparison;
using aggregate::Snapshot;
using aggregate::SnapshotStore;
using aggregate::StateStore;
using aggregate::StateWriter;
using web::BuildVersion;
using web::ReadUdpDrops;
using web::SnapshotCollector;
using web::WebRoutes;

namespace asio = boost::asio;

namespace {

// How soon after a hot key's fix in force changed the shard is asked again: the key's next
// advice reads the shard with the new fix over this span, so a second step (cache, then
// split_cache while the writes still load the shard) follows the first by about this
// much, not by an interval. The shortest --shard.interval allowed; the advice's hysteresis
// keeps a short reading within its margin from moving the fix.
constexpr absl::Duration kFixChangeAnswer = absl::Seconds(1);

std::string Endpoint(const auto& ep) {
  const auto a = ep.address();
  return a.is_v6() ? absl::StrCat("[", a.to_string(), "]:", ep.port())
                   : absl::StrCat(a.to_string(), ":", ep.port());
}

// The metrics of several collectables, in their order: /metrics serves one.
class Collectables : public prometheus::Collectable {
 public:
  explicit Collectables(std::vector<const prometheus::Collectable*> parts)
      : parts_(std::move(parts)) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> out;
    for (const prometheus::Collectable* p : parts_) {
      std::vector<prometheus::MetricFamily> f = p->Collect();
      out.insert(out.end(), std::make_move_iterator(f.begin()), std::make_move_iterator(f.end()));
    }
    return out;
  }

 private:
  const std::vector<const prometheus::Collectable*> parts_;
};

}  // namespace

// Everything the daemon owns. Members marked "io thread" are touched only by handlers on
// io_ (or, once no thread runs io_, by the destructor).
class Daemon::Impl {
 public:
  Impl(const config::DaemonOptions& options, const clock::Clock& mono, const clock::Clock& wall,
       LogSink log, RulesLoader load_rules)
      : options_(options),
        mono_(mono),
        wall_(wall),
        origin_(mono.Now()),
        ticker_(mono),
        log_(std::move(log)),
        load_rules_(std::move(load_rules)) {}
  ~Impl();

  absl::Status Init(Inputs inputs, std::vector<std::unique_ptr<source::EventSource>> extra);
  void Run(bool handle_signals);
  void Shutdown();
  absl::Status Reload();
  std::shared_ptr<const Snapshot> snapshot() const;
  boost::asio::ip::tcp::endpoint web_endpoint() const { return http_->local_endpoint(); }
  std::vector<boost::asio::ip::tcp::endpoint> web_endpoints() const {
    return http_->local_endpoints();
  }
  // The first receiver's; with UDP off (an empty --udp.listen-address), the unspecified one.
  boost::asio::ip::udp::endpoint udp_endpoint() const {
    return receivers_.empty() ? boost::asio::ip::udp::endpoint() : receivers_[0]->local_endpoint();
  }

 private:
  void Build();
  // A log line stamped now; Log() hands it to the sink.
  log::LogLine Line(std::string_view level, std::string_view msg) const;
  void Log(const log::LogLine& line) const;
  void DoShutdown();
  // SIGHUP reloads; SIGTERM and SIGINT shut down.
  void WaitForSignal();
  // Restores the trackers from --storage.path, if there is usable state.
  void RestoreState();
  // Serialises the sources' merged trackers now and hands them to writer_.
  void SaveState();
  // writer_'s outcome of each write, on its thread.
  void Saved(const absl::Status& s);
  // Called on source `index`'s thread with the report it just published: the report goes
  // to the io thread, which builds a snapshot from every source's latest (one build for
  // reports that arrive together).
  source::EventSource::PublishCallback OnPublish(size_t index);
  // Re-reads the web config (Inputs::poll_web_config) and swaps a changed one in.
  void PollWebConfig();
  // Polls the measured-loads file (Inputs::poll_measured_loads) into comparison_.
  void PollMeasuredLoads();
  // Runs `job` on the io thread every `interval`, until shutdown (ticker_).
  void OnIoEvery(absl::Duration interval, std::function<void()> job);
  // The prober's answer (io thread): new model inputs for the aggregator, and a log line
  // when the shard becomes reachable or stops being so.
  void Measured(const shard::Measurement& m);

  const config::DaemonOptions options_;
  const clock::Clock& mono_;  // durations
  const clock::Clock& wall_;  // stamps
  const absl::Time origin_;   // mono_ at Create: the aggregator's start, the ticks' origin
  // Declared before every member that holds its timers or sockets, the ticker's jobs
  // included (a prober's job keeps the prober's timer alive), so that it is destroyed last.
  asio::io_context io_;
  clock::Ticker ticker_;  // every periodic job; started by Run()
  const LogSink log_;
  const RulesLoader load_rules_;
  std::unique_ptr<asio::signal_set> signals_;
  // Every source, receivers first; receivers_ views the UDP ones.
  std::vector<std::unique_ptr<source::EventSource>> sources_;
  std::vector<source::UdpReceiver*> receivers_;
  std::vector<uint64_t> inodes_;
  std::unique_ptr<Aggregator> aggregator_;      // io thread
  std::unique_ptr<LoadComparison> comparison_;  // with poll_measured_loads_
  // What serving reads: the snapshot, the configured cluster, the reload and storage status.
  std::unique_ptr<SnapshotStore> store_;
  std::unique_ptr<SnapshotCollector> collector_;
  std::unique_ptr<web::FeedHub> feed_;  // io thread; outlives routes_ and http_
  // What the kits report they absorbed of the feed's keys: received by demand_, read by the
  // aggregator; io thread.
  std::unique_ptr<aggregate::DemandLedger> demand_ledger_;
  std::unique_ptr<web::DemandIntake> demand_;
  std::unique_ptr<WebRoutes> routes_;
  std::unique_ptr<http::HttpServer> http_;
  // The last report each source handed over (sources_'s order), and whether a build is
  // posted; io thread.
  std::vector<std::shared_ptr<const source::SourceReport>> reports_;
  bool build_pending_ = false;
  std::unique_ptr<StateStore> state_;          // null without --storage.path
  std::unique_ptr<StateWriter> writer_;        // with state_: its writes, off the io thread
  bool state_read_ = false;                    // io thread: Run() has read the state file
  WebConfigPoller poll_web_config_;            // null: not re-read
  MeasuredLoadsPoller poll_measured_loads_;    // null: no measured loads
  std::unique_ptr<Collectables> all_metrics_;  // collector_, feed_, demand_
  // The shard asked for its own figures (shard/prober.h): none without a live tap or
  // --shard.address.
  std::string shard_address_;
  std::unique_ptr<shard::Prober> prober_;  // io thread
  // In a Redis Cluster, with slots tracked: the other primaries, asked after each answer of
  // the own shard, for the slot-move plans (aggregate/slots.h). io thread.
  std::unique_ptr<shard::PeerProbers> peers_;
  std::optional<shard::Measurement> measured_;  // io thread: the last answer
  uint64_t shard_answers_ = 0;                  // io thread: answers with a load
  uint64_t key_episodes_started_ = 0;           // io thread: at the last Build()
  uint64_t key_fixes_changed_ = 0;              // io thread: at the last Build()
  // io thread: when the shard's last reading was taken (the start of the next load's
  // interval), and the CPUs the last answer with a reading said it may use.
  absl::Time last_reading_ = absl::InfinitePast();
  std::optional<std::pair<double, shard::CpusSource>> cpus_;
  // The node's role and slots at its last good answer.
  std::optional<std::pair<shard::Role, int>> role_;
  // io thread: answers refused as impossible, by shard::Rejection (ModelInputs).
  std::array<uint64_t, shard::kRejections> shard_rejected_{};
  // io thread: the last news of the measured-loads file was an error (or there was none).
  bool measured_loads_failing_ = true;
  bool shut_down_ = false;            // io thread
  std::atomic<bool> running_{false};  // Run() is inside io_.run()
  // --track.slots=auto: the sources count slots only while this is true, set from the
  // shard's answers (its cluster_enabled). Read by the sources' threads.
  std::atomic<bool> count_slots_{false};
  std::mutex reload_mu_;             // one Reload() at a time, so its steps stay in order
  uint64_t reload_seq_ = 0;          // guarded by reload_mu_
  uint64_t applied_reload_seq_ = 0;  // io thread
};

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Create(
    const config::DaemonOptions& options, Inputs inputs, const clock::Clock& mono,
    const clock::Clock& wall, LogSink log,
    std::vector<std::unique_ptr<source::EventSource>> sources) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  RulesLoader load_rules = std::move(inputs.load_rules);
  if (!load_rules) load_rules = [options] { return config::ReloadableFrom(options); };
  auto impl = std::make_unique<Impl>(options, mono, wall, std::move(log), std::move(load_rules));
  if (absl::Status s = impl->Init(std::move(inputs), std::move(sources)); !s.ok()) return s;
  return std::unique_ptr<Daemon>(new Daemon(std::move(impl)));
}

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Daemon::~Daemon() = default;
void Daemon::Run(bool handle_signals) { impl_->Run(handle_signals); }
void Daemon::Shutdown() { impl_->Shutdown(); }
absl::Status Daemon::Reload() { return impl_->Reload(); }
std::shared_ptr<const Snapshot> Daemon::snapshot() const { return impl_->snapshot(); }
asio::ip::tcp::endpoint Daemon::web_endpoint() const { return impl_->web_endpoint(); }
std::vector<asio::ip::tcp::endpoint> Daemon::web_endpoints() const {
  return impl_->web_endpoints();
}
asio::ip::udp::endpoint Daemon::udp_endpoint() const { return impl_->udp_endpoint(); }

source::EventSource::PublishCallback Daemon::Impl::OnPublish(size_t index) {
  return [this, index](std::shared_ptr<const source::SourceReport> report) {
    asio::post(io_, [this, index, report = std::move(report)]() mutable {
      reports_[index] = std::move(report);
      if (build_pending_) return;
      build_pending_ = true;
      asio::post(io_, [this] { Build(); });
    });
  };
}

absl::Status Daemon::Impl::Init(Inputs inputs,
                                std::vector<std::unique_ptr<source::EventSource>> extra) {
  absl::StatusOr<config::ReloadableOptions> reloadable = load_rules_();
  if (!reloadable.ok()) return reloadable.status();
  if (inputs.poll_measured_loads) {
    poll_measured_loads_ = std::move(inputs.poll_measured_loads);
    comparison_ = std::make_unique<LoadComparison>(options_.measured_loads);
  }
  if (absl::Status s = CheckFeedAuth(options_, inputs.web_config); !s.ok()) return s;
  feed_ = std::make_unique<web::FeedHub>(options_.feed_max_subscribers, inputs.label_secret,
                                         *reloadable, origin_, options_.feed_require_auth);
  aggregator_ = std::make_unique<Aggregator>(options_.track, *reloadable,
                                             std::move(inputs.label_secret), origin_, log_);
  aggregator_->SetCountsBytes(options_.CountsBytes());
  demand_ledger_ =
      std::make_unique<aggregate::DemandLedger>(options_.track.rate_window, web::kDemandMaxKeys);
  aggregator_->SetDemand(demand_ledger_.get());
  // A kit reports once a second to each feed it follows, and each holds a stream: twice
  // the streams a second leaves room for reconnects.
  demand_ = std::make_unique<web::DemandIntake>(
      *demand_ledger_, *feed_, mono_, options_.track.max_key_bytes,
      2.0 * std::max<size_t>(options_.feed_max_subscribers, 1));
  store_ = std::make_unique<SnapshotStore>(reloadable->cluster, &aggregator_->history(),
                                           &aggregator_->episodes(), comparison_.get());
  store_->NoteReload(absl::OkStatus(), reloadable->cluster, wall_.Now());
  if (inputs.poll_web_config) {
    poll_web_config_ = std::move(inputs.poll_web_config);
    store_->WatchWebConfig(wall_.Now());
  }
  const config::ShardOptions shard = options_.shard.Resolved(options_.tap);
  shard_address_ = shard.address;
  aggregator_->SetModelInputs(AdviceInputs(options_, store_->cluster(), shard_address_, nullptr));
  if (!shard_address_.empty()) {
    prober_ = std::make_unique<shard::Prober>(io_, shard, mono_,
                                              [this](const shard::Measurement& m) { Measured(m); });
    prober_->ScheduleOn(ticker_);
  }

  // Receivers: with port 0 the first socket picks the port and the others join it. None
  // with UDP off (an empty --udp.listen-address: the tap or the demo is the source).
  config::UdpOptions udp = options_.udp;
  for (int i = 0; options_.udp.enabled() && i < options_.udp.receivers; ++i) {
    absl::StatusOr<std::unique_ptr<source::UdpReceiver>> r = source::UdpReceiver::Create(
        udp, source::TrackerOptions(options_.track), mono_, OnPublish(sources_.size()));
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
    receivers_.push_back(r->get());
    sources_.push_back(*std::move(r));
  }
  for (std::unique_ptr<source::EventSource>& s : extra) {
    if (!s) continue;
    s->SetPublishCallback(OnPublish(sources_.size()));
    sources_.push_back(std::move(s));
  }
  reports_.resize(sources_.size());
  if (options_.TracksSlots()) {
    // Tags are tracked as keys are: a tag tracker of the key tracker's size per source.
    absl::StatusOr<source::SlotCounts> prototype =
        source::SlotCounts::Create(source::TrackerOptions(options_.track), origin_,
                                   options_.track.slots ? nullptr : &count_slots_);
    if (!prototype.ok()) return prototype.status();
    for (const auto& s : sources_) s->EnableSlots(*prototype);
  }

  if (!options_.storage.path.empty()) {
    state_ = std::make_unique<StateStore>(options_.storage.path);
    writer_ = std::make_unique<StateWriter>(*state_, [this](const absl::Status& s) { Saved(s); });
    store_->EnableStorage();
  }
  collector_ = std::make_unique<SnapshotCollector>(*store_);
  collector_->SetServingBoundBytes(feed_->MemoryBoundBytes() +
                                   demand_ledger_->MemoryBound(options_.track.max_key_bytes));
  all_metrics_ = std::make_unique<Collectables>(
      std::vector<const prometheus::Collectable*>{collector_.get(), feed_.get(), demand_.get()});
  WebRoutes::ReloadAction reload;
  // Without --web.enable-lifecycle, POST /-/reload answers 403 (web/web.h).
  if (options_.web.enable_lifecycle) reload = [this] { return Reload(); };
  routes_ = std::make_unique<WebRoutes>(options_.web.telemetry_path, *store_, wall_, *all_metrics_,
                                        feed_.get(), std::move(reload), demand_.get());
  // Feed streams count toward the connection cap, which grows by as many as may stream; at
  // the cap or out of descriptors a stream is closed to make room before a scrape is
  // refused (http/server.h).
  http::HttpLimits limits;
  limits.max_connections += options_.feed_max_subscribers;
  limits.large_body_paths.emplace_back(web::kDemandPath);
  limits.max_large_body_bytes = web::kDemandMaxBodyBytes;
  absl::StatusOr<std::unique_ptr<http::HttpServer>> http = http::HttpServer::Create(
      io_, options_.web, inputs.web_config, limits,
      [routes = routes_.get()](const http::HttpRequest& r) { return routes->Handle(r); },
      std::move(inputs.web_listen_fds),
      // Password checks are timed on the daemon's monotonic clock, as every duration is.
      [&mono = mono_] { return mono.Now(); });
  if (!http.ok()) return http.status();
  http_ = *std::move(http);
  collector_->SetHttpServer(http_.get());

  // The periodic jobs; the file polls and the save first (see daemon.h).
  if (poll_measured_loads_) {
    OnIoEvery(kMeasuredLoadsPollInterval, [this] { PollMeasuredLoads(); });
  }
  if (poll_web_config_) OnIoEvery(kWebConfigPollInterval, [this] { PollWebConfig(); });
  if (state_) OnIoEvery(options_.storage.interval, [this] { SaveState(); });
  ticker_.Every(options_.track.publish_interval, [this](absl::Time) {
    for (const auto& s : sources_) s->RequestPublish();
  });
  return absl::OkStatus();
}

namespace {

// The cluster as the own shard's topology and answer, and its peers' answers, give it: every
// primary that serves slots.
ClusterInputs ClusterFrom(const cluster::Topology& topology, const shard::Measurement& own,
                          const std::vector<shard::PeerLoad>& peers, bool tls) {
  ClusterInputs c;
  c.tls = tls;
  for (const cluster::Node& n : topology.nodes) {
    if (!n.primary || n.SlotCount() == 0) continue;
    ClusterNode node;
    node.id = n.id;
    node.address = n.address;
    node.myself = n.myself;
    node.slots = n.SlotCount();
    std::optional<shard::Load> load;
    if (n.myself) {
      node.asked = true;
      node.up = own.status.ok();
      load = own.load;
      c.my_slots = n.slots;
    } else {
      const auto it = std::find_if(peers.begin(), peers.end(),
                                   [&](const shard::PeerLoad& p) { return p.id == n.id; });
      if (it != peers.end()) {
        node.asked = it->asked;
        node.up = it->up;
        if (it->up) load = it->load;
      }
    }
    if (load) {
      node.ops_per_second = load->ops_per_second;
      node.busy = load->busy;
      node.capacity_ops = load->capacity_ops;
    }
    c.nodes.push_back(std::move(node));
  }
  return c;
}

}  // namespace

void Daemon::Impl::Measured(const shard::Measurement& m) {
  if (shut_down_) return;
  const bool was_up = measured_ && measured_->status.ok();
  const bool was_rejected = measured_ && measured_->rejected.has_value();
  const bool first = !measured_;
  measured_ = m;
  if (m.load) ++shard_answers_;
  if (m.rejected) ++shard_rejected_[static_cast<size_t>(*m.rejected)];
  aggregate::ModelInputs inputs = AdviceInputs(options_, store_->cluster(), shard_address_,
                                               &*measured_, shard_answers_, last_reading_);
  inputs.shard_rejected = shard_rejected_;
  aggregator_->SetModelInputs(std::move(inputs));
  if (m.reading) last_reading_ = m.time;
  if (!m.status.ok() && peers_) {
    // The cluster last seen is stale once the shard stops answering (or its answer is
    // refused): no slot move is planned on it.
    peers_->SetTopology(cluster::Topology{});
    aggregator_->SetClusterInputs({});
  }
  // A CPU quota found, changed or lifted moves the shard's busy fraction at once: say so,
  // since the advice follows it.
  if (m.status.ok()) {
    const std::pair<double, shard::CpusSource> cpus{m.cpus, m.cpus_source};
    if (cpus_ && *cpus_ != cpus) {
      log::LogLine line = Line("info", "the shard's CPUs changed");
      line.Value("shard", shard_address_)
          .Value("cpus_before", absl::StrFormat("%g", cpus_->first))
          .Value("cpus_source_before", shard::CpusSourceName(cpus_->second))
          .Value("cpus", absl::StrFormat("%g", m.cpus))
          .Value("cpus_source", shard::CpusSourceName(m.cpus_source));
      if (!m.cpus_detail.empty()) line.Quoted("detail", m.cpus_detail);
      Log(line);
    }
    cpus_ = cpus;
    // A failover turns a primary into a replica (its clients move to the promoted node, and
    // its advised entries live out feed.hold) or a replica into a primary: say so.
    const std::pair<shard::Role, int> role{m.role, m.cluster.slots};
    if (role_ && *role_ != role) {
      log::LogLine line = Line("info", "the shard's role changed");
      line.Value("shard", shard_address_)
          .Value("role_before", shard::RoleName(role_->first))
          .Value("role", shard::RoleName(m.role));
      if (m.cluster.cluster_mode) {
        line.Value("slots_before", absl::StrCat(role_->second))
            .Value("slots", absl::StrCat(m.cluster.slots));
      }
      Log(line);
    }
    role_ = role;
  }
  // Slots mean something only on a Redis Cluster node: with --track.slots=auto the sources
  // count them while the shard says it is one.
  if (m.status.ok() && m.reading) count_slots_.store(m.cluster.cluster_mode);
  if (m.topology && options_.TracksSlots()) {
    if (!peers_) {
      peers_ =
          std::make_unique<shard::PeerProbers>(io_, options_.shard.Resolved(options_.tap), mono_);
    }
    // The other primaries are asked every interval: a node hot through many warm slots has
    // no hot slot to start from, so the node is always compared with its peers. Each round
    // is one INFO and one CLUSTER NODES per peer (peers.h).
    peers_->SetTopology(*m.topology);
    peers_->ProbeAll();
    aggregator_->SetClusterInputs(ClusterFrom(*m.topology, m, peers_->Loads(), options_.shard.tls));
  }
  if (m.status.ok() && (first || !was_up)) {
    log::LogLine line = Line("info", "the shard answers; the advice uses its measured load");
    line.Value("shard", shard_address_);
    if (m.reading) line.Quoted("server", m.reading->server);
    line.Value("cpus", absl::StrFormat("%g", m.cpus))
        .Value("cpus_source", shard::CpusSourceName(m.cpus_source));
    if (!m.cpus_detail.empty()) line.Quoted("cpus_detail", m.cpus_detail);
    if (m.cluster.cluster_mode) line.Value("cluster_shards", absl::StrCat(m.cluster.shards));
    Log(line);
  } else if (m.rejected && (first || was_up || !was_rejected)) {
    Log(Line("warn",
             options_.cluster_given.capacity
                 ? "the shard's answer is impossible, and refused; the advice uses "
                   "--cluster.capacity until the shard answers with possible figures"
                 : "the shard's answer is impossible, and refused; its headroom is unknown once "
                   "its last possible load leaves the rate window, and no key is advised until "
                   "it answers with possible figures")
            .Value("shard", shard_address_)
            .Value("reason", shard::RejectionName(*m.rejected))
            .Quoted("err", std::string(m.status.message())));
  } else if (!m.status.ok() && !m.rejected && (first || was_up || was_rejected)) {
    Log(Line("warn",
             options_.cluster_given.capacity
                 ? "cannot ask the shard; the advice uses --cluster.capacity until it answers"
                 : "cannot ask the shard; its headroom is unknown once its last load leaves the "
                   "rate window, and no key is advised until it answers")
            .Value("shard", shard_address_)
            .Quoted("err", std::string(m.status.message())));
  }
}

void Daemon::Impl::OnIoEvery(absl::Duration interval, std::function<void()> job) {
  ticker_.Every(interval, [this, job = std::move(job)](absl::Time) {
    asio::post(io_, [this, job] {
      if (!shut_down_) job();
    });
  });
}

Daemon::Impl::~Impl() {
  // The io thread has left Run() (or never entered it): shutting down here races nothing.
  assert(!running_);
  DoShutdown();
}

log::LogLine Daemon::Impl::Line(std::string_view level, std::string_view msg) const {
  return log::LogLine(wall_.Now(), level, msg);
}

void Daemon::Impl::Log(const log::LogLine& line) const {
  if (log_) log_(line.text());
}

void Daemon::Impl::Run(bool handle_signals) {
  if (handle_signals) {
    signals_ = std::make_unique<asio::signal_set>(io_, SIGINT, SIGTERM, SIGHUP);
    WaitForSignal();
  }
  // The state file is read here, not in Create: a daemon started as root switches users in
  // between (main.cc), and that user can write the file, so root never parses it.
  if (state_) {
    RestoreState();
    state_read_ = true;
  }
  http_->Start();
  for (auto& s : sources_) s->Start();
  log::LogLine started = Line("info", "hotkeyd started");
  started.Value("version", BuildVersion())
      .Value("web",
             absl::StrJoin(http_->local_endpoints(), ",", [](std::string* out, const auto& ep) {
               absl::StrAppend(out, Endpoint(ep));
             }));
  if (receivers_.empty()) {
    started.Value("udp", "off");
  } else {
    started.Value("udp", Endpoint(receivers_[0]->local_endpoint()))
        .Value("receivers", absl::StrCat(receivers_.size()))
        .Value("udp_read_buffer", absl::StrCat(receivers_[0]->receive_buffer_bytes()));
  }
  Log(started);
  {
    const std::vector<std::pair<std::string, std::string>> inputs =
        DescribeAdviceInputs(options_, shard_address_);
    const bool unknown = std::any_of(inputs.begin(), inputs.end(), [](const auto& kv) {
      return kv.second == aggregate::InputOriginName(aggregate::InputOrigin::kUnknown);
    });
    log::LogLine line = Line(unknown ? "warn" : "info",
                             unknown ? "advice inputs: the shard's headroom is unknown, no key "
                                       "will be advised (set --cluster.capacity or ask the "
                                       "shard with --shard.address)"
                                     : "advice inputs");
    for (const auto& [key, value] : inputs) line.Quoted(key, value);
    Log(line);
  }
  for (size_t i = receivers_.size(); i < sources_.size(); ++i) {
    log::LogLine line = Line("info", "event source started").Value("kind", sources_[i]->kind());
    for (const auto& [key, value] : sources_[i]->Describe()) line.Value(key, value);
    Log(line);
  }
  if (poll_measured_loads_) PollMeasuredLoads();
  ticker_.Start(origin_);
  running_ = true;
  io_.run();
  running_ = false;
}

void Daemon::Impl::WaitForSignal() {
  signals_->async_wait([this](boost::system::error_code ec, int sig) {
    if (ec) return;
    if (sig == SIGHUP) {
      (void)Reload();  // on the io thread; logs its outcome; the old configuration stays on error
      if (poll_web_config_) PollWebConfig();
      WaitForSignal();
      return;
    }
    Log(Line("info", "shutting down").Value("signal", absl::StrCat(sig)));
    DoShutdown();
  });
}

void Daemon::Impl::Shutdown() {
  asio::post(io_, [this] { DoShutdown(); });
}

void Daemon::Impl::DoShutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  if (feed_) feed_->CloseAll();
  if (http_) http_->Stop();
  if (signals_) {
    boost::system::error_code ec;
    signals_->cancel(ec);
  }
  ticker_.Stop();  // no more ticks or polls; a job it posted finds shut_down_ set
  if (prober_) prober_->Stop();
  if (peers_) peers_->Stop();
  for (auto& s : sources_) s->Stop();
  // The last reports, so a final scrape would see everything counted: read from each
  // source, since the handovers their last publishes posted will not run. A daemon whose
  // Init() failed early (a bad rules file) has no aggregator to build with.
  for (size_t i = 0; i < sources_.size() && i < reports_.size(); ++i) {
    reports_[i] = sources_[i]->Latest();
  }
  if (aggregator_) Build();
  // A daemon that never ran never read the state file: saving would overwrite it.
  if (state_ && state_read_) {
    SaveState();        // after the receivers' last reports: nothing counted is lost
    writer_->Finish();  // and written before the daemon goes
  }
  io_.stop();
}

void Daemon::Impl::Build() {
  build_pending_ = false;
  auto snap = aggregator_->Build(reports_, mono_.Now(), wall_.Now(), ReadUdpDrops(inodes_));
  // A key turned hot: its first advice waits for an answer of the shard begun since its
  // onset, so ask now, and the next answer is the episode's own. A hot key's fix in force
  // changed (the kits apply the fix the last tick pushed): the shard's load changed, and
  // its advice reads the answers begun since, so ask now and again kFixChangeAnswer later
  // (an onset at the same tick gets that answer too).
  const uint64_t started = aggregator_->key_episodes_started();
  const uint64_t fixes_changed = aggregator_->key_fixes_changed();
  if (prober_ && fixes_changed != key_fixes_changed_) {
    prober_->AskNow(kFixChangeAnswer);
  } else if (prober_ && started != key_episodes_started_) {
    prober_->AskNow();
  }
  key_episodes_started_ = started;
  key_fixes_changed_ = fixes_changed;
  feed_->Update(*snap, mono_.Now());
  // What the kits apply from now on: the next tick's episodes name it as the fix in force.
  std::vector<aggregate::Aggregator::FixInForce> fixes;
  fixes.reserve(feed_->state().entries().size());
  for (const auto& [key, e] : feed_->state().entries()) fixes.push_back({key, e.prefix, e.mode});
  aggregator_->SetFixesInForce(fixes);
  store_->Publish(std::move(snap));
}

void Daemon::Impl::RestoreState() {
  // The history and the episodes come back whatever the sources: they are the aggregator's.
  aggregate::History& history = aggregator_->history();
  aggregate::EpisodeLog& episodes = aggregator_->episodes();
  StateStore::Loaded l =
      state_->Load(source::TrackerOptions(options_.track), mono_.Now(), wall_.Now(),
                   [&](std::string_view h, std::string_view e, absl::Time saved) {
                     if (!h.empty()) {
                       if (absl::Status s = history.Deserialize(h); !s.ok()) return s;
                     }
                     if (!e.empty()) return episodes.Deserialize(e, saved);
                     return absl::OkStatus();
                   });
  if (l.tracker && (history.fine_count() > 0 || episodes.count() > 0)) {
    Log(Line("info", "history restored")
            .Quoted("file", state_->path())
            .Value("windows_fine", absl::StrCat(history.fine_count()))
            .Value("windows_coarse", absl::StrCat(history.coarse_count()))
            .Value("episodes", absl::StrCat(episodes.count())));
  }
  if (!l.problem.empty()) {
    Log(Line("error", "saved state unusable; starting empty")
            .Quoted("file", state_->path())
            .Quoted("err", l.problem)
            .Quoted("moved_to", l.moved_to));
  }
  if (!l.tracker) return;
  const size_t keys = l.tracker->size();
  if (receivers_.empty()) {
    // Saved state goes back into a UDP receiver's tracker; the tap and the demo start
    // empty.
    Log(Line("warn", "saved state not restored: UDP is off, and only a UDP receiver takes it")
            .Quoted("file", state_->path())
            .Value("keys", absl::StrCat(keys)));
    return;
  }
  receivers_[0]->Restore(*std::move(l.tracker));
  Log(Line("info", "state restored")
          .Quoted("file", state_->path())
          .Value("keys", absl::StrCat(keys)));
}

void Daemon::Impl::PollWebConfig() {
  absl::StatusOr<std::optional<config::WebConfig>> polled = poll_web_config_();
  if (polled.ok() && !polled->has_value()) return;  // unchanged
  absl::Status s = polled.status();
  if (s.ok()) s = CheckFeedAuth(options_, **polled);
  if (s.ok()) s = http_->SetWebConfig(**polled, options_.web.config_file);
  store_->NoteWebConfig(s, wall_.Now());
  if (s.ok()) {
    Log(Line("info", "web config reloaded").Quoted("file", options_.web.config_file));
  } else {
    Log(Line("error", "web config reload failed; the previous one stays in force")
            .Quoted("file", options_.web.config_file)
            .Quoted("err", std::string(s.message())));
  }
}

void Daemon::Impl::PollMeasuredLoads() {
  // The key's figures first, so that a measurement read now can adopt them (its timestamp
  // permitting: load_comparison.h).
  if (std::shared_ptr<const Snapshot> snap = store_->snapshot()) {
    comparison_->Observe(*snap, snap->model.cluster);
  }
  const absl::StatusOr<std::optional<config::MeasuredLoads>> polled = poll_measured_loads_();
  comparison_->Update(polled);
  if (polled.ok() && polled->has_value()) {
    aggregator_->episodes().NoteMeasured(model::StrategyName((*polled)->strategy), (*polled)->key,
                                         (*polled)->time);
  }
  if (!polled.ok()) {
    measured_loads_failing_ = true;
    Log(Line("error", "measured loads file unusable; the last measurement stays, and goes stale")
            .Quoted("file", options_.measured_loads.file)
            .Quoted("err", std::string(polled.status().message())));
  } else if (polled->has_value() && measured_loads_failing_) {
    // Once, not at every change: a feed rewrites the file every second or so.
    measured_loads_failing_ = false;
    Log(Line("info", "measured loads file read")
            .Quoted("file", options_.measured_loads.file)
            .Value("shards", absl::StrCat((*polled)->ops_per_second.size())));
  }
}

void Daemon::Impl::SaveState() {
  // The tracker the aggregator merged for the last snapshot: every source's latest report,
  // merged once per tick, not again here. SaveState runs on the io thread, as Build does;
  // only the serialising (in memory) does: the write and its fsyncs run on writer_'s thread.
  const sketch::HeavyHitters* merged = aggregator_->merged_tracker();
  if (!merged) return;
  writer_->Submit(StateStore::Stamped(merged->Serialize(), wall_.Now(),
                                      aggregator_->history().Serialize(),
                                      aggregator_->episodes().Serialize()));
}

void Daemon::Impl::Saved(const absl::Status& s) {
  store_->NoteSave(s, wall_.Now());
  if (!s.ok()) Log(Line("error", "cannot save state").Quoted("err", std::string(s.message())));
}

std::shared_ptr<const Snapshot> Daemon::Impl::snapshot() const {
  // Null until Init has made the store (a Daemon whose Init failed is never handed out).
  return store_ ? store_->snapshot() : nullptr;
}

absl::Status Daemon::Impl::Reload() {
  // Parsing touches no io-thread state; the aggregator takes the result on the io thread
  // (at once when called there: an HTTP handler, the SIGHUP handler).
  std::lock_guard<std::mutex> serial(reload_mu_);
  const absl::StatusOr<config::ReloadableOptions> reloadable = load_rules_();
  const absl::Status status = reloadable.status();
  if (status.ok()) {
    // Numbered, so that a reload posted earlier never overrides a later one.
    const uint64_t seq = ++reload_seq_;
    auto apply = [this, seq, options = *reloadable] {
      if (seq <= applied_reload_seq_) return;
      applied_reload_seq_ = seq;
      aggregator_->SetReloadable(options);
      feed_->SetReloadable(options);
    };
    if (io_.get_executor().running_in_this_thread()) {
      apply();
    } else {
      asio::post(io_, std::move(apply));
    }
    store_->NoteReload(status, reloadable->cluster, wall_.Now());
    Log(Line("info", "configuration reloaded").Quoted("file", options_.config_file));
  } else {
    store_->NoteReload(status, {}, wall_.Now());
    Log(Line("error", "configuration reload failed; the previous configuration stays in force")
            .Quoted("file", options_.config_file)
            .Quoted("err", std::string(status.message())));
  }
  return status;
}

absl::Status CheckFeedAuth(const config::DaemonOptions& options,
                           const config::WebConfig& web_config) {
  if (!options.feed_require_auth || !web_config.basic_auth_users.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "--feed.require-auth: the web config (--web.config.file \"", options.web.config_file,
      "\") has no basic_auth_users, so no request could be served the feed; add users or drop "
      "the flag"));
}

absl::Status CheckWebConfig(const config::WebOptions& web, const config::WebConfig& web_config) {
  if (!web_config.tls_enabled) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<boost::asio::ssl::context>> ctx =
      http::MakeTlsContext(web_config.tls);
  if (ctx.ok()) return absl::OkStatus();
  return absl::Status(ctx.status().code(), absl::StrCat("web config file \"", web.config_file,
                                                        "\": ", ctx.status().message()));
}

}  // namespace hotkey::daemon
