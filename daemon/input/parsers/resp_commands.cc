// The command table (redis_commands.inc, generated) and its lookup.

#include "resp_commands.h"

#include <algorithm>

namespace hotkey::parsers::resp {
namespace {

constexpr CommandSpec kCommands[] = {
#include "redis_commands.inc"
};

constexpr bool SortedByName() {
  for (size_t i = 1; i < std::size(kCommands); ++i) {
    if (!(kCommands[i - 1].name < kCommands[i].name)) return false;
  }
  return true;
}
static_assert(SortedByName(), "FindCommand's binary search needs redis_commands.inc sorted");

}  // namespace

std::span<const CommandSpec> Commands() { return kCommands; }

const CommandSpec* FindCommand(std::string_view lower_name) {
  const auto* it =
      std::lower_bound(std::begin(kCommands), std::end(kCommands), lower_name,
                       [](const CommandSpec& c, std::string_view n) { return c.name < n; });
  if (it == std::end(kCommands) || it->name != lower_name) return nullptr;
  return it;
}

}  // namespace hotkey::parsers::resp
