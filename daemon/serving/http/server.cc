// The server half of HttpServer: listening, accepting, the connection cap and stopping.
// The sessions are in http_session.h, instantiated in http_plain.cc and http_tls.cc.

#include "hotkey/http/server.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/ssl/context.hpp>

#include "absl/strings/str_cat.h"
#include "hotkey/config/values.h"
#include "hotkey/http/tls.h"
#include "hotkey/net/listen.h"
#include "shared.h"

namespace hotkey::http {

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using asio::ip::tcp;

namespace {

// The TLS context, credentials and headers of a web config. A certificate or key OpenSSL
// refuses is an error naming `config_file`.
absl::StatusOr<std::shared_ptr<const WebSecurity>> MakeWebSecurity(
    std::string_view config_file, const config::WebConfig& web_config) {
  auto security = std::make_shared<WebSecurity>();
  security->headers = web_config.headers;
  if (web_config.tls_enabled) {
    absl::StatusOr<std::unique_ptr<ssl::context>> ctx = MakeTlsContext(web_config.tls);
    if (!ctx.ok()) {
      return absl::Status(ctx.status().code(),
                          absl::StrCat("web config file \"", std::string(config_file),
                                       "\": ", ctx.status().message()));
    }
    security->tls = *std::move(ctx);
  }
  if (!web_config.basic_auth_users.empty()) {
    security->auth = std::make_shared<BasicAuth>(web_config.basic_auth_users);
  }
  return std::shared_ptr<const WebSecurity>(std::move(security));
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Create(
    asio::io_context& io, const config::WebOptions& web, const config::WebConfig& web_config,
    const HttpLimits& limits, Handler handler, std::vector<int> listen_fds, NowFunction now) {
  absl::StatusOr<std::shared_ptr<const WebSecurity>> security =
      MakeWebSecurity(web.config_file, web_config);
  if (!security.ok()) return security.status();
  auto shared = std::make_shared<Shared>(limits, std::move(now));
  shared->handler = std::move(handler);
  shared->health_without_auth = web.health_without_auth;
  shared->security = *std::move(security);

  std::unique_ptr<HttpServer> s(new HttpServer(io, std::move(shared)));
  if (web.systemd_socket) {
    if (listen_fds.empty()) {
      return absl::FailedPreconditionError(
          "--web.systemd-socket: systemd passed no socket (LISTEN_FDS and LISTEN_PID unset or "
          "not for this process); start hotkeyd through its .socket unit");
    }
    for (int fd : listen_fds) {
      if (absl::Status st = s->Adopt(fd); !st.ok()) return st;
    }
  } else {
    // All or nothing: one address that cannot be bound fails the whole server.
    for (const std::string& address : web.listen_addresses) {
      if (absl::Status st = s->Listen(address); !st.ok()) return st;
    }
  }
  s->EnsureAuthPool();
  return s;
}

absl::Time HttpServer::SteadyNow() {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

absl::Status HttpServer::SetWebConfig(const config::WebConfig& web_config,
                                      std::string_view config_file) {
  absl::StatusOr<std::shared_ptr<const WebSecurity>> security =
      MakeWebSecurity(config_file, web_config);
  if (!security.ok()) return security.status();
  shared_->security = *std::move(security);
  EnsureAuthPool();
  return absl::OkStatus();
}

void HttpServer::EnsureAuthPool() {
  if (shared_->security->auth == nullptr || auth_pool_ != nullptr || shared_->stopped) return;
  auth_pool_ =
      std::make_unique<asio::thread_pool>(std::max<size_t>(1, shared_->limits.auth_workers));
  shared_->auth_pool = auth_pool_.get();
}

HttpServer::HttpServer(asio::io_context& io, std::shared_ptr<Shared> shared)
    : io_(io), shared_(std::move(shared)) {}

absl::Status HttpServer::Listen(const std::string& address) {
  absl::StatusOr<config::HostPort> hp = config::ParseListenAddress(address);
  if (!hp.ok()) return hp.status();
  absl::StatusOr<asio::ip::address> host = net::ListenHost(*hp);
  if (!host.ok()) return host.status();
  auto acceptor = std::make_unique<tcp::acceptor>(io_);
  tcp::endpoint ep(*host, hp->port);
  boost::system::error_code ec;
  acceptor->open(ep.protocol(), ec);
  if (ec && host->is_v6() && hp->host.empty()) {
    ep = tcp::endpoint(asio::ip::address_v4::any(), hp->port);
    acceptor->open(ep.protocol(), ec);
  }
  if (!ec && ep.address().is_v6()) acceptor->set_option(asio::ip::v6_only(false), ec);
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(ep, ec);
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on http ", address, ": ", ec.message()));
  }
  acceptors_.push_back(std::move(acceptor));
  return absl::OkStatus();
}

absl::Status HttpServer::Adopt(int fd) {
  auto bad = [fd](const std::string& why) {
    return absl::FailedPreconditionError(
        absl::StrCat("--web.systemd-socket: file descriptor ", fd, " ", why));
  };
  int type = 0;
  int listening = 0;
  socklen_t len = sizeof(type);
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) return bad("is not a socket");
  len = sizeof(listening);
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || type != SOCK_STREAM ||
      !listening) {
    return bad("is not a listening stream socket (ListenStream= in the .socket unit)");
  }
  sockaddr_storage addr{};
  len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      (addr.ss_family != AF_INET && addr.ss_family != AF_INET6)) {
    return bad("is not an IPv4 or IPv6 socket (ListenStream= takes [address:]port)");
  }
  auto acceptor = std::make_unique<tcp::acceptor>(io_);
  boost::system::error_code ec;
  acceptor->assign(addr.ss_family == AF_INET ? tcp::v4() : tcp::v6(), fd, ec);
  if (ec) return bad(absl::StrCat("cannot be used: ", ec.message()));
  acceptors_.push_back(std::move(acceptor));
  return absl::OkStatus();
}

