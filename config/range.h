// Range checks shared by the options' Validate() functions, so every message reads alike:
// "<setting> must be in <range>; got <value>". Private to config/.

#ifndef HOTKEY_CONFIG_RANGE_H_
#define HOTKEY_CONFIG_RANGE_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl_compat.h"

namespace hotkey::config::internal {

inline absl::Status OutOfRange(std::string_view what, std::string_view range, const auto& got) {
  return absl::InvalidArgumentError(
      absl::StrCat(Av(what), " must be in ", Av(range), "; got ", got));
}

template <class T>
bool InRange(T v, T lo, T hi) {
  return lo <= v && v <= hi;
}

inline bool IsShare(double v) { return v > 0 && v <= 1; }
inline bool IsHysteresis(double v) { return v >= 0 && v < 1; }

}  // namespace hotkey::config::internal

#endif  // HOTKEY_CONFIG_RANGE_H_
