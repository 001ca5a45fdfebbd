// Tests for ReportBuffer (source/report_buffer.h): a published report is what was
// published and stays so while held; reports are recycled, so a warm publish allocates
// nothing; a lagging reader costs one more report, not a wrong one; reports outlive the
// buffer; publishing races no reader (run under ThreadSanitizer in CI).

#include "hotkey/source/report_buffer.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "checkers.h"

namespace hotkey::source {
namespace {

using testing::AllocationsOnThisThread;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

sketch::HeavyHitters Tracker() {
  sketch::HeavyHittersOptions o;
  o.candidates = 64;
  o.sketch_bytes = 4096;
  absl::StatusOr<sketch::HeavyHitters> hh = sketch::HeavyHitters::Create(o, kT0);
  REQUIRE(hh.ok());
  return *std::move(hh);
}

// Fills every candidate slot (the table's largest shape) and more.
void Fill(sketch::HeavyHitters& t, int round) {
  for (int i = 0; i < 200; ++i)
    t.Update(absl::StrCat("key:", (i * 7 + round) % 300), sketch::Op::kRead);
}

TEST_CASE("ReportBuffer: Latest is null before the first publish, then the last published",
          "[daemon][report_buffer]") {
  sketch::HeavyHitters t = Tracker();
  ReportBuffer b(t);
  CHECK(b.Latest() == nullptr);
  SourceCounters c;
  for (int i = 1; i <= 5; ++i) {
    t.Update("k", sketch::Op::kWrite);
    c.events = i;
    b.Publish(kT0 + absl::Seconds(i), t, nullptr, c);
    const std::shared_ptr<const SourceReport> r = b.Latest();
    REQUIRE(r);
    CHECK(r->time == kT0 + absl::Seconds(i));
    CHECK(r->counters.events == static_cast<uint64_t>(i));
    CHECK(r->tracker.Total(sketch::Op::kWrite) == Approx(t.Total(sketch::Op::kWrite)));
  }
}

TEST_CASE("ReportBuffer: a held report does not change while later ones are published",
          "[daemon][report_buffer]") {
  sketch::HeavyHitters t = Tracker();
  ReportBuffer b(t);
  SourceCounters c;
  c.events = 1;
  t.Update("held", sketch::Op::kRead);
  b.Publish(kT0, t, nullptr, c);
  const std::shared_ptr<const SourceReport> held = b.Latest();
  for (int i = 0; i < 10; ++i) {
    Fill(t, i);
    c.events = 100 + i;
    b.Publish(kT0 + absl::Seconds(i + 1), t, nullptr, c);
  }
  CHECK(held->time == kT0);
  CHECK(held->counters.events == 1);
  CHECK(held->tracker.size() == 1);
  CHECK(b.Latest()->counters.events == 109);
  // One report held by the test beyond the usual two: at most one more was made.
  CHECK(b.reports() <= ReportBuffer::kSlots + 1);
}

TEST_CASE("ReportBuffer: slot counts ride in the reports, and once warm cost no allocation",
          "[daemon][report_buffer]") {
  sketch::HeavyHitters t = Tracker();
  absl::StatusOr<source::SlotCounts> slots =
      source::SlotCounts::Create(sketch::HeavyHittersOptions{}, kT0);
  REQUIRE(slots.ok());
  ReportBuffer b(t);
  b.EnableSlots(*slots);
  SourceCounters c;
  for (int i = 0; i < 2 * ReportBuffer::kSlots; ++i) {
    slots->Update(absl::StrCat("user:{", i, "}:name"), sketch::Op::kRead);
    b.Publish(kT0, t, &*slots, c);
  }
  std::shared_ptr<const SourceReport> reader;
  for (int i = 0; i < 20; ++i) {
    slots->Update(absl::StrCat("user:{", i % 4, "}:x"), sketch::Op::kWrite, 2);
    reader = b.Latest();
    const uint64_t before = AllocationsOnThisThread();
    b.Publish(kT0 + absl::Milliseconds(i), t, &*slots, c);
    CHECK(AllocationsOnThisThread() == before);
  }
  const std::shared_ptr<const SourceReport> last = b.Latest();
  REQUIRE(last->slots);
  CHECK(last->slots->counts() == slots->counts());
  CHECK(last->slots->count(cluster::KeySlot("1")) == Approx(1 + 5 * 2));
  // Without EnableSlots, reports carry none.
  ReportBuffer plain(t);
  plain.Publish(kT0, t, nullptr, c);
  CHECK_FALSE(plain.Latest()->slots);
}

TEST_CASE("ReportBuffer: once warm, a publish allocates nothing, with a reader holding one",
          "[daemon][report_buffer]") {
  sketch::HeavyHitters t = Tracker();
  Fill(t, 0);
  ReportBuffer b(t);
  SourceCounters c;
  // Warm-up: every slot holds a full tracker once, and every control block is made.
  for (int i = 0; i < 2 * ReportBuffer::kSlots; ++i) b.Publish(kT0, t, nullptr, c);
  std::shared_ptr<const SourceReport> reader;
  for (int i = 0; i < 50; ++i) {
    Fill(t, i);
    c.events = i;
    reader = b.Latest();  // a reader keeps the previous report while the next is made
    const uint64_t before = AllocationsOnThisThread();
    b.Publish(kT0 + absl::Milliseconds(i), t, nullptr, c);
    CHECK(AllocationsOnThisThread() == before);
  }
  reader.reset();
  CHECK(b.reports() == ReportBuffer::kSlots);
}

TEST_CASE("ReportBuffer: readers holding every report get one more, still correct",
          "[daemon][report_buffer]") {
  sketch::HeavyHitters t = Tracker();
  ReportBuffer b(t);
  SourceCounters c;
  std::vector<std::shared_ptr<const SourceReport>> held;
  for (int i = 0; i < 2 * ReportBuffer::kSlots; ++i) {
    c.events = i;
    b.Publish(kT0, t, nullptr, c);
    held.push_back(b.Latest());
  }
  CHECK(b.reports() == 2 * ReportBuffer::kSlots);
  for (int i = 0; i < 2 * ReportBuffer::kSlots; ++i) {
    CHECK(held[i]->counters.events == static_cast<uint64_t>(i));
  }
}

TEST_CASE("ReportBuffer: at most kMaxReports are made; a publish finding all held is skipped",
          "[daemon][report_buffer]") {
  sketch::HeavyHitters t = Tracker();
  ReportBuffer b(t);
  SourceCounters c;
  std::vector<std::shared_ptr<const SourceReport>> held;
  for (int i = 0; i < 3 * ReportBuffer::kMaxReports; ++i) {
    c.events = i;
    CHECK((b.Publish(kT0, t, nullptr, c) != nullptr) == (i < ReportBuffer::kMaxReports));
    held.push_back(b.Latest());
  }
  CHECK(b.reports() == ReportBuffer::kMaxReports);
  CHECK(b.skipped() == 2 * ReportBuffer::kMaxReports);
  // The latest is the last one made; once a reader lets go, publishing works again.
  CHECK(b.Latest()->counters.events == ReportBuffer::kMaxReports - 1);
  held.clear();
  c.events = 1000;
  CHECK(b.Publish(kT0, t, nullptr, c));
  CHECK(b.Latest()->counters.events == 1000);
  CHECK(b.reports() == ReportBuffer::kMaxReports);
}

TEST_CASE("ReportBuffer: a report outlives its buffer", "[daemon][report_buffer]") {
  sketch::HeavyHitters t = Tracker();
  t.Update("k", sketch::Op::kRead);
  std::shared_ptr<const SourceReport> r;
  {
    ReportBuffer b(t);
    b.Publish(kT0, t, nullptr, SourceCounters{});
    r = b.Latest();
  }
  CHECK(r->tracker.size() == 1);  // and ASan sees no use after free
}

TEST_CASE("ReportBuffer: concurrent readers always see a whole report", "[daemon][report_buffer]") {
  sketch::HeavyHitters t = Tracker();
  ReportBuffer b(t);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 2; ++i) {
    readers.emplace_back([&] {
      while (!stop) {
        const std::shared_ptr<const SourceReport> r = b.Latest();
        // Each report was published with events == its tracker's raw read total.
        if (r &&
            static_cast<double>(r->counters.events) != r->tracker.RawTotal(sketch::Op::kRead)) {
          ++bad;
        }
      }
    });
  }
  SourceCounters c;
  for (int i = 0; i < 2000; ++i) {
    t.Update(absl::StrCat("k", i % 50), sketch::Op::kRead);
    ++c.events;
    b.Publish(kT0, t, nullptr, c);
  }
  stop = true;
  for (std::thread& r : readers) r.join();
  CHECK(bad == 0);
}

}  // namespace
}  // namespace hotkey::source
