#include "hotkey/tap/tap_counters.h"

#include <array>
#include <cstddef>
#include <iterator>

#include "hotkey/parsers/request.h"
#include "hotkey/tcp/packet.h"

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
constexpr std::string_view kCommands = "hotkey_tap_commands_total";
constexpr std::string_view kKeys = "hotkey_tap_keys_total";

// One sample: how it reads its value from TapCounters, and how it shows (MetricSample).
struct TapSample {
  uint64_t (*value)(const TapCounters&);
  MetricSample sample;
};

template <uint64_t TapCounters::*kField>
uint64_t Field(const TapCounters& c) {
  return c.*kField;
}

// A count of the one protocol the tap parses: the other protocol's sample reads 0.
template <uint64_t TapCounters::*kField, config::TapProtocol kProtocol>
uint64_t OfProtocol(const TapCounters& c) {
  return c.protocol == kProtocol ? c.*kField : 0;
}

template <tcp::DecodeStatus kStatus>
uint64_t SkippedFrames(const TapCounters& c) {
  return c.frames_skipped[static_cast<size_t>(kStatus)];
}

// A plain count, with no label.
template <uint64_t TapCounters::*kField>
constexpr TapSample Count(std::string_view family, std::string_view help,
                          std::string_view json = "", bool counter = true) {
  return {&Field<kField>, {family, help, counter, {}, json}};
}

// A count labelled `label`=`value`.
template <uint64_t TapCounters::*kField>
constexpr TapSample Labelled(std::string_view family, std::string_view help, std::string_view label,
                             std::string_view value, std::string_view json = "") {
  return {&Field<kField>, {family, help, true, {{{label, value}}}, json}};
}

// Frames skipped for `kStatus`, labelled by its name (tcp::kDecodeStatusNames).
template <tcp::DecodeStatus kStatus>
constexpr TapSample Skipped() {
  return {&SkippedFrames<kStatus>,
          {kSkipped, kSkippedHelp, true, {{{"reason", tcp::DecodeStatusName(kStatus)}}}, ""}};
}

template <config::TapProtocol kProtocol>
constexpr TapSample Commands() {
  return {&OfProtocol<&TapCounters::commands, kProtocol>,
          {kCommands,
           kCommandsHelp,
           true,
           {{{"protocol", config::TapProtocolName(kProtocol)}}},
           "commands"}};
}

template <config::TapProtocol kProtocol, parsers::Access kAccess>
constexpr TapSample Keys() {
  constexpr auto kField =
      kAccess == parsers::Access::kRead ? &TapCounters::read_keys : &TapCounters::write_keys;
  return {&OfProtocol<kField, kProtocol>,
          {kKeys,
           kKeysHelp,
           true,
           {{{"protocol", config::TapProtocolName(kProtocol)},
             {"access", text::NameOf(parsers::kAccessNames, kAccess)}}},
           kAccess == parsers::Access::kRead ? "read_keys" : "write_keys"}};
}

using config::TapProtocol;
using parsers::Access;
using tcp::DecodeStatus;
using C = TapCounters;

