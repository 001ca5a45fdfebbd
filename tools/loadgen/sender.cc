// Sender: synthetic protocol v1 traffic (see sender.h for the model and its cost).

#include "hotkey/loadgen/sender.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <random>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "hotkey/loadgen/zipf.h"
#include "udp_batch.h"

namespace hotkey::loadgen {
namespace {

// Sleeping less than this buys nothing (see the header) and costs a wake-up per event at
// low rates; sleeping more than kMaxSleep would make `stop` slow to take effect.
constexpr absl::Duration kMinSleep = absl::Milliseconds(1);
constexpr absl::Duration kMaxSleep = absl::Milliseconds(50);

// Shares may add up to 1 give or take rounding in the user's decimals.
constexpr double kShareSlack = 1e-9;

// "key:" + up to 20 digits of a uint64_t rank.
constexpr size_t kMaxBackgroundKeyBytes = 4 + 20;

bool IsShare(double x) { return std::isfinite(x) && x >= 0 && x <= 1; }

// A uniform double in [0, 1) from the top 53 bits of one 64-bit draw.
double Uniform(std::mt19937_64& gen) { return static_cast<double>(gen() >> 11) * 0x1p-53; }

}  // namespace

absl::Status SendOptions::Validate() const {
  if (to.empty()) return absl::InvalidArgumentError("to: an address HOST:PORT is required");
  if (!std::isfinite(rate) || rate < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("rate must be >= 0 events/s (0 = as fast as possible), got ", rate));
  }
  if (!std::isfinite(sampling) || sampling <= 0 || sampling > 1) {
    return absl::InvalidArgumentError(absl::StrCat("sampling must be in (0, 1], got ", sampling));
  }
  if (background_keys < 1) {
    return absl::InvalidArgumentError("background_keys must be >= 1");
  }
  if (!std::isfinite(zipf_s) || zipf_s <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("zipf_s must be > 0, got ", zipf_s));
  }
  if (!IsShare(background_write_share)) {
    return absl::InvalidArgumentError(
        absl::StrCat("background_write_share must be in [0, 1], got ", background_write_share));
  }
  if (duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("duration must be positive");
  }
  if (datagram_bytes < 64 || datagram_bytes > 65507) {
    return absl::InvalidArgumentError(
        absl::StrCat("datagram_bytes must be in [64, 65507], got ", datagram_bytes));
  }
  const size_t header = detail::SamplingHeader(sampling).size();
  for (const Celebrity& c : celebrities) {
    const std::string name = absl::StrCat("celebrity '", c.key, "'");
    if (c.key.empty()) return absl::InvalidArgumentError("a celebrity key is empty");
    if (c.key.find('\n') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": a key cannot contain a newline"));
    }
    if (header + c.key.size() + 3 > datagram_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": key too long for a ", datagram_bytes, "-byte datagram"));
    }
    if (!IsShare(c.share)) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": share must be in [0, 1]"));
    }
    if (!IsShare(c.write_share)) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": write share must be in [0, 1]"));
    }
    if (c.start < absl::ZeroDuration() || c.stop <= c.start) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": need 0 <= start < stop, got start ",
                                                     absl::FormatDuration(c.start), " stop ",
                                                     absl::FormatDuration(c.stop)));
    }
  }
  // The active shares peak at some celebrity's start.
  for (const Celebrity& at : celebrities) {
    double sum = 0;
    for (const Celebrity& c : celebrities) {
      if (c.start <= at.start && at.start < c.stop) sum += c.share;
    }
    if (sum > 1 + kShareSlack) {
      return absl::InvalidArgumentError(absl::StrCat("celebrity shares active together add up to ",
                                                     sum, " (at ", absl::FormatDuration(at.start),
                                                     "), more than 1"));
    }
  }
  return absl::OkStatus();
}

struct Sender::Impl {
  Impl(SendOptions o, const clock::Clock& c, detail::UdpSocket s)
      : options(std::move(o)), clock(c), socket(std::move(s)) {}

  absl::Status Run(const std::atomic<bool>& stop);

  const SendOptions options;
  const clock::Clock& clock;
  const detail::UdpSocket socket;
  detail::SendCounters counters;
  std::atomic<int64_t> elapsed_ns{0};
  bool ran = false;
};

