// Tests of the /proc readers (web/proc_stats.h): the UDP drop counter parser on a fixed
// sample table, and the process metrics read from this very process.

#include "hotkey/web/proc_stats.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/time/clock.h"

namespace hotkey::web {
namespace {

// As in proc(5) for /proc/net/udp on Linux 6.x: one header line, then one row a socket;
// the inode is column 10, drops the last column.
constexpr std::string_view kUdpTable =
    "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
    "timeout inode ref pointer drops            \n"
    "  123: 0100007F:277F 00000000:0000 07 00000000:00000000 00:00000000 00000000  1000        "
    "0 4242 2 0000000000000000 17        \n"
    "  124: 0100007F:277F 00000000:0000 07 00000000:00000000 00:00000000 00000000  1000        "
    "0 4343 2 0000000000000000 5         \n"
    "  200: 00000000:0044 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        "
    "0 999 2 0000000000000000 1000000   \n";

TEST_CASE("ProcStats: UDP drops are summed over the rows of our inodes only", "[daemon][proc]") {
  const std::vector<uint64_t> one = {4242};
  const std::vector<uint64_t> both = {4242, 4343};
  const std::vector<uint64_t> none = {1};
  CHECK(ParseUdpDrops(kUdpTable, one) == 17);
  CHECK(ParseUdpDrops(kUdpTable, both) == 22);
  CHECK(ParseUdpDrops(kUdpTable, none) == 0);
  CHECK(ParseUdpDrops(kUdpTable, {}) == 0);
}

TEST_CASE("ProcStats: a malformed or empty table gives zero drops, not a crash", "[daemon][proc]") {
  const std::vector<uint64_t> inodes = {4242};
  CHECK(ParseUdpDrops("", inodes) == 0);
  CHECK(ParseUdpDrops("header only\n", inodes) == 0);
  CHECK(ParseUdpDrops("header\n  1: short row 4242\n", inodes) == 0);
  CHECK(ParseUdpDrops("header\n 1: a b c d e f g h 4242 j k notanumber\n", inodes) == 0);
  // The header itself is never read as a row, even if it looked like one.
  CHECK(ParseUdpDrops("0: a b c d e f g h 4242 j k 9\n", inodes) == 0);
}

TEST_CASE("ProcStats: the kernel drops of a real socket of ours are found by its inode",
          "[daemon][proc]") {
  // A receiver with the smallest buffer the kernel allows, never read: datagrams sent to it
  // beyond its buffer are dropped by the kernel and counted in its /proc/net/udp row.
  const int rx = ::socket(AF_INET, SOCK_DGRAM, 0);
  const int tx = ::socket(AF_INET, SOCK_DGRAM, 0);
  REQUIRE(rx >= 0);
  REQUIRE(tx >= 0);
  const int tiny = 1;
  REQUIRE(::setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &tiny, sizeof tiny) == 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(rx, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(rx, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  struct stat st;
  REQUIRE(::fstat(rx, &st) == 0);
  const std::vector<uint64_t> inodes = {static_cast<uint64_t>(st.st_ino)};
  CHECK(ReadUdpDrops(inodes) == 0);
  const std::string payload(1000, 'x');
  for (int i = 0; i < 100; ++i) {
    ::sendto(tx, payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&addr),
             sizeof addr);
  }
  const uint64_t drops = ReadUdpDrops(inodes);
  CHECK(drops > 50);
  CHECK(drops <= 100);
  ::close(rx);
  ::close(tx);
}

TEST_CASE("ProcStats: the process metrics of this process are plausible", "[daemon][proc]") {
  absl::StatusOr<ProcessStats> p = ReadProcessStats();
  REQUIRE(p.ok());
  CHECK(p->resident_bytes > 1 << 20);
  CHECK(p->virtual_bytes >= p->resident_bytes);
  CHECK(p->cpu_seconds >= 0);
  CHECK(p->cpu_seconds < 3600);
  const double now = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  CHECK(p->start_time_seconds <= now + 1);
  CHECK(p->start_time_seconds > now - 3600);
  CHECK(p->open_fds >= 3);  // stdin, stdout, stderr at least
  CHECK(p->max_fds >= p->open_fds);
  // Opening a file shows up in the count.
  const int fd = ::dup(1);
  REQUIRE(fd >= 0);
  absl::StatusOr<ProcessStats> q = ReadProcessStats();
  REQUIRE(q.ok());
  CHECK(q->open_fds == p->open_fds + 1);
  ::close(fd);
}

}  // namespace
}  // namespace hotkey::web
