// HttpServer: a small HTTP/1.1 server on Boost.Beast for /metrics, health, reload, the API
// and the landing page, over plain HTTP or TLS, with optional basic auth.
//
// One io_context (the daemon's main one) serves every connection asynchronously: no thread
// per connection (why we do not use prometheus-cpp's civetweb Exposer). Each connection
// has a deadline per request, covering its password check (a slow or half-open client is
// closed when it passes), and a shorter one for its TLS handshake (a plain-HTTP client on a
// TLS port, or a client that never speaks); the request head and body are size-limited; the
// number of open connections is capped, and accept() backs off when descriptors run out
// (HttpLimits), so no client can exhaust memory or starve a scrape.
//
// Access control comes from the --web.config.file (hotkey/config/web_config.h, Prometheus
// exporter-toolkit format), parsed by the caller: TLS through Asio's OpenSSL support (tls.h),
// client certificates, basic auth (basic_auth.h), extra response headers; SetWebConfig swaps in
// a re-read file's. With basic_auth_users every path answers 401 without valid credentials,
// except /-/healthy and /-/ready when WebOptions::health_without_auth. Credentials verified
// before are answered from a cache; the others wait for a bcrypt check on a bounded pool of
// worker threads, never on the io_context, in a queue fair between addresses
// (auth_queue.h): a client sending wrong passwords delays another address's first login by a
// bounded number of checks and never a scrape with cached credentials. A request is answered
// 401 only once its credentials were checked (or are missing or malformed); one that cannot
// wait its turn (no place in the queue, pushed out, its deadline passed) is answered 429 with
// Retry-After. A 401 or 429 closes its connection, so a client cannot pipeline guesses on one.
//
// Thread-compatible: create, start and stop it from the io_context's thread.

#ifndef HOTKEY_HTTP_SERVER_H_
#define HOTKEY_HTTP_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/config/web_config.h"
#include "hotkey/config/web_options.h"
#include "hotkey/http/event_stream.h"

namespace hotkey::http {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query
  std::string query;   // after '?', undecoded
  std::string body;
  std::string accept_encoding = {};  // the Accept-Encoding header, empty when absent
  // The request passed basic auth (false when the server has no basic auth, and for the
  // health paths answered without it).
  bool authenticated = false;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // Set: a streamed response (event_stream.h). The head is sent with `status`,
  // `content_type` and `headers`, then what the stream is given; `body` is ignored.
  std::shared_ptr<EventStream> stream = nullptr;
};

struct HttpLimits {
  // To read a request head and body (a request that passes it is closed unanswered), and
  // then to have its credentials checked (one still waiting for its check then is answered
  // 429).
  absl::Duration request_timeout = absl::Seconds(10);
  // For a TLS handshake, from the connection's accept: a client that has not completed one
  // by then is closed.
  absl::Duration handshake_timeout = absl::Seconds(5);
  size_t max_header_bytes = 8 * 1024;
  size_t max_body_bytes = 64 * 1024;
  // Paths whose requests may carry up to max_large_body_bytes of body instead (the hot-key
  // feed's demand reports: docs/feed.md). The head is read first, under max_header_bytes,
  // and its path decides the body's limit.
  std::vector<std::string> large_body_paths = {};
  size_t max_large_body_bytes = 256 * 1024;
  // Open connections. At the cap a new connection closes one that waits, in this order:
  // a TLS connection that has sent nothing yet (a TLS client speaks first, so a real one
  // leaves this state at once), then a TLS handshake in progress, then a request queued for
  // its password check whose address has others queued (AuthQueue::Victim), then a
  // connection waiting for a request, then any request queued for its check, then a
  // streamed response (event_stream.h; the one with the most unsent bytes, of those the
  // newest); of the other kinds, the one that has waited longest. A request queued for its
  // check is answered 429 as it goes, a stream ends as EventStream::CloseReason::kEvicted.
  // A connection whose request is being answered (not a stream) is never closed to make
  // room, so idle, slow, handshaking or streaming clients cannot lock scrapers out.
  size_t max_connections = 64;
  // When accept() finds no descriptor left (EMFILE, ENFILE), the server closes a waiting
  // connection as at the cap and accepts again at once; with none to close it waits this
  // long before the next accept() instead of retrying in a loop, as after any other error
  // but ECONNABORTED.
  absl::Duration accept_backoff = absl::Milliseconds(100);
  // Requests waiting for a password check (bcrypt), all addresses together (auth_queue.h),
  // and the worker threads that run the checks.
  size_t max_queued_auth_checks = 16;
  size_t auth_workers = 1;
};

// What a connection is doing when it is closed to make room (HttpLimits::max_connections
// gives the order of eviction).
enum class ConnectionState { kSilent, kHandshake, kAuth, kIdle, kStream };
inline constexpr int kNumConnectionStates = 5;
inline constexpr const char* kConnectionStateNames[] = {"silent", "handshake", "auth", "idle",
                                                        "stream"};

