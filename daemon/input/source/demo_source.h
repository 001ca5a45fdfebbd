// DemoSource: the --demo load, generated in-process: an EventSource (event_source.h) of
// kind "demo" that counts made-up events straight into its own tracker, on its own
// thread, at `rate` events per second. No socket and no load generator are involved.
//
// The mix: three celebrity keys, one per fix, and a Zipf background. At 9,500 ops/s on a
// 10,000 ops/s shard (the defaults), with B = the shard's load without the key and H its
// ops/s (shard_model.h):
//   profile, 22%, 3% writes, H = 2090: cache leaves B + Hw + A/refresh = 7410 + 63 + 50
//            = 0.75 C
//   likes, 25%, 95% writes, H = 2375: cache 0.95 C, replicate 0.94 C; split B + Hw/8 + Hr
//            = 0.75 C
//   stock, 25%, 50% writes, H = 2375: split 0.85 C; split+cache B + Hw/8 + A/refresh
//            = 0.73 C
// and the remaining 28% over background keys "key:<rank>", rank 1..100,000 drawn from
// Zipf with s = 1 (absl::zipf_distribution; see kZipfExponent), 10% writes.
//
// Pacing follows an absolute schedule on the injected (monotonic) clock: by time t after
// Start() (or the first Step()), floor(t * rate) events are made, in a batch per wake-up
// (the thread waits on the clock, Clock::WaitUntil, so a FakeClock paces it exactly); a
// backlog longer than kMaxBacklog (a stalled thread) is dropped, not replayed. A publish
// request (the daemon's tick) first makes the events due by then.
// Cost per event: one or two 64-bit draws, perhaps a Zipf draw and a decimal conversion,
// and one tracker update; no allocation, no lock. The generator is seeded: the same seed
// and the same clock readings give the same events.
//
// Thread-safe: Start, Stop, RequestPublish and Latest from any thread. Step() is the
// source thread's work; tests call it directly instead of Start(), driving the clock
// themselves.

#ifndef HOTKEY_SOURCE_DEMO_SOURCE_H_
#define HOTKEY_SOURCE_DEMO_SOURCE_H_

#include <cstdint>
#include <memory>
#include <random>
#include <string_view>

#include "absl/random/zipf_distribution.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/clock/clock.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "hotkey/source/publishing_source.h"
#include "hotkey/source/report.h"
#include "hotkey/source/report_buffer.h"

namespace hotkey::source {

class DemoSource final : public PublishingSource {
 public:
  struct Celebrity {
    std::string_view key;
    double share;        // of all events
    double write_share;  // of its events
  };
  static constexpr Celebrity kCelebrities[] = {{"user:celebrity:profile", 0.22, 0.03},
                                               {"post:viral:likes", 0.25, 0.95},
                                               {"item:flash-sale:stock", 0.25, 0.5}};
  static constexpr uint64_t kBackgroundKeys = 100'000;
  static constexpr double kBackgroundWriteShare = 0.1;
  // Zipf s = 1: absl::zipf_distribution needs q > 1, and q = 1 + 1e-6 changes no rank's
  // probability by more than 0.002% over 100,000 ranks (k^-1e-6 lies in [0.99998, 1]).
  static constexpr double kZipfExponent = 1 + 1e-6;
  // A longer backlog is dropped rather than made all at once.
  static constexpr absl::Duration kMaxBacklog = absl::Seconds(1);

  // `rate` > 0 events per second. `clock` (monotonic) must outlive the source.
  static absl::StatusOr<std::unique_ptr<DemoSource>> Create(
      double rate, const sketch::HeavyHittersOptions& tracker, const clock::Clock& clock,
      uint64_t seed = 1);
  ~DemoSource() override;

  std::string_view kind() const override { return "demo"; }

  // Makes the events due by the clock's present time and publishes if asked
  // (RequestPublish); returns how long until the next event is due. Not concurrently with
  // a running thread.
  absl::Duration Step();

  double rate() const { return rate_; }

 private:
  DemoSource(double rate, sketch::HeavyHitters tracker, const clock::Clock& clock, uint64_t seed);
  void Run() override;
  void Wake() override { waker_.Notify(); }
  void Publish() override;
  // Makes the events due by `now`.
  void MakeDue(absl::Time now);
  void MakeEvent();

  const double rate_;
  const clock::Clock& clock_;
  clock::Waker waker_;

  // Owned by the source thread (or the caller of Step()).
  std::mt19937_64 gen_;
  absl::zipf_distribution<uint64_t> zipf_;
  sketch::HeavyHitters tracker_;
  SourceCounters counters_;
  bool started_ = false;
  absl::Time start_;
  uint64_t made_ = 0;  // events due so far, made or dropped as backlog
  char key_[24] = {};  // "key:" + up to 20 digits
};

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_DEMO_SOURCE_H_
