// WebOptions: the HTTP server's settings (--web.*), read by hotkey::http's HttpServer. The
// web configuration file it names (TLS, basic auth) is read by web_config.h.
//
// Defaults, Validate() and thread safety as options.h says for every options struct.

#ifndef HOTKEY_CONFIG_WEB_OPTIONS_H_
#define HOTKEY_CONFIG_WEB_OPTIONS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace hotkey::config {

// The HTTP server.
struct WebOptions {
  // Addresses the HTTP server listens on, each host:port, [ipv6]:port or :port; at least
  // one. Ignored with systemd_socket.
  std::vector<std::string> listen_addresses = {":10110"};
  // Serve on the listening sockets systemd passes (socket activation, sd_listen_fds(3):
  // LISTEN_PID, LISTEN_FDS, from fd 3 on) instead of binding listen_addresses.
  bool systemd_socket = false;
  // POST /-/reload answers 403 unless this is set (as in Prometheus and its exporters);
  // SIGHUP reloads either way.
  bool enable_lifecycle = false;
  // Path of the Prometheus endpoint: starts with '/', is not "/" and is not under the
  // paths the server itself uses ("/-/", "/api/").
  std::string telemetry_path = "/metrics";
  // A Prometheus exporter-toolkit web configuration file (TLS, basic auth); empty = plain
  // HTTP with no authentication.
  std::string config_file;
  // With basic auth configured, /-/healthy and /-/ready still answer without credentials
  // (for probes that cannot authenticate). Off unless the operator asks.
  bool health_without_auth = false;

  absl::Status Validate() const;
  friend bool operator==(const WebOptions&, const WebOptions&) = default;
};

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_WEB_OPTIONS_H_