// Why a connection was closed to make room: the connection cap, or accept() found no
// descriptor left.
enum class EvictReason { kConnectionCap, kDescriptors };
inline constexpr int kNumEvictReasons = 2;
inline constexpr const char* kEvictReasonNames[] = {"connection_cap", "descriptors"};

// Why a request was refused for basic auth: 401 for wrong, missing or malformed credentials
// (checked); 429 with Retry-After, unchecked, when the check queue had no place for it or
// pushed it out for another address (busy), or when its deadline passed while it waited
// (deadline). A request queued for its check and closed to make room is answered 429 too,
// and counted in the evictions.
enum class AuthFailure { kInvalid, kBusy, kDeadline };
inline constexpr int kNumAuthFailures = 3;
inline constexpr const char* kAuthFailureNames[] = {"invalid", "busy", "deadline"};

// accept() failures: out of descriptors (EMFILE, ENFILE, ENOBUFS, ENOMEM), or another.
inline constexpr int kNumAcceptErrors = 2;
inline constexpr const char* kAcceptErrorNames[] = {"descriptors", "other"};

// The server's own figures since it was created (hotkey_http_* on /metrics).
struct HttpServerStats {
  uint64_t open_connections = 0;
  uint64_t accepted = 0;
  uint64_t waiting[kNumConnectionStates] = {};  // open connections that may be closed to make room
  uint64_t evictions[kNumEvictReasons][kNumConnectionStates] = {};
  uint64_t auth_failures[kNumAuthFailures] = {};
  uint64_t accept_errors[kNumAcceptErrors] = {};
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  // Listens on every address of web.listen_addresses, all or nothing (one that cannot be
  // bound is an error naming it), or with web.systemd_socket on `listen_fds` (listening
  // TCP sockets passed by systemd: the server owns them from here; none, or one that is
  // not a listening IPv4/IPv6 stream socket, is an error). With the TLS, basic auth and
  // headers of `web_config` (config::LoadWebConfigFile of web.config_file; a default
  // WebConfig is plain HTTP without authentication). A certificate or key OpenSSL refuses
  // is an error here, so the daemon does not start; its message names web.config_file.
  // Reads no file but the PEM files that `web_config` names. `now` is the clock the
  // duration of password checks is measured on, for the Retry-After of a 429: a monotonic
  // one; tests pass a fake clock's. The deadlines of requests and handshakes and the accept
  // backoff are Asio timers on `io`, which run on std::chrono::steady_clock.
  using NowFunction = std::function<absl::Time()>;
  static absl::StatusOr<std::unique_ptr<HttpServer>> Create(
      boost::asio::io_context& io, const config::WebOptions& web,
      const config::WebConfig& web_config, const HttpLimits& limits, Handler handler,
      std::vector<int> listen_fds = {}, NowFunction now = SteadyNow);
  // std::chrono::steady_clock as an absl::Time on an arbitrary fixed origin (as
  // clock::SteadyClock reads it): meaningful only as a difference of two readings.
  static absl::Time SteadyNow();
  ~HttpServer();

  // Replaces the TLS context, credentials and headers with those of a new web config (a
  // rotated certificate or password): new connections use them, open ones keep theirs. On
  // an error (OpenSSL refuses the certificate) the old ones stay. `config_file` names the
  // file in errors.
  absl::Status SetWebConfig(const config::WebConfig& web_config, std::string_view config_file);

  void Start();
  // Stops accepting and closes the connections waiting for a request or a password check
  // and the streamed responses (EventStream, closed as kServer); one in the middle of a
  // request is answered, then closed.
  void Stop();

  // The first listening socket's address (in the order of web.listen_addresses), and all.
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  std::vector<boost::asio::ip::tcp::endpoint> local_endpoints() const;
  bool tls() const;
  bool basic_auth() const;
  // Safe from any thread (the counters are atomic; the figures need not be one instant's).
  HttpServerStats stats() const;

  struct Shared;  // what sessions share with the server (http_shared.h)

 private:
  explicit HttpServer(boost::asio::io_context& io, std::shared_ptr<Shared> shared);
  absl::Status Listen(const std::string& address);
  absl::Status Adopt(int fd);
  void Accept(boost::asio::ip::tcp::acceptor& acceptor);
  void OnAcceptError(boost::asio::ip::tcp::acceptor& acceptor, const boost::system::error_code& ec);
  // Starts the bcrypt workers once a config has basic auth.
  void EnsureAuthPool();

  boost::asio::io_context& io_;
  std::shared_ptr<Shared> shared_;
  // One per listening socket; unique_ptr so that Accept's references stay valid.
  std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> acceptors_;
  // One per acceptor: paces accept() after it found no descriptor and no connection to close.
  std::vector<std::unique_ptr<boost::asio::steady_timer>> accept_backoff_;
  // bcrypt checks, HttpLimits::auth_workers threads (each check costs ~70 ms of CPU at cost
  // 10). Null until a config has basic auth. Joined by the destructor.
  std::unique_ptr<boost::asio::thread_pool> auth_pool_;
};

}  // namespace hotkey::http

#endif  // HOTKEY_HTTP_SERVER_H_
