// The tap as an event source (tap/tap_source.h): the shard's own Redis or memcached
// traffic, captured with libpcap on --tap.interface (or read from --tap.file), reassembled
// and parsed into key events, with no client change. main() builds it and hands it to
// Daemon::Create, beside the UDP receivers.

#ifndef HOTKEY_TAP_TAP_H_
#define HOTKEY_TAP_TAP_H_

#include <memory>

#include "absl/status/statusor.h"
#include "hotkey/clock/clock.h"
#include "hotkey/config/options.h"
#include "hotkey/source/event_source.h"

namespace hotkey::tap {

// Opens the capture of options.tap (enabled and validated) and tracks with options.track,
// publishing when asked (the daemon's tick) like a UDP receiver. Errors say what
// to fix: a missing CAP_NET_RAW is PermissionDenied, naming the ways to grant it. `clock`
// must outlive the source.
absl::StatusOr<std::unique_ptr<source::EventSource>> NewTapSource(
    const config::DaemonOptions& options, const clock::Clock& clock);

// For --check-config: opens the capture of options.tap exactly as NewTapSource does (the
// interface exists and may be captured on, or the file opens and is a capture; the filter
// installs), reads no packet, and closes it again. Returns the error NewTapSource would,
// with the same message, so a check that passes means the tap starts.
absl::Status CheckCapture(const config::DaemonOptions& options, const clock::Clock& clock);

}  // namespace hotkey::tap

#endif  // HOTKEY_TAP_TAP_H_
