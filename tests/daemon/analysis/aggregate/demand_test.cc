// Tests of the DemandLedger (aggregate/demand.h): the kits' reports of what they absorbed,
// turned into ops per second over the span they cover.

#include "hotkey/aggregate/demand.h"

#include <catch2/catch.hpp>

namespace hotkey::aggregate {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

absl::Time At(double seconds) { return kT0 + absl::Seconds(seconds); }

TEST_CASE("DemandLedger: steady reports of many kits give their summed rate", "[daemon][demand]") {
  DemandLedger ledger(absl::Seconds(10), 4);
  // Three kits, each absorbing 1,000 reads/s and 10 writes/s, reporting every second at
  // different phases.
  for (int s = 1; s <= 20; ++s) {
    for (double phase : {0.1, 0.4, 0.7}) {
      REQUIRE(ledger.Add(At(s + phase), "k", 1000, 10, absl::Seconds(1)));
    }
  }
  const absl::Time now = At(20.8);
  for (absl::Duration span : {absl::Seconds(3), absl::Seconds(10)}) {
    INFO(absl::FormatDuration(span));
    std::optional<DemandLedger::Absorbed> a = ledger.Over("k", now - span, now);
    REQUIRE(a);
    // The span covered runs from the earliest kit's interval: the kits' reports are short
    // of it by less than one interval, under one part in the span's seconds.
    const double bound = 1.0 / absl::ToDoubleSeconds(span);
    CHECK(a->ops_per_second[0] <= 3000);
    CHECK(a->ops_per_second[0] == Approx(3000).epsilon(bound));
    CHECK(a->ops_per_second[1] == Approx(30).epsilon(bound));
  }
  CHECK_FALSE(ledger.Over("other", now - absl::Seconds(3), now));
}

TEST_CASE("DemandLedger: a first report's rate is over the interval it covers, not the span",
          "[daemon][demand]") {
  DemandLedger ledger(absl::Seconds(10), 4);
  // A kit that could not report for 30 s sends 30 s of counts at once: 100/s, not 3,000/s.
  ledger.Add(At(30), "k", 3000, 0, absl::Seconds(30));
  std::optional<DemandLedger::Absorbed> a = ledger.Over("k", At(27), At(30));
  REQUIRE(a);
  CHECK(a->ops_per_second[0] == Approx(100));
  // One report of 1,000 reads over 0.5 s: 2,000/s for the second after it, which the next
  // report would cover; with none, the rate decays: 1,000 reads over the 1 s since it began
  // half a second later.
  ledger.Add(At(40), "j", 1000, 0, absl::Milliseconds(500));
  a = ledger.Over("j", At(37), At(40.5));
  REQUIRE(a);
  CHECK(a->ops_per_second[0] == Approx(2000));
  a = ledger.Over("j", At(37), At(41.5));
  REQUIRE(a);
  CHECK(a->ops_per_second[0] == Approx(1000));
}

TEST_CASE("DemandLedger: reports older than the span or the window do not count",
          "[daemon][demand]") {
  DemandLedger ledger(absl::Seconds(10), 4);
  ledger.Add(At(1), "k", 1000, 0, absl::Seconds(1));
  CHECK(ledger.Over("k", At(0.5), At(2)));
  CHECK_FALSE(ledger.Over("k", At(1), At(2)));  // arrived at the span's start: outside
  // Past the window, even when asked for more.
  CHECK_FALSE(ledger.Over("k", At(0), At(11.5)));
  ledger.Expire(At(11.5));
  CHECK(ledger.size() == 0);
}

TEST_CASE("DemandLedger: at most max_keys keys; expired keys make room", "[daemon][demand]") {
  DemandLedger ledger(absl::Seconds(10), 2);
  CHECK(ledger.Add(At(1), "a", 1, 0, absl::Seconds(1)));
  CHECK(ledger.Add(At(1), "b", 1, 0, absl::Seconds(1)));
  CHECK_FALSE(ledger.Add(At(1), "c", 1, 0, absl::Seconds(1)));
  CHECK(ledger.Add(At(2), "a", 1, 0, absl::Seconds(1)));  // a key held takes more
  CHECK(ledger.size() == 2);
  ledger.Expire(At(11.5));  // b's only report is older than the window; a's is not
  CHECK(ledger.size() == 1);
  CHECK(ledger.Add(At(11.5), "c", 1, 0, absl::Seconds(1)));
  CHECK(ledger.MemoryBound(64) > 2 * 64);
}

TEST_CASE("DemandLedger: a ring reused second after second keeps only the window",
          "[daemon][demand]") {
  DemandLedger ledger(absl::Seconds(3), 1);
  for (int s = 1; s <= 100; ++s)
    ledger.Add(At(s), "k", s < 50 ? 1'000'000 : 10, 0, absl::Seconds(1));
  std::optional<DemandLedger::Absorbed> a = ledger.Over("k", At(97), At(100));
  REQUIRE(a);
  CHECK(a->ops_per_second[0] == Approx(10));
}

}  // namespace
}  // namespace hotkey::aggregate
