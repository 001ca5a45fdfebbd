// Log lines: logfmt (`ts=... level=... msg="..." key=value ...`), one a line, on stderr;
// with --log.format=json, each line is rewritten as one JSON object by the sink in main.
//
// Components build whole lines with LogLine, which escapes every value, and hand them to a
// sink (Daemon::LogSink); the sink in main filters them by --log.level and, for json,
// converts them with LogfmtToJson. logfmt has no formal grammar; we write the dialect of
// go-logfmt (github.com/go-logfmt/logfmt, what Prometheus and its exporters print), which
// the usual parsers read:
//   - a line is `key=value` pairs separated by one space; keys are bytes above ' ' other
//     than '=' and '"';
//   - a bare value is non-empty, of bytes above ' ' other than '=', '"' and '\\';
//   - any other value is quoted: `"..."`, where '"', '\\', newline, carriage return and tab
//     are written \" \\ \n \r \t, other control characters (below ' ', and DEL) \u00XX,
//     and each byte that does not start a valid UTF-8 sequence U+FFFD, so that a line is
//     valid UTF-8 and holds no raw control character, whatever the bytes logged.
//
// Logging is off the hot path (starts, reloads, hot-key episodes): the cost of a line (a
// few allocations, and a reparse for json) is not a concern. Pure functions; thread-safe.

#ifndef HOTKEY_LOG_LOG_H_
#define HOTKEY_LOG_LOG_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace hotkey::log {

// 0 debug, 1 info, 2 warn, 3 error; unknown names are info.
inline int LevelRank(std::string_view level) {
  if (level == "debug") return 0;
  if (level == "warn") return 2;
  if (level == "error") return 3;
  return 1;
}

// Whether a logfmt line with a `level=` field passes `min_level`.
inline bool PassesLevel(std::string_view line, std::string_view min_level) {
  const size_t at = line.find(" level=");
  if (at == std::string_view::npos) return true;
  std::string_view level = line.substr(at + 7);
  level = level.substr(0, level.find(' '));
  return LevelRank(level) >= LevelRank(min_level);
}

// `value` as a quoted logfmt value, escaped as above.
std::string LogfmtQuote(std::string_view value);

// One log line: `ts=<RFC 3339, ms, UTC> level=<level> msg="<msg>"`, then the fields in the
// order added. Keys are the caller's literals (valid logfmt keys); values are any bytes.
class LogLine {
 public:
  LogLine(absl::Time ts, std::string_view level, std::string_view msg);

  // key="value", always quoted (paths, errors, labels: text a reader may want to grep).
  LogLine& Quoted(std::string_view key, std::string_view value);
  // key=value, bare when the value allows it (numbers, names, addresses), else quoted.
  LogLine& Value(std::string_view key, std::string_view value);

  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// The key/value pairs of a logfmt line, values unescaped. Strict: an error unless `line`
// is exactly the dialect above (any escape of \" \\ \n \r \t \uXXXX is accepted in a
// quoted value).
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseLogfmt(std::string_view line);

// A logfmt line as one JSON object of string members, in the line's order:
// `{"ts":"...","level":"info","msg":"...",...}`. A line that does not parse (none of ours)
// becomes {"level":"error","msg":"unparsable log line","line":"<the line>"}, so that json
// output stays one valid object a line.
std::string LogfmtToJson(std::string_view line);

}  // namespace hotkey::log

#endif  // HOTKEY_LOG_LOG_H_
