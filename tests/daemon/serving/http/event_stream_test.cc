// Tests of streamed responses (http/event_stream.h) on the wire: the head, the blocks in
// order, and each way a stream ends (the producer, the client leaving, a client that stops
// reading, the server stopping).

#include "hotkey/http/event_stream.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>

#include "hotkey/http/server.h"

namespace hotkey::http {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using Reason = EventStream::CloseReason;

// An HttpServer whose requests for /s get a stream (the others a short 200); the test
// reaches the newest stream on the server's thread through Run().
class StreamServer {
 public:
  explicit StreamServer(HttpLimits limits = {}) {
    config::WebOptions web;
    web.listen_addresses = {"127.0.0.1:0"};
    auto s =
        HttpServer::Create(io_, web, config::WebConfig{}, limits, [this](const HttpRequest& q) {
          if (q.path != "/s") return HttpResponse{200, "text/plain", "ok\n", {}};
          stream_ = std::make_shared<EventStream>(64 * 1024);
          stream_->Send("event: hello\n\n");
          HttpResponse r{200, "text/event-stream", "", {}};
          r.stream = stream_;
          return r;
        });
    REQUIRE(s.ok());
    server_ = *std::move(s);
    server_->Start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~StreamServer() {
    Run([this] { server_->Stop(); });
    io_.stop();
    thread_.join();
  }
  uint16_t port() const { return server_->local_endpoint().port(); }
  void Stop() {
    Run([this] { server_->Stop(); });
  }
  // Runs `f` on the server's thread and waits for it.
  template <class F>
  std::invoke_result_t<F> Run(F f) {
    std::promise<decltype(f())> done;
    asio::post(io_, [&] {
      if constexpr (std::is_void_v<decltype(f())>) {
        f();
        done.set_value();
      } else {
        done.set_value(f());
      }
    });
    return done.get_future().get();
  }
  // Waits (bounded) until the stream exists and is closed, and gives why.
  Reason WaitClosed() {
    for (int i = 0; i < 3000; ++i) {
      const Reason r = Run([this] { return stream_ ? stream_->reason() : Reason::kOpen; });
      if (r != Reason::kOpen) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return Reason::kOpen;
  }
  std::shared_ptr<EventStream>& stream() { return stream_; }
  HttpServerStats stats() const { return server_->stats(); }
  asio::io_context& io() { return io_; }

 private:
  asio::io_context io_;
  // Keeps io_.run() going once the server has stopped and nothing is pending, so that Run()
  // still reaches the server's thread after Stop().
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  std::shared_ptr<EventStream> stream_;  // server thread
};

tcp::socket Subscribe(asio::io_context& io, uint16_t port, int rcvbuf = 0) {
  tcp::socket socket(io);
  socket.open(tcp::v4());
  if (rcvbuf > 0) socket.set_option(asio::socket_base::receive_buffer_size(rcvbuf));
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  asio::write(socket, asio::buffer(std::string("GET /s HTTP/1.1\r\nHost: t\r\n\r\n")));
  return socket;
}

TEST_CASE("EventStream: the head has no length, then the blocks in order until Close()",
          "[http][feed]") {
  StreamServer server;
  asio::io_context io;
  tcp::socket socket = Subscribe(io, server.port());
  std::string buffer;
  const size_t end = asio::read_until(socket, asio::dynamic_buffer(buffer), "\r\n\r\n");
  const std::string head = buffer.substr(0, end);
  CHECK(head.starts_with("HTTP/1.1 200 OK\r\n"));
  CHECK(head.find("Content-Type: text/event-stream\r\n") != std::string::npos);
  CHECK(head.find("Connection: close\r\n") != std::string::npos);
  CHECK(head.find("Content-Length") == std::string::npos);
  server.Run([&] {
    server.stream()->Send("a\n\n");
    server.stream()->Send("b\n\n");
  });
  asio::read_until(socket, asio::dynamic_buffer(buffer), "b\n\n");
  // Close() ends the connection at once (what is unsent is dropped: it is for shutdown).
  server.Run([&] { server.stream()->Close(); });
  boost::system::error_code ec;
  asio::read(socket, asio::dynamic_buffer(buffer), ec);  // to the end of the body
  CHECK(ec == asio::error::eof);
  CHECK(buffer.substr(end) == "event: hello\n\na\n\nb\n\n");
}

TEST_CASE("EventStream: a client that leaves ends the stream at once", "[http][feed]") {
  StreamServer server;
  asio::io_context io;
  {
    tcp::socket socket = Subscribe(io, server.port());
    std::string buffer;
    asio::read_until(socket, asio::dynamic_buffer(buffer), "hello\n\n");
  }  // closed, with nothing more sent by the server
  CHECK(server.WaitClosed() == Reason::kClient);
}

TEST_CASE("EventStream: a client that stops reading is closed as slow within the bound",
          "[http][feed]") {
  HttpLimits limits;
  limits.request_timeout = absl::Milliseconds(300);
  StreamServer server(limits);
  asio::io_context io;
  tcp::socket socket = Subscribe(io, server.port(), /*rcvbuf=*/4096);  // never read
  // Feed it on the server's thread, never past the bound: only the write timeout can end
  // the stream, once the socket buffers are full.
  const std::string block(4096, 'x');
  size_t max_unsent = 0;
  Reason reason = Reason::kOpen;
  for (int i = 0; i < 3000 && reason == Reason::kOpen; ++i) {
    reason = server.Run([&] {
      auto& s = server.stream();
      if (!s) return Reason::kOpen;
      if (!s->closed() && s->unsent_bytes() + block.size() <= s->max_unsent_bytes() / 2) {
        s->Send(block);
      }
      max_unsent = std::max(max_unsent, s->unsent_bytes());
      return s->reason();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(reason == Reason::kSlow);
  CHECK(max_unsent <= 64 * 1024);
}

TEST_CASE("EventStream: at the connection cap a stream is closed to make room for a scrape",
          "[http][feed]") {
  HttpLimits limits;
  limits.max_connections = 2;
  StreamServer server(limits);
  asio::io_context io;
  std::string buffer;
  tcp::socket first = Subscribe(io, server.port());
  asio::read_until(first, asio::dynamic_buffer(buffer), "hello\n\n");
  buffer.clear();
  tcp::socket second = Subscribe(io, server.port());
  asio::read_until(second, asio::dynamic_buffer(buffer), "hello\n\n");
  // Both streams open: the cap is reached. A scrape closes one of them, not itself.
  tcp::socket scrape(io);
  scrape.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port()));
  asio::write(scrape, asio::buffer(std::string("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")));
  std::string answer;
  asio::read_until(scrape, asio::dynamic_buffer(answer), "ok\n");
  CHECK(answer.starts_with("HTTP/1.1 200 OK\r\n"));
  // Neither has unsent bytes: the newer one goes.
  CHECK(server.WaitClosed() == Reason::kEvicted);
  CHECK(server.stats().evictions[static_cast<int>(EvictReason::kConnectionCap)]
                                [static_cast<int>(ConnectionState::kStream)] == 1);
}

TEST_CASE("EventStream: Stop() closes streams as the server's", "[http][feed]") {
  StreamServer server;
  asio::io_context io;
  tcp::socket socket = Subscribe(io, server.port());
  std::string buffer;
  asio::read_until(socket, asio::dynamic_buffer(buffer), "hello\n\n");
  server.Stop();
  CHECK(server.WaitClosed() == Reason::kServer);
  boost::system::error_code ec;
  asio::read(socket, asio::dynamic_buffer(buffer), ec);
  CHECK(ec == asio::error::eof);
}

}  // namespace
}  // namespace hotkey::http
