// Op: the operations the tracker counts apart (reads and writes), alone in a header of its own
// (and its own CMake target, hotkey::sketch_op), so that code which names an operation
// without tracking anything, such as the UDP wire protocol's parser (hotkey/parsers/wire.h),
// compiles and links without the tracker.

#ifndef HOTKEY_SKETCH_OP_H_
#define HOTKEY_SKETCH_OP_H_

#include <cstdint>

namespace hotkey::sketch {

// The values index the tracker's per-op arrays (HeavyHitter's weights, Total(op)).
enum class Op : uint8_t { kRead = 0, kWrite = 1 };
inline constexpr int kNumOps = 2;

}  // namespace hotkey::sketch

#endif  // HOTKEY_SKETCH_OP_H_
