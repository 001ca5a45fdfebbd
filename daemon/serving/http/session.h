// The HTTP session template: one connection's requests, over plain TCP or TLS. Internal to
// http_plain.cc and http_tls.cc.
//
// The session is a template over its stream (plain TCP or TLS). Each stream type is
// instantiated in its own translation unit (http_plain.cc, http_tls.cc): Beast's HTTP and
// SSL templates make each instantiation cost tens of seconds of compiler time, and two
// files build in parallel where one would not.

#ifndef HOTKEY_HTTP_SESSION_H_
#define HOTKEY_HTTP_SESSION_H_

#include <openssl/crypto.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "shared.h"

namespace hotkey::http {
namespace internal {

inline constexpr char kWwwAuthenticate[] = "Basic realm=\"hotkeyd\"";

// One connection: (TLS handshake,) then requests in turn, each under the deadline.
// `Stream` is beast::tcp_stream or beast::ssl_stream<beast::tcp_stream>.
template <class Stream>
class Session : public Waiting,
                public PendingCheck,
                public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, boost::beast::tcp_stream>;

  Session(boost::asio::ip::tcp::socket socket, std::shared_ptr<HttpServer::Shared> shared)
      : security_(shared->security),
        peer_(PeerKey(socket)),
        stream_(MakeStream(std::move(socket), *security_)),
        timer_(stream_.get_executor()),
        shared_(std::move(shared)) {
    ++shared_->open;
    shared_->open_now.store(shared_->open, std::memory_order_relaxed);
  }
  ~Session() override {
    Busy();
    OPENSSL_cleanse(authorization_.data(), authorization_.size());
    --shared_->open;
    shared_->open_now.store(shared_->open, std::memory_order_relaxed);
  }

  // To make room (Shared::EvictOne): a request queued for its password check is answered
  // 429, a streamed response ends as kEvicted, any other connection closes.
  void Evict() override {
    if (ticket_.has_value()) {
      Displaced();
      return;
    }
    Busy();
    if (events_) events_->Finish(EventStream::CloseReason::kEvicted);
    Abandon();
  }
  // At Stop(), which has already taken this session off its waiting list: a streamed
  // response ends as kServer.
  void Shutdown() override {
    waiting_.reset();
    ticket_.reset();
    if (events_) events_->Close();
    Abandon();
  }
  size_t Backlog() const override { return events_ ? events_->unsent_bytes() : 0; }

  // Its turn in the AuthQueue: bcrypt on a worker; the answer comes back to this
  // connection's executor. The session reference moves into the reply so it is released on
  // the io thread.
  void RunCheck() override {
    ticket_.reset();
    Busy();  // being answered from here: never closed to make room
    timer_.cancel();
    check_started_ = shared_->now();
    boost::asio::post(
        *shared_->auth_pool, [self = this->shared_from_this(), ex = stream_.get_executor(),
                              authorization = std::move(authorization_)]() mutable {
          const bool ok = self->security_->auth->Check(authorization);
          OPENSSL_cleanse(authorization.data(), authorization.size());
          boost::asio::post(ex, [self = std::move(self), ok] { self->OnChecked(ok); });
        });
    authorization_.clear();
  }

  // Pushed out of the AuthQueue for another address, or closed to make room: its
  // credentials were not checked, so 429, not 401.
  void Displaced() override {
    if (ticket_.has_value()) {
      shared_->auth_queue.Cancel(*ticket_);
      shared_->pending_checks.erase(*ticket_);
      ticket_.reset();
    }
    Busy();
    timer_.cancel();
    OPENSSL_cleanse(authorization_.data(), authorization_.size());
    authorization_.clear();
    TooManyChecks();
  }

