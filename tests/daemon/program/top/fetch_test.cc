#include "hotkey/top/fetch.h"

#include <string>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>

namespace hotkey::top {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

// A loopback server for one connection: it records the request and sends `status` and
// `body`; or, `silent`, it accepts and then says nothing until destroyed.
class OneShotServer {
 public:
  OneShotServer(int status, std::string body, bool silent = false)
      : acceptor_(io_, tcp::endpoint(asio::ip::address_v4::loopback(), 0)) {
    thread_ = std::thread([this, status, body = std::move(body), silent] {
      tcp::socket socket(io_);
      beast::error_code ec;
      acceptor_.accept(socket, ec);
      if (ec) return;
      if (silent) {
        // Holds the connection open until the test's end closes the acceptor.
        char b;
        socket.read_some(asio::buffer(&b, 1), ec);  // the request's first byte
        while (!ec) socket.read_some(asio::buffer(&b, 1), ec);
        return;
      }
      beast::flat_buffer buffer;
      bhttp::request<bhttp::string_body> req;
      bhttp::read(socket, buffer, req, ec);
      if (ec) return;
      target_ = std::string(req.target());
      authorization_ = std::string(req[bhttp::field::authorization]);
      host_ = std::string(req[bhttp::field::host]);
      bhttp::response<bhttp::string_body> res(static_cast<bhttp::status>(status), 11);
      res.body() = body;
      res.prepare_payload();
      bhttp::write(socket, res, ec);
      socket.shutdown(tcp::socket::shutdown_both, ec);
    });
  }
  ~OneShotServer() {
    beast::error_code ec;
    acceptor_.close(ec);
    // A silent server's read ends when the client closes (it does on its timeout).
    thread_.join();
  }

  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  // Read after the Get() has returned (the server wrote its answer after setting them).
  std::string target_, authorization_, host_;

 private:
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread thread_;
};

// FetchOptions for `url`, with a timeout and credentials when given.
FetchOptions Options(std::string url, absl::Duration timeout = absl::Seconds(2),
                     std::string username = "", std::string password = "") {
  FetchOptions o;
  o.url = std::move(url);
  o.timeout = timeout;
  o.username = std::move(username);
  o.password = std::move(password);
  return o;
}

std::string Url(uint16_t port, std::string_view path = "") {
  return "http://127.0.0.1:" + std::to_string(port) + std::string(path);
}

TEST_CASE("Fetcher: GETs /api/v1/top and returns the status and body", "[top]") {
  OneShotServer server(200, R"({"keys": []})");
  auto fetcher = Fetcher::Create(Options(Url(server.port())));
  REQUIRE(fetcher.ok());
  absl::StatusOr<FetchReply> r = (*fetcher)->Get();
  REQUIRE(r.ok());
  CHECK(r->status == 200);
  CHECK(r->body == R"({"keys": []})");
  CHECK(server.target_ == "/api/v1/top");
  CHECK(server.host_ == "127.0.0.1:" + std::to_string(server.port()));
  CHECK(server.authorization_.empty());
}

TEST_CASE("Fetcher: a path in the URL prefixes the API's", "[top]") {
  OneShotServer server(200, "{}");
  auto fetcher = Fetcher::Create(Options(Url(server.port(), "/hotkeyd/")));
  REQUIRE(fetcher.ok());
  CHECK((*fetcher)->target() == "/hotkeyd/api/v1/top");
  REQUIRE((*fetcher)->Get().ok());
  CHECK(server.target_ == "/hotkeyd/api/v1/top");
}

TEST_CASE("Fetcher: sends basic auth when a username is given", "[top]") {
  OneShotServer server(401, "Unauthorized\n");
  auto fetcher = Fetcher::Create(Options(Url(server.port()), absl::Seconds(2), "prom", "s3cret"));
  REQUIRE(fetcher.ok());
  absl::StatusOr<FetchReply> r = (*fetcher)->Get();
  REQUIRE(r.ok());  // an HTTP error is a reply, shown by the caller
  CHECK(r->status == 401);
  // base64("prom:s3cret")
  CHECK(server.authorization_ == "Basic cHJvbTpzM2NyZXQ=");
}

TEST_CASE("Fetcher: a refused connection is Unavailable, and a later Get() works", "[top]") {
  uint16_t port;
  {
    asio::io_context io;
    tcp::acceptor a(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    port = a.local_endpoint().port();
  }  // closed: nothing listens there now
  auto fetcher = Fetcher::Create(Options(Url(port)));
  REQUIRE(fetcher.ok());
  absl::StatusOr<FetchReply> r = (*fetcher)->Get();
  REQUIRE(absl::IsUnavailable(r.status()));
  CHECK(std::string(r.status().message()).starts_with("connect to 127.0.0.1:"));
}

TEST_CASE("Fetcher: a server that never answers is Unavailable after the timeout", "[top]") {
  OneShotServer server(200, "", /*silent=*/true);
  auto fetcher = Fetcher::Create(Options(Url(server.port()), absl::Milliseconds(200)));
  REQUIRE(fetcher.ok());
  absl::StatusOr<FetchReply> r = (*fetcher)->Get();
  REQUIRE(absl::IsUnavailable(r.status()));
  CHECK(std::string(r.status().message()).find("no answer within 200ms") != std::string::npos);
}

TEST_CASE("Fetcher: one Fetcher serves many Get()s", "[top]") {
  for (int i = 0; i < 3; ++i) {
    OneShotServer server(200, std::to_string(i));
    auto fetcher = Fetcher::Create(Options(Url(server.port())));
    REQUIRE(fetcher.ok());
    absl::StatusOr<FetchReply> r = (*fetcher)->Get();
    REQUIRE(r.ok());
    CHECK(r->body == std::to_string(i));
  }
  // The same Fetcher twice: its io_context is restarted for the second exchange.
  OneShotServer first(200, "a");
  auto fetcher = Fetcher::Create(Options(Url(first.port()), absl::Milliseconds(200)));
  REQUIRE(fetcher.ok());
  REQUIRE((*fetcher)->Get().ok());
  // The one-shot server answers no second request.
  absl::StatusOr<FetchReply> again = (*fetcher)->Get();
  CHECK(absl::IsUnavailable(again.status()));
}

TEST_CASE("Fetcher::Create: rejects what is not an http(s) URL of a host", "[top]") {
  const auto message = [](std::string url) {
    auto f = Fetcher::Create(Options(std::move(url)));
    REQUIRE(!f.ok());
    CHECK(absl::IsInvalidArgument(f.status()));
    return std::string(f.status().message());
  };
  CHECK(message("localhost:10110").find("scheme must be http or https") != std::string::npos);
  CHECK(message("ftp://h:1").find("scheme must be http or https") != std::string::npos);
  CHECK(message("http://u:p@h:1").find("no credentials in the URL") != std::string::npos);
  CHECK(message("http://h:1/?x=1").find("no query") != std::string::npos);
  CHECK(message("http:///x").find("no host") != std::string::npos);
  CHECK(message("not a url").find("not a URL") != std::string::npos);
  CHECK(message("").find("not a URL") != std::string::npos);
}

TEST_CASE("Fetcher::Create: https with an unreadable CA file fails at once", "[top]") {
  FetchOptions o = Options("https://localhost:10110");
  o.ca_file = "/nonexistent/ca.pem";
  auto f = Fetcher::Create(o);
  REQUIRE(!f.ok());
  CHECK(std::string(f.status().message()).starts_with("--ca-file=/nonexistent/ca.pem: "));
  CHECK(Fetcher::Create(Options("https://[::1]:10110")).ok());
}

}  // namespace
}  // namespace hotkey::top
