// The plain-HTTP session, instantiated here alone (see http_session.h).

#include <boost/beast/core/tcp_stream.hpp>

#include "session.h"

namespace hotkey::http {

void StartPlainSession(boost::asio::ip::tcp::socket socket,
                       std::shared_ptr<HttpServer::Shared> shared) {
  std::make_shared<internal::Session<boost::beast::tcp_stream>>(std::move(socket),
                                                                std::move(shared))
      ->Start();
}

}  // namespace hotkey::http
