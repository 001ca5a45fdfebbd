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
class Session : public Waiting, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, boost::beast::tcp_stream>;

  Session(boost::asio::ip::tcp::socket socket, std::shared_ptr<HttpServer::Shared> shared)
      : security_(shared->security),
        stream_(MakeStream(std::move(socket), *security_)),
        shared_(std::move(shared)) {
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
    } else {
      Read();
    }
  }

 private:
  using tcp = boost::asio::ip::tcp;

  static Stream MakeStream(tcp::socket socket, const WebSecurity& security) {
    if constexpr (kTls) {
      return Stream(std::move(socket), *security.tls);
    } else {
      return Stream(std::move(socket));
    }
  }

  boost::beast::tcp_stream& Lowest() { return boost::beast::get_lowest_layer(stream_); }

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
    head_ = false;
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
      Respond();
      return;
    }
    const auto field = req.find(http::field::authorization);
    std::string authorization = field == req.end()
                                    ? std::string()
                                    : std::string(field->value().data(), field->value().size());
    const std::optional<bool> known = security_->auth->CheckCached(authorization);
    if (known.has_value() || shared_->auth_pool == nullptr) {
      OPENSSL_cleanse(authorization.data(), authorization.size());
      OnAuth(known.value_or(false));
      return;
    }
    // bcrypt on the worker; the answer comes back to this connection's executor. The
    // session reference moves into the reply so it is released on the io thread.
    boost::asio::post(*shared_->auth_pool,
                      [self = this->shared_from_this(), ex = stream_.get_executor(),
                       authorization = std::move(authorization)]() mutable {
                        const bool ok = self->security_->auth->Check(authorization);
                        OPENSSL_cleanse(authorization.data(), authorization.size());
                        boost::asio::post(ex, [self = std::move(self), ok] { self->OnAuth(ok); });
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
    boost::beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    Lowest().socket().close(ec);
  }

  // Declared before stream_, which holds a reference to its TLS context.
  const std::shared_ptr<const WebSecurity> security_;
  Stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  HttpRequest request_;
  bool keep_alive_ = false;
  bool head_ = false;  // the request being answered is a HEAD
  std::optional<std::list<std::weak_ptr<Waiting>>::iterator> waiting_;  // on shared_->waiting
  // Shared with the server, so a session outliving it (until the io_context drops it) is safe.
  std::shared_ptr<HttpServer::Shared> shared_;
};

}  // namespace internal
}  // namespace hotkey::http

#endif  // HOTKEY_HTTP_SESSION_H_