  void Start() {
    if constexpr (kTls) {
      // Silent until the client's first bytes (its ClientHello): the stream's timer runs
      // only under a stream operation, so the handshake deadline runs on timer_ too.
      Wait(ConnectionState::kSilent);
      timer_.expires_after(absl::ToChronoNanoseconds(shared_->limits.handshake_timeout));
      timer_.async_wait([self = this->shared_from_this()](boost::beast::error_code ec) {
        if (ec || self->abandoned_.load(std::memory_order_relaxed)) return;
        self->Busy();
        self->Abandon();
      });
      Lowest().socket().async_wait(
          tcp::socket::wait_read, [self = this->shared_from_this()](boost::beast::error_code ec) {
            self->timer_.cancel();
            self->Busy();
            if (ec || self->abandoned_.load(std::memory_order_relaxed) || self->shared_->stopped) {
              self->Close();
              return;
            }
            self->Handshake();
          });
    } else {
      Read();
    }
  }

 private:
  using tcp = boost::asio::ip::tcp;

  void Handshake() {
    if constexpr (kTls) {
      Lowest().expires_at(timer_.expiry());  // what is left of the handshake deadline
      Wait(ConnectionState::kHandshake);
      stream_.async_handshake(boost::asio::ssl::stream_base::server,
                              [self = this->shared_from_this()](boost::beast::error_code ec) {
                                self->Busy();
                                // A failed handshake (a plain-HTTP client, a bad or missing
                                // client certificate, an old protocol) is closed silently.
                                if (ec || self->shared_->stopped) {
                                  self->Close();
                                  return;
                                }
                                self->Read();
                              });
    }
  }

