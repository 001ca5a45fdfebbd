// Pins "no allocation per request once warm" for the memcached parsers: warms a request and
// a reply parser with every request kind, then checks that parsing the same traffic again,
// in other pieces, allocates nothing (counted by tests/lib/alloc_count.cc).

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "factories.h"
#include "hotkey/parsers/request.h"
#include "test_util.h"

namespace hotkey::parsers {
namespace {

class CountingSink : public RequestSink, public ReplySink {
 public:
  void OnRequest(const Request& r) override { keys += r.keys.size(); }
  void OnReply(uint64_t) override { ++replies; }
  uint64_t keys = 0;
  uint64_t replies = 0;
};

TEST_CASE("memcached: parsing allocates nothing once the parsers are warm", "[parsers]") {
  std::string requests =
      "get a bb ccc\r\ngets a\r\ngat 100 t1 t2\r\nset s1 0 0 5\r\nhello\r\n"
      "cas s6 0 0 2 12345 noreply\r\nhi\r\nincr n1 5\r\ndelete d1\r\ntouch t4 10\r\n"
      "mg m1 v k t\r\nms m2 4 T0 q\r\nvalu\r\nmd m3 q\r\nmg YWJj b v\r\nmn\r\nbogus\r\n"
      "get";
  for (int i = 0; i < 300; ++i) requests += " multi" + std::to_string(i);
  requests += "\r\n";
  // A binary Get of key "bk".
  requests += std::string("\x80\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x02", 12) +
              std::string(12, '\0') + "bk";
  const std::string replies =
      "VALUE a 0 5\r\nhello\r\nEND\r\nSTORED\r\n42\r\nVA 2 t\r\nhi\r\nHD\r\nMN\r\n"
      "STAT pid 1\r\nEND\r\nCLIENT_ERROR bad\r\n";

  ParserLimits limits;
  limits.max_buffer_bytes = 4096;  // the multi-get goes out in pieces
  std::unique_ptr<RequestParser> request_parser = NewMemcachedRequestParser(limits);
  std::unique_ptr<ReplyParser> reply_parser = NewMemcachedReplyParser(limits);
  CountingSink sink;
  ParserCounters counters;
  request_parser->Feed(requests, sink, counters);  // warm
  reply_parser->Feed(replies, sink, counters);
  const uint64_t keys_once = sink.keys;

  const uint64_t before = testing::AllocationsOnThisThread();
  for (size_t step : {1, 3, 7, 64, 1000}) {
    for (size_t at = 0; at < requests.size(); at += step) {
      request_parser->Feed(std::string_view(requests).substr(at, step), sink, counters);
    }
    for (size_t at = 0; at < replies.size(); at += step) {
      reply_parser->Feed(std::string_view(replies).substr(at, step), sink, counters);
    }
  }
  const uint64_t allocations = testing::AllocationsOnThisThread() - before;
  CHECK(allocations == 0);
  CHECK(sink.keys == keys_once * 6);
  CHECK(sink.replies == 8 * 6);
}

}  // namespace
}  // namespace hotkey::parsers
