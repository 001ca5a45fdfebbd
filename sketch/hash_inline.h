// HashKeyInline(): HashKey() with XXH3 inlined into its caller, for the tracker's per-event
// path (heavy_hitters.cc); the same value as HashKey(), which calls it. XXH_INLINE_ALL makes
// xxHash's functions static to each file that includes this. Internal to hotkey::sketch.

#ifndef HOTKEY_SKETCH_HASH_INLINE_H_
#define HOTKEY_SKETCH_HASH_INLINE_H_

#include <cstdint>
#include <string_view>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace hotkey::sketch::internal {

inline uint64_t HashKeyInline(std::string_view key, uint64_t seed) {
  return XXH3_64bits_withSeed(key.data(), key.size(), seed);
}

}  // namespace hotkey::sketch::internal

#endif  // HOTKEY_SKETCH_HASH_INLINE_H_