// Every sample of the tap, in the order of its schema (a family's samples adjacent). The
// JSON fields are the per-source ones of /api/v1/snapshot.
constexpr TapSample kTable[] = {
    Count<&C::packets>("hotkey_tap_packets_total", "Frames the tap read from the capture.",
                       "packets"),
    Count<&C::captured_bytes>(
        "hotkey_tap_captured_bytes_total",
        "Bytes of the frames the tap read, as captured (at most --tap.snaplen each)."),
    Count<&C::capture_errors>(
        "hotkey_tap_capture_errors_total",
        "Reads of the capture that failed (pcap_dispatch); a live capture tries again.",
        "capture_errors"),
    Labelled<&C::kernel_drops>("hotkey_tap_capture_drops_total", kDropsHelp, "where", "kernel",
                               "kernel_drops"),
    Labelled<&C::interface_drops>("hotkey_tap_capture_drops_total", kDropsHelp, "where",
                                  "interface", "interface_drops"),
    Skipped<DecodeStatus::kNotTcp>(),
    Skipped<DecodeStatus::kOtherPort>(),
    Skipped<DecodeStatus::kFragment>(),
    Skipped<DecodeStatus::kTruncated>(),
    Skipped<DecodeStatus::kMalformed>(),
    Skipped<DecodeStatus::kUnsupportedLink>(),
    Count<&C::flows>("hotkey_tap_flows", "TCP connections the tap tracks now.", "flows",
                     /*counter=*/false),
    Count<&C::flows_opened>("hotkey_tap_flows_opened_total",
                            "TCP connections the tap started tracking."),
    Labelled<&C::flows_closed>("hotkey_tap_flows_ended_total", kEndedHelp, "reason", "closed"),
    Labelled<&C::flows_expired>("hotkey_tap_flows_ended_total", kEndedHelp, "reason", "expired"),
    Labelled<&C::flows_evicted>("hotkey_tap_flows_ended_total", kEndedHelp, "reason", "evicted"),
    Count<&C::joined_midstream>(
        "hotkey_tap_flows_joined_midstream_total",
        "TCP connections first seen without their SYN (open before the tap started): each "
        "resyncs at its next request."),
    Count<&C::gaps>(
        "hotkey_tap_gaps_total",
        "Stream bytes lost (a dropped or reordered segment): the parser resyncs after each.",
        "gaps"),
    Count<&C::retransmitted_bytes>("hotkey_tap_retransmitted_bytes_total",
                                   "Payload bytes seen twice (TCP retransmissions), trimmed."),
    Labelled<&C::resyncs>("hotkey_tap_resyncs_total", kResyncsHelp, "direction", "request",
                          "resyncs"),
    Labelled<&C::reply_resyncs>("hotkey_tap_resyncs_total", kResyncsHelp, "direction", "reply"),
    Labelled<&C::protocol_errors>("hotkey_tap_protocol_errors_total", kErrorsHelp, "direction",
                                  "request"),
    Labelled<&C::reply_protocol_errors>("hotkey_tap_protocol_errors_total", kErrorsHelp,
                                        "direction", "reply"),
    Commands<TapProtocol::kRedis>(),
    Commands<TapProtocol::kMemcached>(),
    Keys<TapProtocol::kRedis, Access::kRead>(),
    Keys<TapProtocol::kRedis, Access::kWrite>(),
    Keys<TapProtocol::kMemcached, Access::kRead>(),
    Keys<TapProtocol::kMemcached, Access::kWrite>(),
    Count<&C::unknown_commands>(
        "hotkey_tap_unknown_commands_total",
        "Well-framed requests whose command is not in the command table: counted, their keys "
        "not."),
    Count<&C::excluded_requests>(
        "hotkey_tap_excluded_requests_total",
        "Requests left out by design: replication links (PSYNC, REPLCONF), memcached's binary "
        "protocol."),
    Count<&C::keys_dropped>("hotkey_tap_keys_dropped_total",
                            "Keys longer than --tap.flow-buffer-bytes allows: not counted."),
    Count<&C::replies>("hotkey_tap_replies_total",
                       "Replies matched to their requests (--tap.weight=bytes)."),
    Count<&C::replies_unmatched>(
        "hotkey_tap_replies_unmatched_total",
        "Replies with no request waiting (--tap.weight=bytes): pushes, a stream joined or "
        "resynced mid-way."),
    Labelled<&C::unanswered_queue_full>("hotkey_tap_requests_unanswered_total", kUnansweredHelp,
                                        "reason", "queue_full"),
    Labelled<&C::unanswered_gap>("hotkey_tap_requests_unanswered_total", kUnansweredHelp, "reason",
                                 "gap"),
    Labelled<&C::unanswered_closed>("hotkey_tap_requests_unanswered_total", kUnansweredHelp,
                                    "reason", "closed"),
    Count<&C::memory_bytes>("hotkey_tap_memory_bytes",
                            "Memory the tap holds now besides its tracker: flow table, parsers, "
                            "reply queues, client hosts.",
                            "", /*counter=*/false),
    Count<&C::memory_bound_bytes>(
        "hotkey_tap_memory_bound_bytes",
        "The most memory the tap can hold besides its tracker: --tap.max-flows x "
        "(--tap.flow-buffer-bytes x 1, or 3 with bytes weight, + 1 KiB) + 112 KiB (client "
        "hosts) + 2 x --tap.buffer-bytes (the capture ring).",
        "", /*counter=*/false),
    Count<&C::file_done>("hotkey_tap_capture_file_done",
                         "1 once --tap.file was read to its end (its counts stay).", "",
                         /*counter=*/false),
};
static_assert(std::size(kTable) <= source::kMaxSourceSamples);

// The schema's samples: the table's, in its order.
constexpr std::array<MetricSample, std::size(kTable)> kSamples = [] {
  std::array<MetricSample, std::size(kTable)> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = kTable[i].sample;
  return out;
}();

const source::MetricSchema kSchema = {"tap", kSamples};

}  // namespace

void TapCounters::Fill(source::SourceMetrics& out) const {
  out.schema = &kSchema;
  for (size_t i = 0; i < std::size(kTable); ++i) out.values[i] = kTable[i].value(*this);
}

const source::MetricSchema& TapMetricSchema() { return kSchema; }

}  // namespace hotkey::tap
