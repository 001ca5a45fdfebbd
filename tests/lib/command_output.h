// Runs a shell command and returns what it printed: for tests that drive real servers with
// their own tools (redis-cli, redis-benchmark).

#ifndef HOTKEY_TESTS_LIB_COMMAND_OUTPUT_H_
#define HOTKEY_TESTS_LIB_COMMAND_OUTPUT_H_

#include <array>
#include <cstdio>
#include <string>

#include "absl/strings/ascii.h"

namespace hotkey::testing {

// What `cmd` (run by /bin/sh) wrote to its stdout, trimmed; empty if it could not start.
inline std::string CommandOutput(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  std::array<char, 4096> buf;
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  ::pclose(p);
  return std::string(absl::StripAsciiWhitespace(out));
}

}  // namespace hotkey::testing

#endif  // HOTKEY_TESTS_LIB_COMMAND_OUTPUT_H_
