#include "http_server.h"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/str_cat.h"
#include "hotkey/config/values.h"
#include "receiver.h"

namespace hotkey::daemon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

class HttpServer::Session : public std::enable_shared_from_this<HttpServer::Session> {
 public:
  Session(tcp::socket socket, const HttpLimits& limits, Handler handler,
          std::shared_ptr<size_t> open, std::shared_ptr<bool> stopped)
      : stream_(std::move(socket)),
        limits_(limits),
        handler_(std::move(handler)),
        open_(std::move(open)),
        stopped_(std::move(stopped)) {
    ++*open_;
  }
  ~Session() { --*open_; }

  void Read() {
    if (*stopped_) return;
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(limits_.max_header_bytes));
    parser_->body_limit(limits_.max_body_bytes);
    stream_.expires_after(absl::ToChronoNanoseconds(limits_.request_timeout));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->OnRead(ec);
                     });
  }

 private:
  void OnRead(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || *stopped_) {
      Close();
      return;
    }
    if (ec) {
      // Too large or malformed: answer once, then close.
      const bool too_large =
          ec == http::error::body_limit || ec == http::error::header_limit;
      HttpResponse r{too_large ? 413 : 400, "text/plain; charset=utf-8",
                     absl::StrCat(too_large ? "request too large: " : "bad request: ",
                                  ec.message(), "\n"),
                     {}};
      Write(r, /*keep_alive=*/false);
      return;
    }
    const auto& req = parser_->get();
    HttpRequest request;
    request.method = std::string(req.method_string());
    const std::string_view target(req.target().data(), req.target().size());
    const size_t q = target.find('?');
    request.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) request.query = std::string(target.substr(q + 1));
    request.body = req.body();
    HttpResponse r;
    try {
      r = handler_(request);
    } catch (const std::exception& e) {
      // A handler bug must not take the server down: the client gets a 500.
      r = HttpResponse{500, "text/plain; charset=utf-8", absl::StrCat("internal error: ", e.what(), "\n"), {}};
    }
    Write(r, req.keep_alive());
  }

  void Write(const HttpResponse& r, bool keep_alive) {
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(11);
    res->result(static_cast<http::status>(r.status));
    res->set(http::field::server, "hotkeyd");
    res->set(http::field::content_type, r.content_type);
    for (const auto& [name, value] : r.headers) res->set(name, value);
    res->body() = r.body;
    res->keep_alive(keep_alive);
    res->prepare_payload();
    stream_.expires_after(absl::ToChronoNanoseconds(limits_.request_timeout));
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, keep_alive](beast::error_code ec, size_t) {
                        if (ec || !keep_alive) {
                          self->Close();
                          return;
                        }
                        self->Read();
                      });
  }

  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  // Copies, so a session outliving the server (until the io_context drops it) is safe.
  const HttpLimits limits_;
  const Handler handler_;
  std::shared_ptr<size_t> open_;
  std::shared_ptr<bool> stopped_;
};

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Create(asio::io_context& io,
                                                               const config::WebOptions& web,
                                                               const HttpLimits& limits,
                                                               Handler handler) {
  absl::StatusOr<config::HostPort> hp = config::ParseListenAddress(web.listen_address);
  if (!hp.ok()) return hp.status();
  absl::StatusOr<asio::ip::address> host = ListenHost(*hp);
  if (!host.ok()) return host.status();
  std::unique_ptr<HttpServer> s(new HttpServer(io, limits, std::move(handler)));
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
  return s;
}

HttpServer::HttpServer(asio::io_context& io, const HttpLimits& limits, Handler handler)
    : io_(io),
      limits_(limits),
      handler_(std::move(handler)),
      acceptor_(io),
      open_(std::make_shared<size_t>(0)),
      stopped_(std::make_shared<bool>(false)) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Start() { Accept(); }

void HttpServer::Stop() {
  *stopped_ = true;
  beast::error_code ec;
  acceptor_.close(ec);
}

tcp::endpoint HttpServer::local_endpoint() const {
  beast::error_code ec;
  return acceptor_.local_endpoint(ec);
}

void HttpServer::Accept() {
  acceptor_.async_accept(io_, [this](beast::error_code ec, tcp::socket socket) {
    if (*stopped_ || ec == asio::error::operation_aborted) return;
    if (!ec) {
      if (*open_ >= limits_.max_connections) {
        // Over the cap: close at once rather than queue; a scraper retries next interval.
        beast::error_code ignored;
        socket.close(ignored);
      } else {
        std::make_shared<Session>(std::move(socket), limits_, handler_, open_, stopped_)->Read();
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
      } else if (s[i] == '%' && i + 2 < s.size() && isxdigit(static_cast<unsigned char>(s[i + 1])) &&
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
