// HashKeyInline(): HashKey() with XXH3 inlined into its caller for keys of up to 16 bytes
// (most keys), for the tracker's per-event path (heavy_hitters.cc); longer keys take a call
// (HashKeyLong), so the caller does not carry XXH3's long-key code and stack frame. The same
// value as HashKey(), which calls it. XXH_INLINE_ALL makes xxHash's functions static to each
// file that includes this. Internal to hotkey::sketch.

#ifndef HOTKEY_SKETCH_HASH_INLINE_H_
#define HOTKEY_SKETCH_HASH_INLINE_H_

#include <cstdint>
#include <string_view>

// With -march=native on a CPU with AVX-512 (a packager's or a benchmark's build),
// GCC 12 reports -Wmaybe-uninitialized inside avx512fintrin.h, whose
// _mm512_undefined_epi32() leaves its value uninitialised on purpose, wherever XXH3's
// long-key loop is compiled: a false positive of the intrinsics header. The intrinsics
// are first included here, so the pragma covers them. GCC only: clang has no such warning
// group (and, with -Werror, rejects the pragma naming it).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define XXH_INLINE_ALL
#include <xxhash.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace hotkey::sketch::internal {

// XXH3 of a key of any length, out of line (hash.cc).
uint64_t HashKeyLong(std::string_view key, uint64_t seed);

inline uint64_t HashKeyInline(std::string_view key, uint64_t seed) {
  if (key.size() <= 16) [[likely]] {
    return XXH3_64bits_withSeed(key.data(), key.size(), seed);
  }
  return HashKeyLong(key, seed);
}

}  // namespace hotkey::sketch::internal

#endif  // HOTKEY_SKETCH_HASH_INLINE_H_
