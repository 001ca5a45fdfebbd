// Helpers shared by the config tests (and the exporter's threshold tests).

#ifndef HOTKEY_TESTS_CONFIG_TEST_UTIL_H_
#define HOTKEY_TESTS_CONFIG_TEST_UTIL_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hotkey/config/options.h"

namespace hotkey::config::testing {

// The message of a status (or of a StatusOr's status), as a std::string for Catch matchers.
inline std::string Message(const absl::Status& s) { return std::string(s.message()); }
template <class T>
std::string Message(const absl::StatusOr<T>& s) {
  return std::string(s.status().message());
}

// Threshold rules of the rules file, by kind.
inline ThresholdRule Prefix(std::string pattern, double share) {
  return ThresholdRule{ThresholdRule::kPrefix, std::move(pattern), share, false};
}
inline ThresholdRule Glob(std::string pattern, double share) {
  return ThresholdRule{ThresholdRule::kGlob, std::move(pattern), share, false};
}
inline ThresholdRule IgnoreGlob(std::string pattern) {
  return ThresholdRule{ThresholdRule::kGlob, std::move(pattern), 0, true};
}

}  // namespace hotkey::config::testing

#endif  // HOTKEY_TESTS_CONFIG_TEST_UTIL_H_
