// libFuzzer target: the UDP ingest path, parsers::ParseDatagram (parsers/wire.h) feeding a real
// sketch::HeavyHitters with every event, as a receiver does.
//
// Input: byte 0 picks the parser's key limit (0..63 bytes, so key_too_long is reached);
// byte 1 picks how far the tracker's clock moves after each event (0..255 ms against a
// 5 ms half-life, so forward decay rescales every few events); the rest is one datagram.
//
// Checked beyond "no crash, no sanitizer report": every event's key is at most the limit
// and holds no newline, every weight is finite and > 0, events + rejections <= lines + 1,
// and the tracker's bounds stay ordered and finite.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_util.h"
#include "hotkey/parsers/wire.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace hotkey::fuzz {

int FuzzProtocol(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t max_key = data[0] % 64;
  const absl::Duration step = absl::Milliseconds(data[1]);
  const std::string_view datagram(reinterpret_cast<const char*>(data) + 2, size - 2);

  sketch::HeavyHittersOptions o;
  o.candidates = 8;  // small, so admissions and evictions happen on short inputs
  o.sketch_bytes = 1024;
  o.sketch_depth = 2;
  o.max_key_bytes = 16;  // shorter than some keys: the truncated-key path
  o.half_life = absl::Milliseconds(5);
  absl::Time now = absl::FromUnixSeconds(1'700'000'000);
  absl::StatusOr<sketch::HeavyHitters> tracker = sketch::HeavyHitters::Create(o, now);
  FUZZ_CHECK_OK(tracker);

  const parsers::ParseStats stats =
      parsers::ParseDatagram(datagram, max_key, [&](const parsers::Event& e) {
        FUZZ_CHECK(e.key.size() <= max_key);
        FUZZ_CHECK(!e.key.empty());
        FUZZ_CHECK(e.key.find('\n') == std::string_view::npos);
        FUZZ_CHECK(std::isfinite(e.weight) && e.weight > 0);
        FUZZ_CHECK(e.op == sketch::Op::kRead || e.op == sketch::Op::kWrite);
        tracker->Update(e.key, e.op, e.weight);
        // Upper and lower bounds are sums of the same increments in different orders:
        // they may cross by a rounding error (heavy_hitters.cc's kSumSlack), no more.
        FUZZ_CHECK(tracker->Estimate(e.key) >= tracker->LowerBound(e.key) * (1 - 1e-9));
        now += step;
        tracker->Advance(now);
      });

  size_t lines = 1;
  for (char c : datagram) lines += c == '\n';
  uint64_t rejected = 0;
  for (uint64_t r : stats.rejected) rejected += r;
  FUZZ_CHECK(stats.events + rejected <= lines);
  if (stats.header_rejected) FUZZ_CHECK(stats.events == 0 && rejected == 1);

  FUZZ_CHECK(std::isfinite(tracker->Total()) && tracker->Total() >= 0);
  for (const sketch::HeavyHitter& h : tracker->TopK(o.candidates)) {
    FUZZ_CHECK(h.key.size() <= o.max_key_bytes);
    FUZZ_CHECK(std::isfinite(h.estimate) && std::isfinite(h.lower_bound));
    FUZZ_CHECK(h.lower_bound >= 0);
    // Float rounding of the decayed sums allows a hair of slack, no more.
    FUZZ_CHECK(h.lower_bound <= h.estimate * (1 + 1e-9) + 1e-300);
  }
  return 0;
}

}  // namespace hotkey::fuzz

#ifndef HOTKEY_FUZZ_NO_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hotkey::fuzz::FuzzProtocol(data, size);
}
#endif
