// The RESP request parser: keys and their read/write flags per command, pipelining and
// splits at every byte, inline commands, limits, hostile input, replication links, secrets.

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

using testing::CountingSink;
using testing::RecordingSink;
using testing::SeenRequest;

constexpr Access R = Access::kRead;
constexpr Access W = Access::kWrite;

// A multibulk request, as every client sends it.
std::string Cmd(const std::vector<std::string>& argv) {
  std::string s = "*" + std::to_string(argv.size()) + "\r\n";
  for (const std::string& a : argv) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return s;
}

struct Result {
  std::vector<SeenRequest> requests;
  ParserCounters counters;
};

// Feeds `pieces` in order to a fresh parser.
Result FeedPieces(const std::vector<std::string_view>& pieces, ParserLimits limits = {}) {
  auto parser = NewRespRequestParser(limits);
  RecordingSink sink;
  Result r;
  for (std::string_view p : pieces) parser->Feed(p, sink, r.counters);
  r.requests = std::move(sink.requests);
  return r;
}

Result FeedAll(std::string_view s, ParserLimits limits = {}) { return FeedPieces({s}, limits); }

// The keys of the only request of `s`.
std::vector<std::pair<std::string, Access>> KeysOf(const std::string& s) {
  const Result r = FeedAll(s);
  REQUIRE(r.requests.size() == 1);
  return r.requests[0].keys;
}

using Keys = std::vector<std::pair<std::string, Access>>;

TEST_CASE("RESP: simple commands report their keys with the key-spec access", "[parsers][resp]") {
  CHECK(KeysOf(Cmd({"GET", "k"})) == Keys{{"k", R}});
  CHECK(KeysOf(Cmd({"SET", "k", "v"})) == Keys{{"k", W}});
  CHECK(KeysOf(Cmd({"GETDEL", "k"})) == Keys{{"k", W}});
  CHECK(KeysOf(Cmd({"MGET", "a", "b", "c"})) == Keys{{"a", R}, {"b", R}, {"c", R}});
  CHECK(KeysOf(Cmd({"MSET", "a", "1", "b", "2"})) == Keys{{"a", W}, {"b", W}});
  CHECK(KeysOf(Cmd({"SMOVE", "src", "dst", "m"})) == Keys{{"src", W}, {"dst", W}});
  CHECK(KeysOf(Cmd({"DEL", "a", "b"})) == Keys{{"a", W}, {"b", W}});
  CHECK(KeysOf(Cmd({"EXISTS", "a"})) == Keys{{"a", R}});
  CHECK(KeysOf(Cmd({"LMOVE", "a", "b", "LEFT", "RIGHT"})) == Keys{{"a", W}, {"b", W}});
  CHECK(KeysOf(Cmd({"HSET", "h", "f", "v"})) == Keys{{"h", W}});
  CHECK(KeysOf(Cmd({"PING"})).empty());
}

TEST_CASE("RESP: command names and keywords are case-insensitive, keys are not",
          "[parsers][resp]") {
  CHECK(KeysOf(Cmd({"gEt", "Key"})) == Keys{{"Key", R}});
  CHECK(KeysOf(Cmd({"xread", "streams", "S", "0"})) == Keys{{"S", R}});
  CHECK(KeysOf(Cmd({"object", "ENCODING", "K"})) == Keys{{"K", R}});
}

