#include "hotkey/shard/prober.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <fstream>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "absl/strings/str_cat.h"
#include "hotkey/cluster/topology.h"
#include "hotkey/config/values.h"
#include "hotkey/shard/reply.h"

namespace hotkey::shard {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using asio::awaitable;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);

// Names of the steps, and reply terminators. (String literals directly inside a co_await
// expression trip GCC 12's coroutine lowering: "array used as initializer".)
constexpr std::string_view kAuth = "AUTH";
constexpr std::string_view kMcAuth = "authentication";
constexpr std::string_view kInfo = "INFO";
constexpr std::string_view kClusterNodes = "CLUSTER NODES";
constexpr std::string_view kStats = "stats";
constexpr std::string_view kResp = "";
constexpr std::string_view kEnd = "END";
constexpr std::string_view kStored = "STORED";

// A connected byte stream: a Unix socket, a TCP socket or TLS over one.
class Conn {
 public:
  virtual ~Conn() = default;
  virtual awaitable<std::tuple<error_code, size_t>> ReadSome(asio::mutable_buffer b) = 0;
  virtual awaitable<std::tuple<error_code, size_t>> Write(asio::const_buffer b) = 0;
  // Ends every operation in progress with an error.
  virtual void Close() = 0;
};

template <class Stream>
class StreamConn final : public Conn {
 public:
  template <class... Args>
  explicit StreamConn(Args&&... args) : stream(std::forward<Args>(args)...) {}
  awaitable<std::tuple<error_code, size_t>> ReadSome(asio::mutable_buffer b) override {
    co_return co_await stream.async_read_some(b, kAsTuple);
  }
  awaitable<std::tuple<error_code, size_t>> Write(asio::const_buffer b) override {
    co_return co_await asio::async_write(stream, b, kAsTuple);
  }
  void Close() override {
    error_code ec;
    stream.lowest_layer().close(ec);
  }
  Stream stream;
};

// A command as a RESP array of bulk strings.
std::string Resp(const std::vector<std::string_view>& args) {
  std::string out = absl::StrCat("*", args.size(), "\r\n");
  for (std::string_view a : args) {
    absl::StrAppend(&out, "$", a.size(), "\r\n", absl::string_view(a.data(), a.size()), "\r\n");
  }
  return out;
}

// The first line of a small file (a password file holds one line).
absl::StatusOr<std::string> FirstLine(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::FailedPreconditionError(absl::StrCat("cannot read ", path));
  std::string line(4096, '\0');
  in.read(line.data(), static_cast<std::streamsize>(line.size()));
  line.resize(static_cast<size_t>(in.gcount()));
  line = line.substr(0, line.find('\n'));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) return absl::FailedPreconditionError(absl::StrCat(path, " is empty"));
  return line;
}

std::optional<std::string> ReadComm(int64_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/comm"));
  std::string comm;
  if (!in || !std::getline(in, comm)) return std::nullopt;
  return comm;
}

}  // namespace

class Prober::Impl : public std::enable_shared_from_this<Impl> {
 public:
  Impl(asio::io_context& io, config::ShardOptions options, const clock::Clock& clock,
       Callback callback)
      : io_(io),
        options_(std::move(options)),
        clock_(clock),
        callback_(std::move(callback)),
        redis_(options_.protocol.value_or(config::TapProtocol::kRedis) ==
               config::TapProtocol::kRedis),
        deadline_(io),
        resolver_(io) {
    if (options_.tls) {
      try {
        tls_status_ = MakeTlsContext();
      } catch (const std::exception& e) {  // ssl::context's constructor throws
        tls_status_ = absl::InternalError(absl::StrCat("TLS: ", e.what()));
      }
    }
  }

  void Probe() {
    if (stopped_) return;
    asio::post(io_, [self = shared_from_this()] { self->StartRound(); });
  }

