#include "hotkey/source/client_hosts.h"

#include <algorithm>
#include <cstring>

namespace hotkey::source {

namespace {

int64_t Nanos(absl::Time t) { return absl::ToInt64Nanoseconds(t - absl::UnixEpoch()); }

}  // namespace

ClientHosts::ClientHosts() : entries_(kCapacity), index_(kSlots, kEmpty) {
  static_assert((kSlots & (kSlots - 1)) == 0, "the slot mask needs a power of two");
  static_assert(kCapacity < kEmpty, "an entry's position fits the index, beside kEmpty");
}

size_t ClientHosts::Slot(const Address& address) {
  // Both halves mixed (a multiply and a fold): IPv4-mapped addresses differ in the low half
  // only, hosts of one IPv6 prefix in the high half.
  uint64_t hi, lo;
  std::memcpy(&hi, address.data(), 8);
  std::memcpy(&lo, address.data() + 8, 8);
  uint64_t h = (hi ^ (lo * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
  h ^= h >> 29;
  return static_cast<size_t>(h) & (kSlots - 1);
}

void ClientHosts::Index(uint16_t entry) {
  size_t slot = Slot(entries_[entry].address);
  while (index_[slot] != kEmpty) slot = (slot + 1) & (kSlots - 1);
  index_[slot] = entry;
}

void ClientHosts::Saw(const Address& address, absl::Time now) {
  size_t slot = Slot(address);
  // The index is at most half full, so an empty slot ends every probe.
  for (; index_[slot] != kEmpty; slot = (slot + 1) & (kSlots - 1)) {
    Entry& e = entries_[index_[slot]];
    if (e.address == address) {
      e.last_seen = Nanos(now);
      return;
    }
  }
  if (size_ == kCapacity) {
    last_refused_ = now;
    return;
  }
  entries_[size_] = Entry{address, Nanos(now)};
  index_[slot] = static_cast<uint16_t>(size_);
  ++size_;
}

void ClientHosts::Expire(absl::Time now) {
  const int64_t oldest = Nanos(now - kWindow);
  size_t kept = 0;
  for (size_t i = 0; i < size_; ++i) {
    if (entries_[i].last_seen > oldest) entries_[kept++] = entries_[i];
  }
  if (kept == size_) return;
  size_ = kept;
  std::fill(index_.begin(), index_.end(), kEmpty);
  for (size_t i = 0; i < size_; ++i) Index(static_cast<uint16_t>(i));
}

size_t ClientHosts::memory_bytes() const {
  return entries_.capacity() * sizeof(Entry) + index_.capacity() * sizeof(uint16_t);
}

}  // namespace hotkey::source
