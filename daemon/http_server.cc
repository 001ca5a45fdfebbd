#include "http_server.h"

#include <openssl/crypto.h>

#include <list>
#include <optional>
#include <type_traits>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "absl/strings/str_cat.h"
#include "basic_auth.h"
#include "hotkey/config/values.h"
#include "receiver.h"
#include "tls.h"

namespace hotkey::daemon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using asio::ip::tcp;

namespace {

constexpr char kWwwAuthenticate[] = "Basic realm=\"hotkeyd\"";

}  // namespace

// A connection waiting for a request (or for its TLS handshake) can be closed to make room.
class Waiting {
 public:
  virtual ~Waiting() = default;
  virtual void Evict() = 0;
};

struct HttpServer::Shared {
  HttpLimits limits;
  Handler handler;
  std::shared_ptr<ssl::context> tls;       // null: plain HTTP
  std::shared_ptr<BasicAuth> auth;         // null: no authentication
  asio::thread_pool* auth_pool = nullptr;  // the server's; used only while !stopped
  bool health_without_auth = false;
  std::vector<std::pair<std::string, std::string>> headers;  // added to every response
  size_t open = 0;                                           // connections open now
  // Connections waiting for a request, longest waiting first: at the connection cap, the
  // front one is closed to admit a new one. So idle, half-open or slow clients can never
  // lock a scraper out; a scraper sends its request at once and is served.
  std::list<std::weak_ptr<Waiting>> waiting;
  bool stopped = false;
};

namespace {

// One connection: (TLS handshake,) then requests in turn, each under the deadline.
// `Stream` is beast::tcp_stream or beast::ssl_stream<beast::tcp_stream>.
template <class Stream>
class Session : public Waiting, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  Session(tcp::socket socket, std::shared_ptr<HttpServer::Shared> shared)
      : stream_(MakeStream(std::move(socket), *shared)), shared_(std::move(shared)) {
    ++shared_->open;
  }
  ~Session() override {
    Busy();
    --shared_->open;
  }

  // Called by the server, which has already taken this session off the waiting list.
  void Evict() override {
    waiting_.reset();
    Close();
  }

  void Start() {
    if constexpr (kTls) {
      Lowest().expires_after(absl::ToChronoNanoseconds(shared_->limits.request_timeout));
      Wait();
      stream_.async_handshake(ssl::stream_base::server,
                              [self = this->shared_from_this()](beast::error_code ec) {
                                self->Busy();
                                // A failed handshake (a plain-HTTP client, a bad or missing
                                // client certificate, an old protocol) is closed silently.
                                if (ec || self->shared_->stopped) {
                                  self->Close();
                                  return;
                                }
                                self->Read();
                              });
    } else {
      Read();
    }
  }

