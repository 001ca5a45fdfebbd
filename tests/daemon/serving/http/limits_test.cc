// Tests of HttpServer's fair limits (http/server.h) on loopback sockets: a 401 closes its
// connection, an address gets one password check at a time, a request queued for its
// check keeps its deadline and is the first closed at the connection cap, and an address's
// backoff after a failure runs on the clock the server is given (a test-driven one here).
//
// The checks run against a cost-13 bcrypt hash, so that a check outlasts the steps each
// test takes while it runs; each wait polls the server's own figures, never a sleep.

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "hotkey/http/server.h"

namespace hotkey::http {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// bcrypt of "s3cret": cost 4 (fast) and cost 13 (about half a second of CPU), made by
// `htpasswd -nbBC 4 alice s3cret` and `htpasswd -nbBC 13 slow s3cret`.
constexpr char kAliceHash[] = "$2y$04$oq0sbqR7xRbBx86XxsDJ3.BeXSa2YKkI.7mClcrSl/hOFUPD4wQym";
constexpr char kSlowHash[] = "$2y$13$yoLgPShTX02p.bHVM9yH/OY3MKVjPLV6IkbAKjJc2eVa54Ld/8Nna";

// An HttpServer with basic auth (alice: fast hash, slow: slow hash) and
// health_without_auth on 127.0.0.1, port 0, served by its own thread.
class AuthServer {
 public:
  explicit AuthServer(const HttpLimits& limits,
                      HttpServer::NowFunction now = HttpServer::SteadyNow) {
    config::WebOptions web;
    web.listen_addresses = {"127.0.0.1:0"};
    web.health_without_auth = true;
    config::WebConfig wc;
    wc.basic_auth_users = {{"alice", kAliceHash}, {"slow", kSlowHash}};
    absl::StatusOr<std::unique_ptr<HttpServer>> s = HttpServer::Create(
        io_, web, wc, limits,
        [](const HttpRequest& r) {
          return HttpResponse{200, "text/plain; charset=utf-8", r.path, {}};
        },
        {}, std::move(now));
    INFO(s.status().ToString());
    REQUIRE(s.ok());
    server_ = *std::move(s);
    server_->Start();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~AuthServer() {
    asio::post(io_, [this] { server_->Stop(); });
    io_.stop();
    thread_.join();
  }
  uint16_t port() const { return server_->local_endpoint().port(); }
  HttpServerStats stats() const { return server_->stats(); }

  // Polls stats() until `pred` holds; fails after 60 s (a bound for a stalled server,
  // not a timing expectation).
  template <class Pred>
  void WaitFor(Pred pred, const char* what) {
    const absl::Time give_up = absl::Now() + absl::Seconds(60);
    while (!pred(stats())) {
      INFO(what);
      REQUIRE(absl::Now() < give_up);
      absl::SleepFor(absl::Milliseconds(5));
    }
  }

 private:
  asio::io_context io_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
};

std::string Get(const std::string& path, const std::string& user_colon_password = "") {
  std::string r = "GET " + path + " HTTP/1.1\r\nHost: t\r\n";
  if (!user_colon_password.empty()) {
    r += "Authorization: Basic " + absl::Base64Escape(user_colon_password) + "\r\n";
  }
  return r + "\r\n";
}

class Client {
 public:
  explicit Client(uint16_t port) : socket_(io_) {
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  }
  void Send(const std::string& bytes) { asio::write(socket_, asio::buffer(bytes)); }
  // Everything the server sends until it closes the connection.
  std::string ReadToEnd() {
    std::string out;
    boost::system::error_code ec;
    asio::read(socket_, asio::dynamic_buffer(out), ec);
    return out;
  }
  // One response: head and, by its Content-Length, body (the handler's bodies are short).
  std::string ReadResponse() {
    std::string out;
    boost::system::error_code ec;
    while (out.find("\r\n\r\n") == std::string::npos && !ec) {
      char buf[4096];
      const size_t n = socket_.read_some(asio::buffer(buf), ec);
      out.append(buf, n);
    }
    return out;
  }

