#include <cstdio>
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "hotkey/version/build_info.h"

namespace {

using Catch::Contains;
using Catch::StartsWith;

// The first line `command` prints, without its newline; empty if it fails.
std::string FirstLine(const std::string& command) {
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[256];
    if (fgets(buf, sizeof buf, p)) out = buf;
    pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string S(std::string_view s) { return std::string(s); }

}  // namespace

TEST_CASE("Version: the version is the project's, set in one place", "[version]") {
  CHECK(hotkey::version::Build().version == HOTKEY_PROJECT_VERSION);
}

TEST_CASE("Version: a build from a git checkout carries its revision and branch", "[version]") {
  const std::string src = HOTKEY_SOURCE_DIR;
  const std::string head = FirstLine("git -C '" + src + "' rev-parse HEAD 2>/dev/null");
  if (!std::filesystem::exists(src + "/.git") || head.empty()) {
    WARN("not built from a git checkout with git installed: nothing to compare");
    return;
  }
  const hotkey::version::BuildInfo& b = hotkey::version::Build();
  // The revision is that of the tree when it was built; a test binary is rebuilt with every
  // commit, so it is HEAD's (with -dirty while the tree has uncommitted changes).
  CHECK_THAT(S(b.revision), StartsWith(head));
  CHECK(b.branch == FirstLine("git -C '" + src + "' rev-parse --abbrev-ref HEAD"));
}

TEST_CASE("Version: --version text is in the Prometheus exporters' format", "[version]") {
  const hotkey::version::BuildInfo& b = hotkey::version::Build();
  const std::string text = hotkey::version::VersionText("hotkeyd");
  CHECK_THAT(text, StartsWith("hotkeyd, version " + S(b.version) + " (branch: " + S(b.branch) +
                              ", revision: " + S(b.revision) + ")\n"));
  CHECK_THAT(text, Contains("\n  build user:       " + S(b.build_user) + "\n"));
  CHECK_THAT(text, Contains("\n  build date:       " + S(b.build_date) + "\n"));
  CHECK_THAT(text, Contains("\n  compiler:         " + S(b.compiler) + "\n"));
  CHECK(b.build_date.size() == 20);  // 2026-12-01T08:54:00Z
  CHECK(!b.compiler.empty());
}
