#include "hotkey/source/udp_counters.h"

#include <cstddef>

namespace hotkey::source {

namespace {

using parsers::Reject;

constexpr std::string_view kRejectedHelp = "Event lines rejected, by reason.";
constexpr std::string_view kDatagramsRejectedHelp =
    "Datagrams dropped whole, by reason: bad_header (an unknown protocol version), "
    "source_denied (outside --udp.allowed-sources).";

// In the order Fill() writes.
constexpr MetricSample kSamples[] = {
    {"hotkey_datagrams_received_total",
     "UDP datagrams received.",
     true,
     {},
     "datagrams_received",
     true},
    {"hotkey_datagrams_rejected_total",
     kDatagramsRejectedHelp,
     true,
     {{{"reason", "bad_header"}}},
     "events_rejected.bad_header",
     true},
    {"hotkey_datagrams_rejected_total",
     kDatagramsRejectedHelp,
     true,
     {{{"reason", "source_denied"}}},
     "datagrams_denied",
     true},
    {"hotkey_events_rejected_total",
     kRejectedHelp,
     true,
     {{{"reason", "empty_line"}}},
     "events_rejected.empty_line",
     true},
    {"hotkey_events_rejected_total",
     kRejectedHelp,
     true,
     {{{"reason", "unknown_op"}}},
     "events_rejected.unknown_op",
     true},
    {"hotkey_events_rejected_total",
     kRejectedHelp,
     true,
     {{{"reason", "missing_key"}}},
     "events_rejected.missing_key",
     true},
    {"hotkey_events_rejected_total",
     kRejectedHelp,
     true,
     {{{"reason", "key_too_long"}}},
     "events_rejected.key_too_long",
     true},
    {"hotkey_events_rejected_total",
     kRejectedHelp,
     true,
     {{{"reason", "bad_number"}}},
     "events_rejected.bad_number",
     true},
    {"hotkey_udp_receive_errors_total",
     "Receive system calls that failed for a reason other than no data.",
     true,
     {},
     "receive_errors",
     true},
};
static_assert(parsers::kNumRejects == 6, "one hotkey_*_rejected_total sample per reason");

const MetricSchema kSchema = {"udp", kSamples};

}  // namespace

void UdpCounters::Fill(SourceMetrics& out) const {
  out.schema = &kSchema;
  auto rejected_of = [&](Reject r) { return rejected[static_cast<size_t>(r)]; };
  const uint64_t values[] = {
      datagrams,
      rejected_of(Reject::kBadHeader),
      datagrams_denied,
      rejected_of(Reject::kEmptyLine),
      rejected_of(Reject::kUnknownOp),
      rejected_of(Reject::kMissingKey),
      rejected_of(Reject::kKeyTooLong),
      rejected_of(Reject::kBadNumber),
      receive_errors,
  };
  static_assert(std::size(values) == std::size(kSamples));
  static_assert(std::size(kSamples) <= kMaxSourceSamples);
  for (size_t i = 0; i < std::size(values); ++i) out.values[i] = values[i];
}

const MetricSchema& UdpMetricSchema() { return kSchema; }

}  // namespace hotkey::source