TEST_CASE("RESP: numkeys commands take their key count from the request", "[parsers][resp]") {
  CHECK(KeysOf(Cmd({"EVAL", "return 1", "2", "a", "b", "x"})) == Keys{{"a", W}, {"b", W}});
  CHECK(KeysOf(Cmd({"EVALSHA", "abc", "1", "a", "x", "y"})) == Keys{{"a", W}});
  CHECK(KeysOf(Cmd({"EVAL_RO", "return 1", "1", "a"})) == Keys{{"a", R}});
  CHECK(KeysOf(Cmd({"EVAL", "return 1", "0", "x"})).empty());
  CHECK(KeysOf(Cmd({"FCALL", "f", "2", "a", "b", "arg"})) == Keys{{"a", W}, {"b", W}});
  CHECK(KeysOf(Cmd({"ZUNIONSTORE", "d", "2", "s1", "s2", "WEIGHTS", "1", "2"})) ==
        Keys{{"d", W}, {"s1", R}, {"s2", R}});
  CHECK(KeysOf(Cmd({"ZINTERCARD", "2", "a", "b", "LIMIT", "5"})) == Keys{{"a", R}, {"b", R}});
  CHECK(KeysOf(Cmd({"LMPOP", "2", "a", "b", "LEFT"})) == Keys{{"a", W}, {"b", W}});
  // A numkeys that is not a number: the server rejects the command; no key.
  CHECK(KeysOf(Cmd({"EVAL", "return 1", "two", "a"})).empty());
  CHECK(KeysOf(Cmd({"EVAL", "return 1", "-1", "a"})).empty());
}

TEST_CASE("RESP: keyword searches find STREAMS, STORE and KEYS", "[parsers][resp]") {
  CHECK(KeysOf(Cmd({"XREAD", "COUNT", "2", "STREAMS", "s1", "s2", "0", "0"})) ==
        Keys{{"s1", R}, {"s2", R}});
  CHECK(KeysOf(Cmd({"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"})) == Keys{{"s", R}});
  // The first STREAMS starts the keys, as for Redis: a stream named "streams" is a key.
  CHECK(KeysOf(Cmd({"XREAD", "STREAMS", "streams", "0"})) == Keys{{"streams", R}});
  CHECK(KeysOf(Cmd({"GEORADIUS", "g", "0", "0", "1", "km", "STORE", "dst"})) ==
        Keys{{"g", R}, {"dst", W}});
  CHECK(KeysOf(Cmd({"GEORADIUSBYMEMBER", "g", "m", "1", "km", "STOREDIST", "d"})) ==
        Keys{{"g", R}, {"d", W}});
  CHECK(KeysOf(Cmd({"SORT", "list", "BY", "w_*", "LIMIT", "0", "10", "GET", "o_*", "STORE",
                    "dst"})) == Keys{{"list", R}, {"dst", W}});
  CHECK(KeysOf(Cmd({"SORT", "list", "STORE", "a", "STORE", "b"})) == Keys{{"list", R}, {"b", W}});
  CHECK(KeysOf(Cmd({"SORT", "list", "ALPHA"})) == Keys{{"list", R}});
  CHECK(KeysOf(Cmd({"SORT_RO", "list", "BY", "x"})) == Keys{{"list", R}});
  CHECK(KeysOf(Cmd({"MIGRATE", "h", "6379", "k", "0", "5000"})) == Keys{{"k", W}});
  CHECK(KeysOf(Cmd({"MIGRATE", "h", "6379", "", "0", "5000", "COPY", "KEYS", "a", "b"})) ==
        Keys{{"a", W}, {"b", W}});
}

TEST_CASE("RESP: subcommands have their own keys", "[parsers][resp]") {
  CHECK(KeysOf(Cmd({"OBJECT", "ENCODING", "k"})) == Keys{{"k", R}});
  CHECK(KeysOf(Cmd({"XINFO", "STREAM", "s"})) == Keys{{"s", R}});
  CHECK(KeysOf(Cmd({"MEMORY", "USAGE", "k"})) == Keys{{"k", R}});
  CHECK(KeysOf(Cmd({"XGROUP", "CREATE", "s", "g", "$"})) == Keys{{"s", W}});
  CHECK(KeysOf(Cmd({"CONFIG", "GET", "maxmemory"})).empty());
  const Result r = FeedAll(Cmd({"OBJECT", "NOSUCH", "k"}));
  CHECK(r.counters.unknown_commands == 1);
  REQUIRE(r.requests.size() == 1);
  CHECK(r.requests[0].keys.empty());
}

TEST_CASE("RESP: BITFIELD reads when every operation is GET", "[parsers][resp]") {
  CHECK(KeysOf(Cmd({"BITFIELD", "k", "GET", "u8", "0"})) == Keys{{"k", R}});
  CHECK(KeysOf(Cmd({"BITFIELD", "k", "GET", "u8", "0", "SET", "u8", "0", "1"})) == Keys{{"k", W}});
  CHECK(KeysOf(Cmd({"BITFIELD_RO", "k", "GET", "u8", "0"})) == Keys{{"k", R}});
}

