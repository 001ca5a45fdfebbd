// Bridges std::string_view and absl::string_view.
//
// Debian 12's Abseil is built with ABSL_OPTION_USE_STD_STRING_VIEW 0, so absl::string_view
// is its own class: absl::StrCat, absl::SimpleAtoi and friends do not take a
// std::string_view, and Status::message() is not one. Our APIs use std::string_view;
// these two conversions sit at the boundary. Internal to config/.

#ifndef HOTKEY_CONFIG_ABSL_COMPAT_H_
#define HOTKEY_CONFIG_ABSL_COMPAT_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace hotkey::config::internal {

inline absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }
inline std::string_view Sv(absl::string_view s) { return std::string_view(s.data(), s.size()); }

}  // namespace hotkey::config::internal

#endif  // HOTKEY_CONFIG_ABSL_COMPAT_H_
