// SourceMetrics: the counters and gauges that belong to one kind of source (the UDP
// receiver's datagrams and rejections, the tap's packets, flows and parsers), described by
// the source itself, so that serving (web/metrics.h) renders any kind without knowing it.
//
// A kind of source defines one MetricSchema: a static table of samples, each naming its
// Prometheus family, help, type and labels, and the JSON field /api/v1/snapshot shows it
// under. Its reports carry the values in the table's order in a fixed array: copying a
// report allocates nothing. Samples of one family are adjacent in the table; the first of
// a family carries its help.
//
// Thread-compatible: plain values.

#ifndef HOTKEY_SOURCE_SOURCE_METRICS_H_
#define HOTKEY_SOURCE_SOURCE_METRICS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace hotkey::source {

struct MetricLabel {
  std::string_view name;  // empty: no label
  std::string_view value;
};

struct MetricSample {
  std::string_view family;  // e.g. "hotkey_tap_packets_total"
  std::string_view help;    // the family's help text
  bool counter = true;      // else a gauge
  std::array<MetricLabel, 2> labels = {};
  // The field of /api/v1/snapshot that shows it, per source (samples with one field add up;
  // "a.b" nests b in object a); empty: not shown there.
  std::string_view json;
  // Also summed over the sources of this kind at the snapshot's top level.
  bool json_total = false;
};

struct MetricSchema {
  std::string_view kind;  // the source's kind(): "udp", "tap"
  std::span<const MetricSample> samples;
};

// The most samples a schema may have.
inline constexpr size_t kMaxSourceSamples = 48;

struct SourceMetrics {
  const MetricSchema* schema = nullptr;  // null: the source has no metrics of its own
  std::array<uint64_t, kMaxSourceSamples> values = {};

  // Adds `o`'s values; both of one schema.
  void Add(const SourceMetrics& o) {
    for (size_t i = 0; i < values.size(); ++i) values[i] += o.values[i];
  }
  // The sum of `family`'s samples; 0 when the schema has no such family.
  uint64_t Sum(std::string_view family) const {
    uint64_t sum = 0;
    if (schema == nullptr) return 0;
    for (size_t i = 0; i < schema->samples.size(); ++i) {
      if (schema->samples[i].family == family) sum += values[i];
    }
    return sum;
  }
};

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_SOURCE_METRICS_H_
