// What HttpServer shares with its sessions, and how a session is started on an accepted
// connection. Internal to http_server.cc, http_plain.cc and http_tls.cc; light on purpose
// (no Beast), so that http_server.cc does not parse the session templates.

#ifndef HOTKEY_HTTP_SHARED_H_
#define HOTKEY_HTTP_SHARED_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>

#include "auth_limiter.h"
#include "basic_auth.h"
#include "hotkey/http/server.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace hotkey::http {

// A connection in its TLS handshake, waiting for its password check or waiting for a
// request can be closed to make room.
class Waiting {
 public:
  virtual ~Waiting() = default;
  virtual void Evict() = 0;
};

// What the web config file sets up. Immutable once built: a new file builds a new one,
// which new connections use; a connection keeps the one it started with to its end.
struct WebSecurity {
  std::shared_ptr<boost::asio::ssl::context> tls;            // null: plain HTTP
  std::shared_ptr<BasicAuth> auth;                           // null: no authentication
  std::vector<std::pair<std::string, std::string>> headers;  // added to every response
};

struct HttpServer::Shared {
  Shared(const HttpLimits& l, HttpServer::NowFunction n)
      : limits(l),
        now(std::move(n)),
        auth_limiter(AuthLimiter::Options{l.max_queued_auth_checks, l.max_auth_addresses,
                                          l.auth_failure_backoff, l.max_auth_failure_backoff}) {}

  // Closes the connection that has waited longest in the first non-empty state of
  // ConnectionState's order (silent, handshake, auth, idle) and counts it; false when none
  // waits.
  bool EvictOne(EvictReason reason);

  const HttpLimits limits;
  const HttpServer::NowFunction now;  // the auth backoff's clock (HttpServer::Create)
  Handler handler;
  std::shared_ptr<const WebSecurity> security;    // never null
  boost::asio::thread_pool* auth_pool = nullptr;  // the server's; used only while !stopped
  bool health_without_auth = false;
  size_t open = 0;  // connections open now
  // Connections that may be closed to make room, by state, longest waiting first. So idle,
  // half-open, handshaking or password-guessing clients can never lock a scraper out; a
  // scraper sends its request at once and is served.
  std::list<std::weak_ptr<Waiting>> waiting[kNumConnectionStates];
  // Sessions streaming a response (event_stream.h): never closed to make room, closed by
  // Stop(). Expired entries are pruned when one is added.
  std::list<std::weak_ptr<Waiting>> streaming;
  AuthLimiter auth_limiter;
  bool stopped = false;

  // The figures of HttpServer::stats(); written on the io thread, read from any.
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> open_now{0};
  std::atomic<uint64_t> waiting_now[kNumConnectionStates] = {};
  std::atomic<uint64_t> evictions[kNumEvictReasons][kNumConnectionStates] = {};
  std::atomic<uint64_t> auth_failures[kNumAuthFailures] = {};
  std::atomic<uint64_t> accept_errors[kNumAcceptErrors] = {};
};

inline void Count(std::atomic<uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }

// Start a session on an accepted connection (http_plain.cc, http_tls.cc). The session
// keeps itself alive through its pending operations.
void StartPlainSession(boost::asio::ip::tcp::socket socket,
                       std::shared_ptr<HttpServer::Shared> shared);
void StartTlsSession(boost::asio::ip::tcp::socket socket,
                     std::shared_ptr<HttpServer::Shared> shared);

}  // namespace hotkey::http

#endif  // HOTKEY_HTTP_SHARED_H_
