// TapOptions: the tap's settings (--tap.*), read by hotkey::tap, and the tap's enums with
// their names and parsers (one table each, tap_options.cc). The shard client (shard_options.h)
// takes its protocol from here.
//
// Defaults, Validate() and thread safety as options.h says for every options struct.

#ifndef HOTKEY_CONFIG_TAP_OPTIONS_H_
#define HOTKEY_CONFIG_TAP_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/text/enum_names.h"

namespace hotkey::config {

// The tap (daemon/input/tap/tap_source.h): the shard's own TCP traffic, captured with libpcap on
// its port, reassembled and parsed into events, with no client change.
enum class TapProtocol { kRedis, kMemcached };
// ops: each key a request touches weighs 1. bytes: a request weighs its request bytes
// plus its reply's bytes, split evenly over its keys.
enum class TapWeight { kOps, kBytes };
// The names of --tap.protocol, --shard.protocol and --tap.weight, and of their labels.
inline constexpr text::EnumName<TapProtocol> kTapProtocolNames[] = {
    {TapProtocol::kRedis, "redis"}, {TapProtocol::kMemcached, "memcached"}};
inline constexpr text::EnumName<TapWeight> kTapWeightNames[] = {{TapWeight::kOps, "ops"},
                                                                {TapWeight::kBytes, "bytes"}};
constexpr std::string_view TapProtocolName(TapProtocol protocol) {
  return text::NameOf(kTapProtocolNames, protocol);
}
constexpr std::string_view TapWeightName(TapWeight weight) {
  return text::NameOf(kTapWeightNames, weight);
}
absl::StatusOr<TapProtocol> ParseTapProtocol(std::string_view text);  // redis, memcached
absl::StatusOr<TapWeight> ParseTapWeight(std::string_view text);      // ops, bytes

struct TapOptions {
  // The interface to capture on (lo, eth0, any); empty: no live capture.
  std::string interface;
  // A capture file (pcap or pcapng) read instead of an interface, through the same path;
  // at its end the source keeps its counts. Empty: none. Not with `interface`.
  std::string file;
  // The shard's server port, in [1, 65535]: exactly one when the tap is on. One tap is one
  // shard: a share is of one server's traffic, so two instances on one host need two
  // hotkeyds (a systemd template unit, a sidecar per pod), each tapping its own port. A
  // vector for the capture code (tcp::DecodeFrame's port list), of one element.
  std::vector<uint16_t> ports;
  TapProtocol protocol = TapProtocol::kRedis;
  TapWeight weight = TapWeight::kOps;
  // The kernel's capture ring (pcap_set_buffer_size); in [64 KiB, 1 GiB]. 16 MiB, as for
  // UDP: 4 MiB dropped packets beside redis-benchmark -P 16 on 2 busy cores.
  size_t buffer_bytes = size_t{16} << 20;
  // Bytes captured per frame (pcap_set_snaplen); in [128, 262144]. A frame cut short is
  // counted (truncated) and its flow resyncs.
  int snaplen = 262144;
  // Flows (client to server connections) tracked at once; a new one when the table is
  // full evicts the least recently active. In [1, 1048576].
  uint32_t max_flows = 10'000;
  // Bytes one flow direction's parser may hold (a partial request, its keys); with
  // --tap.weight=bytes also the bytes of one flow's requests awaiting their replies.
  // In [256 B, 16 MiB].
  size_t flow_buffer_bytes = size_t{16} << 10;
  // A flow idle this long is forgotten; in [1s, 24h].
  absl::Duration idle_timeout = absl::Minutes(5);

  // The tap's table of client hosts (hotkey/source/client_hosts.h, 4096 addresses with
  // their last-seen times); daemon/input/tap/ asserts it holds no more.
  static constexpr uint64_t kClientHostsBytes = 112 << 10;
  // Upper bound of one flow's state besides its buffers (the reassembler's slot, the
  // parsers' objects, the reply queue's bookkeeping); tests/daemon/input/tap pins it.
  static constexpr size_t kFlowStateBytes = 1024;
  // libpcap maps up to this many times buffer_bytes for the ring: TPACKET_V3 maps what is
  // asked (tests/daemon/input/tap/tap_live_test.cc pins it within the factor), but where libpcap
  // falls back to TPACKET_V2 it rounds up to whole frames of the snap length or the MTU, e.g. 8 MiB
  // for 4 MiB asked on lo.
  static constexpr uint64_t kRingFactor = 2;
  // Tap memory is refused above this (64 GiB).
  static constexpr uint64_t kMaxMemoryBytes = uint64_t{64} << 30;

  bool enabled() const { return !interface.empty() || !file.empty(); }
  // Buffers of flow_buffer_bytes one flow may hold: the request parser's (ops), plus the
  // reply parser's and the reply queue's (bytes).
  int BuffersPerFlow() const { return weight == TapWeight::kBytes ? 3 : 1; }
  // The tap's worst-case memory besides its tracker: max_flows x (flow_buffer_bytes x
  // BuffersPerFlow() + kFlowStateBytes) + kClientHostsBytes + kRingFactor x buffer_bytes
  // (the capture ring, live capture only). 0 when the tap is off.
  uint64_t MemoryBoundBytes() const;

  absl::Status Validate() const;
  friend bool operator==(const TapOptions&, const TapOptions&) = default;
};

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_TAP_OPTIONS_H_
