// Key hashing for every sketch in hotkey::sketch.
//
// Each key is hashed once, to 64 bits, with XXH3 (Collet, xxHash 0.8; stable output across
// versions, machines and processes) and a seed. Every structure derives what it needs from
// that one value (count-min rows, table index), so sketches built from the same seed can be
// merged across processes and restored from disk. Its cost is counted by
// bench/callgrind.sh's floor loop (docs/benchmarks/tracker.md); HeavyHitters::Update()
// inlines it.
//
// Use a fixed seed when sketches must be merged or stored; use a secret seed when an
// adversary must not be able to aim many keys at the same counters.

#ifndef HOTKEY_SKETCH_HASH_H_
#define HOTKEY_SKETCH_HASH_H_

#include <cstdint>
#include <string_view>

namespace hotkey::sketch {

// The seed used unless a caller chooses another ("hotkey" in ASCII).
inline constexpr uint64_t kDefaultSeed = 0x686f746b6579ULL;

// Returns the 64-bit XXH3 hash of `key` under `seed`. Thread-safe.
uint64_t HashKey(std::string_view key, uint64_t seed);

}  // namespace hotkey::sketch

#endif  // HOTKEY_SKETCH_HASH_H_
