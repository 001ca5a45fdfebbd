// FlagParser: the one command-line parser of every program here (hotkeyd, hotkey-sim, the
// benchmarks), so that a flag is spelled, defaulted, checked and documented the same way
// everywhere.
//
// Abseil flags cannot be used: their names must be C++ identifiers, and users of exporters
// expect dotted, dashed names (--web.listen-address). So this is a small table: each flag
// is registered with its name, a help line and the variable it sets. The variable's value
// at registration is the default that the help text shows, so help always shows the real
// defaults.
//
// Accepted forms: `--name=value` and `--name value` (the next argument is taken as the
// value unless it starts with "--"); a boolean also as `--name` (true) and
// `--name=false`. A repeated flag sets its variable again, so the last one wins, except a
// list flag (AddList), which collects every occurrence. `-h` and `--help` make Parse
// report a help request whatever else is on the line. Values use the parsers of values.h:
// durations need a unit ("1" is an error, "0" is not), sizes take B/KiB/MiB/GiB/KB/MB/GB,
// numbers are finite, integers fit the variable's type.
//
// Flags are listed in sections (Section()); a flag marked Advanced() is a tuning knob,
// accepted as any other but listed only by Help(HelpScope::kAll). A flag that no longer
// exists can be registered with AddMoved(): given, it fails with the message saying where
// its setting lives now, instead of "unknown flag".
//
// Errors are InvalidArgument statuses that name the flag:
//   unknown flag --web.listen_address; did you mean --web.listen-address? (see --help)
//   --alert.min-dwell moved to the rules file (--config.file): alert.min_dwell
//   flag --udp.receivers needs a value (--udp.receivers=VALUE or --udp.receivers VALUE)
//   flag --udp.receivers: "abc" is not an integer
//   unexpected argument "extra": hotkeyd takes only --flags (see --help)
//
// Thread-compatible. Parse() writes the registered variables; they must outlive it.

#ifndef HOTKEY_CONFIG_FLAG_PARSER_H_
#define HOTKEY_CONFIG_FLAG_PARSER_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/config/values.h"

namespace hotkey::config {

class FlagParser {
 public:
  // How arguments that are not flags are treated.
  enum class Positional {
    kReject,  // an error ("unexpected argument"); "--" is one too
    kAccept,  // collected; "--" ends the flags and everything after it is positional
  };

  struct Parsed {
    bool help = false;                    // -h or --help was given; nothing else was parsed
    std::vector<std::string> positional;  // in order
    std::vector<std::string> given;       // the names of the flags given, in order
  };

  // `program` names the program in error messages.
  explicit FlagParser(std::string program, Positional positional = Positional::kReject)
      : program_(std::move(program)), positional_(positional) {}

  // What help shows for a flag's value; by default its value at registration.
  class Flag {
   public:
    // Shows `text` (e.g. "HOST:PORT") instead of the default value.
    Flag& Shown(std::string text) {
      shown_ = std::move(text);
      return *this;
    }
    // Lists the flag only in Help(HelpScope::kAll): a tuning knob most users never need.
    Flag& Advanced() {
      advanced_ = true;
      return *this;
    }

   private:
    friend class FlagParser;
    std::string name_;
    std::string help_;
    bool is_bool_ = false;
    bool advanced_ = false;
    std::string section_;
    std::string shown_;
    std::function<absl::Status(std::string_view)> set_;
  };

  Flag& AddString(std::string_view name, std::string_view help, std::string* out);
  // --name, --name=true|false (also 1/0, yes/no, on/off).
  Flag& AddBool(std::string_view name, std::string_view help, bool* out);
  Flag& AddNumber(std::string_view name, std::string_view help, double* out);
  // A duration with a unit ("250ms", "1m30s"), not negative. With `allow_infinite`, "inf"
  // too (absl::InfiniteDuration()).
  Flag& AddDuration(std::string_view name, std::string_view help, absl::Duration* out,
                    bool allow_infinite = false);
  // Every occurrence is appended to *out, in order.
  Flag& AddList(std::string_view name, std::string_view help, std::vector<std::string>* out);
  // An integer that must fit T ("out of range" otherwise).
  template <class T>
  Flag& AddInteger(std::string_view name, std::string_view help, T* out);
  // A byte count ("16MiB", "1024") that must fit T.
  template <class T>
  Flag& AddSize(std::string_view name, std::string_view help, T* out);
  // Any other value: `set` parses the text (its error message follows "flag --name: ");
  // `shown` is the default shown in help.
  Flag& AddCustom(std::string_view name, std::string_view help, std::string shown,
                  std::function<absl::Status(std::string_view)> set);

