#include "protocol.h"

#include <cmath>

namespace hotkey::daemon {

namespace {
// A weight above this is a typo or an attack, not a cost: refusing it keeps one datagram
// from swamping every share.
constexpr double kMaxWeight = 1e6;
// Sampling below one in a billion would scale one event to a billion ops.
constexpr double kMinRate = 1e-9;
}  // namespace

std::string_view RejectName(Reject r) {
  switch (r) {
    case Reject::kEmptyLine:
      return "empty_line";
    case Reject::kUnknownOp:
      return "unknown_op";
    case Reject::kMissingKey:
      return "missing_key";
    case Reject::kKeyTooLong:
      return "key_too_long";
    case Reject::kBadNumber:
      return "bad_number";
    case Reject::kBadHeader:
      return "bad_header";
  }
  return "unknown";
}

namespace internal {

bool ParseNumber(std::string_view s, double* out) {
  // Hand-written so it is locale-free, allocation-free and strict: strtod would accept
  // "inf", "0x10", leading spaces and signs.
  size_t i = 0;
  double mantissa = 0;
  int digits = 0;
  int exp10 = 0;
  // Leading zeros are not significant: they must not use up the 18 digits kept, or
  // "0000000000000000001" would read as 0.
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    if (digits < 18) {
      mantissa = mantissa * 10 + (s[i] - '0');
      if (mantissa > 0) ++digits;
    } else {
      ++exp10;  // digits past double precision only scale
    }
    ++i;
  }
  const bool int_part = i > 0;
  bool frac_part = false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (digits < 18) {
        mantissa = mantissa * 10 + (s[i] - '0');
        if (mantissa > 0) ++digits;
        --exp10;
      }
      frac_part = true;
      ++i;
    }
  }
  if (!int_part && !frac_part) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool negative = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
    int e = 0;
    const size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (e < 10000) e = e * 10 + (s[i] - '0');
      ++i;
    }
    if (i == start) return false;
    exp10 += negative ? -e : e;
  }
  if (i != s.size()) return false;
  const double v = mantissa * std::pow(10.0, exp10);
  if (!std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool ParseModifiers(std::string_view mods, double* rate, double* weight) {
  // Any order, each at most once: `@p`, `*w`, `@p*w`, `*w@p`.
  bool seen_rate = false, seen_weight = false;
  while (!mods.empty()) {
    const char kind = mods[0];
    mods.remove_prefix(1);
    const size_t end = mods.find_first_of("@*");
    const std::string_view num = mods.substr(0, end);
    mods = end == std::string_view::npos ? std::string_view() : mods.substr(end);
    double v;
    if (!ParseNumber(num, &v)) return false;
    if (kind == '@') {
      if (seen_rate || !(v >= kMinRate && v <= 1.0)) return false;
      seen_rate = true;
      *rate = v;
    } else {
      if (seen_weight || !(v > 0 && v <= kMaxWeight)) return false;
      seen_weight = true;
      *weight = v;
    }
  }
  return true;
}

bool ParseHeader(std::string_view line, double* rate) {
  constexpr std::string_view kV1 = "!v1";
  if (line.substr(0, kV1.size()) != kV1) return false;
  line.remove_prefix(kV1.size());
  // Space-separated name=value parameters; unknown names are an error so a typo in
  // `rate=` does not silently count every event at rate 1.
  while (!line.empty()) {
    if (line[0] != ' ') return false;
    line.remove_prefix(1);
    if (line.empty()) break;  // a trailing space is harmless
    const size_t end = line.find(' ');
    const std::string_view param = line.substr(0, end);
    line = end == std::string_view::npos ? std::string_view() : line.substr(end);
    constexpr std::string_view kRate = "rate=";
    double v;
    if (param.substr(0, kRate.size()) != kRate || !ParseNumber(param.substr(kRate.size()), &v) ||
        !(v >= kMinRate && v <= 1.0)) {
      return false;
    }
    *rate = v;
  }
  return true;
}

}  // namespace internal
}  // namespace hotkey::daemon