absl::Status Sender::Impl::Run(const std::atomic<bool>& stop) {
  if (ran) return absl::FailedPreconditionError("Sender::Run may be called only once");
  ran = true;

  detail::DatagramBatch batch(options.datagram_bytes, detail::SamplingHeader(options.sampling));
  std::mt19937_64 gen(options.seed);
  ZipfDistribution zipf(options.background_keys, options.zipf_s);

  // The celebrities active now, as cumulative thresholds on one uniform draw u: celebrity
  // i when low_i <= u < cum_i; background when u >= the last cum.
  struct Active {
    std::string_view key;
    double low, cum, write_share;
  };
  std::vector<Active> active;
  active.reserve(options.celebrities.size());
  double celebrity_total = 0;
  absl::Duration next_change = absl::ZeroDuration();  // when `active` must be recomputed
  auto update_active = [&](absl::Duration t) {
    active.clear();
    celebrity_total = 0;
    next_change = absl::InfiniteDuration();
    for (const Celebrity& c : options.celebrities) {
      if (c.start <= t && t < c.stop) {
        if (c.share > 0) {
          active.push_back({c.key, celebrity_total, celebrity_total + c.share, c.write_share});
          celebrity_total += c.share;
        }
        next_change = std::min(next_change, c.stop);
      } else if (t < c.start) {
        next_change = std::min(next_change, c.start);
      }
    }
  };

  char key_buffer[kMaxBackgroundKeyBytes] = {'k', 'e', 'y', ':'};
  const double background_write = options.background_write_share;
  // Appends one event; false when the batch is full (nothing added, nothing drawn lost:
  // the event is kept in `op`/`key` for the retry).
  char op = 0;
  std::string_view key;
  auto draw = [&] {
    const double u = Uniform(gen);
    if (u < celebrity_total) {
      for (const Active& a : active) {
        if (u < a.cum) {
          // Given the celebrity, (u - low) / share is again uniform on [0, 1).
          op = (u - a.low) < a.write_share * (a.cum - a.low) ? 'w' : 'r';
          key = a.key;
          return;
        }
      }
    }
    // Likewise, the position of u above the celebrities decides the op.
    op = (u - celebrity_total) < background_write * (1 - celebrity_total) ? 'w' : 'r';
    const uint64_t rank = zipf(gen);
    char* end = std::to_chars(key_buffer + 4, key_buffer + sizeof(key_buffer), rank).ptr;
    key = std::string_view(key_buffer, end - key_buffer);
  };

  const double rate = options.rate;
  const absl::Duration duration = options.duration;
  // With a rate and a finite duration, exactly floor(duration * rate) events are made.
  const uint64_t limit =
      rate > 0 && duration != absl::InfiniteDuration()
          ? static_cast<uint64_t>(std::floor(absl::ToDoubleSeconds(duration) * rate))
          : std::numeric_limits<uint64_t>::max();
  uint64_t generated = 0;
  const int fd = socket.fd();
  const absl::Time start = clock.Now();

  while (!stop.load(std::memory_order_relaxed)) {
    const absl::Duration elapsed = clock.Now() - start;
    elapsed_ns.store(absl::ToInt64Nanoseconds(elapsed), std::memory_order_relaxed);
    if (elapsed >= next_change) update_active(elapsed);
    uint64_t want = std::numeric_limits<uint64_t>::max();
    if (rate == 0) {
      if (elapsed >= duration) break;
    } else {
      if (generated >= limit) break;
      const double t = absl::ToDoubleSeconds(std::min(elapsed, duration));
      const uint64_t due = std::min(static_cast<uint64_t>(std::floor(t * rate)), limit);
      if (due <= generated) {
        // Event i (0-based) is due at start + (i + 1) / rate, so floor(t * rate) are due
        // by t and the last of `limit` is due at `duration`.
        const absl::Duration next_due = absl::Seconds(static_cast<double>(generated + 1) / rate);
        clock.SleepFor(std::clamp(next_due - elapsed, kMinSleep, kMaxSleep));
        continue;
      }
      want = due - generated;
    }
    // Make `want` events, or fill the batch: then send it and take the stop/time checks.
    bool sent = false;
    for (; want > 0; --want) {
      draw();
      ++generated;
      if (!batch.Append(op, key)) {
        batch.Send(fd, counters);
        batch.Append(op, key);  // fits: an empty batch takes any validated key
        sent = true;
        break;
      }
    }
    if (!sent && rate > 0) batch.Send(fd, counters);  // everything due is out
  }
  if (!batch.empty()) batch.Send(fd, counters);
  elapsed_ns.store(absl::ToInt64Nanoseconds(clock.Now() - start), std::memory_order_relaxed);
  return absl::OkStatus();
}

Sender::Sender(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Sender::~Sender() = default;

absl::StatusOr<std::unique_ptr<Sender>> Sender::Create(SendOptions options,
                                                       const clock::Clock& clock) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  absl::StatusOr<detail::UdpSocket> socket = detail::UdpSocket::Connect(options.to);
  if (!socket.ok()) return socket.status();
  return std::unique_ptr<Sender>(
      new Sender(std::make_unique<Impl>(std::move(options), clock, std::move(*socket))));
}

absl::Status Sender::Run(const std::atomic<bool>& stop) { return impl_->Run(stop); }

const SendOptions& Sender::options() const { return impl_->options; }

SendStats Sender::stats() const {
  const detail::SendCounters& c = impl_->counters;
  SendStats s;
  s.events = c.events.load(std::memory_order_relaxed);
  s.datagrams = c.datagrams.load(std::memory_order_relaxed);
  s.bytes = c.bytes.load(std::memory_order_relaxed);
  s.send_errors = c.send_errors.load(std::memory_order_relaxed);
  s.events_dropped = c.events_dropped.load(std::memory_order_relaxed);
  s.last_errno = c.last_errno.load(std::memory_order_relaxed);
  s.elapsed = absl::Nanoseconds(impl_->elapsed_ns.load(std::memory_order_relaxed));
  return s;
}

}  // namespace hotkey::loadgen