HttpServer::~HttpServer() {
  Stop();
  if (auth_pool_) {
    // A check in progress finishes (at most one bcrypt); queued ones are dropped.
    auth_pool_->stop();
    auth_pool_->join();
  }
}

void HttpServer::Start() {
  for (const auto& a : acceptors_) {
    accept_backoff_.push_back(std::make_unique<asio::steady_timer>(io_));
    Accept(*a);
  }
}

void HttpServer::Stop() {
  shared_->stopped = true;
  shared_->auth_pool = nullptr;
  boost::system::error_code ec;
  for (const auto& a : acceptors_) a->close(ec);
  for (const auto& t : accept_backoff_) t->cancel();
  // Connections waiting (idle keep-alive ones, queued checks and streams among them) close
  // now; one in the middle of a request finishes it and then closes, as `stopped` says.
  for (auto& list : shared_->waiting) {
    std::list<std::weak_ptr<Waiting>> all = std::move(list);
    list.clear();
    for (const auto& weak : all) {
      if (std::shared_ptr<Waiting> w = weak.lock()) w->Shutdown();
    }
  }
  shared_->pending_checks.clear();
  for (auto& n : shared_->waiting_now) {
    n.store(0, std::memory_order_relaxed);
  }
}

bool HttpServer::Shared::EvictOne(EvictReason reason) {
  // The oldest connection of `state` still open.
  const auto oldest = [this](ConnectionState state) -> std::shared_ptr<Waiting> {
    auto& list = waiting[static_cast<int>(state)];
    while (!list.empty()) {
      if (std::shared_ptr<Waiting> w = list.front().lock()) return w;
      list.pop_front();
    }
    return nullptr;
  };
  // The request queued for its check that the queue gives up first, if its address weighs
  // at least `min_weight` (auth_queue.h).
  const auto queued = [this](size_t min_weight) -> std::shared_ptr<PendingCheck> {
    for (;;) {
      const std::optional<AuthQueue::Ticket> t = auth_queue.Victim(min_weight);
      if (!t.has_value()) return nullptr;
      const auto it = pending_checks.find(*t);
      std::shared_ptr<PendingCheck> p = it == pending_checks.end() ? nullptr : it->second.lock();
      if (p) return p;
      auth_queue.Cancel(*t);  // its session is gone
      if (it != pending_checks.end()) pending_checks.erase(it);
    }
  };
  // The stream with the most unsent bytes (a reader that fell behind), of those the newest.
  const auto stream = [this]() -> std::shared_ptr<Waiting> {
    std::shared_ptr<Waiting> best;
    size_t best_backlog = 0;
    for (const auto& weak : waiting[static_cast<int>(ConnectionState::kStream)]) {
      std::shared_ptr<Waiting> w = weak.lock();
      if (!w) continue;
      const size_t backlog = w->Backlog();
      if (!best || backlog >= best_backlog) {
        best = std::move(w);
        best_backlog = backlog;
      }
    }
    return best;
  };
  const auto count = [&](ConnectionState state) {
    Count(evictions[static_cast<int>(reason)][static_cast<int>(state)]);
  };
  for (ConnectionState state : {ConnectionState::kSilent, ConnectionState::kHandshake}) {
    if (std::shared_ptr<Waiting> w = oldest(state)) {
      count(state);
      w->Evict();
      return true;
    }
  }
  if (std::shared_ptr<PendingCheck> p = queued(2)) {
    count(ConnectionState::kAuth);
    p->Displaced();
    return true;
  }
  if (std::shared_ptr<Waiting> w = oldest(ConnectionState::kIdle)) {
    count(ConnectionState::kIdle);
    w->Evict();
    return true;
  }
  if (std::shared_ptr<PendingCheck> p = queued(1)) {
    count(ConnectionState::kAuth);
    p->Displaced();
    return true;
  }
  if (std::shared_ptr<Waiting> w = stream()) {
    count(ConnectionState::kStream);
    w->Evict();
    return true;
  }
  return false;
}

