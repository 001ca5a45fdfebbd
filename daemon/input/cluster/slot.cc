#include "hotkey/cluster/slot.h"

#include <array>

namespace hotkey::cluster {

namespace {

// CRC16/XMODEM (polynomial 0x1021) eight bytes at a time ("slicing-by-8", Kounavis and
// Berry, "A Systematic Approach to Building High Performance Software-Based CRC
// Generators", 2005). kTables[k][x] is the CRC of byte x followed by k zero bytes, from a
// zero state; kTables[0] is the classic byte-at-a-time table. The CRC is linear, so eight
// bytes b0..b7 from state (h, l) give
//   kTables[7][h ^ b0] ^ kTables[6][l ^ b1] ^ kTables[5][b2] ^ ... ^ kTables[0][b7],
// eight independent lookups where the byte-at-a-time loop chains eight dependent ones: the
// slot is computed for every event the sources count, and that chain was most of its cost
// (bench/slots_cost.sh). 4 KiB of tables, in L1 on the hot path.
using Table = std::array<uint16_t, 256>;

constexpr std::array<Table, 8> MakeTables() {
  std::array<Table, 8> t = {};
  for (int b = 0; b < 256; ++b) {
    uint16_t crc = static_cast<uint16_t>(b << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    t[0][b] = crc;
  }
  for (int k = 1; k < 8; ++k) {
    for (int b = 0; b < 256; ++b) {
      const uint16_t prev = t[k - 1][b];
      t[k][b] = static_cast<uint16_t>((prev << 8) ^ t[0][prev >> 8]);
    }
  }
  return t;
}
constexpr std::array<Table, 8> kTables = MakeTables();

}  // namespace

uint16_t Crc16(std::string_view bytes) {
  uint16_t crc = 0;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  size_t n = bytes.size();
  for (; n >= 8; n -= 8, p += 8) {
    crc = static_cast<uint16_t>(kTables[7][(crc >> 8) ^ p[0]] ^ kTables[6][(crc & 0xff) ^ p[1]] ^
                                kTables[5][p[2]] ^ kTables[4][p[3]] ^ kTables[3][p[4]] ^
                                kTables[2][p[5]] ^ kTables[1][p[6]] ^ kTables[0][p[7]]);
  }
  for (; n > 0; --n, ++p) {
    crc = static_cast<uint16_t>((crc << 8) ^ kTables[0][((crc >> 8) ^ *p) & 0xff]);
  }
  return crc;
}

std::optional<std::string_view> HashTag(std::string_view key) {
  const size_t open = key.find('{');
  if (open == std::string_view::npos) return std::nullopt;
  const size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return std::nullopt;
  return key.substr(open + 1, close - open - 1);
}

uint16_t KeySlot(std::string_view key) {
  const std::optional<std::string_view> tag = HashTag(key);
  return static_cast<uint16_t>(Crc16(tag ? *tag : key) & (kSlots - 1));
}

}  // namespace hotkey::cluster
