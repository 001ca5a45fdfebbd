// libFuzzer target: daemon/input/cluster/'s functions over bytes: a key's hash tag and slot
// (slot.h), and the CLUSTER NODES parser (topology.h). Every input is used whole, as a key and as
// the text of CLUSTER NODES.
//
// Checked beyond "no crash, no sanitizer report":
// - HashTag agrees with a plain reading of Redis's keyHashSlot (first '{', then the first '}'
//   after it, not adjacent), as a view into the key itself; Crc16 agrees with a bit-at-a-time
//   CRC16/XMODEM; KeySlot is below kSlots and is that CRC of the tag, or else of the key;
// - a parsed topology has 1 to kMaxNodes nodes, each with an id, slot ranges first <= last <
//   kSlots, moves of slots below kSlots to a named node, and a SlotCount equal to its ranges'
//   sum; Owner of each range's ends serves that slot; Myself() is the first node flagged
//   myself; Shards() counts the primaries with slots.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "fuzz_util.h"
#include "hotkey/cluster/slot.h"
#include "hotkey/cluster/topology.h"

namespace hotkey::fuzz {
namespace {

std::optional<std::string_view> ReferenceTag(std::string_view key) {
  size_t open = 0;
  while (open < key.size() && key[open] != '{') ++open;
  if (open == key.size()) return std::nullopt;
  size_t close = open + 1;
  while (close < key.size() && key[close] != '}') ++close;
  if (close == key.size() || close == open + 1) return std::nullopt;
  return key.substr(open + 1, close - open - 1);
}

uint16_t ReferenceCrc16(std::string_view bytes) {
  uint16_t crc = 0;
  for (const char c : bytes) {
    crc ^= static_cast<uint16_t>(static_cast<uint8_t>(c) << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<uint16_t>(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
  }
  return crc;
}

void CheckKey(std::string_view key) {
  const std::optional<std::string_view> tag = cluster::HashTag(key);
  const std::optional<std::string_view> want = ReferenceTag(key);
  FUZZ_CHECK(tag.has_value() == want.has_value());
  if (tag) FUZZ_CHECK(tag->data() == want->data() && tag->size() == want->size());
  FUZZ_CHECK(cluster::Crc16(key) == ReferenceCrc16(key));
  const uint16_t slot = cluster::KeySlot(key);
  FUZZ_CHECK(slot < cluster::kSlots);
  FUZZ_CHECK(slot == ReferenceCrc16(want ? *want : key) % cluster::kSlots);
}

bool Serves(const cluster::Node& n, uint16_t slot) {
  for (const cluster::SlotRange& r : n.slots) {
    if (r.first <= slot && slot <= r.last) return true;
  }
  return false;
}

void CheckTopology(std::string_view text) {
  const absl::StatusOr<cluster::Topology> t = cluster::ParseClusterNodes(text);
  if (!t.ok()) return;
  FUZZ_CHECK(!t->nodes.empty() && t->nodes.size() <= cluster::kMaxNodes);
  const cluster::Node* myself = nullptr;
  int shards = 0;
  for (const cluster::Node& n : t->nodes) {
    FUZZ_CHECK(!n.id.empty());
    if (n.myself && !myself) myself = &n;
    shards += n.primary && !n.slots.empty();
    int64_t count = 0;
    for (const cluster::SlotRange& r : n.slots) {
      FUZZ_CHECK(r.first <= r.last && r.last < cluster::kSlots);
      count += r.last - r.first + 1;
      for (const uint16_t s : {r.first, r.last}) {
        const cluster::Node* owner = t->Owner(s);
        FUZZ_CHECK(owner != nullptr && Serves(*owner, s));
      }
    }
    FUZZ_CHECK(n.SlotCount() == count);
    for (const auto* moves : {&n.migrating, &n.importing}) {
      for (const cluster::SlotMove& m : *moves) {
        FUZZ_CHECK(m.slot < cluster::kSlots && !m.node.empty());
      }
    }
  }
  FUZZ_CHECK(t->Myself() == myself);
  FUZZ_CHECK(t->Shards() == shards);
}

}  // namespace

int FuzzCluster(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckKey(text);
  CheckTopology(text);
  return 0;
}

}  // namespace hotkey::fuzz

#ifndef HOTKEY_FUZZ_NO_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hotkey::fuzz::FuzzCluster(data, size);
}
#endif
