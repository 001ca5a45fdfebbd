#include <string>

#include "hotkey/version/build_info.h"

namespace hotkey::version {

std::string VersionText(std::string_view program) {
  const BuildInfo& b = Build();
  std::string out;
  for (std::string_view part :
       {program, std::string_view(", version "), b.version, std::string_view(" (branch: "),
        b.branch, std::string_view(", revision: "), b.revision,
        std::string_view(")\n  build user:       "), b.build_user,
        std::string_view("\n  build date:       "), b.build_date,
        std::string_view("\n  compiler:         "), b.compiler, std::string_view("\n")}) {
    out.append(part);
  }
  return out;
}

}  // namespace hotkey::version