TEST_CASE("RESP: a wrong arity is rejected by the server, so no key", "[parsers][resp]") {
  CHECK(KeysOf(Cmd({"GET", "a", "b"})).empty());
  CHECK(KeysOf(Cmd({"GET"})).empty());
}

TEST_CASE("RESP: commands queued in MULTI count like any other", "[parsers][resp]") {
  const Result r = FeedAll(Cmd({"MULTI"}) + Cmd({"INCR", "a"}) + Cmd({"GET", "b"}) + Cmd({"EXEC"}));
  REQUIRE(r.requests.size() == 4);
  CHECK(r.requests[1].keys == Keys{{"a", W}});
  CHECK(r.requests[2].keys == Keys{{"b", R}});
  CHECK(r.counters.requests == 4);
  CHECK(r.counters.read_keys == 1);
  CHECK(r.counters.write_keys == 1);
}

TEST_CASE("RESP: inline commands split like Redis's sdssplitargs", "[parsers][resp]") {
  CHECK(KeysOf("GET k\r\n") == Keys{{"k", R}});
  CHECK(KeysOf("  mget   a b\tc \n") == Keys{{"a", R}, {"b", R}, {"c", R}});
  CHECK(KeysOf("GET \"a b\\x41\\n\"\r\n") == Keys{{"a bA\n", R}});
  CHECK(KeysOf("GET 'it\\'s'\r\n") == Keys{{"it's", R}});
  const Result r = FeedAll("GET \"open\r\nGET b\r\n\r\n");
  CHECK(r.counters.protocol_errors == 1);  // unbalanced quotes
  REQUIRE(r.requests.size() == 1);
  CHECK(r.requests[0].keys == Keys{{"b", R}});
  CHECK(r.requests[0].wire_bytes == 7);
}

// A pipeline of every form above, for the split tests.
std::string Pipeline() {
  std::string s;
  s += Cmd({"SET", "user:1", std::string(300, 'v')});
  s += Cmd({"MGET", "a", "b", "c"});
  s += "GET inline\r\n";
  s += Cmd({"EVAL", "return 1", "2", "k1", "k2", "arg"});
  s += Cmd({"XREAD", "COUNT", "1", "STREAMS", "s1", "s2", "0", "0"});
  s += Cmd({"SORT", "l", "LIMIT", "0", "1", "STORE", "d"});
  s += Cmd({"NOSUCHCOMMAND", "x"});
  s += Cmd({"OBJECT", "ENCODING", "o"});
  s += Cmd({"MIGRATE", "h", "1", "", "0", "5", "AUTH", "pw", "KEYS", "m1", "m2"});
  s += Cmd({"BITFIELD", "bf", "GET", "u8", "0"});
  s += Cmd({"SMOVE", "src", "dst", "member"});
  s += Cmd({"GET", ""});
  return s;
}

TEST_CASE("RESP: a pipeline split at any byte gives the same requests", "[parsers][resp]") {
  const std::string s = Pipeline();
  const Result whole = FeedAll(s);
  REQUIRE(whole.requests.size() == 12);
  CHECK(whole.counters.unknown_commands == 1);
  CHECK(whole.counters.protocol_errors == 0);
  uint64_t wire = 0;
  for (const SeenRequest& q : whole.requests) wire += q.wire_bytes;
  CHECK(wire == s.size());
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    const std::string_view v(s);
    const Result split = FeedPieces({v.substr(0, cut), v.substr(cut)});
    INFO("cut at " << cut);
    REQUIRE(split.requests == whole.requests);
  }
  for (size_t a = 1; a < s.size(); a += 7) {
    for (size_t b = a; b < s.size(); b += 13) {
      const std::string_view v(s);
      const Result split = FeedPieces({v.substr(0, a), v.substr(a, b - a), v.substr(b)});
      REQUIRE(split.requests == whole.requests);
    }
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < s.size(); ++i) bytes.push_back(std::string_view(s).substr(i, 1));
  const Result one = FeedPieces(bytes);
  CHECK(one.requests == whole.requests);
  CHECK(one.counters.requests == whole.counters.requests);
  CHECK(one.counters.read_keys == whole.counters.read_keys);
  CHECK(one.counters.write_keys == whole.counters.write_keys);
}

