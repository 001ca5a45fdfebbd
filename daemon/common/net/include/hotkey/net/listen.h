// Listen addresses to Asio addresses, shared by the UDP receiver and the HTTP server.

#ifndef HOTKEY_NET_LISTEN_H_
#define HOTKEY_NET_LISTEN_H_

#include <boost/asio/ip/address.hpp>

#include "absl/status/statusor.h"
#include "hotkey/config/values.h"

namespace hotkey::net {

// Resolves a listen address's host ("host", "v6", or "" for every interface) to an
// address; "" is every interface (IPv6 dual-stack where the host has IPv6, else IPv4) and
// "localhost" is 127.0.0.1. Other names are refused: listen on an address, not a name.
absl::StatusOr<boost::asio::ip::address> ListenHost(const config::HostPort& hp);

}  // namespace hotkey::net

#endif  // HOTKEY_NET_LISTEN_H_
