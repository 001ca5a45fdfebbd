// The --demo load as an event source (source/demo_source.h): three celebrity keys over a
// Zipf background, made in-process at options.demo_rate events per second. main() builds
// it and hands it to Daemon::Create.

#ifndef HOTKEY_SOURCE_DEMO_H_
#define HOTKEY_SOURCE_DEMO_H_

#include <memory>

#include "absl/status/statusor.h"
#include "hotkey/clock/clock.h"
#include "hotkey/config/options.h"
#include "hotkey/source/event_source.h"

namespace hotkey::source {

// Tracks with options.track and publishes when asked (the daemon's tick), like a UDP
// receiver. `clock` (monotonic) must outlive the source.
absl::StatusOr<std::unique_ptr<EventSource>> NewDemoSource(const config::DaemonOptions& options,
                                                           const clock::Clock& clock);

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_DEMO_H_
