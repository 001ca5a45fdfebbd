// `hotkeyd top`: the live top keys of a running hotkeyd in a terminal, like top(1).
//
// Fetches GET /api/v1/top every --interval (fetch.h) and draws Render()'s lines (render.h)
// with plain ANSI sequences: the alternate screen; each frame the cursor home, every line
// erased and rewritten, the rest of the screen erased (no ncurses: a screen of text lines
// needs nothing more). Autowrap is off while it
// draws, so a line can never spill onto the next. `q` or Ctrl-C (SIGINT, also SIGTERM and
// SIGHUP) quits and restores the terminal, at once between requests, else when the request
// in flight ends (within --timeout); a resize redraws at the new size. A failed fetch
// is shown on the screen and retried at the next refresh, never an exit. --once prints one
// screen as plain text (no control sequences) and exits.
//
// Reached through daemon/program/daemon/main.cc: `hotkeyd top [flags]`.

#ifndef HOTKEY_TOP_TOP_H_
#define HOTKEY_TOP_TOP_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/top/fetch.h"

namespace hotkey::top {

struct TopOptions {
  FetchOptions fetch;
  // Between the starts of two fetches; at least kMinInterval.
  absl::Duration interval = absl::Seconds(1);
  bool once = false;
};

// A floor on --interval, so that a typo ("1ms") does not turn a terminal into a load test of
// the daemon's web server.
inline constexpr absl::Duration kMinInterval = absl::Milliseconds(100);

// The environment variable read for the basic-auth password.
inline constexpr const char* kPasswordEnv = "HOTKEYD_WEB_PASSWORD";

struct TopFlags {
  bool help = false;  // print `help_text`, exit 0
  std::string help_text;
  TopOptions options;
};

// Parses `hotkeyd top`'s flags: argv[0] is "top". `env_password` is the value of
// kPasswordEnv (nullptr when unset); --web.password-file, when given, is read here and wins.
// InvalidArgument names the bad flag.
absl::StatusOr<TopFlags> ParseTopFlags(int argc, const char* const* argv, const char* env_password);

// The whole subcommand: argv[0] is "top". Returns the exit status: 0, 1 (--once without a
// screen of keys: hotkeyd unreachable or answering an error), 2 (bad flags).
int Main(int argc, const char* const* argv);

}  // namespace hotkey::top

#endif  // HOTKEY_TOP_TOP_H_
