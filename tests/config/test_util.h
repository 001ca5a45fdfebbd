// Helpers shared by the config tests.

#ifndef HOTKEY_TESTS_CONFIG_TEST_UTIL_H_
#define HOTKEY_TESTS_CONFIG_TEST_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hotkey::config::testing {

// The message of a status (or of a StatusOr's status), as a std::string for Catch matchers.
inline std::string Message(const absl::Status& s) { return std::string(s.message()); }
template <class T>
std::string Message(const absl::StatusOr<T>& s) {
  return std::string(s.status().message());
}

}  // namespace hotkey::config::testing

#endif  // HOTKEY_TESTS_CONFIG_TEST_UTIL_H_
