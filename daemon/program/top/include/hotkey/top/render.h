// The screen of `hotkeyd top`: /api/v1/top's JSON turned into lines of text: a header (the
// source and the answer's time), the shard's totals, a column heading, then one row per
// exported key, largest share first: share, ops/s, write ratio, how long it has been hot,
// the advised fix, the key.
//
// Pure functions of their arguments (no clock, no terminal, no I/O), so every screen is
// unit-tested; top.cc draws them. The time shown and a key's hot duration come from the
// answer's own "time" and "hot_since", not from this machine's clock.
//
// Keys are arbitrary bytes. hotkeyd escapes them already (aggregate/key_label.h), but the
// screen does not rely on the server for its safety: every text shown goes through the same
// escaper again (text::Escape, backslash kept), so every byte a terminal would act on (C0
// and C1 controls, DEL, bidirectional controls, line and paragraph separators, invalid
// UTF-8) is written \xHH, and no line is wider than the width given, counted in terminal
// columns (East Asian wide characters take two, combining marks none; DisplayWidth()).
//
// Thread-safe (pure functions).

#ifndef HOTKEY_TOP_RENDER_H_
#define HOTKEY_TOP_RENDER_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace hotkey::top {

struct RenderOptions {
  // Terminal columns: no line returned is wider. At least 1.
  size_t width = 80;
  // Terminal rows: at most this many lines are returned (the last one then says how many
  // keys did not fit). 0: no limit (--once).
  size_t height = 0;
  // Where the answer came from, shown in the header (the --url).
  std::string source;
};

// The screen for `body`, the body of GET /api/v1/top. An {"error": "..."} answer (hotkeyd
// answers 503 so before its first snapshot), a body that is not JSON, or one without a
// "keys" list gives a header and a line that says so. Missing or mistyped fields show as
// "-"; nothing in `body` can make it fail.
std::vector<std::string> Render(std::string_view body, const RenderOptions& options);

// The screen when there is no answer to show: the header and `message` (e.g. "connection
// refused; retrying every 1s").
std::vector<std::string> RenderError(std::string_view message, const RenderOptions& options);

// The pieces, for tests.

// A rate with an SI prefix and at most four significant characters before the unit:
// "0.0/s", "85.3/s", "853/s", "8.5k/s", "12.3k/s", "123k/s", "1.2M/s". `unit` goes between
// the prefix and "/s" ("B" gives "12.3kB/s"). Negative or NaN: "-".
std::string FormatRate(double per_second, std::string_view unit = "");

// A ratio in 0..1 as a percentage with `decimals` decimals: 0.3125 -> "31.2%" (1) or "31%"
// (0). NaN: "-".
std::string FormatPercent(double ratio, int decimals);

// A duration in whole seconds, two units at most: "45s", "3m12s", "2h05m", "3d04h".
// Negative counts as 0.
std::string FormatDuration(double seconds);

// `bytes` with everything a terminal would act on or draw misleadingly written \xHH:
// text::Escape with the backslash kept (see the file comment).
std::string TerminalSafe(std::string_view bytes);

// Columns that TerminalSafe() text takes on a terminal.
size_t DisplayWidth(std::string_view safe_text);

// `safe_text` cut to at most `width` columns, ending in "…" (one column) when cut. The cut
// is on a character boundary.
std::string FitWidth(std::string_view safe_text, size_t width);

}  // namespace hotkey::top

#endif  // HOTKEY_TOP_RENDER_H_
