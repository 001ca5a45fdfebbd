// PublishingSource: what every EventSource shares. It keeps the daemon's publish callback
// and a recycled report buffer (report_buffer.h) that Latest() reads; an implementation
// counts into its own tracker on its own thread and calls PublishReport() each tick.
//
// Thread-safe as EventSource says: PublishReport() from the source's thread only;
// Latest() from any thread.

#ifndef HOTKEY_SOURCE_PUBLISHING_SOURCE_H_
#define HOTKEY_SOURCE_PUBLISHING_SOURCE_H_

#include <memory>
#include <utility>

#include "absl/time/time.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "hotkey/source/event_source.h"
#include "hotkey/source/report.h"
#include "hotkey/source/report_buffer.h"

namespace hotkey::source {

class PublishingSource : public EventSource {
 public:
  void SetPublishCallback(PublishCallback on_publish) final { on_publish_ = std::move(on_publish); }
  std::shared_ptr<const SourceReport> Latest() const final { return reports_.Latest(); }

 protected:
  // Reports are preallocated in the shape of `prototype`, the source's tracker.
  explicit PublishingSource(const sketch::HeavyHitters& prototype) : reports_(prototype) {}

  // Brings `tracker` to `now`, copies it and `counters` into a report stamped `now` (no
  // allocation once warm), and tells the daemon.
  void PublishReport(absl::Time now, sketch::HeavyHitters& tracker,
                     const SourceCounters& counters) {
    tracker.Advance(now);
    reports_.Publish(now, tracker, counters);
    if (on_publish_) on_publish_();
  }

 private:
  PublishCallback on_publish_;  // set before Start()
  ReportBuffer reports_;
};

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_PUBLISHING_SOURCE_H_
