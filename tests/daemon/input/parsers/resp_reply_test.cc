// The RESP reply parser: one OnReply per top-level RESP2/RESP3 reply with its wire size,
// attributes charged to the reply they precede, pushes left out, splits anywhere, bounded.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "factories.h"
#include "hotkey/parsers/request.h"
#include "test_util.h"

namespace hotkey::parsers {
namespace {

using testing::RecordingReplySink;

struct Result {
  std::vector<uint64_t> replies;
  ParserCounters counters;
};

Result FeedPieces(const std::vector<std::string_view>& pieces) {
  auto parser = NewRespReplyParser({});
  RecordingReplySink sink;
  Result r;
  for (std::string_view p : pieces) parser->Feed(p, sink, r.counters);
  r.replies = std::move(sink.replies);
  return r;
}

Result FeedAll(std::string_view s) { return FeedPieces({s}); }

uint64_t Size(std::string_view s) { return s.size(); }

// One reply of each kind, RESP2 and RESP3.
const std::vector<std::string> kReplies = {
    "+OK\r\n",
    "-ERR unknown command 'FOO'\r\n",
    ":1000\r\n",
    "$5\r\nhello\r\n",
    "$0\r\n\r\n",
    "$-1\r\n",
    "*-1\r\n",
    "*0\r\n",
    "*3\r\n:1\r\n$1\r\na\r\n*2\r\n+x\r\n$-1\r\n",
    "_\r\n",
    "#t\r\n",
    ",3.14\r\n",
    ",inf\r\n",
    "(3492890328409238509324850943850943825024385\r\n",
    "!21\r\nSYNTAX invalid syntax\r\n",
    "=15\r\ntxt:Some string\r\n",
    "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n",
    "~3\r\n+a\r\n+b\r\n+c\r\n",
    "|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*2\r\n:2039123\r\n:9543892\r\n",
    "*2\r\n|1\r\n+ttl\r\n:3600\r\n$1\r\nv\r\n:2\r\n",
    "$?\r\n;4\r\nHell\r\n;1\r\no\r\n;0\r\n",
    "*?\r\n:1\r\n:2\r\n.\r\n",
    "$6\r\n\r\n\r\n\r\n\r\n",
};

TEST_CASE("RESP replies: each kind of reply is one reply of its wire size", "[parsers][resp]") {
  for (const std::string& reply : kReplies) {
    INFO(reply);
    const Result r = FeedAll(reply);
    REQUIRE(r.replies.size() == 1);
    CHECK(r.replies[0] == Size(reply));
    CHECK(r.counters.protocol_errors == 0);
  }
}

TEST_CASE("RESP replies: pushes are out of band, not replies", "[parsers][resp]") {
  const std::string push = ">3\r\n+message\r\n+chan\r\n$2\r\nhi\r\n";
  const Result r = FeedAll(push + "+OK\r\n" + push + "|1\r\n+a\r\n+b\r\n" + push + ":1\r\n");
  REQUIRE(r.replies.size() == 2);
  CHECK(r.replies[0] == 5);
  CHECK(r.replies[1] == 4);  // the attribute went with the push it preceded
}

TEST_CASE("RESP replies: a stream of replies split at any byte gives the same sizes",
          "[parsers][resp]") {
  std::string all;
  std::vector<uint64_t> want;
  for (const std::string& reply : kReplies) {
    all += reply;
    want.push_back(reply.size());
  }
  all += ">2\r\n+invalidate\r\n*1\r\n$1\r\nk\r\n";
  all += "$300\r\n" + std::string(300, 'x') + "\r\n";
  want.push_back(306 + 2);
  CHECK(FeedAll(all).replies == want);
  for (size_t cut = 0; cut <= all.size(); ++cut) {
    const std::string_view v(all);
    INFO("cut at " << cut);
    REQUIRE(FeedPieces({v.substr(0, cut), v.substr(cut)}).replies == want);
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < all.size(); ++i) bytes.push_back(std::string_view(all).substr(i, 1));
  CHECK(FeedPieces(bytes).replies == want);
}

TEST_CASE("RESP replies: nesting beyond the depth limit is a protocol error, then a resync",
          "[parsers][resp]") {
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "*1\r\n";
  auto parser = NewRespReplyParser({});
  RecordingReplySink sink;
  ParserCounters c;
  parser->Feed(deep, sink, c);
  // Every 129th level fails; the levels after it start again at a line start.
  CHECK(c.protocol_errors == 100000 / 129);
  CHECK(parser->memory_bytes() < 8192);
  parser->Feed("+OK\r\n", sink, c);
  CHECK(sink.replies.size() == 1);
}

TEST_CASE("RESP replies: an aggregate header above 1M elements is a counted protocol error",
          "[parsers][resp]") {
  // A header of INT_MAX elements, then 400,000 replies: taken as one aggregate, they would
  // pass without a reply or a counter. The header is refused; the resync then finds a reply
  // at each line that starts with a type byte.
  std::string s = "*2147483647\r\n";
  for (int i = 0; i < 400000; ++i) s += "$3\r\nabc\r\n";
  s += "+OK\r\n";
  const Result r = FeedAll(s);
  CHECK(r.counters.protocol_errors == 1);
  CHECK(r.counters.resyncs == 1);
  REQUIRE(r.replies.size() == 400001);
  CHECK(r.replies.front() == Size("$3\r\nabc\r\n"));
  CHECK(r.replies.back() == Size("+OK\r\n"));

  // The cap is 1024 * 1024 = 1048576 elements, a map's pairs counting twice.
  for (const char* at_cap : {"*1048576\r\n", "~1048576\r\n", "%524288\r\n", ">1048576\r\n"}) {
    INFO(at_cap);
    const Result ok = FeedAll(at_cap);
    CHECK(ok.counters.protocol_errors == 0);
    CHECK(ok.replies.empty());  // its elements are still to come
  }
  for (const char* above :
       {"*1048577\r\n", "~1048577\r\n", "%524289\r\n", "|524289\r\n", "*9223372036854775\r\n"}) {
    INFO(above);
    CHECK(FeedAll(above).counters.protocol_errors == 1);
  }
}

TEST_CASE("RESP replies: garbage and bad lengths resync at the next line", "[parsers][resp]") {
  const Result r = FeedAll("@@@garbage\r\n+OK\r\n$abc\r\n:5\r\n");
  CHECK(r.counters.protocol_errors == 2);
  CHECK(r.replies == std::vector<uint64_t>{5, 4});
  const Result big = FeedAll("$4611686018427387904\r\n");  // a bulk string too long to come
  CHECK(big.counters.protocol_errors == 1);
}

TEST_CASE("RESP replies: a gap resyncs at the next reply-looking line", "[parsers][resp]") {
  auto parser = NewRespReplyParser({});
  RecordingReplySink sink;
  ParserCounters c;
  parser->Feed("*2\r\n$5\r\nhel", sink, c);
  parser->Gap(c);
  parser->Feed("lo\r\n:1\r\n+OK\r\n", sink, c);
  CHECK(c.resyncs == 1);
  CHECK(sink.replies == std::vector<uint64_t>{4, 5});
}

TEST_CASE("RESP replies: parsing allocates nothing once warm", "[parsers][resp]") {
  auto parser = NewRespReplyParser({});
  RecordingReplySink sink;
  sink.replies.reserve(10000);
  ParserCounters c;
  std::string all;
  for (const std::string& reply : kReplies) all += reply;
  parser->Feed(all, sink, c);
  const uint64_t before = testing::AllocationsOnThisThread();
  for (int i = 0; i < 100; ++i) parser->Feed(all, sink, c);
  CHECK(testing::AllocationsOnThisThread() == before);
  CHECK(sink.replies.size() == 101 * kReplies.size());
}

}  // namespace
}  // namespace hotkey::parsers
