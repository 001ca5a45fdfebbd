// Tests of HttpServer (http/server.h) on the wire: a raw TCP client on loopback
// checks the exact bytes the server sends, where a lenient HTTP client would hide a framing
// error.

#include "hotkey/http/server.h"

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"

namespace hotkey::http {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// An HttpServer on 127.0.0.1, port 0, served by its own thread.
class TestServer {
 public:
  explicit TestServer(HttpServer::Handler handler, HttpLimits limits = {}) {
    config::WebOptions web;
    web.listen_addresses = {"127.0.0.1:0"};
    absl::StatusOr<std::unique_ptr<HttpServer>> s =
        HttpServer::Create(io_, web, config::WebConfig{}, limits, std::move(handler));
    INFO(s.status().ToString());
    REQUIRE(s.ok());
    server_ = *std::move(s);
    server_->Start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~TestServer() {
    asio::post(io_, [this] { server_->Stop(); });
    io_.stop();
    thread_.join();
  }
  uint16_t port() const { return server_->local_endpoint().port(); }

 private:
  asio::io_context io_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

// Reads one response head (through the blank line) from `buffer` or the socket, and
// returns it; what follows stays in `buffer`.
std::string ReadHead(tcp::socket& socket, std::string& buffer) {
  const size_t end = asio::read_until(socket, asio::dynamic_buffer(buffer), "\r\n\r\n");
  std::string head = buffer.substr(0, end);
  buffer.erase(0, end);
  return head;
}

TEST_CASE("HttpServer: HEAD gets GET's headers and no body, so keep-alive stays in step",
          "[daemon][http]") {
  TestServer server([](const HttpRequest& r) {
    return HttpResponse{
        r.path == "/-/healthy" ? 200 : 404, "text/plain; charset=utf-8", "Healthy\n", {}};
  });
  asio::io_context io;
  tcp::socket socket(io);
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
  std::string buffer;

  asio::write(socket, asio::buffer(std::string("HEAD /-/healthy HTTP/1.1\r\nHost: t\r\n\r\n")));
  const std::string head = ReadHead(socket, buffer);
  CHECK(head.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(head.find("\r\nContent-Length: 8\r\n") != std::string::npos);  // GET's length

  // The next bytes on the connection must be the next response, not a body.
  asio::write(socket, asio::buffer(std::string("GET /-/healthy HTTP/1.1\r\nHost: t\r\n\r\n")));
  const std::string get = ReadHead(socket, buffer);
  INFO(get);
  CHECK(get.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(get.find("\r\nContent-Length: 8\r\n") != std::string::npos);
  if (buffer.size() < 8) {
    const size_t missing = 8 - buffer.size();
    std::string rest(missing, '\0');
    asio::read(socket, asio::buffer(rest));
    buffer += rest;
  }
  CHECK(buffer == "Healthy\n");
}

TEST_CASE("HttpServer: a large-body path reads up to its own limit, every other path 413s",
          "[daemon][http]") {
  HttpLimits limits;
  limits.large_body_paths = {"/big"};
  limits.max_large_body_bytes = 256 * 1024;
  TestServer server(
      [](const HttpRequest& r) {
        return HttpResponse{200, "text/plain", absl::StrCat(r.body.size()), {}};
      },
      limits);
  // A Content-Length over the path's limit is refused from the head, before any body is sent
  // (so the client is not writing when the server closes).
  auto post = [&](const std::string& target, size_t length, bool send_body) {
    asio::io_context io;
    tcp::socket socket(io);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
    asio::write(socket, asio::buffer(absl::StrCat("POST ", target, " HTTP/1.1\r\nHost: t\r\n",
                                                  "Content-Length: ", length, "\r\n\r\n",
                                                  send_body ? std::string(length, 'x') : "")));
    std::string buffer;
    return ReadHead(socket, buffer);
  };
  // Over max_body_bytes, under the large limit.
  CHECK(post("/big?x=1", 100 * 1024, true).rfind("HTTP/1.1 200", 0) == 0);
  CHECK(post("/small", 100 * 1024, false).rfind("HTTP/1.1 413", 0) == 0);
  CHECK(post("/big", 256 * 1024 + 1, false).rfind("HTTP/1.1 413", 0) == 0);
}

}  // namespace
}  // namespace hotkey::http
