// Command-line flags in the Prometheus exporter style (`--web.listen-address=:10110`).
//
// The flags are a table on FlagParser (flag_parser.h), the parser every program here
// shares: each flag has a name, a help line and the DaemonOptions field it sets, so the
// usage text always shows the real defaults (the DaemonOptions initialisers).
//
// Flags hold process settings (addresses, sources, tracking, the cluster model, storage,
// logging); policy (alert and export settings, key labels) lives only in the rules file
// (--config.file, rules_file.h), which a reload re-reads. A flag that moved there fails with
// a message naming its rules file key.
//
// Accepted forms: `--name=value`, `--name value`; for a boolean such as --demo also
// `--demo` (true) and `--demo=false`. `-h`/`--help`, `--help-all` and `--version` stop
// parsing. Unknown flags, missing or bad values, positional arguments and out-of-range
// options are errors whose message names the flag. The last occurrence of a repeated flag wins,
// except
// --web.listen-address, which collects every occurrence.
//
// Only `main` calls ParseFlags; components receive the options structs.
// Pure functions (no I/O, no globals); thread-safe.

#ifndef HOTKEY_CONFIG_FLAGS_H_
#define HOTKEY_CONFIG_FLAGS_H_

#include <string>

#include "absl/status/statusor.h"
#include "hotkey/config/flag_parser.h"
#include "hotkey/config/options.h"

namespace hotkey::config {

struct FlagsResult {
  enum class Action {
    kRun,           // start the daemon with `options`
    kPrintHelp,     // print `text` (the usage; every flag with --help-all) to stdout, exit 0
    kPrintVersion,  // print `text` (the version) to stdout and exit 0
    kCheckConfig,   // --check-config: check `flags_status`, then the files `options` name
  };
  Action action = Action::kRun;
  // With kCheckConfig: whether the flags parsed and validated (`options` are only
  // meaningful when they did). A bad flag next to --check-config is reported here rather
  // than returned as an error, so that the check's verdict is one exit status.
  absl::Status flags_status;
  // Validated when action is kRun. The rules file (config_file) is not read here: main
  // calls LoadRulesFile (rules_file.h) with ReloadableFrom(options) as its base.
  DaemonOptions options;
  std::string text;
};

// Parses argv[1..argc). `char**` converts implicitly.
absl::StatusOr<FlagsResult> ParseFlags(int argc, const char* const* argv);

// The --help text: the flags by section, each with its default and its help wrapped to
// FlagParser::kHelpWidth columns; the tuning flags (Advanced()) only with kAll
// (--help-all).
std::string UsageText(FlagParser::HelpScope scope = FlagParser::HelpScope::kCommon);

// The --version text (version::VersionText): version, git branch and revision, build user,
// "build date" (the date of the commit built, or SOURCE_DATE_EPOCH when set) and compiler.
std::string VersionText();

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_FLAGS_H_