bool HttpServer::Shared::QueueCheck(std::string_view address, std::weak_ptr<PendingCheck> waiter,
                                    AuthQueue::Ticket* ticket) {
  const AuthQueue::Admission a = auth_queue.Enqueue(address);
  if (a.displaced.has_value()) {
    const auto it = pending_checks.find(*a.displaced);
    if (it != pending_checks.end()) {
      std::shared_ptr<PendingCheck> p = it->second.lock();
      pending_checks.erase(it);
      if (p) {
        Count(auth_failures[static_cast<int>(AuthFailure::kBusy)]);
        p->Displaced();
      }
    }
  }
  if (!a.queued) return false;
  pending_checks.emplace(a.ticket, std::move(waiter));
  *ticket = a.ticket;
  return true;
}

void HttpServer::Shared::DispatchChecks() {
  while (!stopped && auth_pool != nullptr &&
         checks_running < std::max<size_t>(1, limits.auth_workers)) {
    const std::optional<AuthQueue::Ticket> t = auth_queue.Next();
    if (!t.has_value()) return;
    const auto it = pending_checks.find(*t);
    if (it == pending_checks.end()) continue;
    std::shared_ptr<PendingCheck> p = it->second.lock();
    pending_checks.erase(it);
    if (!p) continue;
    ++checks_running;
    p->RunCheck();
  }
}

void HttpServer::Shared::CheckDone(absl::Duration took) {
  if (checks_running > 0) --checks_running;
  // Weight 1/8: a few checks settle it, one odd one moves it little.
  took = std::max(took, absl::ZeroDuration());
  mean_check = mean_check == absl::ZeroDuration() ? took : mean_check + (took - mean_check) / 8;
  DispatchChecks();
}

int64_t HttpServer::Shared::RetryAfterSeconds() const {
  const double workers = static_cast<double>(std::max<size_t>(1, limits.auth_workers));
  const double seconds = static_cast<double>(auth_queue.queued() + checks_running) / workers *
                         absl::ToDoubleSeconds(mean_check);
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(seconds)));
}

