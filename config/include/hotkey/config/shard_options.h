// ShardOptions: the shard client's settings (--shard.*), read by hotkey::shard's Prober.
//
// Defaults, Validate() and thread safety as options.h says for every options struct.

#ifndef HOTKEY_CONFIG_SHARD_OPTIONS_H_
#define HOTKEY_CONFIG_SHARD_OPTIONS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hotkey/config/tap_options.h"

namespace hotkey::config {

// The shard itself, asked every `interval` for its load and shape (shard/prober.h): Redis's
// INFO and CLUSTER NODES, memcached's stats. The advice model takes what it measures before
// the --cluster.* flags.
struct ShardOptions {
  // host:port, [ipv6]:port, or a Unix socket path (starting with '/'). Empty: the daemon
  // asks 127.0.0.1:<--tap.port> when the tap captures an interface, and nothing otherwise
  // (Resolved()).
  std::string address;
  // The shard's protocol; unset: the tap's (--tap.protocol).
  std::optional<TapProtocol> protocol;
  // A file holding the password ("password"), or an ACL user and its password ("user
  // password"), on its first line; empty: no AUTH. Read at each connect, never a flag's value,
  // so it stays off the command line.
  std::string password_file;
  // TLS to the shard (TCP only). The CA file verifies the server (empty: the system's
  // default CAs); the certificate and key, given together, are the client's; the server
  // name is checked against the server's certificate and sent as SNI (empty: the address's
  // host).
  bool tls = false;
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_server_name;
  // CPUs the shard's bottleneck may use; 0: measured (Redis's main thread: 1 core, or its
  // cgroup's CPU quota where that is less; memcached: its threads or the quota). In [0, 1024].
  double cpus = 0;
  // How often the shard is asked; in [1s, 1h].
  absl::Duration interval = absl::Seconds(5);
  // Bound on connecting (TCP, TLS handshake, AUTH) and on each reply; in [1ms, 1h], and at
  // most the interval once Resolved().
  // Not a flag: a shard slower than this to answer INFO is no state to measure.
  absl::Duration timeout = absl::Seconds(2);

  // The most CPUs a flag may name.
  static constexpr double kMaxCpus = 1024;

  // True when `address` is a Unix socket path.
  bool unix_socket() const { return address.starts_with("/"); }
  // These options with the tap's defaults filled in: the address (127.0.0.1:<first tap
  // port>, when the tap is on and `address` is empty) and the protocol. An empty address
  // afterwards means: no probing.
  ShardOptions Resolved(const TapOptions& tap) const;

  absl::Status Validate() const;
  friend bool operator==(const ShardOptions&, const ShardOptions&) = default;
};

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_SHARD_OPTIONS_H_
