// BuildInfo: what this binary was built from, for `--version` and `hotkey_build_info`.
//
// The values are fixed at build time by version/build_info.cmake: the project version from
// the top-level CMakeLists.txt (the one place it is set), and the git revision and branch of
// the source tree when it is a git checkout ("unknown" otherwise, e.g. a release tarball).
// The build date is SOURCE_DATE_EPOCH when set (reproducible builds), else the date of the
// commit, so an unchanged tree rebuilds to the same binary.
//
// Thread-safe: immutable.

#ifndef HOTKEY_VERSION_BUILD_INFO_H_
#define HOTKEY_VERSION_BUILD_INFO_H_

#include <string>
#include <string_view>

namespace hotkey::version {

struct BuildInfo {
  std::string_view version;     // "0.1.0"
  std::string_view revision;    // full git commit id, "-dirty" appended for a modified tree
  std::string_view branch;      // git branch, or "unknown"
  std::string_view build_user;  // user@host that configured the build
  std::string_view build_date;  // RFC 3339, UTC
  std::string_view compiler;    // "GNU 12.2.0"
};

const BuildInfo& Build();

// The Prometheus `--version` text for `program`:
//   hotkeyd, version 0.1.0 (branch: main, revision: 8a098cc...)
//     build user:       root@host
//     build date:       2026-12-01T08:54:00Z
//     compiler:         GNU 12.2.0
std::string VersionText(std::string_view program);

}  // namespace hotkey::version

#endif  // HOTKEY_VERSION_BUILD_INFO_H_
