#include "hotkey/net/listen.h"

#include "absl/strings/str_cat.h"

namespace hotkey::net {

namespace asio = boost::asio;

absl::StatusOr<asio::ip::address> ListenHost(const config::HostPort& hp) {
  if (hp.host.empty()) return asio::ip::address(asio::ip::address_v6::any());
  boost::system::error_code ec;
  asio::ip::address a = asio::ip::make_address(hp.host, ec);
  if (!ec) return a;
  if (hp.host == "localhost") return asio::ip::address(asio::ip::address_v4::loopback());
  return absl::InvalidArgumentError(
      absl::StrCat("\"", hp.host, "\" is not an IP address (use an address, not a name)"));
}

}  // namespace hotkey::net
