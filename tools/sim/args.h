// Command-line parsing for hotkey-sim: "--name value", "--name=value", boolean switches,
// repeatable flags and positional arguments, with numbers validated as they are read.
//
// Small on purpose (the tool has three subcommands); errors are InvalidArgument statuses
// whose message names the flag, for main to print and exit 2. Thread-compatible.

#ifndef HOTKEY_TOOLS_SIM_ARGS_H_
#define HOTKEY_TOOLS_SIM_ARGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace hotkey::sim {

class Args {
 public:
  // `value_flags` take a value; `switches` do not. Names are given without "--". Any other
  // "--name" is an error; "--" ends the flags.
  static absl::StatusOr<Args> Parse(const std::vector<std::string>& argv,
                                    const std::set<std::string>& value_flags,
                                    const std::set<std::string>& switches);

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  // The last value given for `name`, if any.
  std::optional<std::string> Get(const std::string& name) const;
  // Every value given for `name`, in order.
  std::vector<std::string> GetAll(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

  // Typed reads: `fallback` when the flag is absent, InvalidArgument when the value does
  // not parse (whole string, finite for doubles).
  absl::StatusOr<double> Double(const std::string& name, double fallback) const;
  absl::StatusOr<int64_t> Int(const std::string& name, int64_t fallback) const;
  // A duration: "1.5s", "2m", "100ms", a bare number of seconds, or "inf".
  absl::StatusOr<absl::Duration> Duration(const std::string& name, absl::Duration fallback) const;

 private:
  std::multimap<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

// The parsers behind the typed reads, for values found elsewhere (e.g. inside --celebrity).
bool ParseDouble(const std::string& text, double* out);
bool ParseInt(const std::string& text, int64_t* out);
bool ParseDurationArg(const std::string& text, absl::Duration* out);

}  // namespace hotkey::sim

#endif  // HOTKEY_TOOLS_SIM_ARGS_H_