TEST_CASE("RESP: a 400 KB value streams past in bounded memory", "[parsers][resp]") {
  ParserLimits limits;
  limits.max_buffer_bytes = 1024;
  auto parser = NewRespRequestParser(limits);
  RecordingSink sink;
  ParserCounters c;
  const std::string req = Cmd({"SET", "big", std::string(400 * 1024, 'x')});
  for (size_t i = 0; i < req.size(); i += 1000) {
    parser->Feed(std::string_view(req).substr(i, 1000), sink, c);
    CHECK(parser->memory_bytes() <= limits.max_buffer_bytes + 1024);
  }
  REQUIRE(sink.requests.size() == 1);
  CHECK(sink.requests[0].keys == Keys{{"big", W}});
  CHECK(sink.requests[0].wire_bytes == req.size());
}

TEST_CASE("RESP: keys beyond the buffer limit are counted as dropped", "[parsers][resp]") {
  ParserLimits limits;
  limits.max_buffer_bytes = 256;
  const Result big_key = FeedAll(Cmd({"GET", std::string(300, 'k')}) + Cmd({"GET", "a"}), limits);
  REQUIRE(big_key.requests.size() == 2);
  CHECK(big_key.requests[0].keys.empty());
  CHECK(big_key.requests[1].keys == Keys{{"a", R}});
  CHECK(big_key.counters.keys_dropped == 1);

  std::vector<std::string> mget = {"MGET"};
  for (int i = 0; i < 1000; ++i) mget.push_back("key" + std::to_string(i));
  auto parser = NewRespRequestParser(limits);
  RecordingSink sink;
  ParserCounters c;
  parser->Feed(Cmd(mget), sink, c);
  REQUIRE(sink.requests.size() == 1);
  CHECK(!sink.requests[0].keys.empty());
  CHECK(sink.requests[0].keys.size() + c.keys_dropped == 1000);
  CHECK(c.read_keys == sink.requests[0].keys.size());
  CHECK(parser->memory_bytes() <= limits.max_buffer_bytes + 1024);
}

TEST_CASE("RESP: hostile lengths are protocol errors followed by a resync", "[parsers][resp]") {
  const std::string good = Cmd({"GET", "after"});
  for (const std::string& bad : {
           std::string("*1\r\n$4611686018427387904\r\n"),  // 2^62-byte bulk
           std::string("*2147483648\r\n$3\r\nGET\r\n"),    // 2^31 elements
           std::string("*1\r\n$536870913\r\n"),            // 512 MB + 1
           std::string("*2\r\n$3\r\nGET\r\n+x\r\n"),       // not a bulk string
           std::string("*2\r\n$3\r\nGETX\r\n"),            // no CRLF after the bulk
           std::string("*99999999999999999999999\r\n"),    // overflow
           std::string("*1\r\n$-5\r\n"),                   // negative length
       }) {
    INFO(bad);
    const Result r = FeedAll(bad + "\r\n" + good + good);
    CHECK(r.counters.protocol_errors == 1);
    CHECK(r.counters.resyncs == 1);
    REQUIRE(r.requests.size() >= 1);
    CHECK(r.requests.back().keys == Keys{{"after", R}});
  }
  // A 2^31-element array passes as a protocol error without reserving anything.
  auto parser = NewRespRequestParser({});
  RecordingSink sink;
  ParserCounters c;
  parser->Feed("*2147483647\r\n$3\r\nGET\r\n", sink, c);
  CHECK(parser->memory_bytes() < 4096);
}

