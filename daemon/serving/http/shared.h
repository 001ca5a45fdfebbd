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

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "auth_queue.h"
#include "basic_auth.h"
#include "hotkey/http/server.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace hotkey::http {

// A connection in its TLS handshake, waiting for its password check, waiting for a
// request or streaming a response can be closed to make room.
class Waiting {
 public:
  virtual ~Waiting() = default;
  // Closes it to make room (a request queued for its check is answered 429 first).
  virtual void Evict() = 0;
  // Closes it as the server stops.
  virtual void Shutdown() = 0;
  // A stream's bytes not yet written (EventStream::unsent_bytes); 0 for the others.
  virtual size_t Backlog() const { return 0; }
};

// A request waiting in the AuthQueue.
class PendingCheck {
 public:
  virtual ~PendingCheck() = default;
  // Its turn: run the check on the auth pool.
  virtual void RunCheck() = 0;
  // Pushed out of the queue, or closed to make room: answer 429.
  virtual void Displaced() = 0;
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
      : limits(l), now(std::move(n)), auth_queue(l.max_queued_auth_checks) {}

  // Closes one connection that waits, in HttpLimits::max_connections' order, and counts it;
  // false when none waits.
  bool EvictOne(EvictReason reason);

  // Queues a request from `address` for its check; false when it is refused (then the
  // caller answers 429). A ticket it pushes out is answered 429 here.
  bool QueueCheck(std::string_view address, std::weak_ptr<PendingCheck> waiter,
                  AuthQueue::Ticket* ticket);
  // Starts the next checks while workers are free.
  void DispatchChecks();
  // A check has ended, after `took` (on `now`): its worker is free.
  void CheckDone(absl::Duration took);
  // The Retry-After of a 429 for the check queue: how long the checks waiting take the
  // workers, by the mean check duration seen, in whole seconds, at least 1.
  int64_t RetryAfterSeconds() const;

  const HttpLimits limits;
  const HttpServer::NowFunction now;  // the clock check durations are measured on
  Handler handler;
  std::shared_ptr<const WebSecurity> security;    // never null
  boost::asio::thread_pool* auth_pool = nullptr;  // the server's; used only while !stopped
  bool health_without_auth = false;
  size_t open = 0;  // connections open now
  // Connections that may be closed to make room, by state, longest waiting first. So idle,
  // half-open, handshaking, password-guessing or streaming clients can never lock a scraper
  // out; a scraper sends its request at once and is served.
  std::list<std::weak_ptr<Waiting>> waiting[kNumConnectionStates];
  AuthQueue auth_queue;
  // The requests behind the queue's tickets.
  absl::flat_hash_map<AuthQueue::Ticket, std::weak_ptr<PendingCheck>> pending_checks;
  size_t checks_running = 0;
  // Mean duration of a check (exponentially weighted), for Retry-After; 0 before the first.
  absl::Duration mean_check = absl::ZeroDuration();
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
