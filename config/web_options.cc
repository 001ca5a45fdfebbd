// WebOptions::Validate; see web_options.h.

#include "hotkey/config/web_options.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl_compat.h"
#include "hotkey/config/values.h"
#include "range.h"

namespace hotkey::config {

using internal::Av;

absl::Status WebOptions::Validate() const {
  if (listen_addresses.empty() && !systemd_socket) {
    return absl::InvalidArgumentError("web: no listen address");
  }
  for (const std::string& address : listen_addresses) {
    if (auto a = ParseListenAddress(address); !a.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("web: ", a.status().message()));
    }
  }
  auto bad_path = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("web telemetry path \"", telemetry_path, "\" ", Av(why)));
  };
  if (!absl::StartsWith(telemetry_path, "/")) return bad_path("must start with '/'");
  if (telemetry_path == "/") return bad_path("must not be \"/\" (the landing page)");
  if (absl::StartsWith(telemetry_path, "/-/") || absl::StartsWith(telemetry_path, "/api/")) {
    return bad_path("must not be under /-/ or /api/ (used by the server)");
  }
  for (char c : telemetry_path) {
    if (static_cast<unsigned char>(c) <= ' ' || c == '?' || c == '#' || c == 0x7f) {
      return bad_path("must not contain spaces, control bytes, '?' or '#'");
    }
  }
  return absl::OkStatus();
}

}  // namespace hotkey::config
