// Replayer: a trace sent as protocol v1 datagrams (see replayer.h).

#include "hotkey/loadgen/replayer.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "udp_batch.h"

namespace hotkey::loadgen {
namespace {

// As in sender.cc: no shorter sleeps (wake-ups buy nothing), no longer (stop latency).
constexpr absl::Duration kMinSleep = absl::Milliseconds(1);
constexpr absl::Duration kMaxSleep = absl::Milliseconds(50);

}  // namespace

absl::Status ReplayOptions::Validate() const {
  if (to.empty()) return absl::InvalidArgumentError("to: an address HOST:PORT is required");
  if (!std::isfinite(speed) || speed < 0) {
    return absl::InvalidArgumentError(absl::StrCat("speed must be > 0, got ", speed));
  }
  if (!std::isfinite(rate) || rate < 0) {
    return absl::InvalidArgumentError(absl::StrCat("rate must be > 0 events/s, got ", rate));
  }
  if (speed > 0 && rate > 0) {
    return absl::InvalidArgumentError("give speed or rate, not both");
  }
  if (!std::isfinite(sampling) || sampling <= 0 || sampling > 1) {
    return absl::InvalidArgumentError(absl::StrCat("sampling must be in (0, 1], got ", sampling));
  }
  if (datagram_bytes < 64 || datagram_bytes > 65507) {
    return absl::InvalidArgumentError(
        absl::StrCat("datagram_bytes must be in [64, 65507], got ", datagram_bytes));
  }
  return absl::OkStatus();
}

struct Replayer::Impl {
  Impl(ReplayOptions o, const clock::Clock& c, detail::UdpSocket s)
      : options(std::move(o)), clock(c), socket(std::move(s)) {}

  absl::Status Run(TraceReader& trace, const std::atomic<bool>& stop);

  const ReplayOptions options;
  const clock::Clock& clock;
  const detail::UdpSocket socket;
  detail::SendCounters counters;
  std::atomic<int64_t> elapsed_ns{0};
  std::atomic<uint64_t> trace_lines{0}, bad_lines{0}, skipped_keys{0}, untimed_events{0};
  bool ran = false;
};

absl::Status Replayer::Impl::Run(TraceReader& trace, const std::atomic<bool>& stop) {
  if (ran) return absl::FailedPreconditionError("Replayer::Run may be called only once");
  ran = true;
  detail::DatagramBatch batch(options.datagram_bytes, detail::SamplingHeader(options.sampling));
  const int fd = socket.fd();
  const absl::Time start = clock.Now();

  TraceEvent event;
  bool have_event = false;          // `event` read but not yet sent
  absl::Duration due;               // when `event` is due, from start
  std::optional<int64_t> first_ts;  // the trace's time origin
  absl::Duration last_due = absl::ZeroDuration();
  uint64_t index = 0;  // events scheduled so far
  absl::Status status;
  auto publish = [&] {
    trace_lines.store(trace.lines(), std::memory_order_relaxed);
    bad_lines.store(trace.bad_lines(), std::memory_order_relaxed);
    elapsed_ns.store(absl::ToInt64Nanoseconds(clock.Now() - start), std::memory_order_relaxed);
  };

  while (!stop.load(std::memory_order_relaxed)) {
    if (!have_event) {
      absl::StatusOr<bool> next = trace.Next(&event);
      if (!next.ok()) {
        status = next.status();
        break;
      }
      if (!*next) break;
      have_event = true;
      if (!event.ts_ms.has_value()) {
        untimed_events.store(untimed_events.load(std::memory_order_relaxed) + 1,
                             std::memory_order_relaxed);
      }
      if (options.speed > 0) {
        due = last_due;
        if (event.ts_ms.has_value()) {
          if (!first_ts.has_value()) first_ts = event.ts_ms;
          due = std::max(last_due, absl::Milliseconds(*event.ts_ms - *first_ts) / options.speed);
        }
      } else if (options.rate > 0) {
        due = absl::Seconds(static_cast<double>(index) / options.rate);
      } else {
        due = absl::ZeroDuration();
      }
      last_due = due;
      ++index;
    }
    if (due > absl::ZeroDuration()) {
      const absl::Duration now = clock.Now() - start;
      if (due > now) {
        // Not due yet: send what is, then wait.
        if (!batch.empty()) batch.Send(fd, counters);
        publish();
        clock.SleepFor(std::clamp(due - now, kMinSleep, kMaxSleep));
        continue;
      }
    }
    have_event = false;
    if (!batch.FitsAlone(event.key)) {
      skipped_keys.store(skipped_keys.load(std::memory_order_relaxed) + 1,
                         std::memory_order_relaxed);
      continue;
    }
    if (!batch.Append(event.op, event.key)) {
      batch.Send(fd, counters);
      publish();
      batch.Append(event.op, event.key);
    }
  }
  if (!batch.empty()) batch.Send(fd, counters);
  publish();
  return status;
}

Replayer::Replayer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Replayer::~Replayer() = default;

absl::StatusOr<std::unique_ptr<Replayer>> Replayer::Create(ReplayOptions options,
                                                           const clock::Clock& clock) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  absl::StatusOr<detail::UdpSocket> socket = detail::UdpSocket::Connect(options.to);
  if (!socket.ok()) return socket.status();
  return std::unique_ptr<Replayer>(
      new Replayer(std::make_unique<Impl>(std::move(options), clock, std::move(*socket))));
}

absl::Status Replayer::Run(TraceReader& trace, const std::atomic<bool>& stop) {
  return impl_->Run(trace, stop);
}

ReplayStats Replayer::stats() const {
  const Impl& i = *impl_;
  ReplayStats s;
  s.sent.events = i.counters.events.load(std::memory_order_relaxed);
  s.sent.datagrams = i.counters.datagrams.load(std::memory_order_relaxed);
  s.sent.bytes = i.counters.bytes.load(std::memory_order_relaxed);
  s.sent.send_errors = i.counters.send_errors.load(std::memory_order_relaxed);
  s.sent.events_dropped = i.counters.events_dropped.load(std::memory_order_relaxed);
  s.sent.last_errno = i.counters.last_errno.load(std::memory_order_relaxed);
  s.sent.elapsed = absl::Nanoseconds(i.elapsed_ns.load(std::memory_order_relaxed));
  s.trace_lines = i.trace_lines.load(std::memory_order_relaxed);
  s.bad_lines = i.bad_lines.load(std::memory_order_relaxed);
  s.skipped_keys = i.skipped_keys.load(std::memory_order_relaxed);
  s.untimed_events = i.untimed_events.load(std::memory_order_relaxed);
  return s;
}

}  // namespace hotkey::loadgen
