// HttpServer: a small HTTP/1.1 server on Boost.Beast for /metrics, health, reload, the API
// and the landing page.
//
// One io_context (the daemon's main one) serves every connection asynchronously: no thread
// per connection (why we do not use prometheus-cpp's civetweb Exposer). Each connection
// has a deadline per request (a slow or half-open client is closed when it passes), the
// request head and body are size-limited, and the number of open connections is capped,
// so no client can exhaust memory or starve a scrape.
//
// Thread-compatible: create, start and stop it from the io_context's thread.

#ifndef HOTKEY_DAEMON_HTTP_SERVER_H_
#define HOTKEY_DAEMON_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/config/options.h"

namespace hotkey::daemon {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query
  std::string query;   // after '?', undecoded
  std::string body;
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
  size_t max_connections = 64;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  static absl::StatusOr<std::unique_ptr<HttpServer>> Create(boost::asio::io_context& io,
                                                            const config::WebOptions& web,
                                                            const HttpLimits& limits,
                                                            Handler handler);
  ~HttpServer();

  void Start();
  // Stops accepting and closes open connections.
  void Stop();

  boost::asio::ip::tcp::endpoint local_endpoint() const;

  class Session;

 private:
  HttpServer(boost::asio::io_context& io, const HttpLimits& limits, Handler handler);
  void Accept();

  boost::asio::io_context& io_;
  const HttpLimits limits_;
  const Handler handler_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::shared_ptr<size_t> open_;  // connections open now; shared with sessions
  std::shared_ptr<bool> stopped_;
};

// Splits "a=1&b=x%20y" into decoded pairs; malformed escapes are kept as they are.
std::vector<std::pair<std::string, std::string>> ParseQuery(std::string_view query);

}  // namespace hotkey::daemon

#endif  // HOTKEY_DAEMON_HTTP_SERVER_H_
