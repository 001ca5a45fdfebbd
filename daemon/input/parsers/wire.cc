#include "hotkey/parsers/wire.h"

#include "hotkey/text/number.h"

namespace hotkey::parsers {

namespace internal {

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
    if (!text::ParseFiniteNumber(num, &v)) return false;
    if (kind == '@') {
      if (seen_rate || !(v >= kMinRate && v <= 1.0)) return false;
      seen_rate = true;
      *rate = v;
    } else {
      if (seen_weight || !(v > 0 && v <= kMaxCost)) return false;
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
    if (param.substr(0, kRate.size()) != kRate ||
        !text::ParseFiniteNumber(param.substr(kRate.size()), &v) || !(v >= kMinRate && v <= 1.0)) {
      return false;
    }
    *rate = v;
  }
  return true;
}

}  // namespace internal
}  // namespace hotkey::parsers
