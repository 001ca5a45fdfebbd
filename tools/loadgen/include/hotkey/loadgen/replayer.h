// Replayer: sends a recorded trace (see trace.h) to a receiver as protocol v1 datagrams.
//
// Three pacings: at the trace's own timestamps divided by `speed` (speed 2 replays an hour
// in half an hour); at a fixed `rate` of events per second; or, with neither, as fast as
// the socket takes them. Timestamps are offsets from the trace's first timestamp; a line
// without one, or one earlier than its predecessor, is sent together with the event
// before it. Like Sender, it keeps an absolute schedule, flushes whatever is due before
// sleeping, and sleeps at least 1 ms, so events are at most about 1 ms late.
//
// Cost per event: the trace line's parse and copy (trace.h) and a memcpy into the batch;
// one sendmmsg(2) per 32 datagrams when the schedule allows.

#ifndef HOTKEY_LOADGEN_REPLAYER_H_
#define HOTKEY_LOADGEN_REPLAYER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hotkey/clock/clock.h"
#include "hotkey/loadgen/sender.h"
#include "hotkey/loadgen/trace.h"

namespace hotkey::loadgen {

struct ReplayOptions {
  std::string to = "127.0.0.1:10111";  // HOST:PORT
  double speed = 0;                    // > 0: follow the trace's timestamps, this many times faster
  double rate = 0;                     // > 0: this many events per second (only when speed is 0)
  double sampling = 1.0;               // written as "!v1 rate=<p>" when < 1, as in SendOptions
  size_t datagram_bytes = 1400;        // in [64, 65507]

  // InvalidArgument for a negative or non-finite speed or rate, both set, sampling
  // outside (0, 1] or a bad datagram size.
  absl::Status Validate() const;
};

struct ReplayStats {
  SendStats sent;               // as for Sender
  uint64_t trace_lines = 0;     // lines read from the trace
  uint64_t bad_lines = 0;       // lines the trace reader skipped
  uint64_t skipped_keys = 0;    // events whose key cannot fit in one datagram
  uint64_t untimed_events = 0;  // events without a timestamp (matters with speed > 0)
};

// Run() from one thread, once; stats() from any thread (see Sender).
class Replayer {
 public:
  // Validates `options` and connects the socket. `clock` must outlive the Replayer.
  static absl::StatusOr<std::unique_ptr<Replayer>> Create(
      ReplayOptions options, const clock::Clock& clock = clock::SteadyClock::Get());
  ~Replayer();
  Replayer(const Replayer&) = delete;
  Replayer& operator=(const Replayer&) = delete;

  // Sends `trace` to its end, or until `stop` is true. Returns the reader's error if the
  // trace becomes unreadable (what was read before is sent); FailedPrecondition on a
  // second call.
  absl::Status Run(TraceReader& trace, const std::atomic<bool>& stop);

  ReplayStats stats() const;

 private:
  struct Impl;
  explicit Replayer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hotkey::loadgen

#endif  // HOTKEY_LOADGEN_REPLAYER_H_
