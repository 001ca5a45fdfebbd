// The TLS session, instantiated here alone (see http_session.h).

#include <boost/asio/ssl.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl.hpp>

#include "session.h"

namespace hotkey::http {

void StartTlsSession(boost::asio::ip::tcp::socket socket,
                     std::shared_ptr<HttpServer::Shared> shared) {
  std::make_shared<internal::Session<boost::beast::ssl_stream<boost::beast::tcp_stream>>>(
      std::move(socket), std::move(shared))
      ->Start();
}

}  // namespace hotkey::http
