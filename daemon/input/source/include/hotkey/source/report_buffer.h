// ReportBuffer: how a source publishes its tracker and counters as an immutable shared
// SourceReport every tick without allocating: reports are recycled, not rebuilt.
//
// The buffer holds a few reports preallocated at the tracker's size (kSlots). Publish()
// copies the tracker into one that no reader holds (copy-assignment between trackers of
// the same options reuses every buffer) and makes it the latest. Readers get a shared_ptr
// from Latest(); when the last one lets go, the report returns to the free list, and the
// shared_ptr's control block to a block pool. Both hand-overs take the buffer's mutex, so
// the publisher's writes never race a reader's reads; that is one lock per publish, never
// one per event.
//
// Cost: once every slot has held a full tracker, a publish allocates nothing
// (report_buffer_test.cc counts). Only when readers hold every spare report at once (a
// reader slower than kSlots - 1 ticks) does Publish() allocate one more, which then stays
// in the pool; at most kMaxReports are ever made, so a source's reports hold at most
// kMaxReports copies of its tracker. A publish that finds every one of them held is
// skipped (counted): the tracker keeps counting, and the next publish carries it all.
//
// Thread-safe: Publish() from the source's thread; Latest() from any thread. Reports may
// outlive the buffer.

#ifndef HOTKEY_SOURCE_REPORT_BUFFER_H_
#define HOTKEY_SOURCE_REPORT_BUFFER_H_

#include <memory>

#include "absl/time/time.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "hotkey/source/report.h"

namespace hotkey::source {

class ReportBuffer {
 public:
  // The latest report, one a reader may still hold, and one to write into.
  static constexpr int kSlots = 3;
  // Reports made at most, held ones included: the memory bound of one source's copies.
  static constexpr int kMaxReports = 2 * kSlots;

  // Preallocates kSlots reports shaped like `prototype`.
  explicit ReportBuffer(const sketch::HeavyHitters& prototype);
  ~ReportBuffer();
  ReportBuffer(const ReportBuffer&) = delete;
  ReportBuffer& operator=(const ReportBuffer&) = delete;

  // From now on reports also carry slot counts shaped like `prototype` (preallocated in the
  // free reports). Before the first Publish().
  void EnableSlots(const source::SlotCounts& prototype);

  // The report published, now the latest; null (counted in skipped()) when readers hold
  // kMaxReports reports. `slots` is null unless EnableSlots() was called.
  std::shared_ptr<const SourceReport> Publish(absl::Time time, const sketch::HeavyHitters& tracker,
                                              const source::SlotCounts* slots,
                                              const SourceCounters& counters);

  // The last published report; null before the first Publish().
  std::shared_ptr<const SourceReport> Latest() const;

  // Reports in the pool, free or held: kSlots unless readers lagged.
  int reports() const;
  // Publishes skipped because readers held kMaxReports reports.
  uint64_t skipped() const;

  // The reports, blocks and mutex (report_buffer.cc); shared with the reports handed out.
  struct Pool;

 private:
  const std::shared_ptr<Pool> pool_;
};

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_REPORT_BUFFER_H_
