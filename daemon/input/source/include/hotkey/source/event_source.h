// EventSource: where events come from. The daemon starts, stops and merges any number of
// them; each runs on its own thread, counts into its own tracker (single writer, no lock
// and no allocation per event) and publishes an immutable SourceReport every tick.
//
// Implementations: UdpReceiver (udp_receiver.h, clients send sampled events over UDP),
// DemoSource (demo.h, the --demo load generated in-process) and tap::TapSource (tap/, the
// shard's own traffic captured with libpcap). A source fills its SourceReport (report.h);
// the aggregator (aggregate/aggregator.h) reads and merges them. Each derives from PublishingSource
// (publishing_source.h), which holds the thread, the stop flag, the callback and the
// report buffer they share.
//
// Publishing is driven from outside: the daemon's tick (clock/ticker.h, on its monotonic
// clock) calls RequestPublish() on every source, and each publishes on its own thread,
// having first counted what has arrived. So no source keeps a timer, and a test on a
// FakeClock decides when every report is made.
//
// Life cycle: Create (the implementation's factory; binds, validates), Start() once,
// Stop() once (stop input, drain, publish a last report, join); the destructor stops.
//
// Thread-safe: Start, Stop, RequestPublish and Latest may be called from any thread.

#ifndef HOTKEY_SOURCE_EVENT_SOURCE_H_
#define HOTKEY_SOURCE_EVENT_SOURCE_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hotkey::source {

class SlotCounts;

struct SourceReport;

class EventSource {
 public:
  // Called on the source's thread after each publish, with the report just published, so
  // that the daemon needs no second trip to read it; must be cheap (post and return).
  using PublishCallback = std::function<void(std::shared_ptr<const SourceReport> report)>;

  virtual ~EventSource() = default;

  // What kind of source this is, for logs ("udp", "demo", "tap").
  virtual std::string_view kind() const = 0;
  // How it is set up, as log fields (key, value); empty when there is nothing to add.
  virtual std::vector<std::pair<std::string, std::string>> Describe() const { return {}; }

  // Called before Start(), at most once: the source also counts its traffic by Redis
  // Cluster slot and hash tag (source/slot_counts.h), into counts shaped like `prototype`,
  // and publishes them in its reports.
  virtual void EnableSlots(const source::SlotCounts& prototype) = 0;

  // Called before Start(), at most once: the daemon asks to be told of every publish.
  virtual void SetPublishCallback(PublishCallback on_publish) = 0;

  virtual void Start() = 0;
  // Returns after the last report is published and the thread has joined. Idempotent.
  virtual void Stop() = 0;
  // Asks for a report: the source counts what has arrived, publishes, and calls the publish
  // callback, on its own thread, soon. Requests made before it gets to them count once.
  virtual void RequestPublish() = 0;

  // The last published report; null before the first tick.
  virtual std::shared_ptr<const SourceReport> Latest() const = 0;
};

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_EVENT_SOURCE_H_
