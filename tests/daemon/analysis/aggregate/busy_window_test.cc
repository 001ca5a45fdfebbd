// Tests of BusyWindow (aggregate/busy_window.h) on a fake time line: the shard's answers
// every 5 s, a 10 s window.

#include "hotkey/aggregate/busy_window.h"

#include <catch2/catch.hpp>

namespace hotkey::aggregate {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

absl::Time At(double seconds) { return kT0 + absl::Seconds(seconds); }

// The answer that ends at `end` s and covers the 5 s before it.
BusyWindow::Sample Answer(double end, double busy) { return {At(end - 5), At(end), busy}; }

TEST_CASE("BusyWindow: a steady load is the time-weighted mean of the window's answers",
          "[aggregate][advice]") {
  BusyWindow w(absl::Seconds(10));
  CHECK_FALSE(w.Over(At(0)).has_value());
  w.Add(Answer(5, 0.88));
  w.Add(Answer(10, 0.92));
  std::optional<BusyWindow::Sample> m = w.Over(At(11));
  REQUIRE(m);
  CHECK(m->busy == Approx(0.90));
  CHECK(m->start == At(0));
  CHECK(m->end == At(10));
  // An answer over 2 s weighs 2/5 of one over 5 s; at 15.5 s the answer that ended at 5 s
  // is out of the window.
  w.Add({At(10), At(12), 0.85});
  m = w.Over(At(15.5));
  REQUIRE(m);
  CHECK(m->busy == Approx((0.92 * 5 + 0.85 * 2) / 7));
  // Answers older than the window are out; none left: nullopt.
  CHECK_FALSE(w.Over(At(30)).has_value());
}

TEST_CASE("BusyWindow: a change of load starts the window afresh at its second answer",
          "[aggregate][advice]") {
  BusyWindow w(absl::Seconds(10));
  w.Add(Answer(5, 0.30));
  w.Add(Answer(10, 0.31));
  // A CPU quota at 12 s: the answer at 15 s is partly under it (0.56), the next wholly (0.97).
  w.Add(Answer(15, 0.56));
  std::optional<BusyWindow::Sample> m = w.Over(At(15));
  REQUIRE(m);
  CHECK(m->busy == Approx((0.31 + 0.56) / 2));  // one answer alone could be a burst
  CHECK_FALSE(w.Settled(At(15)));               // so a held fix waits for the next
  w.Add(Answer(20, 0.97));
  m = w.Over(At(20));
  REQUIRE(m);
  CHECK(m->busy == Approx(0.97));  // the second confirms it: not (0.56 + 0.97) / 2
  CHECK(m->start == At(15));
  CHECK(w.Settled(At(20)));
  // Within kLoadStep it averages: 0.97 and 0.93.
  w.Add(Answer(25, 0.93));
  m = w.Over(At(25));
  REQUIRE(m);
  CHECK(m->busy == Approx(0.95));
  CHECK(w.size() == 2);
  // Down as up: a quota lifted at 27 s.
  w.Add(Answer(30, 0.62));
  CHECK_FALSE(w.Settled(At(30)));
  w.Add(Answer(35, 0.40));
  CHECK(w.Settled(At(35)));
  m = w.Over(At(35));
  REQUIRE(m);
  CHECK(m->busy == Approx(0.40));
  CHECK(w.size() == 1);
}

TEST_CASE("BusyWindow: one burst is averaged, not read alone", "[aggregate][advice]") {
  // A steady 0.60 with one answer at 0.72 and one at 0.47: each differs from the window
  // by more than kLoadStep, the next answer goes back. Started afresh at each, the load
  // read would jump to 0.72, back to 0.60, down to 0.47: a fix advised and withdrawn.
  BusyWindow w(absl::Seconds(10));
  w.Add(Answer(5, 0.60));
  w.Add(Answer(10, 0.60));
  w.Add(Answer(15, 0.72));
  std::optional<BusyWindow::Sample> m = w.Over(At(15));
  REQUIRE(m);
  CHECK(m->busy == Approx(0.66));
  CHECK_FALSE(w.Settled(At(15)));
  // 0.60 differs from 0.72 by more than kLoadStep too, but in the other direction.
  w.Add(Answer(20, 0.60));
  m = w.Over(At(20));
  REQUIRE(m);
  CHECK(m->busy == Approx(0.66));
  CHECK_FALSE(w.Settled(At(20)));  // the burst is still in the window
  w.Add(Answer(25, 0.47));
  w.Add(Answer(30, 0.60));
  m = w.Over(At(30));
  REQUIRE(m);
  CHECK(m->busy == Approx(0.535));
  CHECK(w.size() == 2);
  CHECK_FALSE(w.Settled(At(30)));
  CHECK(w.Settled(At(35)));  // the 0.47 answer has left the window
}

// A hot key's fix went into force at 10.2 s (the kits took its reads off the shard): a change
// the daemon knows of, so the first answer begun after it is the load from then on, settled
// at once, where an unknown change waits for a second answer (above). An answer straddling
// the change is judged as before.
TEST_CASE("BusyWindow: after a known change the first answer begun since starts the window",
          "[aggregate][advice]") {
  BusyWindow w(absl::Seconds(10));
  w.Add(Answer(5, 1.0));
  w.Add(Answer(10, 1.0));
  w.ChangeAt(At(10.2));
  w.Add({At(10), At(10.5), 0.80});  // began before the change: a departure, unconfirmed
  CHECK_FALSE(w.Settled(At(10.5)));
  w.Add({At(10.5), At(11.5), 0.88});
  std::optional<BusyWindow::Sample> m = w.Over(At(11.5));
  REQUIRE(m);
  CHECK(m->busy == Approx(0.88));
  CHECK(m->start == At(10.5));
  CHECK(w.Settled(At(11.5)));
  CHECK(w.size() == 1);
  // Later answers are judged against it as usual.
  w.Add(Answer(16.5, 0.90));
  m = w.Over(At(16.5));
  REQUIRE(m);
  CHECK(m->busy == Approx((0.88 + 0.90 * 5) / 6));
  CHECK(w.Settled(At(16.5)));
}

TEST_CASE("BusyWindow: Over(since) reads only the answers begun since, as an episode's own",
          "[aggregate][advice]") {
  BusyWindow w(absl::Seconds(10));
  w.Add(Answer(5, 0.80));
  w.Add(Answer(10, 0.85));
  // A key turned hot at 7 s: the answer over 5-10 s began before its onset.
  CHECK_FALSE(w.Over(At(10), At(7)).has_value());
  w.Add(Answer(15, 0.86));
  std::optional<BusyWindow::Sample> m = w.Over(At(15), At(7));
  REQUIRE(m);
  CHECK(m->busy == Approx(0.86));
  CHECK(m->start == At(10));
}

TEST_CASE("BusyWindow: impossible answers are ignored, and the memory is bounded",
          "[aggregate][advice]") {
  BusyWindow w(absl::Hours(1));
  w.Add({At(5), At(5), 0.5});  // no interval
  w.Add({At(0), At(5), -0.1});
  w.Add({At(0), At(5), std::nan("")});
  CHECK(w.size() == 0);
  for (int i = 1; i <= 200; ++i) w.Add({At(i - 1), At(i), 0.5});
  CHECK(w.size() == BusyWindow::kMaxSamples);
  std::optional<BusyWindow::Sample> m = w.Over(At(200));
  REQUIRE(m);
  CHECK(m->busy == Approx(0.5));
  CHECK(m->start == At(200 - static_cast<double>(BusyWindow::kMaxSamples)));
}

}  // namespace
}  // namespace hotkey::aggregate