  static Stream MakeStream(tcp::socket socket, const WebSecurity& security) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *security.tls);
    } else {
      return Stream(std::move(socket));
    }
  }

  // The peer's AuthQueue key; "" when the socket has no peer any more (it is closing).
  static std::string PeerKey(const tcp::socket& socket) {
    boost::system::error_code ec;
    const tcp::endpoint ep = socket.remote_endpoint(ec);
    return ec ? std::string() : AuthQueue::AddressKey(ep.address());
  }

  boost::beast::tcp_stream& Lowest() { return boost::beast::get_lowest_layer(stream_); }

  void Wait(ConnectionState state) {
    Busy();
    state_ = state;
    auto& list = shared_->waiting[static_cast<int>(state)];
    waiting_ = list.insert(list.end(), this->weak_from_this());
    shared_->waiting_now[static_cast<int>(state)].store(list.size(), std::memory_order_relaxed);
  }
  void Busy() {
    if (!waiting_) return;
    auto& list = shared_->waiting[static_cast<int>(state_)];
    list.erase(*waiting_);
    waiting_.reset();
    shared_->waiting_now[static_cast<int>(state_)].store(list.size(), std::memory_order_relaxed);
  }

  // Closes the connection; a password check it has queued is skipped by the worker.
  void Abandon() {
    abandoned_.store(true, std::memory_order_relaxed);
    timer_.cancel();
    Close();
  }

  void Read() {
    if (shared_->stopped) return;
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(shared_->limits.max_header_bytes));
    // The head's Content-Length is checked against the limit as the head is parsed, so the
    // largest limit stands until the path is known (OnHeader).
    parser_->body_limit(
        shared_->limits.large_body_paths.empty()
            ? shared_->limits.max_body_bytes
            : std::max(shared_->limits.max_body_bytes, shared_->limits.max_large_body_bytes));
    Lowest().expires_after(absl::ToChronoNanoseconds(shared_->limits.request_timeout));
    deadline_ = std::chrono::steady_clock::now() +
                absl::ToChronoNanoseconds(shared_->limits.request_timeout);
    Wait(ConnectionState::kIdle);
    head_ = false;
    // The head first: its path may allow a larger body (HttpLimits::large_body_paths).
    boost::beast::http::async_read_header(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](boost::beast::error_code ec, size_t) {
          self->OnHeader(ec);
        });
  }

  void OnHeader(boost::beast::error_code ec) {
    if (ec || parser_->is_done()) {
      OnRead(ec);
      return;
    }
    const auto target = parser_->get().target();
    const std::string_view path(target.data(), std::min(target.find('?'), target.size()));
    const HttpLimits& limits = shared_->limits;
    const bool large = std::find(limits.large_body_paths.begin(), limits.large_body_paths.end(),
                                 path) != limits.large_body_paths.end();
    const size_t limit = large ? limits.max_large_body_bytes : limits.max_body_bytes;
    if (const auto length = parser_->content_length(); length && *length > limit) {
      OnRead(boost::beast::http::error::body_limit);
      return;
    }
    parser_->body_limit(limit);  // a chunked body counts against it as it arrives
    boost::beast::http::async_read(stream_, buffer_, *parser_,
                                   [self = this->shared_from_this()](boost::beast::error_code ec,
                                                                     size_t) { self->OnRead(ec); });
  }

  void OnRead(boost::beast::error_code ec) {
    namespace http = boost::beast::http;
    Busy();
    // stream_truncated: a TLS client closed without close_notify between requests, which
    // is how most clients leave a keep-alive connection; nothing to answer.
    if (ec == http::error::end_of_stream || ec == boost::beast::error::timeout ||
        ec == boost::asio::ssl::error::stream_truncated || shared_->stopped) {
      Close();
      return;
    }
    if (ec) {
      // Too large or malformed: answer once, then close. (On TLS, a transport error lands
      // here too; the write then fails and closes.)
      const bool too_large = ec == http::error::body_limit || ec == http::error::header_limit;
      HttpResponse r{
          too_large ? 413 : 400,
          "text/plain; charset=utf-8",
          absl::StrCat(too_large ? "request too large: " : "bad request: ", ec.message(), "\n"),
          {}};
      Write(r, /*keep_alive=*/false);
      return;
    }
    const auto& req = parser_->get();
    request_ = HttpRequest{};
    request_.method = std::string(req.method_string());
    const std::string_view target(req.target().data(), req.target().size());
    const size_t q = target.find('?');
    request_.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) request_.query = std::string(target.substr(q + 1));
    request_.body = req.body();
    if (const auto ae = req.find(http::field::accept_encoding); ae != req.end()) {
      request_.accept_encoding = std::string(ae->value().data(), ae->value().size());
    }
    keep_alive_ = req.keep_alive();
    // RFC 9110 section 9.3.2: the answer to HEAD has the header fields GET's would have,
    // Content-Length included, and no content; bytes sent after the head would be read by a
    // keep-alive client as the start of the next response.
    head_ = req.method() == http::verb::head;

    const bool exempt = shared_->health_without_auth &&
                        (request_.path == "/-/healthy" || request_.path == "/-/ready");
    if (security_->auth == nullptr || exempt) {
      Respond(/*authenticated=*/false);
      return;
    }
    const auto field = req.find(http::field::authorization);
    std::string authorization = field == req.end()
                                    ? std::string()
                                    : std::string(field->value().data(), field->value().size());
    const std::optional<bool> known = security_->auth->CheckCached(authorization);
    if (known.has_value() || shared_->auth_pool == nullptr) {
      OPENSSL_cleanse(authorization.data(), authorization.size());
      if (known.value_or(false)) {
        Respond(/*authenticated=*/true);
      } else {
        Reject(AuthFailure::kInvalid);
      }
      return;
    }
    AuthQueue::Ticket ticket = 0;
    if (!shared_->QueueCheck(peer_, std::weak_ptr<PendingCheck>(this->shared_from_this()),
                             &ticket)) {
      OPENSSL_cleanse(authorization.data(), authorization.size());
      Refuse(AuthFailure::kBusy);
      return;
    }
    // Queued: the request's deadline keeps running, and the connection may be closed to
    // make room (then it is answered 429).
    ticket_ = ticket;
    authorization_ = std::move(authorization);
    Wait(ConnectionState::kAuth);
    timer_.expires_at(deadline_);
    timer_.async_wait([self = this->shared_from_this()](boost::beast::error_code ec) {
      if (ec || !self->ticket_.has_value()) return;  // its check started, or it was answered
      self->shared_->auth_queue.Cancel(*self->ticket_);
      self->shared_->pending_checks.erase(*self->ticket_);
      self->ticket_.reset();
      self->Busy();
      OPENSSL_cleanse(self->authorization_.data(), self->authorization_.size());
      self->authorization_.clear();
      self->Refuse(AuthFailure::kDeadline);
    });
    shared_->DispatchChecks();
  }

  // The worker's answer, on the io thread.
  void OnChecked(bool ok) {
    shared_->auth_queue.Checked(peer_, ok);  // before the next check is taken
    shared_->CheckDone(shared_->now() - check_started_);
    if (abandoned_.load(std::memory_order_relaxed)) return;
    if (shared_->stopped) {
      Close();
      return;
    }
    if (ok) {
      Respond(/*authenticated=*/true);
    } else {
      Reject(AuthFailure::kInvalid);
    }
  }

  // 429 with Retry-After, counted as `why`, then close.
  void Refuse(AuthFailure why) {
    Count(shared_->auth_failures[static_cast<int>(why)]);
    TooManyChecks();
  }
  void TooManyChecks() {
    if (shared_->stopped) {
      Close();
      return;
    }
    HttpResponse r{429,
                   "text/plain; charset=utf-8",
                   "too many password checks waiting; retry later\n",
                   {{"Retry-After", std::to_string(shared_->RetryAfterSeconds())}}};
    Write(r, /*keep_alive=*/false);
  }

  // 401, then close: a client guessing passwords cannot pipeline the next guess.
  void Reject(AuthFailure why) {
    Count(shared_->auth_failures[static_cast<int>(why)]);
    if (shared_->stopped) {
      Close();
      return;
    }
    HttpResponse r{401,
                   "text/plain; charset=utf-8",
                   "unauthorized\n",
                   {{"WWW-Authenticate", kWwwAuthenticate}}};
    Write(r, /*keep_alive=*/false);
  }

  void Respond(bool authenticated) {
    request_.authenticated = authenticated;
    HttpResponse r;
    try {
      r = shared_->handler(request_);
    } catch (const std::exception& e) {
      // A handler bug must not take the server down: the client gets a 500.
      r = HttpResponse{
          500, "text/plain; charset=utf-8", absl::StrCat("internal error: ", e.what(), "\n"), {}};
    }
    if (r.stream) {
      StartStream(r);
      return;
    }
    Write(r, keep_alive_);
  }

  static std::string ReasonPhrase(int status) {
    const auto reason =
        boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(status));
    return std::string(reason.data(), reason.size());
  }

  // A streamed response (event_stream.h): the head, without Content-Length (the body ends
  // with the connection), then each block the stream is given, one write at a time.
  void StartStream(const HttpResponse& r) {
    namespace http = boost::beast::http;
    events_ = r.stream;
    // A stream holds no request from here: its buffers go, so what it holds is its
    // EventStream's bound and the session itself (EventStream::kSessionBytes).
    parser_.reset();
    buffer_ = boost::beast::flat_buffer();
    request_ = HttpRequest{};
    Wait(ConnectionState::kStream);
    boost::system::error_code ignored;
    // A fixed send buffer bounds what the kernel holds for a subscriber (no autotuning).
    Lowest().socket().set_option(
        boost::asio::socket_base::send_buffer_size(EventStream::kSendBufferBytes), ignored);
    auto head = std::make_shared<std::string>(absl::StrCat(
        "HTTP/1.1 ", r.status, " ", ReasonPhrase(r.status), "\r\nServer: hotkeyd\r\nContent-Type: ",
        r.content_type, "\r\nCache-Control: no-cache\r\nConnection: close\r\n"));
    for (const auto& [name, value] : security_->headers)
      absl::StrAppend(head.get(), name, ": ", value, "\r\n");
    for (const auto& [name, value] : r.headers)
      absl::StrAppend(head.get(), name, ": ", value, "\r\n");
    head->append("\r\n");
    writing_ = true;
    Lowest().expires_after(absl::ToChronoNanoseconds(shared_->limits.request_timeout));
    boost::asio::async_write(
        stream_, boost::asio::buffer(*head),
        [self = this->shared_from_this(), head](boost::beast::error_code ec, size_t) {
          self->writing_ = false;
          if (ec || self->head_ || self->shared_->stopped) {
            self->StreamEnded(ec);
            return;
          }
          self->WatchClient();
          self->events_->SetWake([self] { self->Pump(); });
          self->Pump();
        });
  }

  // The client sends nothing once streaming; readable means it closed (or broke the
  // protocol): end the stream now rather than at the next write.
  void WatchClient() {
    Lowest().socket().async_wait(tcp::socket::wait_read,
                                 [self = this->shared_from_this()](boost::beast::error_code ec) {
                                   if (ec) return;
                                   self->events_->Finish(EventStream::CloseReason::kClient);
                                   self->Close();
                                 });
  }

  // Writes the next queued block, if none is being written; closes once the stream is.
  void Pump() {
    if (events_->closed()) {
      Close();
      return;
    }
    if (writing_ || !events_->TakeFront(&block_)) return;
    writing_ = true;
    Lowest().expires_after(absl::ToChronoNanoseconds(shared_->limits.request_timeout));
    boost::asio::async_write(
        stream_, boost::asio::buffer(block_),
        [self = this->shared_from_this()](boost::beast::error_code ec, size_t) {
          self->writing_ = false;
          if (ec) {
            self->StreamEnded(ec);
            return;
          }
          self->events_->Written();
          self->Pump();
        });
  }

  // The stream's connection failed or timed out (a reader that stopped reading), or the
  // stream ended while its head was written.
  void StreamEnded(boost::beast::error_code ec) {
    events_->Finish(ec == boost::beast::error::timeout ? EventStream::CloseReason::kSlow
                                                       : EventStream::CloseReason::kClient);
    Close();
  }

  void Write(const HttpResponse& r, bool keep_alive) {
    namespace http = boost::beast::http;
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(11);
    res->result(static_cast<http::status>(r.status));
    res->set(http::field::server, "hotkeyd");
    res->set(http::field::content_type, r.content_type);
    for (const auto& [name, value] : security_->headers) res->set(name, value);
    for (const auto& [name, value] : r.headers) res->set(name, value);
    res->keep_alive(keep_alive);
    if (head_) {
      res->content_length(r.body.size());  // the body stays empty, so none is sent
    } else {
      res->body() = r.body;
      res->prepare_payload();
    }
    Lowest().expires_after(absl::ToChronoNanoseconds(shared_->limits.request_timeout));
    http::async_write(
        stream_, *res,
        [self = this->shared_from_this(), res, keep_alive](boost::beast::error_code ec, size_t) {
          if (ec || !keep_alive) {
            self->Close();
            return;
          }
          self->Read();
        });
  }

  // Closes the socket at once. For TLS this skips the close_notify exchange: waiting for the
  // peer's would hold the slot until the deadline, and every response is length-delimited,
  // so a client cannot mistake a cut for a complete body.
  void Close() {
    Busy();
    boost::beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    Lowest().socket().close(ec);
  }

  // Declared before stream_, which holds a reference to its TLS context.
  const std::shared_ptr<const WebSecurity> security_;
  const std::string peer_;  // AuthQueue::AddressKey of the client
  Stream stream_;
  // The handshake deadline while a TLS connection is silent, and the request's while it
  // waits for its password check: no stream operation is pending then, so the stream's own
  // timer does not run.
  boost::asio::steady_timer timer_;
  std::chrono::steady_clock::time_point deadline_;
  // The connection was closed (a deadline, or to make room): a check's answer is dropped.
  std::atomic<bool> abandoned_{false};
  // While the request waits in the AuthQueue: its ticket, and its Authorization header
  // (cleansed once handed to the check or dropped).
  std::optional<AuthQueue::Ticket> ticket_;
  std::string authorization_;
  absl::Time check_started_;                        // on shared_->now
  ConnectionState state_ = ConnectionState::kIdle;  // the list waiting_ is on
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  HttpRequest request_;
  bool keep_alive_ = false;
  bool head_ = false;  // the request being answered is a HEAD
  // A streamed response's: its events, the block being written, and whether a write (the
  // head's or a block's) is in flight.
  std::shared_ptr<EventStream> events_;
  std::string block_;
  bool writing_ = false;
  std::optional<std::list<std::weak_ptr<Waiting>>::iterator>
      waiting_;  // on shared_->waiting[state_]
  // Shared with the server, so a session outliving it (until the io_context drops it) is safe.
  std::shared_ptr<HttpServer::Shared> shared_;
};

}  // namespace internal
}  // namespace hotkey::http

#endif  // HOTKEY_HTTP_SESSION_H_