 private:
  asio::io_context io_;
  tcp::socket socket_;
};

size_t Count(const std::string& haystack, std::string_view needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

constexpr int kInvalid = static_cast<int>(AuthFailure::kInvalid);
constexpr int kThrottled = static_cast<int>(AuthFailure::kThrottled);
constexpr int kDeadline = static_cast<int>(AuthFailure::kDeadline);
constexpr int kAuth = static_cast<int>(ConnectionState::kAuth);
constexpr int kIdle = static_cast<int>(ConnectionState::kIdle);
constexpr int kCap = static_cast<int>(EvictReason::kConnectionCap);

TEST_CASE("HttpLimits: the defaults are those --help and docs/web-limits.md state",
          "[http][limits]") {
  const HttpLimits l;
  CHECK(l.max_connections == 64);
  CHECK(l.request_timeout == absl::Seconds(10));
  CHECK(l.handshake_timeout == absl::Seconds(5));
  CHECK(l.accept_backoff == absl::Milliseconds(100));
  CHECK(l.max_queued_auth_checks == 8);
  CHECK(l.max_auth_addresses == 4096);
  CHECK(l.auth_failure_backoff == absl::Seconds(1));
  CHECK(l.max_auth_failure_backoff == absl::Seconds(30));
}

TEST_CASE("HttpServer: a 401 closes its connection, so guesses cannot be pipelined",
          "[http][limits]") {
  AuthServer server{HttpLimits{}};
  Client c(server.port());
  c.Send(Get("/metrics", "alice:guess1") + Get("/metrics", "alice:guess2") +
         Get("/metrics", "alice:guess3"));
  const std::string all = c.ReadToEnd();
  INFO(all);
  CHECK(Count(all, "HTTP/1.1 401") == 1);
  CHECK(all.find("Connection: close\r\n") != std::string::npos);
  CHECK(server.stats().auth_failures[kInvalid] == 1);  // only the first was checked

  // The address now backs off (1 s): even the right password is refused unchecked.
  Client next(server.port());
  next.Send(Get("/metrics", "alice:s3cret"));
  CHECK(next.ReadResponse().rfind("HTTP/1.1 401", 0) == 0);
  CHECK(server.stats().auth_failures[kThrottled] == 1);
}

TEST_CASE(
    "HttpServer: the password backoff runs on the clock it is given and not on the wall clock",
    "[http][limits]") {
  // A clock that moves only when the test says (http_test does not link hotkey::clock, so
  // not tests/lib/fake_clock.h's FakeClock: the same idea in two lines).
  std::atomic<int64_t> now_ns{absl::ToUnixNanos(absl::FromUnixSeconds(1'700'000'000))};
  auto advance = [&now_ns](absl::Duration d) { now_ns += absl::ToInt64Nanoseconds(d); };
  AuthServer server{HttpLimits{}, [&now_ns] { return absl::FromUnixNanos(now_ns.load()); }};
  Client wrong(server.port());
  wrong.Send(Get("/metrics", "alice:guess"));
  CHECK(wrong.ReadToEnd().rfind("HTTP/1.1 401", 0) == 0);
  CHECK(server.stats().auth_failures[kInvalid] == 1);

  // One failure: a backoff of auth_failure_backoff (1 s) on the given clock. The fake clock
  // has not moved, so it holds however long the test takes.
  advance(absl::Milliseconds(999));
  Client early(server.port());
  early.Send(Get("/metrics", "alice:s3cret"));
  CHECK(early.ReadToEnd().rfind("HTTP/1.1 401", 0) == 0);
  CHECK(server.stats().auth_failures[kThrottled] == 1);

  advance(absl::Milliseconds(1));
  Client after(server.port());
  after.Send(Get("/metrics", "alice:s3cret"));
  const std::string answer = after.ReadResponse();
  INFO(answer);
  CHECK(answer.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(server.stats().auth_failures[kThrottled] == 1);
}

TEST_CASE("HttpServer: an address with a check queued gets its next guess refused unchecked",
          "[http][limits]") {
  AuthServer server{HttpLimits{}};
  Client first(server.port());
  first.Send(Get("/metrics", "slow:wrong"));
  server.WaitFor([](const HttpServerStats& s) { return s.waiting[kAuth] == 1; },
                 "the first guess is queued for its check");
  Client second(server.port());
  second.Send(Get("/metrics", "slow:guess"));
  const std::string refused = second.ReadToEnd();
  INFO(refused);
  CHECK(refused.rfind("HTTP/1.1 401", 0) == 0);
  CHECK(server.stats().auth_failures[kThrottled] == 1);
  // The first is answered once its check has run.
  CHECK(first.ReadToEnd().rfind("HTTP/1.1 401", 0) == 0);
  CHECK(server.stats().auth_failures[kInvalid] == 1);
}

TEST_CASE("HttpServer: a request queued for its password check is closed at its deadline",
          "[http][limits]") {
  HttpLimits limits;
  limits.request_timeout = absl::Milliseconds(50);  // far below a cost-13 check
  AuthServer server{limits};
  Client c(server.port());
  c.Send(Get("/metrics", "slow:wrong"));
  CHECK(c.ReadToEnd().empty());  // closed unanswered
  CHECK(server.stats().auth_failures[kDeadline] == 1);
}

TEST_CASE("HttpServer: at the cap, a request queued for its check is closed before an idle one",
          "[http][limits]") {
  HttpLimits limits;
  limits.max_connections = 2;
  AuthServer server{limits};
  Client idle(server.port());  // the oldest: says nothing yet
  server.WaitFor([](const HttpServerStats& s) { return s.waiting[kIdle] == 1; },
                 "the idle connection waits for a request");
  Client guesser(server.port());
  guesser.Send(Get("/metrics", "slow:wrong"));
  server.WaitFor([](const HttpServerStats& s) { return s.waiting[kAuth] == 1; },
                 "the guess is queued for its check");
  Client health(server.port());  // the third: the cap closes one
  health.Send(Get("/-/healthy"));
  CHECK(health.ReadResponse().rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
  CHECK(guesser.ReadToEnd().empty());  // closed unanswered
  const HttpServerStats st = server.stats();
  CHECK(st.evictions[kCap][kAuth] == 1);
  CHECK(st.evictions[kCap][kIdle] == 0);
  // The idle connection, older than the guesser, was kept.
  idle.Send(Get("/-/ready"));
  CHECK(idle.ReadResponse().rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
}

}  // namespace
}  // namespace hotkey::http
