// ClientHosts: how many distinct client hosts (IP addresses) a source has seen over the
// last kWindow, in fixed memory. The advice model's app-server count (A, the hosts that
// would each cache a hot key) can then be measured rather than configured: the tap sees the
// peers of the connections to the tapped port, the UDP receiver the senders of datagrams.
//
// A bounded table of at most kCapacity addresses, each with the time it was last seen: a
// dense array of entries and an open-addressing index (linear probing) of 2 x kCapacity
// slots into it, so a probe sequence is short (load at most 1/2). Saw() finds or adds an
// address in O(1) expected, with no allocation (all of it is allocated by the
// constructor). Expire() (once per publish) drops the addresses not seen within kWindow,
// compacting the array and rebuilding the index: O(kCapacity). A new address that finds
// the table full is not added: from then until kWindow has passed, capped() is true and
// count() is a lower bound ("at least").
//
// Memory: kCapacity x 24 bytes (entries) + 2 x kCapacity x 2 bytes (index) = 112 KiB
// (kMemoryBytes).
//
// Thread-compatible: one writer (the source's thread).

#ifndef HOTKEY_SOURCE_CLIENT_HOSTS_H_
#define HOTKEY_SOURCE_CLIENT_HOSTS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/time/time.h"

namespace hotkey::source {

class ClientHosts {
 public:
  // An IPv6 address, or an IPv4 address mapped into IPv6 (::ffff:a.b.c.d), as the tap's
  // decoder (hotkey/tcp/packet.h) and a dual-stack socket give them: one host, one key.
  using Address = std::array<uint8_t, 16>;

  // Addresses held at most: a fleet of app servers is rarely larger, and past it the count
  // says "at least" (capped()).
  static constexpr size_t kCapacity = 4096;
  // A host counts while seen within this: long enough that a client with a quiet spell
  // still counts, short enough that hosts gone after a deploy drop out.
  static constexpr absl::Duration kWindow = absl::Minutes(10);

  ClientHosts();

  // Records that `address` was seen at `now` (times never go back). No allocation.
  void Saw(const Address& address, absl::Time now);
  // Forgets the addresses last seen at or before now - kWindow.
  void Expire(absl::Time now);

  // Distinct addresses seen within kWindow as of the last Expire() (and since it, all that
  // Saw() added); a lower bound while capped().
  uint32_t count() const { return static_cast<uint32_t>(size_); }
  // A new address was turned away (the table was full) within kWindow of `now`.
  bool capped(absl::Time now) const { return now - last_refused_ < kWindow; }
  // Bytes held, fixed at construction: kMemoryBytes.
  size_t memory_bytes() const;

 private:
  static constexpr size_t kSlots = 2 * kCapacity;  // a power of two
  static constexpr uint16_t kEmpty = 0xffff;
  struct Entry {
    Address address;
    int64_t last_seen;  // nanoseconds since the Unix epoch of the clock given
  };

 public:
  static constexpr size_t kMemoryBytes = kCapacity * sizeof(Entry) + kSlots * sizeof(uint16_t);

 private:
  static size_t Slot(const Address& address);
  void Index(uint16_t entry);

  std::vector<Entry> entries_;   // [0, size_) in use
  std::vector<uint16_t> index_;  // kSlots: an entry's position, or kEmpty
  size_t size_ = 0;
  absl::Time last_refused_ = absl::InfinitePast();
};

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_CLIENT_HOSTS_H_
