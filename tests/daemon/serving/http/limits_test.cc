// Tests of HttpServer's fair limits (http/server.h) on loopback sockets: a 401 closes its
// connection; credentials are checked in their turn, never refused unchecked with a 401; a
// first login from another address is checked after one check of each flooding address; a
// request that cannot wait its turn gets 429 with a Retry-After from check durations measured
// on the clock the server is given; at the cap, queued checks and idle connections go in
// their order. Clients bind 127.0.0.x source addresses to be several addresses.
//
// The checks run against a cost-13 bcrypt hash, so that a check outlasts the steps each
// test takes while it runs; each wait polls the server's own figures, never a sleep.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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
  // Connects from `source` (any 127.0.0.x is this host's).
  explicit Client(uint16_t port, const char* source = "127.0.0.1") : socket_(io_) {
    socket_.open(tcp::v4());
    socket_.bind(tcp::endpoint(asio::ip::make_address(source), 0));
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
constexpr int kBusy = static_cast<int>(AuthFailure::kBusy);
constexpr int kDeadline = static_cast<int>(AuthFailure::kDeadline);
constexpr int kAuth = static_cast<int>(ConnectionState::kAuth);
constexpr int kIdle = static_cast<int>(ConnectionState::kIdle);
constexpr int kCap = static_cast<int>(EvictReason::kConnectionCap);

bool Starts(const std::string& response, std::string_view status_line) {
  return response.rfind(status_line, 0) == 0;
}

// The Retry-After header's value, or "" without one.
std::string RetryAfter(const std::string& response) {
  const size_t at = response.find("\r\nRetry-After: ");
  if (at == std::string::npos) return "";
  const size_t from = at + 15;
  return response.substr(from, response.find("\r\n", from) - from);
}

TEST_CASE("HttpLimits: the defaults are those --help and docs/web-limits.md state",
          "[http][limits]") {
  const HttpLimits l;
  CHECK(l.max_connections == 64);
  CHECK(l.request_timeout == absl::Seconds(10));
  CHECK(l.handshake_timeout == absl::Seconds(5));
  CHECK(l.accept_backoff == absl::Milliseconds(100));
  CHECK(l.max_queued_auth_checks == 16);
  CHECK(l.auth_workers == 1);
  CHECK(l.max_header_bytes == 8 * 1024);
  CHECK(l.max_body_bytes == 64 * 1024);
  CHECK(l.large_body_paths.empty());  // the daemon names the demand path
  CHECK(l.max_large_body_bytes == 256 * 1024);
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
}

TEST_CASE("HttpServer: the right password right after a wrong one from one address is checked",
          "[http][limits]") {
  AuthServer server{HttpLimits{}};
  Client wrong(server.port());
  wrong.Send(Get("/metrics", "alice:guess"));
  CHECK(Starts(wrong.ReadToEnd(), "HTTP/1.1 401"));
  Client right(server.port());
  right.Send(Get("/metrics", "alice:s3cret"));
  const std::string answer = right.ReadResponse();
  INFO(answer);
  CHECK(Starts(answer, "HTTP/1.1 200"));
  const HttpServerStats st = server.stats();
  CHECK(st.auth_failures[kInvalid] == 1);
  CHECK(st.auth_failures[kBusy] == 0);
}

TEST_CASE("HttpServer: a second request from an address with a check running waits its turn",
          "[http][limits]") {
  AuthServer server{HttpLimits{}};
  Client first(server.port());
  first.Send(Get("/metrics", "slow:wrong"));  // its check runs for about half a second
  Client second(server.port());
  second.Send(Get("/metrics", "alice:s3cret"));
  server.WaitFor([](const HttpServerStats& s) { return s.waiting[kAuth] == 1; },
                 "the second waits for the first's check");
  CHECK(Starts(first.ReadToEnd(), "HTTP/1.1 401"));
  const std::string answer = second.ReadResponse();
  INFO(answer);
  CHECK(Starts(answer, "HTTP/1.1 200"));
  CHECK(server.stats().auth_failures[kBusy] == 0);
}

TEST_CASE("HttpServer: a first login from another address is checked before the flood's queue",
          "[http][limits]") {
  AuthServer server{HttpLimits{}};
  // The flood: one check running and seven queued from 127.0.0.2, each half a second.
  std::vector<std::unique_ptr<Client>> flood;
  for (int i = 0; i < 8; ++i) {
    flood.push_back(std::make_unique<Client>(server.port(), "127.0.0.2"));
    flood.back()->Send(Get("/metrics", absl::StrCat("slow:guess", i)));
  }
  server.WaitFor([](const HttpServerStats& s) { return s.waiting[kAuth] == 7; },
                 "seven of the flood's checks queued");
  Client scraper(server.port(), "127.0.0.1");
  scraper.Send(Get("/metrics", "alice:s3cret"));
  const std::string answer = scraper.ReadResponse();
  INFO(answer);
  CHECK(Starts(answer, "HTTP/1.1 200"));
  // The addresses take turns: the running check, then one of 127.0.0.2's, then the
  // scraper's. In one queue for all it would come after all eight (about 4 s).
  CHECK(server.stats().auth_failures[kInvalid] <= 2);
  CHECK(server.stats().auth_failures[kBusy] == 0);
}

TEST_CASE("HttpServer: a full queue pushes out the flooding address's newest request with 429",
          "[http][limits]") {
  HttpLimits limits;
  limits.max_queued_auth_checks = 2;
  AuthServer server{limits};
  Client running(server.port(), "127.0.0.2");
  running.Send(Get("/metrics", "slow:guess0"));
  server.WaitFor([](const HttpServerStats& s) { return s.waiting[kAuth] == 0; },
                 "the first check runs");
  Client older(server.port(), "127.0.0.2");
  older.Send(Get("/metrics", "slow:guess1"));
  server.WaitFor([](const HttpServerStats& s) { return s.waiting[kAuth] == 1; }, "one queued");
  Client newest(server.port(), "127.0.0.2");
  newest.Send(Get("/metrics", "slow:guess2"));
  server.WaitFor([](const HttpServerStats& s) { return s.waiting[kAuth] == 2; }, "two queued");
  Client scraper(server.port(), "127.0.0.1");
  scraper.Send(Get("/metrics", "alice:s3cret"));
  const std::string pushed = newest.ReadToEnd();
  INFO(pushed);
  CHECK(Starts(pushed, "HTTP/1.1 429"));
  CHECK_FALSE(RetryAfter(pushed).empty());
  CHECK(Starts(scraper.ReadResponse(), "HTTP/1.1 200"));
  CHECK(server.stats().auth_failures[kBusy] == 1);
  CHECK(Starts(older.ReadToEnd(), "HTTP/1.1 401"));  // checked in its turn
}

TEST_CASE(
    "HttpServer: a flood from the scraper's own address gets it 429 with Retry-After, "
    "never an unchecked 401, and Retry-After follows the checks' measured duration",
    "[http][limits]") {
  // A clock that moves 2 s at every reading: the server reads it as a check starts and as
  // it ends, so every check measures 2 s, however long it really takes.
  std::atomic<int64_t> now_ns{absl::ToUnixNanos(absl::FromUnixSeconds(1'700'000'000))};
  HttpLimits limits;
  limits.max_queued_auth_checks = 1;
  AuthServer server{limits, [&now_ns] {
                      return absl::FromUnixNanos(now_ns.fetch_add(2'000'000'000) + 2'000'000'000);
                    }};
  Client measured(server.port());
  measured.Send(Get("/metrics", "alice:wrong"));
  CHECK(Starts(measured.ReadToEnd(), "HTTP/1.1 401"));  // one check: the mean is 2 s
  Client running(server.port());
  running.Send(Get("/metrics", "slow:wrong"));
  server.WaitFor([](const HttpServerStats& s) { return s.waiting[kAuth] == 0; },
                 "the slow check runs");
  Client queued(server.port());
  queued.Send(Get("/metrics", "slow:guess"));
  server.WaitFor([](const HttpServerStats& s) { return s.waiting[kAuth] == 1; },
                 "the queue's one place is taken");
  Client scraper(server.port());
  scraper.Send(Get("/metrics", "alice:s3cret"));
  const std::string refused = scraper.ReadToEnd();
  INFO(refused);
  CHECK(Starts(refused, "HTTP/1.1 429"));
  // One check running and one queued, 2 s each on the given clock, one worker: 4 s.
  CHECK(RetryAfter(refused) == "4");
  const HttpServerStats st = server.stats();
  CHECK(st.auth_failures[kBusy] == 1);
  CHECK(st.auth_failures[kInvalid] == 1);  // the measured one only: nothing refused with 401
  CHECK(Starts(queued.ReadToEnd(), "HTTP/1.1 401"));
}

TEST_CASE("HttpServer: a request still queued for its check at its deadline gets 429",
          "[http][limits]") {
  HttpLimits limits;
  limits.request_timeout = absl::Milliseconds(200);  // below a cost-13 check
  AuthServer server{limits};
  Client running(server.port());
  running.Send(Get("/metrics", "slow:wrong"));
  Client queued(server.port());
  queued.Send(Get("/metrics", "alice:s3cret"));
  const std::string answer = queued.ReadToEnd();
  INFO(answer);
  CHECK(Starts(answer, "HTTP/1.1 429"));
  CHECK(server.stats().auth_failures[kDeadline] == 1);
  CHECK(Starts(running.ReadToEnd(), "HTTP/1.1 401"));  // a check that started is answered
}

TEST_CASE(
    "HttpServer: at the cap, a queued request behind others of its address goes before "
    "an idle connection, and an address's only one after",
    "[http][limits]") {
  HttpLimits limits;
  limits.max_connections = 4;
  AuthServer server{limits};
  Client idle(server.port(), "127.0.0.3");  // the oldest: says nothing yet
  server.WaitFor([](const HttpServerStats& s) { return s.waiting[kIdle] == 1; },
                 "the idle connection waits for a request");
  Client running(server.port(), "127.0.0.2");
  running.Send(Get("/metrics", "slow:guess0"));
  server.WaitFor([](const HttpServerStats& s) { return s.waiting[kAuth] == 0; }, "one runs");
  Client older(server.port(), "127.0.0.2");
  older.Send(Get("/metrics", "slow:guess1"));
  server.WaitFor([](const HttpServerStats& s) { return s.waiting[kAuth] == 1; }, "one queued");
  Client newest(server.port(), "127.0.0.2");
  newest.Send(Get("/metrics", "slow:guess2"));
  server.WaitFor([](const HttpServerStats& s) { return s.waiting[kAuth] == 2; }, "two queued");

  Client fifth(server.port(), "127.0.0.4");  // at the cap: 127.0.0.2's newest goes
  fifth.Send(Get("/-/healthy"));
  CHECK(Starts(fifth.ReadResponse(), "HTTP/1.1 200 OK\r\n"));
  CHECK(Starts(newest.ReadToEnd(), "HTTP/1.1 429"));
  HttpServerStats st = server.stats();
  CHECK(st.evictions[kCap][kAuth] == 1);
  CHECK(st.evictions[kCap][kIdle] == 0);

  Client sixth(server.port(), "127.0.0.4");  // 127.0.0.2 has one queued: the idle one goes
  sixth.Send(Get("/-/healthy"));
  CHECK(Starts(sixth.ReadResponse(), "HTTP/1.1 200 OK\r\n"));
  CHECK(idle.ReadToEnd().empty());
  st = server.stats();
  CHECK(st.evictions[kCap][kIdle] == 1);
  CHECK(st.evictions[kCap][kAuth] == 1);
  CHECK(Starts(older.ReadToEnd(), "HTTP/1.1 401"));  // kept, and checked in its turn
}

}  // namespace
}  // namespace hotkey::http