TEST_CASE("RESP: an array header above 1M elements is a counted protocol error, not a sink",
          "[parsers][resp]") {
  // A header of INT_MAX elements, then 400,000 bulk strings: taken as one request, they
  // would pass without a counter moving. The header is refused at once; the bulk strings
  // are skipped by the resync (none is at a request boundary) up to the next request.
  std::string s = "*2147483647\r\n";
  for (int i = 0; i < 400000; ++i) s += "$3\r\nabc\r\n";
  auto parser = NewRespRequestParser({});
  RecordingSink sink;
  ParserCounters c;
  parser->Feed(s, sink, c);
  CHECK(c.protocol_errors == 1);
  CHECK(c.resyncs == 1);
  parser->Feed(Cmd({"GET", "after"}), sink, c);
  CHECK(c.protocol_errors == 1);
  REQUIRE(sink.requests.size() == 1);
  CHECK(sink.requests[0].keys == Keys{{"after", R}});

  // The cap is 1024 * 1024 = 1048576 elements: a header at the cap starts a request.
  const Result at_cap = FeedAll("*1048576\r\n$3\r\nDEL\r\n$1\r\nk\r\n");
  CHECK(at_cap.counters.protocol_errors == 0);
  CHECK(at_cap.requests.empty());  // 1048574 arguments still to come
  const Result above = FeedAll("*1048577\r\n$3\r\nDEL\r\n$1\r\nk\r\n");
  CHECK(above.counters.protocol_errors == 1);
  CHECK(above.requests.empty());
}

TEST_CASE("RESP: garbage bytes are skipped up to the next request", "[parsers][resp]") {
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage.push_back(static_cast<char>((i * 7919) & 0xff));
  const Result r = FeedAll("*1\r\n$3\r\n" + garbage + "\n" + Cmd({"GET", "k"}));
  CHECK(r.counters.protocol_errors >= 1);
  REQUIRE(!r.requests.empty());
  CHECK(r.requests.back().keys == Keys{{"k", R}});
}

TEST_CASE("RESP: a stream joined mid-request resyncs at the next known command",
          "[parsers][resp]") {
  const std::string s =
      Cmd({"SET", "a", "*3\r\nvalue with\r\n$3\r\n"}) + Cmd({"GET", "b"}) + Cmd({"DEL", "c"});
  // Every start inside the first request: the later two are found, nothing else.
  const size_t first_end = Cmd({"SET", "a", "*3\r\nvalue with\r\n$3\r\n"}).size();
  for (size_t start = 1; start < first_end; ++start) {
    auto parser = NewRespRequestParser({});
    RecordingSink sink;
    ParserCounters c;
    parser->Gap(c);
    parser->Feed(std::string_view(s).substr(start), sink, c);
    INFO("start " << start);
    REQUIRE(sink.requests.size() == 2);
    CHECK(sink.requests[0].keys == Keys{{"b", R}});
    CHECK(sink.requests[1].keys == Keys{{"c", W}});
    CHECK(c.resyncs == 1);
  }
  // A gap in the middle of a pipeline.
  auto parser = NewRespRequestParser({});
  RecordingSink sink;
  ParserCounters c;
  const std::string p = Pipeline();
  parser->Feed(std::string_view(p).substr(0, 40), sink, c);
  parser->Gap(c);
  parser->Feed(std::string_view(p).substr(60), sink, c);
  CHECK(c.resyncs == 1);
  REQUIRE(!sink.requests.empty());
  CHECK(sink.requests.back().keys == Keys{{"", R}});
}

TEST_CASE("RESP: unknown commands are counted and skipped with their arguments",
          "[parsers][resp]") {
  const Result r =
      FeedAll(Cmd({"FOO.BAR", "GET", "k"}) + Cmd({"GET", "x"}) + Cmd({std::string(100, 'Z'), "y"}));
  CHECK(r.counters.unknown_commands == 2);
  CHECK(r.counters.requests == 3);
  REQUIRE(r.requests.size() == 3);
  CHECK(r.requests[0].keys.empty());
  CHECK(r.requests[1].keys == Keys{{"x", R}});
  CHECK(r.counters.read_keys == 1);
}

