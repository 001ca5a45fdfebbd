#include "hotkey/sketch/hash.h"

#include "hash_inline.h"

namespace hotkey::sketch {

uint64_t HashKey(std::string_view key, uint64_t seed) { return internal::HashKeyInline(key, seed); }

}  // namespace hotkey::sketch