  // Flags added after this call are listed under `title` (e.g. "Web"), in order.
  void Section(std::string_view title) { section_ = std::string(title); }

  // A flag that no longer exists: given in any form, Parse fails with `message` (e.g.
  // "--alert.min-dwell moved to the rules file (--config.file): alert.min_dwell").
  // Not listed in help, not suggested for a misspelt flag.
  void AddMoved(std::string_view name, std::string_view message);

  // Parses `args` (without the program name), setting the registered variables in order.
  absl::StatusOr<Parsed> Parse(const std::vector<std::string_view>& args) const;
  // The same for main's argv (argv[0] is skipped).
  absl::StatusOr<Parsed> Parse(int argc, const char* const* argv) const;

  enum class HelpScope {
    kCommon,  // every flag but the Advanced() ones
    kAll,     // every flag
  };
  // The maximum width of a help line that the parser wraps: a help text is broken at
  // spaces so that no line of it is longer (a single word longer than the room is kept
  // whole). The flag's own line, "--name=DEFAULT", is not wrapped.
  static constexpr size_t kHelpWidth = 80;

  // Each section's title, then its flags in registration order, each as
  //     --name=DEFAULT           (booleans: --name)
  //           help, wrapped      (booleans: help (default: false))
  // An empty default shows as "". Sections with no flag in `scope` are left out.
  std::string Help(HelpScope scope = HelpScope::kCommon) const;
  // How many flags are registered, and how many of them are Advanced() (moved ones are
  // not counted).
  size_t FlagCount() const { return flags_.size(); }
  size_t AdvancedCount() const;

 private:
  Flag& Add(std::string_view name, std::string_view help, bool is_bool, std::string shown,
            std::function<absl::Status(std::string_view)> set);
  const Flag* Find(std::string_view name) const;
  absl::Status UnknownFlag(std::string_view name) const;
  static absl::StatusOr<int64_t> Integer(std::string_view text);
  static absl::StatusOr<uint64_t> Size(std::string_view text);
  static absl::Status OutOfRange(std::string_view text);

  struct Moved {
    std::string name;
    std::string message;
  };

  const std::string program_;
  const Positional positional_;
  std::vector<Flag> flags_;
  std::vector<Moved> moved_;
  std::string section_;  // the section of the flags added next
};

template <class T>
FlagParser::Flag& FlagParser::AddInteger(std::string_view name, std::string_view help, T* out) {
  static_assert(std::is_integral_v<T> && sizeof(T) <= sizeof(int64_t));
  return Add(name, help, false, std::to_string(*out), [out](std::string_view text) {
    absl::StatusOr<int64_t> v = Integer(text);
    if (!v.ok()) return v.status();
    if (*v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        (*v > 0 &&
         static_cast<uint64_t>(*v) > static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
      return OutOfRange(text);
    }
    *out = static_cast<T>(*v);
    return absl::OkStatus();
  });
}

template <class T>
FlagParser::Flag& FlagParser::AddSize(std::string_view name, std::string_view help, T* out) {
  static_assert(std::is_unsigned_v<T>);
  return Add(name, help, false, FormatByteSize(*out), [out](std::string_view text) {
    absl::StatusOr<uint64_t> v = Size(text);
    if (!v.ok()) return v.status();
    if (*v > static_cast<uint64_t>(std::numeric_limits<T>::max()) ||
        *v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return OutOfRange(text);
    }
    *out = static_cast<T>(*v);
    return absl::OkStatus();
  });
}

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_FLAG_PARSER_H_
