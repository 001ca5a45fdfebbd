#include "hotkey/cluster/slot.h"

#include <array>

namespace hotkey::cluster {

namespace {

// The byte-at-a-time table of CRC16/XMODEM (polynomial 0x1021).
constexpr std::array<uint16_t, 256> MakeTable() {
  std::array<uint16_t, 256> t = {};
  for (int b = 0; b < 256; ++b) {
    uint16_t crc = static_cast<uint16_t>(b << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    t[b] = crc;
  }
  return t;
}
constexpr std::array<uint16_t, 256> kTable = MakeTable();

}  // namespace

uint16_t Crc16(std::string_view bytes) {
  uint16_t crc = 0;
  for (const char c : bytes) {
    crc = static_cast<uint16_t>((crc << 8) ^ kTable[((crc >> 8) ^ static_cast<uint8_t>(c)) & 0xff]);
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