HttpServerStats HttpServer::stats() const {
  const auto load = [](const std::atomic<uint64_t>& c) {
    return c.load(std::memory_order_relaxed);
  };
  HttpServerStats st;
  st.open_connections = load(shared_->open_now);
  st.accepted = load(shared_->accepted);
  for (int c = 0; c < kNumConnectionStates; ++c) st.waiting[c] = load(shared_->waiting_now[c]);
  for (int r = 0; r < kNumEvictReasons; ++r) {
    for (int c = 0; c < kNumConnectionStates; ++c)
      st.evictions[r][c] = load(shared_->evictions[r][c]);
  }
  for (int i = 0; i < kNumAuthFailures; ++i) st.auth_failures[i] = load(shared_->auth_failures[i]);
  for (int i = 0; i < kNumAcceptErrors; ++i) st.accept_errors[i] = load(shared_->accept_errors[i]);
  return st;
}

tcp::endpoint HttpServer::local_endpoint() const {
  boost::system::error_code ec;
  return acceptors_.empty() ? tcp::endpoint() : acceptors_.front()->local_endpoint(ec);
}

std::vector<tcp::endpoint> HttpServer::local_endpoints() const {
  std::vector<tcp::endpoint> out;
  for (const auto& a : acceptors_) {
    boost::system::error_code ec;
    out.push_back(a->local_endpoint(ec));
  }
  return out;
}

bool HttpServer::tls() const { return shared_->security->tls != nullptr; }
bool HttpServer::basic_auth() const { return shared_->security->auth != nullptr; }

void HttpServer::Accept(tcp::acceptor& acceptor) {
  acceptor.async_accept(io_, [this, &acceptor](boost::system::error_code ec, tcp::socket socket) {
    if (shared_->stopped || ec == asio::error::operation_aborted) return;
    if (ec) {
      OnAcceptError(acceptor, ec);
      return;
    }
    Count(shared_->accepted);
    // At the cap: close a waiting connection (Shared::EvictOne). It goes once its pending
    // operation completes, so `open` may pass the cap by the evictions in flight; twice
    // the cap is the hard bound.
    if (shared_->open >= shared_->limits.max_connections) {
      shared_->EvictOne(EvictReason::kConnectionCap);
    }
    if (shared_->open >= 2 * shared_->limits.max_connections) {
      boost::system::error_code ignored;
      socket.close(ignored);
    } else if (shared_->security->tls) {
      StartTlsSession(std::move(socket), shared_);
    } else {
      StartPlainSession(std::move(socket), shared_);
    }
    Accept(acceptor);
  });
}

void HttpServer::OnAcceptError(tcp::acceptor& acceptor, const boost::system::error_code& ec) {
  // Out of descriptors, the pending connection stays queued and the socket stays readable:
  // accepting again at once would fail again at once, forever. Closing a waiting connection
  // frees a descriptor for it; with none to close, wait before trying again.
  const bool descriptors = ec == asio::error::no_descriptors || ec.value() == ENFILE ||
                           ec == asio::error::no_buffer_space || ec == asio::error::no_memory;
  Count(shared_->accept_errors[descriptors ? 0 : 1]);
  // ECONNABORTED (the client left first) concerns that connection only; any other error
  // might repeat, so it waits as an exhaustion with nothing to close does.
  if (ec == asio::error::connection_aborted ||
      (descriptors && shared_->EvictOne(EvictReason::kDescriptors))) {
    Accept(acceptor);
    return;
  }
  size_t i = 0;
  while (acceptors_[i].get() != &acceptor) ++i;
  asio::steady_timer& timer = *accept_backoff_[i];
  timer.expires_after(absl::ToChronoNanoseconds(shared_->limits.accept_backoff));
  timer.async_wait([this, &acceptor](boost::system::error_code wait_ec) {
    if (wait_ec || shared_->stopped) return;
    Accept(acceptor);
  });
}

}  // namespace hotkey::http
