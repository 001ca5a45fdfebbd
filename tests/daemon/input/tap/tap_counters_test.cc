// The tap's own metrics: each count lands in the sample its schema names, and the parsers'
// counts under the protocol the tap parses.

#include "hotkey/tap/tap_counters.h"

#include <iterator>
#include <set>
#include <string>

#include <catch2/catch.hpp>

namespace hotkey::tap {
namespace {

using source::MetricSample;
using source::SourceMetrics;

// The value of the sample of `family` whose labels include every one of `labels`.
uint64_t Sample(const SourceMetrics& m, std::string_view family,
                std::initializer_list<std::string_view> labels = {}) {
  for (size_t i = 0; i < m.schema->samples.size(); ++i) {
    const MetricSample& s = m.schema->samples[i];
    if (s.family != family) continue;
    bool all = true;
    for (std::string_view l : labels) {
      all = all && (s.labels[0].value == l || s.labels[1].value == l);
    }
    if (all) return m.values[i];
  }
  FAIL("no sample " << family);
  return 0;
}

TEST_CASE("TapCounters: every count is its own sample; families are adjacent", "[tap]") {
  const source::MetricSchema& schema = TapMetricSchema();
  CHECK(schema.kind == "tap");
  std::set<std::string_view> families;
  for (size_t i = 0; i < schema.samples.size(); ++i) {
    const MetricSample& s = schema.samples[i];
    INFO(s.family);
    CHECK(s.family.starts_with("hotkey_tap_"));
    CHECK_FALSE(s.help.empty());
    if (i == 0 || schema.samples[i - 1].family != s.family) CHECK(families.insert(s.family).second);
  }

  TapCounters c;
  c.packets = 1;
  c.captured_bytes = 2;
  c.capture_errors = 3;
  c.kernel_drops = 4;
  c.interface_drops = 5;
  for (size_t i = 0; i < c.frames_skipped.size(); ++i) c.frames_skipped[i] = 100 + i;
  c.flows = 6;
  c.flows_opened = 7;
  c.flows_closed = 8;
  c.flows_expired = 9;
  c.flows_evicted = 10;
  c.gaps = 11;
  c.resyncs = 12;
  c.reply_resyncs = 13;
  c.protocol = config::TapProtocol::kMemcached;
  c.commands = 14;
  c.read_keys = 15;
  c.write_keys = 16;
  c.unanswered_queue_full = 17;
  c.unanswered_gap = 18;
  c.unanswered_closed = 19;
  c.memory_bound_bytes = 20;
  c.file_done = 1;
  SourceMetrics m;
  c.Fill(m);
  REQUIRE(m.schema == &schema);
  CHECK(Sample(m, "hotkey_tap_packets_total") == 1);
  CHECK(Sample(m, "hotkey_tap_captured_bytes_total") == 2);
  CHECK(Sample(m, "hotkey_tap_capture_errors_total") == 3);
  CHECK(Sample(m, "hotkey_tap_capture_drops_total", {"kernel"}) == 4);
  CHECK(Sample(m, "hotkey_tap_capture_drops_total", {"interface"}) == 5);
  CHECK(Sample(m, "hotkey_tap_frames_skipped_total", {"not_tcp"}) == 101);
  CHECK(Sample(m, "hotkey_tap_frames_skipped_total", {"unsupported_link"}) == 106);
  CHECK(m.Sum("hotkey_tap_frames_skipped_total") == 101 + 102 + 103 + 104 + 105 + 106);
  CHECK(Sample(m, "hotkey_tap_flows") == 6);
  CHECK(Sample(m, "hotkey_tap_flows_opened_total") == 7);
  CHECK(Sample(m, "hotkey_tap_flows_ended_total", {"closed"}) == 8);
  CHECK(Sample(m, "hotkey_tap_flows_ended_total", {"expired"}) == 9);
  CHECK(Sample(m, "hotkey_tap_flows_ended_total", {"evicted"}) == 10);
  CHECK(Sample(m, "hotkey_tap_gaps_total") == 11);
  CHECK(Sample(m, "hotkey_tap_resyncs_total", {"request"}) == 12);
  CHECK(Sample(m, "hotkey_tap_resyncs_total", {"reply"}) == 13);
  CHECK(Sample(m, "hotkey_tap_commands_total", {"memcached"}) == 14);
  CHECK(Sample(m, "hotkey_tap_commands_total", {"redis"}) == 0);
  CHECK(Sample(m, "hotkey_tap_keys_total", {"memcached", "read"}) == 15);
  CHECK(Sample(m, "hotkey_tap_keys_total", {"memcached", "write"}) == 16);
  CHECK(Sample(m, "hotkey_tap_keys_total", {"redis", "read"}) == 0);
  CHECK(Sample(m, "hotkey_tap_requests_unanswered_total", {"queue_full"}) == 17);
  CHECK(Sample(m, "hotkey_tap_requests_unanswered_total", {"gap"}) == 18);
  CHECK(Sample(m, "hotkey_tap_requests_unanswered_total", {"closed"}) == 19);
  CHECK(Sample(m, "hotkey_tap_memory_bound_bytes") == 20);
  CHECK(Sample(m, "hotkey_tap_capture_file_done") == 1);

  c.protocol = config::TapProtocol::kRedis;
  c.Fill(m);
  CHECK(Sample(m, "hotkey_tap_commands_total", {"redis"}) == 14);
  CHECK(Sample(m, "hotkey_tap_commands_total", {"memcached"}) == 0);
  CHECK(Sample(m, "hotkey_tap_keys_total", {"redis", "write"}) == 16);
}

TEST_CASE("TapCounters: each count shows in exactly one sample, and each sample shows one count",
          "[tap]") {
  // Every count a distinct power of two: a sample's value says which count it reads.
  TapCounters c;
  uint64_t* const counts[] = {&c.packets,
                              &c.captured_bytes,
                              &c.capture_errors,
                              &c.kernel_drops,
                              &c.interface_drops,
                              &c.frames_skipped[1],
                              &c.frames_skipped[2],
                              &c.frames_skipped[3],
                              &c.frames_skipped[4],
                              &c.frames_skipped[5],
                              &c.frames_skipped[6],
                              &c.flows,
                              &c.flows_opened,
                              &c.flows_closed,
                              &c.flows_expired,
                              &c.flows_evicted,
                              &c.joined_midstream,
                              &c.gaps,
                              &c.retransmitted_bytes,
                              &c.commands,
                              &c.read_keys,
                              &c.write_keys,
                              &c.unknown_commands,
                              &c.protocol_errors,
                              &c.resyncs,
                              &c.keys_dropped,
                              &c.excluded_requests,
                              &c.reply_protocol_errors,
                              &c.reply_resyncs,
                              &c.replies,
                              &c.replies_unmatched,
                              &c.unanswered_queue_full,
                              &c.unanswered_gap,
                              &c.unanswered_closed,
                              &c.memory_bytes,
                              &c.memory_bound_bytes,
                              &c.file_done};
  for (size_t i = 0; i < std::size(counts); ++i) *counts[i] = uint64_t{1} << i;
  for (const config::TapProtocol protocol :
       {config::TapProtocol::kRedis, config::TapProtocol::kMemcached}) {
    c.protocol = protocol;
    SourceMetrics m;
    c.Fill(m);
    uint64_t seen = 0;
    size_t zero = 0;
    for (size_t i = 0; i < m.schema->samples.size(); ++i) {
      INFO(m.schema->samples[i].family << " " << m.schema->samples[i].labels[0].value);
      const uint64_t v = m.values[i];
      if (v == 0) {
        ++zero;  // the other protocol's commands and keys
        continue;
      }
      CHECK((v & (v - 1)) == 0);  // one count
      CHECK((seen & v) == 0);     // not shown twice
      seen |= v;
    }
    CHECK(seen == (uint64_t{1} << std::size(counts)) - 1);
    CHECK(zero == 3);
  }
}

}  // namespace
}  // namespace hotkey::tap
