// HttpServer: a small HTTP/1.1 server on Boost.Beast for /metrics, health, reload, the API
// and the landing page, over plain HTTP or TLS, with optional basic auth.
//
// One io_context (the daemon's main one) serves every connection asynchronously: no thread
// per connection (why we do not use prometheus-cpp's civetweb Exposer). Each connection
// has a deadline per request (a slow or half-open client is closed when it passes; the TLS
// handshake runs under the same deadline, so a plain-HTTP client on a TLS port or a client
// that never speaks costs one connection slot for at most that long), the request head and
// body are size-limited, and the number of open connections is capped, so no client can
// exhaust memory or starve a scrape.
//
// Access control comes from the --web.config.file (hotkey/config/web_config.h, Prometheus
// exporter-toolkit format), parsed by the caller: TLS through Asio's OpenSSL support (tls.h),
// client certificates, basic auth (basic_auth.h), extra response headers; SetWebConfig swaps in
// a re-read file's. With basic_auth_users
// every path answers 401 without valid credentials, except /-/healthy and /-/ready when
// WebOptions::health_without_auth. bcrypt checks that the cache cannot answer run on one worker
// thread, never on the io_context, so a client sending wrong passwords delays only other first-time
// logins, never a scrape.
//
// Thread-compatible: create, start and stop it from the io_context's thread.

#ifndef HOTKEY_HTTP_SERVER_H_
#define HOTKEY_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/config/options.h"
#include "hotkey/config/web_config.h"

namespace hotkey::http {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query
  std::string query;   // after '?', undecoded
  std::string body;
  std::string accept_encoding = {};  // the Accept-Encoding header, empty when absent
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpLimits {
  absl::Duration request_timeout = absl::Seconds(10);  // to read a request head and body
  size_t max_header_bytes = 8 * 1024;
  size_t max_body_bytes = 64 * 1024;
  // Open connections. At the cap a new connection closes the one that has waited longest
  // for a request, so idle or slow clients cannot lock scrapers out.
  size_t max_connections = 64;
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
  // Reads no file but the PEM files that `web_config` names.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Create(boost::asio::io_context& io,
                                                            const config::WebOptions& web,
                                                            const config::WebConfig& web_config,
                                                            const HttpLimits& limits,
                                                            Handler handler,
                                                            std::vector<int> listen_fds = {});
  ~HttpServer();

  // Replaces the TLS context, credentials and headers with those of a new web config (a
  // rotated certificate or password): new connections use them, open ones keep theirs. On
  // an error (OpenSSL refuses the certificate) the old ones stay. `config_file` names the
  // file in errors.
  absl::Status SetWebConfig(const config::WebConfig& web_config, std::string_view config_file);

  void Start();
  // Stops accepting and closes the connections waiting for a request; one in the middle of
  // a request is answered, then closed.
  void Stop();

  // The first listening socket's address (in the order of web.listen_addresses), and all.
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  std::vector<boost::asio::ip::tcp::endpoint> local_endpoints() const;
  bool tls() const;
  bool basic_auth() const;

  struct Shared;  // what sessions share with the server (http_shared.h)

 private:
  explicit HttpServer(boost::asio::io_context& io, std::shared_ptr<Shared> shared);
  absl::Status Listen(const std::string& address);
  absl::Status Adopt(int fd);
  void Accept(boost::asio::ip::tcp::acceptor& acceptor);
  // Starts the bcrypt worker once a config has basic auth.
  void EnsureAuthPool();

  boost::asio::io_context& io_;
  std::shared_ptr<Shared> shared_;
  // One per listening socket; unique_ptr so that Accept's references stay valid.
  std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> acceptors_;
  // bcrypt checks; one thread, so they never run in parallel (each costs ~70 ms of CPU at
  // cost 10). Null until a config has basic auth. Joined by the destructor.
  std::unique_ptr<boost::asio::thread_pool> auth_pool_;
};

}  // namespace hotkey::http

#endif  // HOTKEY_HTTP_SERVER_H_