 private:
  static Stream MakeStream(tcp::socket socket, HttpServer::Shared& shared) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *shared.tls);
    } else {
      return Stream(std::move(socket));
    }
  }

  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  void Wait() {
    Busy();
    waiting_ = shared_->waiting.insert(shared_->waiting.end(), this->weak_from_this());
  }
  void Busy() {
    if (!waiting_) return;
    shared_->waiting.erase(*waiting_);
    waiting_.reset();
  }

  void Read() {
    if (shared_->stopped) return;
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(shared_->limits.max_header_bytes));
    parser_->body_limit(shared_->limits.max_body_bytes);
    Lowest().expires_after(absl::ToChronoNanoseconds(shared_->limits.request_timeout));
    Wait();
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    Busy();
    // stream_truncated: a TLS client closed without close_notify between requests, which
    // is how most clients leave a keep-alive connection; nothing to answer.
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == ssl::error::stream_truncated || shared_->stopped) {
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
    keep_alive_ = req.keep_alive();

    const bool exempt = shared_->health_without_auth &&
                        (request_.path == "/-/healthy" || request_.path == "/-/ready");
    if (shared_->auth == nullptr || exempt) {
      Respond();
      return;
    }
    const auto field = req.find(http::field::authorization);
    std::string authorization = field == req.end()
                                    ? std::string()
                                    : std::string(field->value().data(), field->value().size());
    const std::optional<bool> known = shared_->auth->CheckCached(authorization);
    if (known.has_value() || shared_->auth_pool == nullptr) {
      OPENSSL_cleanse(authorization.data(), authorization.size());
      OnAuth(known.value_or(false));
      return;
    }
    // bcrypt on the worker; the answer comes back to this connection's executor. The
    // session reference moves into the reply so it is released on the io thread.
    asio::post(*shared_->auth_pool, [self = this->shared_from_this(), ex = stream_.get_executor(),
                                     authorization = std::move(authorization)]() mutable {
      const bool ok = self->shared_->auth->Check(authorization);
      OPENSSL_cleanse(authorization.data(), authorization.size());
      asio::post(ex, [self = std::move(self), ok] { self->OnAuth(ok); });
    });
  }

  void OnAuth(bool ok) {
    if (shared_->stopped) {
      Close();
      return;
    }
    if (ok) {
      Respond();
      return;
    }
    HttpResponse r{401,
                   "text/plain; charset=utf-8",
                   "unauthorized\n",
                   {{"WWW-Authenticate", kWwwAuthenticate}}};
    Write(r, keep_alive_);
  }

  void Respond() {
    HttpResponse r;
    try {
      r = shared_->handler(request_);
    } catch (const std::exception& e) {
      // A handler bug must not take the server down: the client gets a 500.
      r = HttpResponse{
          500, "text/plain; charset=utf-8", absl::StrCat("internal error: ", e.what(), "\n"), {}};
    }
    Write(r, keep_alive_);
  }

  void Write(const HttpResponse& r, bool keep_alive) {
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(11);
    res->result(static_cast<http::status>(r.status));
    res->set(http::field::server, "hotkeyd");
    res->set(http::field::content_type, r.content_type);
    for (const auto& [name, value] : shared_->headers) res->set(name, value);
    for (const auto& [name, value] : r.headers) res->set(name, value);
    res->body() = r.body;
    res->keep_alive(keep_alive);
    res->prepare_payload();
    Lowest().expires_after(absl::ToChronoNanoseconds(shared_->limits.request_timeout));
    http::async_write(
        stream_, *res,
        [self = this->shared_from_this(), res, keep_alive](beast::error_code ec, size_t) {
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
    beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    Lowest().socket().close(ec);
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpRequest request_;
  bool keep_alive_ = false;
  std::optional<std::list<std::weak_ptr<Waiting>>::iterator> waiting_;  // on shared_->waiting
  // Shared with the server, so a session outliving it (until the io_context drops it) is safe.
  std::shared_ptr<HttpServer::Shared> shared_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Create(asio::io_context& io,
                                                               const config::WebOptions& web,
                                                               const config::WebConfig& web_config,
                                                               const HttpLimits& limits,
                                                               Handler handler) {
  auto shared = std::make_shared<Shared>();
  shared->limits = limits;
  shared->handler = std::move(handler);
  shared->health_without_auth = web.health_without_auth;
  shared->headers = web_config.headers;
  if (web_config.tls_enabled) {
    absl::StatusOr<std::unique_ptr<ssl::context>> ctx = MakeTlsContext(web_config.tls);
    if (!ctx.ok()) {
      return absl::Status(ctx.status().code(), absl::StrCat("web config file \"", web.config_file,
                                                            "\": ", ctx.status().message()));
    }
    shared->tls = *std::move(ctx);
  }
  if (!web_config.basic_auth_users.empty()) {
    shared->auth = std::make_shared<BasicAuth>(web_config.basic_auth_users);
  }

  absl::StatusOr<config::HostPort> hp = config::ParseListenAddress(web.listen_address);
  if (!hp.ok()) return hp.status();
  absl::StatusOr<asio::ip::address> host = ListenHost(*hp);
  if (!host.ok()) return host.status();
  std::unique_ptr<HttpServer> s(new HttpServer(io, std::move(shared)));
  tcp::endpoint ep(*host, hp->port);
  beast::error_code ec;
  s->acceptor_.open(ep.protocol(), ec);
  if (ec && host->is_v6() && hp->host.empty()) {
    ep = tcp::endpoint(asio::ip::address_v4::any(), hp->port);
    s->acceptor_.open(ep.protocol(), ec);
  }
  if (!ec && ep.address().is_v6()) s->acceptor_.set_option(asio::ip::v6_only(false), ec);
  if (!ec) s->acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s->acceptor_.bind(ep, ec);
  if (!ec) s->acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on http ", web.listen_address, ": ", ec.message()));
  }
  if (s->shared_->auth != nullptr) {
    s->auth_pool_ = std::make_unique<asio::thread_pool>(1);
    s->shared_->auth_pool = s->auth_pool_.get();
  }
  return s;
}

HttpServer::HttpServer(asio::io_context& io, std::shared_ptr<Shared> shared)
    : io_(io), shared_(std::move(shared)), acceptor_(io) {}

HttpServer::~HttpServer() {
  Stop();
  if (auth_pool_) {
    // A check in progress finishes (at most one bcrypt); queued ones are dropped.
    auth_pool_->stop();
    auth_pool_->join();
  }
}

void HttpServer::Start() { Accept(); }

void HttpServer::Stop() {
  shared_->stopped = true;
  shared_->auth_pool = nullptr;
  beast::error_code ec;
  acceptor_.close(ec);
  // Connections waiting for a request (idle keep-alive ones among them) close now; one in
  // the middle of a request finishes it and then closes, as `stopped` says.
  while (!shared_->waiting.empty()) {
    std::shared_ptr<Waiting> w = shared_->waiting.front().lock();
    shared_->waiting.pop_front();
    if (w) w->Evict();
  }
}

tcp::endpoint HttpServer::local_endpoint() const {
  beast::error_code ec;
  return acceptor_.local_endpoint(ec);
}

bool HttpServer::tls() const { return shared_->tls != nullptr; }
bool HttpServer::basic_auth() const { return shared_->auth != nullptr; }

void HttpServer::Accept() {
  acceptor_.async_accept(io_, [this](beast::error_code ec, tcp::socket socket) {
    if (shared_->stopped || ec == asio::error::operation_aborted) return;
    if (!ec) {
      if (shared_->open >= shared_->limits.max_connections) {
        // At the cap: close the connection that has waited longest for a request. It goes
        // once its pending read completes, so `open` may pass the cap by the evictions in
        // flight; twice the cap is the hard bound.
        while (!shared_->waiting.empty()) {
          std::shared_ptr<Waiting> oldest = shared_->waiting.front().lock();
          shared_->waiting.pop_front();
          if (oldest) {
            oldest->Evict();
            break;
          }
        }
      }
      if (shared_->open >= 2 * shared_->limits.max_connections) {
        beast::error_code ignored;
        socket.close(ignored);
      } else if (shared_->tls) {
        std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(std::move(socket), shared_)
            ->Start();
      } else {
        std::make_shared<Session<beast::tcp_stream>>(std::move(socket), shared_)->Start();
      }
    }
    Accept();
  });
}

std::vector<std::pair<std::string, std::string>> ParseQuery(std::string_view query) {
  auto decode = [](std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '+') {
        out.push_back(' ');
      } else if (s[i] == '%' && i + 2 < s.size() &&
                 isxdigit(static_cast<unsigned char>(s[i + 1])) &&
                 isxdigit(static_cast<unsigned char>(s[i + 2]))) {
        out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
        i += 2;
      } else {
        out.push_back(s[i]);
      }
    }
    return out;
  };
  std::vector<std::pair<std::string, std::string>> out;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    out.emplace_back(decode(part.substr(0, eq)),
                     eq == std::string_view::npos ? "" : decode(part.substr(eq + 1)));
  }
  return out;
}

}  // namespace hotkey::daemon
