#include "hotkey/tap/tap_counters.h"

#include <cstddef>
#include <iterator>

namespace hotkey::tap {

namespace {

using source::MetricSample;

constexpr std::string_view kDropsHelp =
    "Packets the capture lost (pcap_stats), by where: kernel (ps_drop, no room in the capture "
    "ring: raise --tap.buffer-bytes) and interface (ps_ifdrop, dropped by the interface or its "
    "driver).";
constexpr std::string_view kSkippedHelp =
    "Captured frames not used, by reason (not_tcp, other_port, fragment, truncated: cut by "
    "--tap.snaplen or broken, malformed, unsupported_link).";
constexpr std::string_view kEndedHelp =
    "TCP connections the tap stopped tracking, by reason: closed (FIN or RST), expired (idle "
    "past --tap.idle-timeout), evicted (the table of --tap.max-flows was full; the least "
    "recently active went).";
constexpr std::string_view kResyncsHelp =
    "Searches for the next message boundary after a gap or a protocol error, by direction "
    "(request; reply with --tap.weight=bytes).";
constexpr std::string_view kErrorsHelp =
    "Bytes that did not frame as a message of the protocol, by direction.";
constexpr std::string_view kCommandsHelp =
    "Requests parsed, by protocol (each queued command of MULTI/EXEC counts; known to the "
    "command table or not).";
constexpr std::string_view kKeysHelp =
    "Keys the parsed requests touched, by protocol and access (read, write): MGET a b c is "
    "three reads.";
constexpr std::string_view kUnansweredHelp =
    "Requests charged their request bytes only (--tap.weight=bytes), by reason: queue_full "
    "(the flow's queue of --tap.flow-buffer-bytes was full), gap (the flow lost bytes and had "
    "not resynced), closed (the flow ended first).";

constexpr std::string_view kSkipped = "hotkey_tap_frames_skipped_total";
constexpr std::string_view kKeys = "hotkey_tap_keys_total";

// In the order Fill() writes. The JSON fields are the per-source ones of /api/v1/snapshot.
constexpr MetricSample kSamples[] = {
    {"hotkey_tap_packets_total", "Frames the tap read from the capture.", true, {}, "packets"},
    {"hotkey_tap_captured_bytes_total",
     "Bytes of the frames the tap read, as captured (at most --tap.snaplen each).",
     true,
     {},
     ""},
    {"hotkey_tap_capture_errors_total",
     "Reads of the capture that failed (pcap_dispatch); a live capture tries again.",
     true,
     {},
     "capture_errors"},
    {"hotkey_tap_capture_drops_total", kDropsHelp, true, {{{"where", "kernel"}}}, "kernel_drops"},
    {"hotkey_tap_capture_drops_total",
     kDropsHelp,
     true,
     {{{"where", "interface"}}},
     "interface_drops"},
    {kSkipped, kSkippedHelp, true, {{{"reason", "not_tcp"}}}, ""},
    {kSkipped, kSkippedHelp, true, {{{"reason", "other_port"}}}, ""},
    {kSkipped, kSkippedHelp, true, {{{"reason", "fragment"}}}, ""},
    {kSkipped, kSkippedHelp, true, {{{"reason", "truncated"}}}, ""},
    {kSkipped, kSkippedHelp, true, {{{"reason", "malformed"}}}, ""},
    {kSkipped, kSkippedHelp, true, {{{"reason", "unsupported_link"}}}, ""},
    {"hotkey_tap_flows", "TCP connections the tap tracks now.", false, {}, "flows"},
    {"hotkey_tap_flows_opened_total", "TCP connections the tap started tracking.", true, {}, ""},
    {"hotkey_tap_flows_ended_total", kEndedHelp, true, {{{"reason", "closed"}}}, ""},
    {"hotkey_tap_flows_ended_total", kEndedHelp, true, {{{"reason", "expired"}}}, ""},
    {"hotkey_tap_flows_ended_total", kEndedHelp, true, {{{"reason", "evicted"}}}, ""},
    {"hotkey_tap_flows_joined_midstream_total",
     "TCP connections first seen without their SYN (open before the tap started): each resyncs "
     "at its next request.",
     true,
     {},
     ""},
    {"hotkey_tap_gaps_total",
     "Stream bytes lost (a dropped or reordered segment): the parser resyncs after each.",
     true,
     {},
     "gaps"},
    {"hotkey_tap_retransmitted_bytes_total",
     "Payload bytes seen twice (TCP retransmissions), trimmed.",
     true,
     {},
     ""},
    {"hotkey_tap_resyncs_total", kResyncsHelp, true, {{{"direction", "request"}}}, "resyncs"},
    {"hotkey_tap_resyncs_total", kResyncsHelp, true, {{{"direction", "reply"}}}, ""},
    {"hotkey_tap_protocol_errors_total", kErrorsHelp, true, {{{"direction", "request"}}}, ""},
    {"hotkey_tap_protocol_errors_total", kErrorsHelp, true, {{{"direction", "reply"}}}, ""},
    {"hotkey_tap_commands_total", kCommandsHelp, true, {{{"protocol", "redis"}}}, "commands"},
    {"hotkey_tap_commands_total", kCommandsHelp, true, {{{"protocol", "memcached"}}}, "commands"},
    {kKeys, kKeysHelp, true, {{{"protocol", "redis"}, {"access", "read"}}}, "read_keys"},
    {kKeys, kKeysHelp, true, {{{"protocol", "redis"}, {"access", "write"}}}, "write_keys"},
    {kKeys, kKeysHelp, true, {{{"protocol", "memcached"}, {"access", "read"}}}, "read_keys"},
    {kKeys, kKeysHelp, true, {{{"protocol", "memcached"}, {"access", "write"}}}, "write_keys"},
    {"hotkey_tap_unknown_commands_total",
     "Well-framed requests whose command is not in the command table: counted, their keys not.",
     true,
     {},
     ""},
    {"hotkey_tap_excluded_requests_total",
     "Requests left out by design: replication links (PSYNC, REPLCONF), memcached's binary "
     "protocol.",
     true,
     {},
     ""},
    {"hotkey_tap_keys_dropped_total",
     "Keys longer than --tap.flow-buffer-bytes allows: not counted.",
     true,
     {},
     ""},
    {"hotkey_tap_replies_total",
     "Replies matched to their requests (--tap.weight=bytes).",
     true,
     {},
     ""},
    {"hotkey_tap_replies_unmatched_total",
     "Replies with no request waiting (--tap.weight=bytes): pushes, a stream joined or resynced "
     "mid-way.",
     true,
     {},
     ""},
    {"hotkey_tap_requests_unanswered_total",
     kUnansweredHelp,
     true,
     {{{"reason", "queue_full"}}},
     ""},
    {"hotkey_tap_requests_unanswered_total", kUnansweredHelp, true, {{{"reason", "gap"}}}, ""},
    {"hotkey_tap_requests_unanswered_total", kUnansweredHelp, true, {{{"reason", "closed"}}}, ""},
    {"hotkey_tap_memory_bytes",
     "Memory the tap holds now besides its tracker: flow table, parsers, reply queues, client "
     "hosts.",
     false,
     {},
     ""},
    {"hotkey_tap_memory_bound_bytes",
     "The most memory the tap can hold besides its tracker: --tap.max-flows x "
     "(--tap.flow-buffer-bytes x 1, or 3 with bytes weight, + 1 KiB) + 112 KiB (client hosts) + "
     "2 x --tap.buffer-bytes (the capture ring).",
     false,
     {},
     ""},
    {"hotkey_tap_capture_file_done",
     "1 once --tap.file was read to its end (its counts stay).",
     false,
     {},
     ""},
};

const source::MetricSchema kSchema = {"tap", kSamples};

}  // namespace

void TapCounters::Fill(source::SourceMetrics& out) const {
  out.schema = &kSchema;
  const bool redis = protocol == config::TapProtocol::kRedis;
  auto of = [&](bool mine, uint64_t v) { return mine ? v : uint64_t{0}; };
  const uint64_t values[] = {
      packets,
      captured_bytes,
      capture_errors,
      kernel_drops,
      interface_drops,
      frames_skipped[1],
      frames_skipped[2],
      frames_skipped[3],
      frames_skipped[4],
      frames_skipped[5],
      frames_skipped[6],
      flows,
      flows_opened,
      flows_closed,
      flows_expired,
      flows_evicted,
      joined_midstream,
      gaps,
      retransmitted_bytes,
      resyncs,
      reply_resyncs,
      protocol_errors,
      reply_protocol_errors,
      of(redis, commands),
      of(!redis, commands),
      of(redis, read_keys),
      of(redis, write_keys),
      of(!redis, read_keys),
      of(!redis, write_keys),
      unknown_commands,
      excluded_requests,
      keys_dropped,
      replies,
      replies_unmatched,
      unanswered_queue_full,
      unanswered_gap,
      unanswered_closed,
      memory_bytes,
      memory_bound_bytes,
      file_done,
  };
  static_assert(std::size(values) == std::size(kSamples));
  static_assert(std::size(kSamples) <= source::kMaxSourceSamples);
  for (size_t i = 0; i < std::size(values); ++i) out.values[i] = values[i];
}

const source::MetricSchema& TapMetricSchema() { return kSchema; }

}  // namespace hotkey::tap
