// Tests of AdviceHold (aggregate/advice_hold.h) on a fake time line.

#include "hotkey/aggregate/advice_hold.h"

#include <catch2/catch.hpp>

namespace hotkey::aggregate {
namespace {

using model::Strategy;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

// One tick at kT0 + `seconds` observing key 1 with `answer`; returns the held fix.
Strategy Tick(AdviceHold& hold, double seconds, Strategy answer) {
  hold.Begin(kT0 + absl::Seconds(seconds));
  const Strategy held = hold.Observe(1, answer);
  hold.Finish();
  return held;
}

TEST_CASE("AdviceHold: the first answer is taken at once", "[aggregate][advice]") {
  AdviceHold hold(absl::Seconds(30));
  CHECK(Tick(hold, 0, Strategy::kSplit) == Strategy::kSplit);
}

TEST_CASE("AdviceHold: a new fix replaces the held one after winning for the dwell",
          "[aggregate][advice]") {
  AdviceHold hold(absl::Seconds(30));
  CHECK(Tick(hold, 0, Strategy::kCache) == Strategy::kCache);
  for (int t = 1; t < 31; ++t) {
    INFO("t=" << t);
    CHECK(Tick(hold, t, Strategy::kSplit) == Strategy::kCache);  // since 1 s: 30 s at 31 s
  }
  CHECK(Tick(hold, 31, Strategy::kSplit) == Strategy::kSplit);
  CHECK(Tick(hold, 32, Strategy::kSplit) == Strategy::kSplit);
}

TEST_CASE("AdviceHold: an answer that flickers back to the held fix never replaces it",
          "[aggregate][advice]") {
  AdviceHold hold(absl::Seconds(10));
  CHECK(Tick(hold, 0, Strategy::kCache) == Strategy::kCache);
  // Other answers for 9 s at a time, taking turns, then the held one again: it stays.
  const Strategy others[] = {Strategy::kNone, Strategy::kIsolate, Strategy::kSplit};
  double t = 0;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 9; ++i) CHECK(Tick(hold, ++t, others[(round + i) % 3]) == Strategy::kCache);
    CHECK(Tick(hold, ++t, Strategy::kCache) == Strategy::kCache);
  }
}

TEST_CASE("AdviceHold: a held fix that keeps losing goes, even while the others take turns",
          "[aggregate][advice]") {
  AdviceHold hold(absl::Seconds(10));
  CHECK(Tick(hold, 0, Strategy::kNone) == Strategy::kNone);
  // The load grew: split and split_cache take turns, none is never the answer again.
  for (int t = 1; t < 11; ++t) {
    INFO("t=" << t);
    CHECK(Tick(hold, t, t % 2 ? Strategy::kSplit : Strategy::kSplitCache) == Strategy::kNone);
  }
  CHECK(Tick(hold, 11, Strategy::kSplit) == Strategy::kSplit);  // losing since 1 s: 10 s
  CHECK(Tick(hold, 12, Strategy::kSplitCache) == Strategy::kSplit);
}

TEST_CASE("AdviceHold: a key not observed at a tick is forgotten", "[aggregate][advice]") {
  AdviceHold hold(absl::Seconds(30));
  hold.Begin(kT0);
  CHECK(hold.Observe(1, Strategy::kCache) == Strategy::kCache);
  CHECK(hold.Observe(2, Strategy::kSplit) == Strategy::kSplit);
  hold.Finish();
  CHECK(hold.size() == 2);
  hold.Begin(kT0 + absl::Seconds(1));
  CHECK(hold.Observe(2, Strategy::kNone) == Strategy::kSplit);
  hold.Finish();
  CHECK(hold.size() == 1);
  // Key 1 comes back: a first answer again.
  CHECK(Tick(hold, 2, Strategy::kIsolate) == Strategy::kIsolate);
}

TEST_CASE("AdviceHold: a dwell of 0 follows every answer", "[aggregate][advice]") {
  AdviceHold hold(absl::ZeroDuration());
  CHECK(Tick(hold, 0, Strategy::kCache) == Strategy::kCache);
  CHECK(Tick(hold, 1, Strategy::kSplit) == Strategy::kSplit);
  CHECK(Tick(hold, 2, Strategy::kNone) == Strategy::kNone);
}

}  // namespace
}  // namespace hotkey::aggregate
