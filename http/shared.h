// What HttpServer shares with its sessions, and how a session is started on an accepted
// connection. Internal to http_server.cc, http_plain.cc and http_tls.cc; light on purpose
// (no Beast), so that http_server.cc does not parse the session templates.

#ifndef HOTKEY_HTTP_SHARED_H_
#define HOTKEY_HTTP_SHARED_H_

#include <cstddef>
#include <list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>

#include "basic_auth.h"
#include "hotkey/http/server.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace hotkey::http {

// A connection waiting for a request (or for its TLS handshake) can be closed to make room.
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
  HttpLimits limits;
  Handler handler;
  std::shared_ptr<const WebSecurity> security;    // never null
  boost::asio::thread_pool* auth_pool = nullptr;  // the server's; used only while !stopped
  bool health_without_auth = false;
  size_t open = 0;  // connections open now
  // Connections waiting for a request, longest waiting first: at the connection cap, the
  // front one is closed to admit a new one. So idle, half-open or slow clients can never
  // lock a scraper out; a scraper sends its request at once and is served.
  std::list<std::weak_ptr<Waiting>> waiting;
  bool stopped = false;
};

// Start a session on an accepted connection (http_plain.cc, http_tls.cc). The session
// keeps itself alive through its pending operations.
void StartPlainSession(boost::asio::ip::tcp::socket socket,
                       std::shared_ptr<HttpServer::Shared> shared);
void StartTlsSession(boost::asio::ip::tcp::socket socket,
                     std::shared_ptr<HttpServer::Shared> shared);

}  // namespace hotkey::http

#endif  // HOTKEY_HTTP_SHARED_H_
