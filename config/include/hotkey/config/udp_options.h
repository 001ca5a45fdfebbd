// UdpOptions: the UDP receivers' settings (--udp.*), read by hotkey::source's UdpReceiver.
//
// Defaults, Validate() and thread safety as options.h says for every options struct.

#ifndef HOTKEY_CONFIG_UDP_OPTIONS_H_
#define HOTKEY_CONFIG_UDP_OPTIONS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace hotkey::config {

// The UDP ingest side (daemon receivers).
struct UdpOptions {
  // host:port, [v6-host]:port or :port (all interfaces). Port 0 asks the kernel for one.
  // Empty: no UDP receiver (another source, the tap or the demo, must be on).
  std::string listen_address = "127.0.0.1:10111";
  // Receiver threads, each with its own SO_REUSEPORT socket and Tracker; in [1, 64].
  int receivers = 1;
  // SO_RCVBUF requested per socket; the kernel caps it at net.core.rmem_max.
  // In [4 KiB, 1 GiB]: 16 MiB holds ~0.2 s of 1 Gbit/s of datagrams, riding out scrapes.
  size_t read_buffer_bytes = size_t{16} << 20;
  // Datagrams per recvmmsg call; in [1, 1024] (the kernel's UIO_MAXIOV).
  int batch = 64;
  // Source networks allowed to send, as CIDRs ("10.0.0.0/8", "::1/128", or a bare
  // address); empty allows every source. Compile them with ParseCidr (values.h).
  std::vector<std::string> allowed_sources;

  // The largest UDP payload. No key in a datagram is longer, so the receiver rejects none
  // as too long: a key longer than --key.max-bytes (TrackOptions::max_key_bytes) is
  // tracked as its prefix plus a hash, as from every other source.
  static constexpr size_t kMaxPayloadBytes = 65507;

  // Whether the daemon receives UDP events at all.
  bool enabled() const { return !listen_address.empty(); }

  absl::Status Validate() const;
  friend bool operator==(const UdpOptions&, const UdpOptions&) = default;
};

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_UDP_OPTIONS_H_
