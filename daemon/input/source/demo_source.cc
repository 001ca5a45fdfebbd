#include "demo_source.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "hotkey/source/demo.h"
#include "hotkey/source/tracker_options.h"

namespace hotkey::source {

namespace {

// Waking more often buys nothing but wake-ups: the events due meanwhile come in a batch.
constexpr absl::Duration kMinSleep = absl::Milliseconds(1);

constexpr double CelebrityTotal() {
  double t = 0;
  for (const DemoSource::Celebrity& c : DemoSource::kCelebrities) t += c.share;
  return t;
}
constexpr double kCelebrityTotal = CelebrityTotal();
static_assert(kCelebrityTotal <= 1.0);

// A uniform double in [0, 1) from the top 53 bits of one 64-bit draw.
double Uniform(std::mt19937_64& gen) { return static_cast<double>(gen() >> 11) * 0x1p-53; }

}  // namespace

absl::StatusOr<std::unique_ptr<DemoSource>> DemoSource::Create(
    double rate, const sketch::HeavyHittersOptions& tracker, const clock::Clock& clock,
    uint64_t seed) {
  if (!std::isfinite(rate) || rate <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("demo rate must be > 0 events/s, got ", rate));
  }
  absl::StatusOr<sketch::HeavyHitters> hh = sketch::HeavyHitters::Create(tracker, clock.Now());
  if (!hh.ok()) return hh.status();
  return std::unique_ptr<DemoSource>(new DemoSource(rate, *std::move(hh), clock, seed));
}

DemoSource::DemoSource(double rate, sketch::HeavyHitters tracker, const clock::Clock& clock,
                       uint64_t seed)
    : PublishingSource(tracker),
      rate_(rate),
      clock_(clock),
      gen_(seed),
      zipf_(kBackgroundKeys - 1, kZipfExponent, 1.0),
      tracker_(std::move(tracker)) {
  std::memcpy(key_, "key:", 4);
}

DemoSource::~DemoSource() { Stop(); }

void DemoSource::Run() {
  while (!stopping()) {
    const absl::Duration wait = std::max(Step(), kMinSleep);
    clock_.WaitUntil(clock_.Now() + wait, waker_);
  }
}

absl::Duration DemoSource::Step() {
  const absl::Time now = clock_.Now();
  MakeDue(now);
  PublishIfAsked();
  const absl::Time next_event = start_ + absl::Seconds(static_cast<double>(made_ + 1) / rate_);
  return next_event - now;
}

void DemoSource::MakeDue(absl::Time now) {
  if (!started_) {
    started_ = true;
    start_ = now;
  }
  tracker_.Advance(now);  // one clock read per batch, not per event
  AdvanceSlots(now);
  // Event i (0-based) is due at start + (i + 1) / rate.
  const double elapsed = absl::ToDoubleSeconds(std::max(now - start_, absl::ZeroDuration()));
  const uint64_t due = static_cast<uint64_t>(std::floor(elapsed * rate_));
  const uint64_t max_batch =
      std::max<uint64_t>(1, static_cast<uint64_t>(absl::ToDoubleSeconds(kMaxBacklog) * rate_));
  if (due > made_ + max_batch) made_ = due - max_batch;  // drop the backlog
  if (made_ < due) counters_.last_event = now;
  for (; made_ < due; ++made_) MakeEvent();
}

void DemoSource::MakeEvent() {
  // One uniform draw picks the key and, by where it falls within the key's share, the op
  // (given the key, the position is again uniform).
  const double u = Uniform(gen_);
  ++counters_.events;
  double low = 0;
  for (const Celebrity& c : kCelebrities) {
    if (u < low + c.share) {
      const sketch::Op op =
          u - low < c.write_share * c.share ? sketch::Op::kWrite : sketch::Op::kRead;
      tracker_.Update(c.key, op);
      CountSlot(c.key, op, 1.0);
      return;
    }
    low += c.share;
  }
  const sketch::Op op = u - kCelebrityTotal < kBackgroundWriteShare * (1 - kCelebrityTotal)
                            ? sketch::Op::kWrite
                            : sketch::Op::kRead;
  const uint64_t rank = zipf_(gen_) + 1;  // absl's ranks start at 0
  char* end = std::to_chars(key_ + 4, key_ + sizeof key_, rank).ptr;
  const std::string_view key(key_, end - key_);
  tracker_.Update(key, op);
  CountSlot(key, op, 1.0);
}

void DemoSource::Publish() {
  const absl::Time now = clock_.Now();
  MakeDue(now);
  PublishReport(now, tracker_, counters_);
}

absl::StatusOr<std::unique_ptr<EventSource>> NewDemoSource(const config::DaemonOptions& options,
                                                           const clock::Clock& clock) {
  absl::StatusOr<std::unique_ptr<DemoSource>> s =
      DemoSource::Create(options.demo_rate, TrackerOptions(options.track), clock);
  if (!s.ok()) return s.status();
  return std::unique_ptr<EventSource>(*std::move(s));
}

}  // namespace hotkey::source
