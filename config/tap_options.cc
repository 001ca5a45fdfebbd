// The tap's enums by name, and TapOptions' memory bound and validation; see tap_options.h.

#include "hotkey/config/tap_options.h"

#include "absl/strings/str_cat.h"
#include "hotkey/config/values.h"
#include "range.h"

namespace hotkey::config {

using internal::InRange;
using internal::OutOfRange;

uint64_t TapOptions::MemoryBoundBytes() const {
  if (!enabled()) return 0;
  const uint64_t per_flow = uint64_t{flow_buffer_bytes} * BuffersPerFlow() + kFlowStateBytes;
  return uint64_t{max_flows} * per_flow + kClientHostsBytes +
         (file.empty() ? kRingFactor * uint64_t{buffer_bytes} : 0);
}

absl::Status TapOptions::Validate() const {
  if (!interface.empty() && !file.empty()) {
    return absl::InvalidArgumentError(
        "tap: give --tap.interface or --tap.file, not both (a file replaces the capture)");
  }
  if (enabled() && ports.empty()) {
    return absl::InvalidArgumentError(
        "tap: --tap.port is required with --tap.interface or --tap.file (the shard's server "
        "port, e.g. --tap.port=6379)");
  }
  if (ports.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tap: --tap.port takes one port, not ", ports.size(),
        ": one hotkeyd taps one server, so that a share is of that server's traffic. Run one "
        "hotkeyd per instance (a systemd template unit such as hotkeyd@.service, or a sidecar "
        "per pod), each with its own --tap.port and --web.listen-address"));
  }
  for (uint16_t port : ports) {
    if (port == 0) return OutOfRange("tap port", "[1, 65535]", port);
  }
  if (protocol != TapProtocol::kRedis && protocol != TapProtocol::kMemcached) {
    return absl::InvalidArgumentError("tap protocol is not redis or memcached");
  }
  if (weight != TapWeight::kOps && weight != TapWeight::kBytes) {
    return absl::InvalidArgumentError("tap weight is not ops or bytes");
  }
  if (!InRange<size_t>(buffer_bytes, size_t{64} << 10, size_t{1} << 30)) {
    return OutOfRange("tap buffer bytes", "[64KiB, 1GiB]", FormatByteSize(buffer_bytes));
  }
  if (!InRange(snaplen, 128, 262144)) return OutOfRange("tap snaplen", "[128, 262144]", snaplen);
  if (!InRange<uint32_t>(max_flows, 1, 1u << 20)) {
    return OutOfRange("tap max flows", "[1, 1048576]", max_flows);
  }
  if (!InRange<size_t>(flow_buffer_bytes, 256, size_t{16} << 20)) {
    return OutOfRange("tap flow buffer bytes", "[256B, 16MiB]", FormatByteSize(flow_buffer_bytes));
  }
  if (!InRange(idle_timeout, absl::Seconds(1), absl::Hours(24))) {
    return OutOfRange("tap idle timeout", "[1s, 24h]", absl::FormatDuration(idle_timeout));
  }
  if (MemoryBoundBytes() > kMaxMemoryBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tap memory too large: ", max_flows, " --tap.max-flows x (",
        FormatByteSize(flow_buffer_bytes), " --tap.flow-buffer-bytes x ", BuffersPerFlow(), " + ",
        kFlowStateBytes, " B) + ", FormatByteSize(kClientHostsBytes), " (client hosts) + ",
        FormatByteSize(file.empty() ? buffer_bytes : 0),
        " --tap.buffer-bytes = ", FormatByteSize(MemoryBoundBytes()), ", over the maximum of ",
        FormatByteSize(kMaxMemoryBytes), "; track fewer flows or give each a smaller buffer"));
  }
  return absl::OkStatus();
}

absl::StatusOr<TapProtocol> ParseTapProtocol(std::string_view text) {
  return text::ParseName(kTapProtocolNames, text, "tap protocol");
}

absl::StatusOr<TapWeight> ParseTapWeight(std::string_view text) {
  return text::ParseName(kTapWeightNames, text, "tap weight");
}

}  // namespace hotkey::config
