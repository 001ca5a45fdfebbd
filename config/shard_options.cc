// ShardOptions: the tap's defaults filled in, and validation; see shard_options.h.

#include "hotkey/config/shard_options.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl_compat.h"
#include "hotkey/config/values.h"
#include "range.h"

namespace hotkey::config {

using internal::Av;
using internal::InRange;
using internal::OutOfRange;

ShardOptions ShardOptions::Resolved(const TapOptions& tap) const {
  ShardOptions out = *this;
  // A capture file is traffic recorded elsewhere: no shard to ask here.
  if (out.address.empty() && !tap.interface.empty() && !tap.ports.empty()) {
    out.address = absl::StrCat("127.0.0.1:", tap.ports.front());
  }
  if (!out.protocol) out.protocol = tap.protocol;
  out.timeout = std::min(out.timeout, out.interval);  // a round ends before the next one
  return out;
}

absl::Status ShardOptions::Validate() const {
  if (!address.empty() && !unix_socket()) {
    absl::StatusOr<HostPort> a = ParseListenAddress(address);
    if (!a.ok() || a->host.empty() || a->port == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shard address \"", address,
                       "\" is not host:port, [ipv6]:port (port 1 to 65535) or a Unix socket path"));
    }
  }
  if (protocol && *protocol != TapProtocol::kRedis && *protocol != TapProtocol::kMemcached) {
    return absl::InvalidArgumentError("shard protocol is not redis or memcached");
  }
  if (!tls) {
    const std::pair<std::string_view, const std::string*> tls_settings[] = {
        {"tls-ca-file", &tls_ca_file},
        {"tls-cert-file", &tls_cert_file},
        {"tls-key-file", &tls_key_file},
        {"tls-server-name", &tls_server_name}};
    for (const auto& [flag, value] : tls_settings) {
      if (!value->empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--shard.", Av(flag), " is given without --shard.tls"));
      }
    }
  } else if (unix_socket()) {
    return absl::InvalidArgumentError(
        "--shard.tls with a Unix socket address: Redis and memcached serve TLS on TCP only");
  }
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--shard.tls-cert-file and --shard.tls-key-file go together (the client's certificate "
        "and its key)");
  }
  if (!(cpus >= 0) || cpus > kMaxCpus) {
    return OutOfRange("shard cpus", "[0, 1024] (0: measured)", cpus);
  }
  if (!InRange(interval, absl::Seconds(1), absl::Hours(1))) {
    return OutOfRange("shard interval", "[1s, 1h]", absl::FormatDuration(interval));
  }
  if (!InRange(timeout, absl::Milliseconds(1), absl::Hours(1))) {
    return OutOfRange("shard timeout", "[1ms, 1h]", absl::FormatDuration(timeout));
  }
  return absl::OkStatus();
}

}  // namespace hotkey::config
