// Log lines: logfmt (`ts=... level=... msg="..." key=value ...`), one a line, on stderr.
// Components build whole lines and hand them to a sink; the sink in main filters them by
// --log.level. Thread-safe.

#ifndef HOTKEY_DAEMON_LOG_H_
#define HOTKEY_DAEMON_LOG_H_

#include <string_view>

namespace hotkey::daemon {

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

}  // namespace hotkey::daemon

#endif  // HOTKEY_DAEMON_LOG_H_