  // The schedule (Prober::ScheduleOn): a round once the next one is due.
  void Due(absl::Time now) {
    if (stopped_) return;
    asio::post(io_, [self = shared_from_this(), now] {
      if (now < self->next_due_) return;
      self->next_due_ += self->options_.interval;
      if (self->next_due_ <= now) self->next_due_ = now + self->options_.interval;
      self->StartRound();
    });
  }

  void AskNow(absl::Duration next) {
    if (stopped_) return;
    asio::post(io_, [self = shared_from_this(), next] {
      if (self->stopped_) return;
      const absl::Time now = self->clock_.Now();
      // A `next` shorter than the interval brings a reading with a load within it: such an
      // ask is never refused, and does not count against the one cut an interval.
      const bool soon = next < self->options_.interval;
      if (self->busy_) {  // the round in progress reads now; the next comes `next` after
        if (soon) self->next_due_ = std::min(self->next_due_, now + next);
        return;
      }
      if (self->last_ && now - self->last_time_ < self->options_.interval / 2) {
        if (!soon && now - self->last_cut_ < self->options_.interval) return;
        if (!soon) self->last_cut_ = now;
        self->cut_ = true;
      }
      self->next_due_ = now + std::min(next, self->options_.interval);
      self->StartRound();
    });
  }

