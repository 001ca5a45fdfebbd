#include "hotkey/sketch/hash.h"

#include "hash_inline.h"

namespace hotkey::sketch {

namespace internal {

uint64_t HashKeyLong(std::string_view key, uint64_t seed) {
  return XXH3_64bits_withSeed(key.data(), key.size(), seed);
}

}  // namespace internal

uint64_t HashKey(std::string_view key, uint64_t seed) { return internal::HashKeyInline(key, seed); }

}  // namespace hotkey::sketch
