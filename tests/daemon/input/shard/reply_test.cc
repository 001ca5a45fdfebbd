// Framing of the replies the prober reads: whole, in pieces, hostile.

#include "hotkey/shard/reply.h"

#include <string>

#include <catch2/catch.hpp>

namespace hotkey::shard {
namespace {

constexpr size_t kCap = 1024;

TEST_CASE("Reply: RESP simple strings, errors, bulk strings and nulls", "[shard]") {
  auto r = ParseRespReply("+OK\r\n", kCap);
  REQUIRE(r.ok());
  REQUIRE(*r);
  CHECK((*r)->kind == Reply::Kind::kSimple);
  CHECK((*r)->text == "OK");
  CHECK((*r)->size == 5);
  r = ParseRespReply("-WRONGPASS invalid\r\n+OK\r\n", kCap);
  REQUIRE(r.ok());
  CHECK((*r)->kind == Reply::Kind::kError);
  CHECK((*r)->text == "WRONGPASS invalid");
  CHECK((*r)->size == 20);                        // "-", 17 bytes, CRLF
  r = ParseRespReply("$5\r\nab\r\nc\r\n", kCap);  // a payload may hold CRLF
  REQUIRE(r.ok());
  CHECK((*r)->kind == Reply::Kind::kBulk);
  CHECK((*r)->text == "ab\r\nc");
  CHECK((*r)->size == 11);
  r = ParseRespReply("$-1\r\n", kCap);
  REQUIRE(r.ok());
  CHECK((*r)->kind == Reply::Kind::kNull);
}

TEST_CASE("Reply: every prefix of a RESP reply is incomplete, not an error", "[shard]") {
  const std::string whole = "$11\r\nhello world\r\n";
  for (size_t n = 0; n < whole.size(); ++n) {
    INFO(n);
    auto r = ParseRespReply(std::string_view(whole).substr(0, n), kCap);
    REQUIRE(r.ok());
    CHECK_FALSE(*r);
  }
  CHECK(*ParseRespReply(whole, kCap));
}

TEST_CASE("Reply: hostile RESP replies are errors, over-long ones before their bytes arrive",
          "[shard]") {
  for (std::string_view bad :
       {":1\r\n", "*1\r\n$1\r\nx\r\n", "=5\r\ntxt:x\r\n", "$x\r\n", "$\r\n", "$-2\r\n",
        "$+3\r\nabc\r\n", "$3\r\nabcXY", "$99999999999999999999999\r\n", "\r\n"}) {
    INFO(bad);
    CHECK_FALSE(ParseRespReply(bad, kCap).ok());
  }
  // The header alone says 2 KiB: refused at once.
  auto r = ParseRespReply("$2048\r\n", kCap);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kResourceExhausted);
  // A line that never ends: refused once past the cap.
  CHECK(ParseRespReply(std::string(kCap, '+'), kCap).ok());
  CHECK_FALSE(ParseRespReply(std::string(kCap + 1, '+'), kCap).ok());
}

TEST_CASE("Reply: memcached replies end at their terminal line or at an error line", "[shard]") {
  const std::string stats = "STAT pid 1\r\nSTAT threads 4\r\nEND\r\n";
  for (size_t n = 0; n < stats.size(); ++n) {
    auto r = ParseMemcachedReply(std::string_view(stats).substr(0, n), "END", kCap);
    REQUIRE(r.ok());
    CHECK_FALSE(*r);
  }
  auto r = ParseMemcachedReply(stats, "END", kCap);
  REQUIRE(r.ok());
  REQUIRE(*r);
  CHECK((*r)->kind == Reply::Kind::kBulk);
  CHECK((*r)->text == "STAT pid 1\r\nSTAT threads 4\r\n");
  CHECK((*r)->size == stats.size());
  // "ENDX" is not the end.
  r = ParseMemcachedReply("STAT x ENDX\r\nENDX\r\n", "END", kCap);
  REQUIRE(r.ok());
  CHECK_FALSE(*r);
  for (std::string_view err :
       {"ERROR\r\n", "CLIENT_ERROR unauthenticated\r\n", "SERVER_ERROR out of memory\r\n"}) {
    r = ParseMemcachedReply(err, "END", kCap);
    REQUIRE(r.ok());
    REQUIRE(*r);
    CHECK((*r)->kind == Reply::Kind::kError);
  }
  CHECK(ParseMemcachedReply("STORED\r\n", "STORED", kCap).value()->kind == Reply::Kind::kBulk);
  CHECK_FALSE(ParseMemcachedReply(std::string(kCap + 1, 'S'), "END", kCap).ok());
}

}  // namespace
}  // namespace hotkey::shard