TEST_CASE("RESP: a replica's link is excluded from PSYNC on", "[parsers][resp]") {
  const Result r =
      FeedAll(Cmd({"GET", "before"}) + Cmd({"REPLCONF", "listening-port", "1"}) +
              Cmd({"PSYNC", "?", "-1"}) + Cmd({"SET", "k", "v"}) + Cmd({"REPLCONF", "ACK", "0"}));
  REQUIRE(r.requests.size() == 1);
  CHECK(r.requests[0].keys == Keys{{"before", R}});
  CHECK(r.counters.excluded_requests == 4);
  CHECK(r.counters.requests == 1);
  CHECK(r.counters.write_keys == 0);
  const Result sync = FeedAll(Cmd({"SYNC"}) + Cmd({"GET", "k"}));
  CHECK(sync.requests.empty());
  CHECK(sync.counters.excluded_requests == 2);
}

TEST_CASE("RESP: no byte of an AUTH or HELLO password is ever reported", "[parsers][resp]") {
  const std::string pw = "s3cr3tpassw0rd";
  const std::string s = Cmd({"AUTH", pw}) + Cmd({"AUTH", "user", pw}) +
                        Cmd({"HELLO", "3", "AUTH", "user", pw, "SETNAME", "n"}) + "AUTH " + pw +
                        "\r\n" + Cmd({"MIGRATE", "h", "1", "", "0", "5", "AUTH", pw, "KEYS", "k"}) +
                        Cmd({"MIGRATE", "h", "1", "", "0", "5", "AUTH2", "u", pw, "KEYS", "k2"}) +
                        Cmd({"GET", "k3"});
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    const Result r =
        FeedPieces({std::string_view(s).substr(0, cut), std::string_view(s).substr(cut)});
    REQUIRE(r.requests.size() == 7);
    for (const SeenRequest& q : r.requests) {
      for (const auto& [key, access] : q.keys) {
        CHECK(key.find("s3cr") == std::string::npos);
        CHECK(key.find("w0rd") == std::string::npos);
      }
    }
    CHECK(r.requests[4].keys == Keys{{"k", W}});
    CHECK(r.requests[5].keys == Keys{{"k2", W}});
    CHECK(r.requests[6].keys == Keys{{"k3", R}});
  }
}

TEST_CASE("RESP: parsing allocates nothing per request once warm", "[parsers][resp]") {
  auto parser = NewRespRequestParser({});
  CountingSink sink;
  ParserCounters c;
  const std::string p = Pipeline();
  parser->Feed(p, sink, c);  // warm: the buffers grow to what this traffic needs
  const uint64_t before = testing::AllocationsOnThisThread();
  for (int round = 0; round < 50; ++round) {
    for (size_t i = 0; i < p.size(); i += 17)
      parser->Feed(std::string_view(p).substr(i, 17), sink, c);
  }
  parser->Gap(c);
  parser->Feed(p, sink, c);
  CHECK(testing::AllocationsOnThisThread() == before);
  CHECK(sink.requests == 52 * 12);
}

TEST_CASE("RESP: a parser's fixed size is under 1 KiB", "[parsers][resp]") {
  CHECK(NewRespRequestParser({})->memory_bytes() < 1024);
  CHECK(NewRespReplyParser({})->memory_bytes() < 1024);
}

TEST_CASE("RESP: memory stays within the limit under any sizes", "[parsers][resp]") {
  ParserLimits limits;
  limits.max_buffer_bytes = 4096;
  auto parser = NewRespRequestParser(limits);
  CountingSink sink;
  ParserCounters c;
  for (size_t n : {10, 100, 1000, 3000, 5000, 20000}) {
    std::vector<std::string> argv = {"MSET"};
    for (int i = 0; i < 50; ++i) {
      argv.push_back(std::string(n / 50 + 1, 'k') + std::to_string(i));
      argv.push_back("v");
    }
    parser->Feed(Cmd(argv), sink, c);
    parser->Feed("GET " + std::string(n, 'i') + "\r\n", sink, c);
    CHECK(parser->memory_bytes() <= limits.max_buffer_bytes + 1024);
  }
}

}  // namespace
}  // namespace hotkey::parsers
