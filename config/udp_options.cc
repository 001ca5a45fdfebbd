// UdpOptions::Validate; see udp_options.h.

#include "hotkey/config/udp_options.h"

#include "absl/strings/str_cat.h"
#include "hotkey/config/values.h"
#include "range.h"

namespace hotkey::config {

using internal::InRange;
using internal::OutOfRange;

absl::Status UdpOptions::Validate() const {
  // Off (empty), there is no address to check; the rest is checked all the same.
  if (auto a = ParseListenAddress(listen_address); enabled() && !a.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("udp: ", a.status().message()));
  }
  if (!InRange(receivers, 1, 64)) return OutOfRange("udp receivers", "[1, 64]", receivers);
  if (!InRange<size_t>(read_buffer_bytes, size_t{4} << 10, size_t{1} << 30)) {
    return OutOfRange("udp read buffer", "[4KiB, 1GiB]", FormatByteSize(read_buffer_bytes));
  }
  if (!InRange(batch, 1, 1024)) return OutOfRange("udp batch", "[1, 1024]", batch);
  for (const std::string& source : allowed_sources) {
    if (auto c = ParseCidr(source); !c.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("udp allowed sources: ", c.status().message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace hotkey::config
