#include "hotkey/sketch/hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace hotkey::sketch {

uint64_t HashKey(std::string_view key, uint64_t seed) {
  return XXH3_64bits_withSeed(key.data(), key.size(), seed);
}

}  // namespace hotkey::sketch