  void StartRound() {
    if (stopped_ || busy_) return;
    busy_ = true;
    asio::co_spawn(io_, Round(), [self = shared_from_this()](std::exception_ptr e) {
      if (!e) return;
      if (!self->busy_) std::rethrow_exception(e);  // the callback's own: the caller's
      // Asio's and OpenSSL's throwing paths (allocation, SSL_new): this round fails, the
      // next starts afresh.
      self->busy_ = false;
      self->cut_ = false;
      self->Disarm();
      self->CloseConn();
      self->conn_.reset();
      self->in_.clear();
      self->consumed_ = 0;
      Measurement m;
      m.time = self->clock_.Now();
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        m.status = absl::InternalError(absl::StrCat("asking the shard: ", x.what()));
      } catch (...) {
        m.status = absl::InternalError("asking the shard: an unknown exception");
      }
      if (!self->stopped_) self->callback_(m);
    });
  }

  // Before the ticker starts: the first round one interval from now.
  void StartSchedule() { next_due_ = clock_.Now() + options_.interval; }

  void Stop() {
    stopped_ = true;
    if (io_.get_executor().running_in_this_thread()) {
      CloseConn();
    } else {
      asio::post(io_, [self = shared_from_this()] { self->CloseConn(); });
    }
  }

  // One round: ask, then call back. Holds the Impl alive while it runs.
  awaitable<void> Round() {
    auto self = shared_from_this();
    Measurement m = co_await Ask();
    Disarm();
    busy_ = false;
    cut_ = false;  // this round's, read or failed
    if (!stopped_) callback_(m);
  }

 private:
  absl::Status MakeTlsContext() {
    tls_ = std::make_unique<ssl::context>(ssl::context::tls_client);
    error_code ec;
    tls_->set_options(ssl::context::default_workarounds | ssl::context::no_compression |
                          ssl::context::no_sslv2 | ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                          ssl::context::no_tlsv1_1,
                      ec);
    auto fail = [&](std::string_view what, const std::string& file) {
      return absl::InvalidArgumentError(
          absl::StrCat("TLS: ", absl::string_view(what.data(), what.size()),
                       file.empty() ? "" : " ", file, ": ", ec.message()));
    };
    if (options_.tls_ca_file.empty()) {
      if (tls_->set_default_verify_paths(ec); ec) return fail("the system's CAs", "");
    } else if (tls_->load_verify_file(options_.tls_ca_file, ec); ec) {
      return fail("CA file", options_.tls_ca_file);
    }
    if (!options_.tls_cert_file.empty()) {
      if (tls_->use_certificate_chain_file(options_.tls_cert_file, ec); ec) {
        return fail("certificate file", options_.tls_cert_file);
      }
      if (tls_->use_private_key_file(options_.tls_key_file, ssl::context::pem, ec); ec) {
        return fail("key file", options_.tls_key_file);
      }
    }
    return absl::OkStatus();
  }

  // Bounds the step that follows by the timeout: past it, the connection is closed and
  // the step fails (TimedOut() names it).
  void Arm(std::string step) {
    timed_out_.clear();
    const uint64_t generation = ++armed_;
    deadline_.expires_after(absl::ToChronoNanoseconds(options_.timeout));
    deadline_.async_wait(
        [self = shared_from_this(), generation, step = std::move(step)](const error_code& ec) {
          if (ec || generation != self->armed_) return;
          self->timed_out_ = step;
          self->resolver_.cancel();
          if (self->conn_) self->conn_->Close();
        });
  }
  void Disarm() {
    ++armed_;
    deadline_.cancel();
  }
  // The error of a step that ended with `ec`.
  absl::Status StepError(std::string_view step, const error_code& ec) const {
    const absl::string_view s(step.data(), step.size());
    if (!timed_out_.empty()) {
      return absl::DeadlineExceededError(
          absl::StrCat(s, ": no answer within ", absl::FormatDuration(options_.timeout)));
    }
    if (ec == asio::error::eof) {
      return absl::UnavailableError(absl::StrCat(s, ": the shard closed the connection"));
    }
    return absl::UnavailableError(absl::StrCat(s, ": ", ec.message()));
  }

  void CloseConn() {
    resolver_.cancel();
    if (conn_) conn_->Close();
  }

  awaitable<absl::Status> Connect() {
    in_.clear();
    consumed_ = 0;
    local_ = false;
    const std::string step = absl::StrCat("connect to ", options_.address);
    Arm(step);
    if (options_.unix_socket()) {
      auto c = std::make_unique<StreamConn<asio::local::stream_protocol::socket>>(io_);
      auto& socket = c->stream;
      conn_ = std::move(c);
      auto [ec] = co_await socket.async_connect(
          asio::local::stream_protocol::endpoint(options_.address), kAsTuple);
      if (ec) co_return StepError(step, ec);
      local_ = true;
    } else {
      absl::StatusOr<config::HostPort> hp = config::ParseListenAddress(options_.address);
      if (!hp.ok()) co_return hp.status();
      auto [ec, endpoints] =
          co_await resolver_.async_resolve(hp->host, std::to_string(hp->port), kAsTuple);
      if (ec) co_return StepError(absl::StrCat("resolve ", hp->host), ec);
      if (tls_) {
        auto c = std::make_unique<StreamConn<ssl::stream<tcp::socket>>>(io_, *tls_);
        auto& stream = c->stream;
        conn_ = std::move(c);
        auto [cec, endpoint] =
            co_await asio::async_connect(stream.next_layer(), endpoints, kAsTuple);
        if (cec) co_return StepError(step, cec);
        local_ = endpoint.address().is_loopback();
        const std::string name =
            options_.tls_server_name.empty() ? hp->host : options_.tls_server_name;
        error_code not_ip;
        asio::ip::make_address(name, not_ip);
        // SNI names a host, never an address (RFC 6066, 3).
        if (not_ip) SSL_set_tlsext_host_name(stream.native_handle(), name.c_str());
        stream.set_verify_mode(ssl::verify_peer);
        stream.set_verify_callback(ssl::host_name_verification(name));
        const std::string handshake = absl::StrCat("TLS handshake with ", options_.address);
        Arm(handshake);
        auto [hec] = co_await stream.async_handshake(ssl::stream_base::client, kAsTuple);
        if (hec) co_return StepError(handshake, hec);
      } else {
        auto c = std::make_unique<StreamConn<tcp::socket>>(io_);
        auto& socket = c->stream;
        conn_ = std::move(c);
        auto [cec, endpoint] = co_await asio::async_connect(socket, endpoints, kAsTuple);
        if (cec) co_return StepError(step, cec);
        local_ = endpoint.address().is_loopback();
      }
    }
    if (options_.password_file.empty()) co_return absl::OkStatus();
    absl::StatusOr<std::string> secret = FirstLine(options_.password_file);
    if (!secret.ok()) {
      co_return absl::FailedPreconditionError(
          absl::StrCat("password file: ", secret.status().message()));
    }
    const size_t space = secret->find(' ');
    const std::string_view user = space == std::string::npos
                                      ? std::string_view()
                                      : std::string_view(*secret).substr(0, space);
    const std::string_view password = space == std::string::npos
                                          ? std::string_view(*secret)
                                          : std::string_view(*secret).substr(space + 1);
    absl::StatusOr<Reply> r;
    if (redis_) {
      std::string request =
          user.empty() ? Resp({"AUTH", password}) : Resp({"AUTH", user, password});
      r = co_await Exchange(std::move(request), kAuth, kResp);
    } else {
      if (user.empty()) {
        co_return absl::FailedPreconditionError(
            "password file: memcached's authentication needs \"user password\"");
      }
      std::string request =
          absl::StrCat("set hotkeyd 0 0 ", secret->size(), "\r\n", *secret, "\r\n");
      r = co_await Exchange(std::move(request), kMcAuth, kStored);
    }
    if (!r.ok()) co_return r.status();
    if (r->kind == Reply::Kind::kError) {
      co_return absl::UnauthenticatedError(
          absl::StrCat("AUTH refused: ", absl::string_view(r->text.data(), r->text.size())));
    }
    co_return absl::OkStatus();
  }

  // Sends `request` and reads one reply: RESP when `terminal` is empty, else memcached's
  // up to the line `terminal`. The reply's text stays valid until the next Exchange.
  awaitable<absl::StatusOr<Reply>> Exchange(std::string request, std::string_view what,
                                            std::string_view terminal) {
    const std::string step(what);
    Arm(step);
    in_.erase(0, consumed_);
    consumed_ = 0;
    auto [wec, written] = co_await conn_->Write(asio::buffer(request));
    if (wec) co_return StepError(step, wec);
    for (;;) {
      absl::StatusOr<std::optional<Reply>> r =
          terminal.empty() ? ParseRespReply(in_, kMaxReplyBytes)
                           : ParseMemcachedReply(in_, terminal, kMaxReplyBytes);
      if (!r.ok()) {
        co_return absl::Status(r.status().code(), absl::StrCat(step, ": ", r.status().message()));
      }
      if (*r) {
        consumed_ = (*r)->size;
        co_return **r;
      }
      const size_t old = in_.size();
      in_.resize(old + kChunk);
      auto [ec, n] = co_await conn_->ReadSome(asio::buffer(in_.data() + old, kChunk));
      in_.resize(old + n);
      if (ec) co_return StepError(step, ec);
    }
  }

  // A reply that must be a bulk string (INFO, CLUSTER NODES, stats).
  static absl::StatusOr<std::string_view> Text(const absl::StatusOr<Reply>& r,
                                               std::string_view what) {
    if (!r.ok()) return r.status();
    const absl::string_view w(what.data(), what.size());
    if (r->kind == Reply::Kind::kError) {
      return absl::FailedPreconditionError(absl::StrCat(
          w, ": the shard answered ", absl::string_view(r->text.data(), r->text.size())));
    }
    if (r->kind != Reply::Kind::kBulk) {
      return absl::InvalidArgumentError(absl::StrCat(w, ": not a bulk string reply"));
    }
    return r->text;
  }

  // One round's measurement; on failure, the connection is dropped.
  awaitable<Measurement> Ask() {
    Measurement m;
    absl::Status s;
    for (int attempt = 0; attempt < 2; ++attempt) {
      // A kept connection the server has since closed (its idle timeout) fails at once:
      // try again on a new one.
      const bool reused = conn_ != nullptr;
      m = Measurement{};
      rejected_.reset();
      s = co_await AskInto(m);
      if (s.ok()) break;
      Disarm();
      CloseConn();
      conn_.reset();
      in_.clear();
      consumed_ = 0;
      if (!reused || stopped_ || s.code() != absl::StatusCode::kUnavailable) break;
    }
    if (!s.ok()) {
      m = Measurement{};
      m.time = clock_.Now();
      m.status = s;
      m.rejected = rejected_;
    }
    co_return m;
  }

  awaitable<absl::Status> AskInto(Measurement& m) {
    if (!tls_status_.ok()) co_return tls_status_;
    if (stopped_) co_return absl::CancelledError("the prober is stopped");
    if (!conn_) {
      if (absl::Status s = co_await Connect(); !s.ok()) co_return s;
    }
    absl::StatusOr<Reading> reading;
    if (redis_) {
      std::string request = Resp({"INFO"});
      absl::StatusOr<Reply> r = co_await Exchange(std::move(request), kInfo, kResp);
      m.time = clock_.Now();
      absl::StatusOr<std::string_view> text = Text(r, "INFO");
      if (!text.ok()) co_return text.status();
      reading = ParseRedisInfo(*text);
      if (!reading.ok()) co_return reading.status();
      if (reading->cluster_mode) {
        request = Resp({"CLUSTER", "NODES"});
        r = co_await Exchange(std::move(request), kClusterNodes, kResp);
        text = Text(r, "CLUSTER NODES");
        if (!text.ok()) co_return text.status();
        absl::StatusOr<cluster::Topology> t = cluster::ParseClusterNodes(*text);
        if (!t.ok()) {
          switch (t.status().code()) {
            case absl::StatusCode::kOutOfRange:
              rejected_ = Rejection::kSlotRange;
              break;
            case absl::StatusCode::kAlreadyExists:
              rejected_ = Rejection::kSlotOverlap;
              break;
            case absl::StatusCode::kResourceExhausted:
              rejected_ = Rejection::kNodeCount;
              break;
            default:
              break;
          }
          co_return t.status();
        }
        m.cluster.cluster_mode = true;
        m.cluster.shards = t->Shards();
        if (const cluster::Node* me = t->Myself()) {
          m.cluster.node_id = me->id;
          m.cluster.slots = me->SlotCount();
          m.role = me->primary ? Role::kPrimary : Role::kReplica;
        }
        m.topology = std::make_shared<const cluster::Topology>(*std::move(t));
      }
    } else {
      std::string request = "stats\r\n";
      absl::StatusOr<Reply> r = co_await Exchange(std::move(request), kStats, kEnd);
      m.time = clock_.Now();
      absl::StatusOr<std::string_view> text = Text(r, "stats");
      if (!text.ok()) co_return text.status();
      reading = ParseMemcachedStats(*text);
      if (!reading.ok()) co_return reading.status();
    }
    Disarm();
    SetCpus(*reading, m);
    // A window across a change of the CPUs (a quota set or lifted) was spent under two
    // limits and its busy fraction is of neither: the load starts again from this reading.
    // A reading cut short by AskNow() only starts the next interval.
    if (last_ && m.cpus == last_cpus_ && !std::exchange(cut_, false)) {
      m.load = LoadBetween(*last_, last_time_, *reading, m.time, m.cpus);
    }
    // The next pair is judged afresh from this reading, whatever this one's fate.
    last_ = *reading;
    last_time_ = m.time;
    last_cpus_ = m.cpus;
    if (m.load) {
      if (absl::Status s = CheckLoad(*m.load, m.cpus); !s.ok()) {
        rejected_ = Rejection::kBusy;
        co_return s;
      }
    }
    // Outside a cluster INFO says the role; in one, CLUSTER NODES did (above).
    if (!m.topology) m.role = reading->role;
    m.reading = *std::move(reading);
    co_return absl::OkStatus();
  }

  void SetCpus(const Reading& r, Measurement& m) const {
    if (options_.cpus > 0) {
      m.cpus = options_.cpus;
      m.cpus_source = CpusSource::kFlag;
      return;
    }
    m.cpus = redis_ ? 1.0 : r.threads;
    m.cpus_source = redis_ ? CpusSource::kOneCore : CpusSource::kThreads;
    if (!local_) {
      m.cpus_detail = "the shard is not on this host: its quota cannot be read";
      return;
    }
    if (r.pid <= 0) {
      m.cpus_detail = "the shard reports no process id";
      return;
    }
    const std::string_view expected = redis_ ? "redis-server" : "memcached";
    const std::optional<std::string> comm = ReadComm(r.pid);
    if (!comm || !comm->starts_with(expected)) {
      m.cpus_detail = absl::StrCat("process ", r.pid, " here is not ",
                                   absl::string_view(expected.data(), expected.size()),
                                   " (the shard runs in another PID namespace?)");
      return;
    }
    absl::StatusOr<std::optional<CpuQuota>> q = ReadCpuQuota(r.pid);
    if (!q.ok()) {
      m.cpus_detail = std::string(q.status().message());
    } else if (*q && (*q)->cpus < m.cpus) {
      m.cpus = (*q)->cpus;
      m.cpus_source = CpusSource::kCgroupQuota;
      m.cpus_detail = (*q)->file;
    }
  }

  // Bytes asked of the socket per read.
  static constexpr size_t kChunk = 16 << 10;

  asio::io_context& io_;
  const config::ShardOptions options_;
  const clock::Clock& clock_;
  const Callback callback_;
  const bool redis_;
  std::atomic<bool> stopped_{false};
  absl::Status tls_status_;
  std::unique_ptr<ssl::context> tls_;
  // The rest belongs to the io_context's thread.
  bool busy_ = false;
  asio::steady_timer deadline_;
  uint64_t armed_ = 0;     // the generation of the armed deadline
  std::string timed_out_;  // the step the deadline ended; empty while none did
  tcp::resolver resolver_;
  std::unique_ptr<Conn> conn_;
  bool local_ = false;  // the shard is on this host (loopback or a Unix socket)
  std::string in_;      // bytes received; the first consumed_ of them read
  size_t consumed_ = 0;
  std::optional<Reading> last_;
  absl::Time last_time_;
  double last_cpus_ = 0;
  absl::Time next_due_ = absl::InfiniteFuture();  // the next scheduled round
  // AskNow() less than half an interval after the last reading: that reading gives no
  // load (cut_), and at most one is cut so an interval (last_cut_).
  bool cut_ = false;
  absl::Time last_cut_ = absl::InfinitePast();
  std::optional<Rejection> rejected_;  // why the round in progress was refused, if it was
};

Prober::Prober(asio::io_context& io, config::ShardOptions options, const clock::Clock& clock,
               Callback callback)
    : interval_(options.interval),
      impl_(std::make_shared<Impl>(io, std::move(options), clock, std::move(callback))) {}

Prober::~Prober() { Stop(); }

void Prober::Probe() { impl_->Probe(); }

void Prober::AskNow(absl::Duration next) { impl_->AskNow(next); }

void Prober::ScheduleOn(clock::Ticker& ticker) {
  impl_->StartSchedule();
  ticker.Every(std::min(interval_, kScheduleStep),
               [impl = impl_](absl::Time now) { impl->Due(now); });
}

void Prober::Stop() { impl_->Stop(); }

absl::Status CheckReachable(const config::ShardOptions& options, absl::Duration timeout) {
  config::ShardOptions o = options;
  o.timeout = timeout;
  asio::io_context io;
  absl::Status status = absl::UnknownError("no answer");
  Prober prober(io, std::move(o), clock::SteadyClock::Get(), [&](const Measurement& m) {
    status = m.status;
    io.stop();
  });
  prober.Probe();
  io.run();
  return status;
}

}  // namespace hotkey::shard
