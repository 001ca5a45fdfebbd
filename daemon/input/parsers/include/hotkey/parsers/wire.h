// Wire protocol v1: parsing a datagram of sampled key events, in place.
//
// A datagram is lines separated by "\n" (the last newline is optional):
//
//   [!v1[ rate=<p>]]                optional header, first line only
//   <op>[@<p>][*<weight>] <key>     one event a line
//
// `op` is `r` (read) or `w` (write). `@p` is the probability with which the client sampled
// this event, in (0, 1]: it stands for 1/p ops (default: the header's rate, else 1).
// `*weight` is the op's cost, a positive finite number (default 1). Both numbers are read
// by the one decimal grammar of hotkey/text/number.h (no "+", no hex, no inf/nan, no white
// space); as both must be positive, a "-" never makes a line valid. The key is every byte
// after the first space to the end of the line: any bytes but "\n", spaces included.
// So `r user:42` is a valid datagram forever, as typed into `nc -u`.
//
// Forward compatibility: a header `!v<N>` other than `!v1` makes the whole datagram a
// counted rejection (bad_header), so a v2 sender never has its lines misread; unknown ops
// are rejected line by line (unknown_op), so new ops can be added without a version bump.
//
// Cost: one pass over the bytes; no copy, no allocation, no exceptions. Each event is
// handed to the caller as a view into the datagram, valid only during the callback.

#ifndef HOTKEY_PARSERS_WIRE_H_
#define HOTKEY_PARSERS_WIRE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "hotkey/sketch/op.h"
#include "hotkey/text/enum_names.h"

namespace hotkey::parsers {

// Why a line (or a whole datagram, for kBadHeader) was not counted.
enum class Reject : uint8_t {
  kEmptyLine,   // nothing between two newlines
  kUnknownOp,   // the line does not start with r or w
  kMissingKey,  // no space after the op token, or nothing after it
  kKeyTooLong,  // the key is longer than the configured limit
  kBadNumber,   // @rate or *weight that is not a number in range
  kBadHeader,   // a `!` header that is not a valid v1 header (the datagram is dropped)
};
inline constexpr size_t kNumRejects = 6;

// The largest `*weight` (an op's cost) an event may carry: a larger one is a typo or an
// attack, not a cost, and refusing it keeps one datagram from swamping every share.
inline constexpr double kMaxCost = 1e6;
// The smallest `@rate`: sampling below one in a billion would scale one event to a billion
// ops. An event counts cost / rate, so at most kMaxCost / kMinRate, which the tracker counts
// in full (at most sketch::HeavyHitters::kMaxWeight; the UDP receiver, which hands events to
// the tracker, checks it: source/udp_receiver.cc).
inline constexpr double kMinRate = 1e-9;
// Label values for hotkey_events_rejected_total{reason}.
inline constexpr text::EnumName<Reject> kRejectNames[] = {
    {Reject::kEmptyLine, "empty_line"},   {Reject::kUnknownOp, "unknown_op"},
    {Reject::kMissingKey, "missing_key"}, {Reject::kKeyTooLong, "key_too_long"},
    {Reject::kBadNumber, "bad_number"},   {Reject::kBadHeader, "bad_header"}};
static_assert(std::size(kRejectNames) == kNumRejects);
constexpr std::string_view RejectName(Reject r) { return text::NameOf(kRejectNames, r); }

struct Event {
  sketch::Op op;
  std::string_view key;  // a view into the datagram
  double weight;         // cost / sampling probability: the ops this event stands for
};

struct ParseStats {
  uint64_t events = 0;
  std::array<uint64_t, kNumRejects> rejected = {};
  bool header_rejected = false;
};

// Parses one datagram, calling on_event(const Event&) for every valid line. Keys longer than
// `max_key_bytes` are rejected. A bad line never spoils the lines around it.
template <class OnEvent>
ParseStats ParseDatagram(std::string_view datagram, size_t max_key_bytes, OnEvent&& on_event);

namespace internal {
// Splits the op token's modifiers. Returns false on a malformed modifier.
bool ParseModifiers(std::string_view mods, double* rate, double* weight);
// Parses a `!...` header line into the default rate.
bool ParseHeader(std::string_view line, double* rate);
}  // namespace internal

template <class OnEvent>
ParseStats ParseDatagram(std::string_view datagram, size_t max_key_bytes, OnEvent&& on_event) {
  ParseStats stats;
  double default_rate = 1.0;
  if (!datagram.empty() && datagram.front() == '!') {
    const size_t nl = datagram.find('\n');
    const std::string_view header = datagram.substr(0, nl);
    if (!internal::ParseHeader(header, &default_rate)) {
      stats.header_rejected = true;
      ++stats.rejected[static_cast<size_t>(Reject::kBadHeader)];
      return stats;
    }
    datagram = nl == std::string_view::npos ? std::string_view() : datagram.substr(nl + 1);
  }
  while (!datagram.empty()) {
    const size_t nl = datagram.find('\n');
    const std::string_view line = datagram.substr(0, nl);
    datagram = nl == std::string_view::npos ? std::string_view() : datagram.substr(nl + 1);

    auto reject = [&stats](Reject r) { ++stats.rejected[static_cast<size_t>(r)]; };
    if (line.empty()) {
      reject(Reject::kEmptyLine);
      continue;
    }
    sketch::Op op;
    if (line[0] == 'r') {
      op = sketch::Op::kRead;
    } else if (line[0] == 'w') {
      op = sketch::Op::kWrite;
    } else {
      reject(Reject::kUnknownOp);
      continue;
    }
    const size_t space = line.find(' ');
    const std::string_view token = line.substr(0, space);
    if (token.size() > 1 && token[1] != '@' && token[1] != '*') {
      reject(Reject::kUnknownOp);  // `rx key`: an op this version does not know
      continue;
    }
    if (space == std::string_view::npos || space + 1 == line.size()) {
      reject(Reject::kMissingKey);
      continue;
    }
    double rate = default_rate;
    double weight = 1.0;
    if (token.size() > 1 && !internal::ParseModifiers(token.substr(1), &rate, &weight)) {
      reject(Reject::kBadNumber);
      continue;
    }
    const std::string_view key = line.substr(space + 1);
    if (key.size() > max_key_bytes) {
      reject(Reject::kKeyTooLong);
      continue;
    }
    ++stats.events;
    on_event(Event{op, key, weight / rate});
  }
  return stats;
}

}  // namespace hotkey::parsers

#endif  // HOTKEY_PARSERS_WIRE_H_
