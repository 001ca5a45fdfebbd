// The Redis command table of the RESP request parser: each command's arity and key
// specifications, generated from a real redis-server (tools/gen-redis-commands.py writes
// redis_commands.inc) and interpreted the way Redis interprets them (resp.cc).
//
// Private to parsers/ and its tests: the daemon sees only hotkey/parsers/request.h.
// Thread-safe: constant data.

#ifndef HOTKEY_PARSERS_RESP_COMMANDS_H_
#define HOTKEY_PARSERS_RESP_COMMANDS_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "hotkey/parsers/request.h"

namespace hotkey::parsers::resp {

// Where a key spec starts looking (Redis's begin_search).
enum class BeginSearch : uint8_t {
  kIndex,    // at a fixed argument index
  kKeyword,  // after a keyword found from `startfrom` (forward; from the end when < 0)
  kUnknown,  // Redis cannot say from the spec; the command's KeyFinder decides
};

// How a key spec finds its keys once begin_search found where to start (find_keys).
enum class FindKeys : uint8_t {
  kRange,   // lastkey (>= 0 relative to the start, < 0 relative to argc), keystep, limit
  kKeynum,  // an argument gives the number of keys: keynumidx, firstkey, keystep
  kUnknown,
};

// Commands whose keys Redis finds with its own getkeys function rather than the specs,
// because a spec is unknown, INCOMPLETE or VARIABLE_FLAGS (see tools/gen-redis-commands.py).
enum class KeyFinder : uint8_t {
  kNone,      // the specs alone
  kSort,      // sortGetKeys: key 1 read; the key after the last STORE written
  kSortRo,    // sortROGetKeys: key 1 read
  kMigrate,   // migrateGetKeys: key 3, or with an empty key 3 every argument after KEYS
  kBitfield,  // bitfieldGetKeys: key 1, a read when every operation is GET
};

struct KeySpec {
  Access access;  // RO: read; RW, OW, RM: write
  BeginSearch begin_search;
  int index_or_startfrom;
  std::string_view keyword;  // kKeyword only, upper case
  FindKeys find_keys;
  int fk0;  // kRange: lastkey;  kKeynum: keynumidx
  int fk1;  // kRange: keystep;  kKeynum: firstkey
  int fk2;  // kRange: limit;    kKeynum: keystep
};

inline constexpr int kMaxSpecs = 3;  // the most any Redis 7.0 command has (GEORADIUS)

struct CommandSpec {
  std::string_view name;  // lower case; a subcommand is "container|sub"
  int arity;              // > 0: exactly this argc; < 0: at least -arity
  bool has_subcommands;
  KeyFinder finder;
  int num_specs;
  KeySpec specs[kMaxSpecs];
};

// Every command and subcommand, sorted by name (bytewise).
std::span<const CommandSpec> Commands();

// The command called `lower_name` (already lower case), or nullptr.
const CommandSpec* FindCommand(std::string_view lower_name);

}  // namespace hotkey::parsers::resp

#endif  // HOTKEY_PARSERS_RESP_COMMANDS_H_
