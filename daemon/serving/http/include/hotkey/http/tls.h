// The OpenSSL server context of the HTTP server, built from the tls_server_config of a
// parsed --web.config.file (hotkey/config/web_config.h): certificate chain and key (from
// files or inline PEM), protocol versions, cipher suites and curves by their Go names, and
// client certificate verification with Go's client auth semantics and the toolkit's
// client_allowed_sans check. Reached through Asio's OpenSSL support.
//
// Thread-safe (a free function; the context it returns is then shared by the TLS sessions).

#ifndef HOTKEY_HTTP_TLS_H_
#define HOTKEY_HTTP_TLS_H_

#include <memory>

#include <boost/asio/ssl/context.hpp>

#include "absl/status/statusor.h"
#include "hotkey/config/web_config.h"

namespace hotkey::http {

// Builds the OpenSSL server context for a validated TlsServerConfig: loads certificate, key
// and CA (bad or mismatched PEM is an error here), versions, ciphers, curves and client
// verification. The context keeps a copy of what its verify callback needs.
absl::StatusOr<std::unique_ptr<boost::asio::ssl::context>> MakeTlsContext(
    const config::TlsServerConfig& tls);

}  // namespace hotkey::http

#endif  // HOTKEY_HTTP_TLS_H_
