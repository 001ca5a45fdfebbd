// The UDP receiver's own metrics: each count lands in the sample its schema names.

#include "hotkey/source/udp_counters.h"

#include <set>
#include <string>

#include <catch2/catch.hpp>

namespace hotkey::source {
namespace {

using parsers::Reject;

// A family's samples are adjacent (the exporter starts a family at each new name).
void CheckFamiliesAdjacent(const MetricSchema& schema) {
  std::set<std::string_view> done;
  for (size_t i = 0; i < schema.samples.size(); ++i) {
    const MetricSample& s = schema.samples[i];
    INFO(s.family);
    CHECK_FALSE(s.help.empty());
    if (i > 0 && schema.samples[i - 1].family == s.family) {
      CHECK(schema.samples[i - 1].help == s.help);
      continue;
    }
    CHECK(done.insert(s.family).second);
  }
}

TEST_CASE("UdpCounters: every count is its own sample, rejections by their reason's name",
          "[source]") {
  const MetricSchema& schema = UdpMetricSchema();
  CHECK(schema.kind == "udp");
  CheckFamiliesAdjacent(schema);

  UdpCounters c;
  c.datagrams = 1000;
  for (size_t i = 0; i < parsers::kNumRejects; ++i) c.rejected[i] = 10 + i;
  c.datagrams_denied = 7;
  c.receive_errors = 9;
  SourceMetrics m;
  c.Fill(m);
  REQUIRE(m.schema == &schema);
  CHECK(m.Sum("hotkey_datagrams_received_total") == 1000);
  CHECK(m.Sum("hotkey_udp_receive_errors_total") == 9);
  int reasons = 0;
  for (size_t i = 0; i < schema.samples.size(); ++i) {
    const MetricSample& s = schema.samples[i];
    if (s.labels[0].name != "reason") continue;
    INFO(s.family << " " << s.labels[0].value);
    if (s.labels[0].value == "source_denied") {
      CHECK(m.values[i] == 7);
      continue;
    }
    bool found = false;
    for (size_t r = 0; r < parsers::kNumRejects; ++r) {
      if (parsers::RejectName(static_cast<Reject>(r)) != s.labels[0].value) continue;
      found = true;
      CHECK(m.values[i] == 10 + r);
      // A bad header drops the whole datagram; the other reasons, a line.
      CHECK(s.family == (static_cast<Reject>(r) == Reject::kBadHeader
                             ? "hotkey_datagrams_rejected_total"
                             : "hotkey_events_rejected_total"));
    }
    CHECK(found);
    ++reasons;
  }
  CHECK(reasons == static_cast<int>(parsers::kNumRejects));
}

}  // namespace
}  // namespace hotkey::source
