// PublishingSource: the shape every EventSource shares. It owns the source's thread, its
// stop flag and its publish requests, the daemon's publish callback, and a recycled report
// buffer (report_buffer.h) that Latest() reads. An implementation supplies the thread's
// body (Run: read, count into its own tracker, and call PublishIfAsked() whenever woken),
// a way to wake that body (Wake), and its publish (Publish: count what has arrived, then
// PublishReport). Publishing is asked for from outside (RequestPublish, the daemon's
// tick), so no source keeps a timer of its own.
//
// Thread-safe as EventSource says: Run(), Publish() and PublishReport() on the source's
// thread only (or the caller's, in tests that drive a source without Start()); Latest(),
// RequestPublish(), Start() and Stop() from any thread.

#ifndef HOTKEY_SOURCE_PUBLISHING_SOURCE_H_
#define HOTKEY_SOURCE_PUBLISHING_SOURCE_H_

#include <pthread.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/time/time.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "hotkey/source/event_source.h"
#include "hotkey/source/report.h"
#include "hotkey/source/report_buffer.h"
#include "hotkey/source/slot_counts.h"

namespace hotkey::source {

class PublishingSource : public EventSource {
 public:
  void SetPublishCallback(PublishCallback on_publish) final { on_publish_ = std::move(on_publish); }
  std::shared_ptr<const SourceReport> Latest() const final { return reports_.Latest(); }
  void EnableSlots(const source::SlotCounts& prototype) override {
    slots_.emplace(prototype);
    reports_.EnableSlots(prototype);
  }

  // Runs Run() on a thread named "hotkey-<kind>" (top -H tells the sources apart); when it
  // returns (Stop()), publishes a last report. Once.
  void Start() final {
    thread_ = std::thread([this] {
      Run();
      Publish();
    });
    const std::string name = "hotkey-" + std::string(kind());
    pthread_setname_np(thread_.native_handle(), name.substr(0, 15).c_str());
  }
  void Stop() final {
    if (!thread_.joinable()) return;
    stopping_ = true;
    Wake();
    thread_.join();
  }
  void RequestPublish() final {
    publish_asked_ = true;
    Wake();
  }

 protected:
  // Reports are preallocated in the shape of `prototype`, the source's tracker.
  explicit PublishingSource(const sketch::HeavyHitters& prototype) : reports_(prototype) {}
  // Implementations call Stop() in their destructor: the thread uses their members.

  // The thread's body: returns once stopping() (Wake() is called when it turns true).
  virtual void Run() = 0;
  // Ends Run()'s present wait early, from any thread.
  virtual void Wake() = 0;
  // Counts what has arrived until now, then PublishReport().
  virtual void Publish() = 0;

  bool stopping() const { return stopping_.load(std::memory_order_relaxed); }
  // Counts an event by slot and tag, when EnableSlots() asked for it. Next to every
  // tracker update of the source, with the same weight.
  void CountSlot(std::string_view key, sketch::Op op, double weight) {
    if (slots_) slots_->Update(key, op, weight);
  }
  // Brings the tags' decay to `now`, as the tracker's: call it wherever the tracker is
  // advanced, so that tags and keys weigh an event alike.
  void AdvanceSlots(absl::Time now) {
    if (slots_) slots_->Advance(now);
  }
  // The slot counts (null unless EnableSlots() was called): for a part of the source that
  // counts on its behalf (the tap's pipeline).
  source::SlotCounts* slot_counts() { return slots_ ? &*slots_ : nullptr; }
  // Publishes if RequestPublish() was called since the last time.
  void PublishIfAsked() {
    if (publish_asked_.exchange(false)) Publish();
  }
  // Brings `tracker` to `now`, copies it and `counters` into a report stamped `now` (no
  // allocation once warm), and hands it to the daemon (none when the publish was skipped).
  void PublishReport(absl::Time now, sketch::HeavyHitters& tracker,
                     const SourceCounters& counters) {
    tracker.Advance(now);
    if (slots_) slots_->Advance(now);
    std::shared_ptr<const SourceReport> report =
        reports_.Publish(now, tracker, slots_ ? &*slots_ : nullptr, counters);
    if (report && on_publish_) on_publish_(std::move(report));
  }

 private:
  PublishCallback on_publish_;               // set before Start()
  std::optional<source::SlotCounts> slots_;  // set before Start()
  ReportBuffer reports_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> publish_asked_{false};
};

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_PUBLISHING_SOURCE_H_
