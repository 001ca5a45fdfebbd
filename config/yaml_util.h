// What the two YAML readers of hotkey_config (rules_file.cc and web_config.cc) share: the
// "line N: path: problem" message shape, map iteration that refuses repeated keys (yaml-cpp
// keeps them silently), the net that turns yaml-cpp's exceptions into statuses, and the
// size-capped file read. Internal to hotkey_config.
//
// Each reader keeps its own words for a problem ("given twice" in the rules file, "appears
// twice" in the web config): the messages predate this helper and operators grep for them.

#ifndef HOTKEY_CONFIG_YAML_UTIL_H_
#define HOTKEY_CONFIG_YAML_UTIL_H_

#include <cstddef>
#include <exception>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl_compat.h"
#include "yaml-cpp/yaml.h"

namespace hotkey::config::internal {

// "line N: " for a node or an exception's mark (yaml-cpp counts from 0), or "" when yaml-cpp
// knows no position.
inline std::string YamlLine(const YAML::Mark& mark) {
  return mark.line >= 0 ? absl::StrCat("line ", mark.line + 1, ": ") : std::string();
}

// InvalidArgument "line N: path: message". `message` is an absl::string_view so that
// Status::message() passes straight through.
inline absl::Status YamlError(const YAML::Node& node, std::string_view path,
                              absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(YamlLine(node.Mark()), Av(path), ": ", message));
}

// The words of ForEachEntry's two errors.
struct MapWords {
  const char* key_not_scalar;  // a key that is a list or a map
  const char* repeated;        // a key given a second time
};

// Called with the key node, the key's dotted path ("section.key", or "key" at the root) and
// the value node; a non-OK return stops the iteration and is returned.
using EntryHandler = std::function<absl::Status(const YAML::Node& key, const std::string& key_path,
                                                const YAML::Node& value)>;

// Calls `handle` for each entry of the map `map`, in file order, after refusing non-scalar
// and repeated keys with `words`. `map` must be a map (callers word that error themselves).
absl::Status ForEachEntry(const YAML::Node& map, std::string_view path, const MapWords& words,
                          const EntryHandler& handle);

// Runs `parse` (which calls into yaml-cpp) and turns what yaml-cpp throws into a status:
// "line N: malformed YAML: ..." for a syntax error, Internal for anything else. Never throws.
template <class T, class Parse>
absl::StatusOr<T> CatchYamlErrors(Parse parse) {
  try {
    return parse();
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(YamlLine(e.mark), "malformed YAML: ", e.msg));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("reading YAML: ", e.what()));
  }
}

// The outcome of ReadCappedFile; the callers turn it into their own messages.
struct FileText {
  enum Problem { kNone, kCannotOpen, kNotRegular, kTooLarge, kReadError };
  Problem problem = kNone;
  int error = 0;     // errno for kCannotOpen and kReadError
  std::string text;  // the whole file when problem == kNone
};

// Reads `path` whole, stopping with kTooLarge once more than `max_bytes` are read (so a
// wrong path such as a log cannot eat memory). Anything but a regular file (a FIFO, a
// device such as /dev/zero, a directory) is kNotRegular and never read, so the call cannot
// block on a writer.
FileText ReadCappedFile(const std::string& path, size_t max_bytes);

// ReadCappedFile with its problems as statuses naming the file as `what` ("rules file"):
// NotFound for a missing file, InvalidArgument otherwise.
absl::StatusOr<std::string> ReadConfigFile(const std::string& path, std::string_view what,
                                           size_t max_bytes);

}  // namespace hotkey::config::internal

#endif  // HOTKEY_CONFIG_YAML_UTIL_H_
