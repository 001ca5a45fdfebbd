// Redis Cluster's key slots and hash tags, computed as Redis computes them (cluster.c,
// keyHashSlot), so that hotkeyd can group a shard's traffic by slot and by tag on any Redis
// version, from the keys it already sees.
//
// A key's slot is CRC16(hashed part) mod 16384, with CRC16 the XMODEM variant (polynomial
// 0x1021, initial value 0, no reflection; CRC16("123456789") = 0x31C3). The hashed part is
// the key's hash tag when it has one, else the whole key. The hash tag is the text between
// the first '{' and the first '}' after it, when that text is not empty: "user:{42}:name"
// has tag "42"; "{}x", "x{" and "}{x" have none; "{{a}}" has tag "{a"; "a{b}{c}" has "b".
// Keys are arbitrary bytes; a NUL or any other byte is a byte like any other.
//
// Tests: tests/daemon/input/cluster/slot_test.cc checks both against a real redis-server's
// CLUSTER KEYSLOT for thousands of keys, binary ones and every brace arrangement among them.
//
// Cost: O(key length), no allocation. Thread-safe (pure functions).

#ifndef HOTKEY_CLUSTER_SLOT_H_
#define HOTKEY_CLUSTER_SLOT_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace hotkey::cluster {

inline constexpr int kSlots = 16384;

// The key's hash tag (a view into `key`), or nullopt when it has none.
std::optional<std::string_view> HashTag(std::string_view key);

// The slot Redis Cluster puts `key` in: 0 to kSlots - 1.
uint16_t KeySlot(std::string_view key);

// CRC16/XMODEM of `bytes`.
uint16_t Crc16(std::string_view bytes);

}  // namespace hotkey::cluster

#endif  // HOTKEY_CLUSTER_SLOT_H_
