#include "hotkey/source/client_hosts.h"

#include <cstdint>

#include <catch2/catch.hpp>

#include "absl/time/time.h"
#include "alloc_count.h"
#include "hotkey/source/report.h"

namespace hotkey::source {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'700'000'000);

// 10.0.x.y mapped into IPv6, for host number n.
ClientHosts::Address V4(uint32_t n) {
  ClientHosts::Address a = {};
  a[10] = a[11] = 0xff;
  a[12] = 10;
  a[13] = 0;
  a[14] = static_cast<uint8_t>(n >> 8);
  a[15] = static_cast<uint8_t>(n);
  return a;
}

TEST_CASE("ClientHosts: counts each address once, however often it is seen", "[source]") {
  ClientHosts h;
  CHECK(h.count() == 0);
  for (int round = 0; round < 3; ++round) {
    for (uint32_t n = 0; n < 100; ++n) h.Saw(V4(n), kStart + absl::Seconds(round));
  }
  h.Expire(kStart + absl::Seconds(3));
  CHECK(h.count() == 100);
  CHECK_FALSE(h.capped(kStart + absl::Seconds(3)));
  // An IPv6 address that differs from a mapped IPv4 one is another host.
  ClientHosts::Address v6 = V4(1);
  v6[0] = 0x20;
  h.Saw(v6, kStart + absl::Seconds(3));
  CHECK(h.count() == 101);
}

TEST_CASE("ClientHosts: a host drops out kWindow after it was last seen, not before", "[source]") {
  ClientHosts h;
  h.Saw(V4(1), kStart);
  h.Saw(V4(2), kStart);
  h.Saw(V4(2), kStart + absl::Minutes(5));  // host 2 seen again 5 minutes later
  h.Expire(kStart + ClientHosts::kWindow - absl::Nanoseconds(1));
  CHECK(h.count() == 2);
  h.Expire(kStart + ClientHosts::kWindow);  // host 1: last seen exactly a window ago
  CHECK(h.count() == 1);
  h.Saw(V4(1), kStart + ClientHosts::kWindow);  // back: counted again
  CHECK(h.count() == 2);
  h.Expire(kStart + absl::Minutes(5) + ClientHosts::kWindow);  // host 2's window is over
  CHECK(h.count() == 1);
  // Expiry leaves the table usable: every survivor is found again, not added twice.
  for (uint32_t n = 0; n < 50; ++n) h.Saw(V4(n), kStart + absl::Minutes(20));
  h.Expire(kStart + absl::Minutes(20));
  CHECK(h.count() == 50);
  for (uint32_t n = 0; n < 50; ++n) h.Saw(V4(n), kStart + absl::Minutes(21));
  CHECK(h.count() == 50);
}

TEST_CASE("ClientHosts: past kCapacity the count says at least, until a window has passed",
          "[source]") {
  ClientHosts h;
  const uint32_t n = ClientHosts::kCapacity + 10;
  for (uint32_t i = 0; i < n; ++i) h.Saw(V4(i), kStart);
  CHECK(h.count() == ClientHosts::kCapacity);
  CHECK(h.capped(kStart));
  // Known hosts are still refreshed when the table is full.
  h.Saw(V4(0), kStart + absl::Minutes(9));
  h.Expire(kStart + absl::Minutes(10));
  CHECK(h.count() == 1);
  CHECK(h.capped(kStart + absl::Minutes(10) - absl::Nanoseconds(1)));
  CHECK_FALSE(h.capped(kStart + absl::Minutes(10)));
}

TEST_CASE("ClientHosts: memory is fixed at construction; Saw and Expire allocate nothing",
          "[source]") {
  ClientHosts h;
  CHECK(h.memory_bytes() == ClientHosts::kMemoryBytes);
  CHECK(ClientHosts::kMemoryBytes == 112 * 1024);
  const uint64_t before = testing::AllocationsOnThisThread();
  for (int round = 0; round < 3; ++round) {
    for (uint32_t i = 0; i < 2 * ClientHosts::kCapacity; ++i) {
      h.Saw(V4(i), kStart + absl::Minutes(round * 11));
    }
    h.Expire(kStart + absl::Minutes(round * 11));
  }
  CHECK(testing::AllocationsOnThisThread() == before);
  CHECK(h.memory_bytes() == ClientHosts::kMemoryBytes);
}

TEST_CASE("SourceCounters: client hosts merge as the largest, not the sum", "[source]") {
  SourceCounters a, b, c;
  a.client_hosts = 3;
  b.client_hosts = 5;
  b.client_hosts_capped = true;
  c.client_hosts = 4;
  SourceCounters sum;
  sum.Add(a);
  sum.Add(b);
  sum.Add(c);
  CHECK(sum.client_hosts == 5);
  CHECK(sum.client_hosts_capped);  // the largest says "at least"
  SourceCounters d;
  d.Add(a);
  d.Add(c);
  CHECK(d.client_hosts == 4);
  CHECK_FALSE(d.client_hosts_capped);
}

}  // namespace
}  // namespace hotkey::source
