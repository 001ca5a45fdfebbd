// Tests of the memcached request and reply parsers (daemon/input/parsers/memcached.cc): the text,
// meta and binary protocols, pipelining, splits at every offset, limits, resync after a gap and
// reply framing.

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "factories.h"
#include "hotkey/parsers/request.h"

namespace hotkey::parsers {
namespace {

using namespace std::string_literals;

// Records each request as one line: "R:key W:key ... |reply|<wire bytes>" or
// "... |noreply|<wire bytes>".
class Recorder : public RequestSink {
 public:
  void OnRequest(const Request& request) override {
    std::string line;
    for (const KeyRef& k : request.keys) {
      line += k.access == Access::kRead ? "R:" : "W:";
      line += k.key;
      line += ' ';
    }
    line += request.expects_reply ? "|reply|" : "|noreply|";
    line += std::to_string(request.wire_bytes);
    lines.push_back(line);
    bytes += request.wire_bytes;
  }
  std::vector<std::string> lines;
  uint64_t bytes = 0;
};

class ReplyRecorder : public ReplySink {
 public:
  void OnReply(uint64_t wire_bytes) override { replies.push_back(wire_bytes); }
  std::vector<uint64_t> replies;
};

struct Parsed {
  std::vector<std::string> lines;
  uint64_t bytes = 0;
  ParserCounters counters;
  size_t max_memory = 0;
};

// Feeds `stream` cut at the given offsets (increasing, inside the stream).
Parsed ParseCut(std::string_view stream, const std::vector<size_t>& cuts,
                ParserLimits limits = {}) {
  std::unique_ptr<RequestParser> parser = NewMemcachedRequestParser(limits);
  Recorder sink;
  Parsed out;
  size_t from = 0;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const size_t to = i < cuts.size() ? cuts[i] : stream.size();
    parser->Feed(stream.substr(from, to - from), sink, out.counters);
    out.max_memory = std::max(out.max_memory, parser->memory_bytes());
    from = to;
  }
  out.lines = sink.lines;
  out.bytes = sink.bytes;
  return out;
}

Parsed Parse(std::string_view stream, ParserLimits limits = {}) {
  return ParseCut(stream, {}, limits);
}

Parsed ParseBytewise(std::string_view stream) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < stream.size(); ++i) cuts.push_back(i);
  return ParseCut(stream, cuts);
}

struct ParsedReplies {
  std::vector<uint64_t> replies;
  ParserCounters counters;
};

ParsedReplies ParseRepliesCut(std::string_view stream, const std::vector<size_t>& cuts) {
  std::unique_ptr<ReplyParser> parser = NewMemcachedReplyParser(ParserLimits{});
  ReplyRecorder sink;
  ParsedReplies out;
  size_t from = 0;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const size_t to = i < cuts.size() ? cuts[i] : stream.size();
    parser->Feed(stream.substr(from, to - from), sink, out.counters);
    from = to;
  }
  out.replies = sink.replies;
  return out;
}

ParsedReplies ParseReplies(std::string_view stream) { return ParseRepliesCut(stream, {}); }

bool SameCounters(const ParserCounters& a, const ParserCounters& b) {
  return a.requests == b.requests && a.read_keys == b.read_keys && a.write_keys == b.write_keys &&
         a.unknown_commands == b.unknown_commands && a.protocol_errors == b.protocol_errors &&
         a.resyncs == b.resyncs && a.keys_dropped == b.keys_dropped &&
         a.excluded_requests == b.excluded_requests;
}

// A binary request: header (magic 0x80) + extras + key + value.
std::string Binary(uint8_t magic, uint8_t opcode, std::string_view extras, std::string_view key,
                   std::string_view value) {
  std::string h(24, '\0');
  h[0] = static_cast<char>(magic);
  h[1] = static_cast<char>(opcode);
  h[2] = static_cast<char>(key.size() >> 8);
  h[3] = static_cast<char>(key.size() & 0xff);
  h[4] = static_cast<char>(extras.size());
  const uint32_t body = static_cast<uint32_t>(extras.size() + key.size() + value.size());
  h[8] = static_cast<char>(body >> 24);
  h[9] = static_cast<char>((body >> 16) & 0xff);
  h[10] = static_cast<char>((body >> 8) & 0xff);
  h[11] = static_cast<char>(body & 0xff);
  return h + std::string(extras) + std::string(key) + std::string(value);
}

// Every request kind, pipelined: the stream the split tests cut everywhere.
const std::string kPipeline =
    "get a bb ccc\r\n"
    "gets a\r\n"
    "gat 100 t1 t2\r\n"
    "gats 0 t3\r\n"
    "set s1 0 0 5\r\nhello\r\n"
    "add s2 1 2 3 noreply\r\nabc\r\n"
    "replace s3 0 0 0\r\n\r\n"
    "append s4 0 0 2\r\n\r\n\r\n"
    "prepend s5 0 0 1\r\nx\r\n"
    "cas s6 0 0 2 12345\r\nhi\r\n"
    "incr n1 5\r\n"
    "decr n2 1 noreply\r\n"
    "delete d1\r\n"
    "delete d2 noreply\r\n"
    "touch t4 10\r\n"
    "mg m1 v k t\r\n"
    "ms m2 4 T0 q\r\nvalu\r\n"
    "md m3 q\r\n"
    "ma m4 D2\r\n"
    "mg YWJj b v\r\n"
    "mn\r\n"
    "stats\r\n"
    "version\n"
    "bogus command here\r\n"
    "flush_all noreply\r\n"
    "quit\r\n";

TEST_CASE("memcached: every request kind parses to its keys, access and reply", "[parsers]") {
  const Parsed p = Parse(kPipeline);
  const std::vector<std::string> want = {
      "R:a R:bb R:ccc |reply|14",
      "R:a |reply|8",
      "R:t1 R:t2 |reply|15",
      "R:t3 |reply|11",
      "W:s1 |reply|21",
      "W:s2 |noreply|27",
      "W:s3 |reply|20",
      "W:s4 |reply|21",
      "W:s5 |reply|21",
      "W:s6 |reply|24",
      "W:n1 |reply|11",
      "W:n2 |noreply|19",
      "W:d1 |reply|11",
      "W:d2 |noreply|19",
      "W:t4 |reply|13",
      "R:m1 |reply|13",
      "W:m2 |noreply|20",
      "W:m3 |noreply|9",
      "W:m4 |reply|10",
      "R:abc |reply|13",
      "|reply|4",
      "|reply|7",
      "|reply|8",
      "|reply|20",
      "|noreply|19",
      "|noreply|6",
  };
  CHECK(p.lines == want);
  CHECK(p.bytes == kPipeline.size());
  CHECK(p.counters.requests == want.size());
  CHECK(p.counters.read_keys == 9);
  CHECK(p.counters.write_keys == 14);
  CHECK(p.counters.unknown_commands == 1);
  CHECK(p.counters.protocol_errors == 0);
  CHECK(p.counters.keys_dropped == 0);
}

TEST_CASE("memcached: a request split at every offset, or byte by byte, parses the same",
          "[parsers]") {
  const Parsed whole = Parse(kPipeline);
  const Parsed bytewise = ParseBytewise(kPipeline);
  CHECK(bytewise.lines == whole.lines);
  CHECK(SameCounters(bytewise.counters, whole.counters));
  for (size_t cut = 1; cut < kPipeline.size(); ++cut) {
    const Parsed p = ParseCut(kPipeline, {cut});
    REQUIRE(p.lines == whole.lines);
    REQUIRE(SameCounters(p.counters, whole.counters));
  }
  // Two cuts, drawn at random.
  std::mt19937_64 gen(7);
  for (int i = 0; i < 2000; ++i) {
    size_t a = 1 + gen() % (kPipeline.size() - 1), b = 1 + gen() % (kPipeline.size() - 1);
    if (a > b) std::swap(a, b);
    const Parsed p = ParseCut(kPipeline, {a, b});
    REQUIRE(p.lines == whole.lines);
  }
}

TEST_CASE("memcached: binary requests are framed by their header and their keys reported",
          "[parsers]") {
  const std::string extras8(8, '\0');
  const std::string stream = Binary(0x80, 0x00, "", "bk1", "") +                // Get
                             Binary(0x80, 0x01, extras8, "bk2", "value") +      // Set
                             Binary(0x80, 0x09, "", "bk3", "") +                // GetQ
                             Binary(0x80, 0x11, extras8, "bk4", "v") +          // SetQ
                             Binary(0x80, 0x04, "", "bk5", "") +                // Delete
                             Binary(0x80, 0x10, "", "items", "") +              // Stat group
                             Binary(0x80, 0x21, "", "PLAIN", "\0u\0secret"s) +  // SASL
                             Binary(0x80, 0x0a, "", "", "") +                   // No-op
                             Binary(0x80, 0x7f, "", "x", "") +                  // unknown
                             "get after\r\n";
  const Parsed p = Parse(stream);
  const std::vector<std::string> want = {
      "R:bk1 |reply|27", "W:bk2 |reply|40",   "R:bk3 |noreply|27", "W:bk4 |noreply|36",
      "W:bk5 |reply|27", "|reply|29",         "|reply|38",         "|reply|24",
      "|reply|25",       "R:after |reply|11",
  };
  CHECK(p.lines == want);
  CHECK(p.counters.unknown_commands == 1);
  CHECK(p.counters.excluded_requests == 0);
  CHECK(ParseBytewise(stream).lines == want);

  // A key over 250 bytes: answered EINVAL, the body is still framed.
  const Parsed long_key = Parse(Binary(0x80, 0x00, "", std::string(251, 'k'), "") + "get z\r\n");
  CHECK(long_key.lines == std::vector<std::string>{"|reply|275", "R:z |reply|7"});
  CHECK(long_key.counters.protocol_errors == 1);
  // An empty key is no key either.
  const Parsed empty_key = Parse(Binary(0x80, 0x00, "", "", "") + "get z\r\n");
  CHECK(empty_key.lines == std::vector<std::string>{"|reply|24", "R:z |reply|7"});
  CHECK(empty_key.counters.protocol_errors == 1);
}

TEST_CASE("memcached: a binary request or reply is reported when its last byte arrives",
          "[parsers]") {
  // Flush with its 4-byte expiry and no key: the extras are the packet's last bytes. Each
  // piece ends the packet; nothing may wait for a byte of the next one.
  const std::string flush = Binary(0x80, 0x08, std::string(4, '\0'), "", "");
  const std::string flush_reply = Binary(0x81, 0x08, std::string(4, '\0'), "", "");
  for (size_t cut : {size_t{0}, size_t{24}, size_t{26}}) {
    INFO("cut at " << cut);
    const std::vector<size_t> cuts = cut > 0 ? std::vector<size_t>{cut} : std::vector<size_t>{};
    CHECK(ParseCut(flush, cuts).lines == std::vector<std::string>{"|reply|28"});
    CHECK(ParseRepliesCut(flush_reply, cuts).replies == std::vector<uint64_t>{28});
  }
}

TEST_CASE("memcached: a 1 MB value passes without being buffered", "[parsers]") {
  const std::string value(1 << 20, 'v');
  const std::string stream = "set big 0 0 " + std::to_string(value.size()) + "\r\n" + value +
                             "\r\nms big2 " + std::to_string(value.size()) + "\r\n" + value +
                             "\r\n" + Binary(0x80, 0x01, std::string(8, '\0'), "big3", value) +
                             "get big\r\n";
  std::vector<size_t> cuts;
  for (size_t at = 4096; at < stream.size(); at += 4096) cuts.push_back(at);
  const Parsed p = ParseCut(stream, cuts);
  CHECK(p.lines.size() == 4);
  const std::string set_line = "set big 0 0 " + std::to_string(value.size()) + "\r\n";
  CHECK(p.lines[0] == "W:big |reply|" + std::to_string(set_line.size() + value.size() + 2));
  CHECK(p.lines[3] == "R:big |reply|9");
  CHECK(p.bytes == stream.size());
  CHECK(p.max_memory <= 4096);
}

TEST_CASE("memcached: keys up to 250 bytes are keys, a longer one is a protocol error",
          "[parsers]") {
  const std::string k250(250, 'k'), k251(251, 'k');
  CHECK(Parse("get " + k250 + "\r\n").lines ==
        std::vector<std::string>{"R:" + k250 + " |reply|256"});
  // As memcached does, a storage line with a bad key reads no data block: "hello" is then
  // an unknown command.
  const Parsed p = Parse("set " + k251 + " 0 0 5\r\nhello\r\nget a\r\n");
  CHECK(p.lines == std::vector<std::string>{"|reply|263", "|reply|7", "R:a |reply|7"});
  CHECK(p.counters.protocol_errors == 1);
  CHECK(p.counters.unknown_commands == 1);
  // In a multi-get the keys before the bad one were read; the server stops there.
  const Parsed g = Parse("get a " + k251 + " b\r\n");
  CHECK(g.lines == std::vector<std::string>{"R:a |reply|" + std::to_string(4 + 2 + 252 + 3)});
  CHECK(g.counters.protocol_errors == 1);
}

TEST_CASE("memcached: malformed lines are answered without a data block, as the server does",
          "[parsers]") {
  // Wrong token count (ERROR), bad numbers (CLIENT_ERROR), a bad data chunk.
  const Parsed p = Parse(
      "cas n 0 0 1\r\n7\r\n"       // no cas unique: ERROR, then "7" is a command
      "set a x 0 1\r\n"            // bad flags
      "set a 0 0 -1\r\n"           // negative length
      "incr a x\r\n"               // bad delta
      "touch a\r\n"                // too few tokens
      "set a 0 0 3\r\nhelloo\r\n"  // 3 bytes then "lo" instead of "\r\n": bad data chunk
      "\r\n"                       // an empty line: ERROR
      "get\r\n");                  // no key
  CHECK(p.lines == std::vector<std::string>{"|reply|13", "|reply|3", "|reply|13", "|reply|14",
                                            "|reply|10", "|reply|9", "W:a |reply|18", "|reply|3",
                                            "|reply|2", "|reply|5"});
  CHECK(p.counters.protocol_errors == 7);
  CHECK(p.counters.unknown_commands == 3);  // "7", "o" and the empty line
  CHECK(p.counters.requests == 10);
}

TEST_CASE(
    "memcached: only flush_all, verbosity and cache_memlimit of the keyless commands "
    "take noreply",
    "[parsers]") {
  const Parsed p = Parse(
      "flush_all 0 noreply\r\nverbosity 1 noreply\r\ncache_memlimit 64 noreply\r\n"
      "version noreply\r\nstats noreply\r\n");
  CHECK(p.lines == std::vector<std::string>{"|noreply|21", "|noreply|21", "|noreply|27",
                                            "|reply|17", "|reply|15"});
}

TEST_CASE("memcached: a tab is part of a token and a lone \\r is data, as in memcached",
          "[parsers]") {
  const Parsed p = Parse("get\ta\r\nget a\rb  c \r\n");
  CHECK(p.lines == std::vector<std::string>{"|reply|7", "R:a\rb R:c |reply|13"});
  CHECK(p.counters.unknown_commands == 1);
  CHECK(ParseBytewise("get\ta\r\nget a\rb  c \r\n").lines == p.lines);
}

TEST_CASE("memcached: a long multi-get goes out in pieces; only the last expects the reply",
          "[parsers]") {
  std::string line = "get";
  for (int i = 0; i < 1000; ++i) line += " key" + std::to_string(i);
  line += "\r\n";
  ParserLimits limits;
  limits.max_buffer_bytes = 4096;
  for (const Parsed& p : {Parse(line, limits), ParseCut(line, {100, 5000}, limits)}) {
    CHECK(p.counters.read_keys == 1000);
    CHECK(p.counters.requests == 1);
    CHECK(p.counters.protocol_errors == 0);
    CHECK(p.bytes == line.size());
    REQUIRE(p.lines.size() > 1);
    for (size_t i = 0; i + 1 < p.lines.size(); ++i) {
      CHECK(p.lines[i].find("|noreply|") != std::string::npos);
    }
    CHECK(p.lines.back().find("|reply|") != std::string::npos);
    CHECK(p.lines[0].rfind("R:key0 R:key1 ", 0) == 0);
    CHECK(p.max_memory <= limits.max_buffer_bytes);
  }
}

TEST_CASE(
    "memcached: a multi-get piece sent at the line's end has the same bytes however "
    "the line is cut",
    "[parsers]") {
  // 129 keys: the 129th fills the piece of 64 twice over, so a piece goes out from the
  // last token, at the bare "\n".
  std::string line = "get";
  for (int i = 0; i < 129; ++i) line += " k" + std::to_string(i);
  line += "\n";
  const Parsed whole = Parse(line);
  REQUIRE(whole.lines.size() == 3);
  CHECK(whole.bytes == line.size());
  for (size_t cut = 1; cut < line.size(); ++cut) {
    const Parsed p = ParseCut(line, {cut});
    REQUIRE(p.lines == whole.lines);
  }
}

TEST_CASE(
    "memcached: a command line over 2048 bytes is a protocol error, resynced at the "
    "next line",
    "[parsers]") {
  const std::string stream = "set a 0 0 1" + std::string(3000, ' ') + "\r\nget b\r\n";
  const Parsed p = Parse(stream);
  // The set line is dropped (memcached closes such a connection); its value "get b" is
  // the next line.
  CHECK(p.lines == std::vector<std::string>{"R:b |reply|7"});
  CHECK(p.counters.protocol_errors == 1);
  CHECK(p.counters.resyncs == 1);
  // A garbage stream without newlines: one error, bounded memory.
  const Parsed g = Parse(std::string(100000, 'x'));
  CHECK(g.counters.protocol_errors == 1);
  CHECK(g.max_memory <= ParserLimits{}.max_buffer_bytes);
}

TEST_CASE("memcached: memory stays within max_buffer_bytes; keys that do not fit are dropped",
          "[parsers]") {
  for (size_t limit : {0, 100, 2500, 3000, 16 * 1024}) {
    ParserLimits limits;
    limits.max_buffer_bytes = limit;
    const Parsed p = ParseBytewise(kPipeline);
    const Parsed q = Parse(kPipeline + "get " + std::string(250, 'z') + "\r\n", limits);
    CHECK(q.max_memory <= std::max<size_t>(limit, 2600));
    CHECK(q.counters.requests == p.counters.requests + 1);
    if (limit < 2600) CHECK(q.counters.keys_dropped > 0);
    if (limit == 16 * 1024) CHECK(q.counters.keys_dropped == 0);
  }
}

TEST_CASE("memcached: meta commands: quiet, base64 keys, and a bad base64 key", "[parsers]") {
  const Parsed p = Parse(
      "mg k1 v q\r\n"
      "ms YWJj 2 b\r\nhi\r\n"
      "mg !!! b\r\n"
      "mg YWI b v\r\n"  // unpadded: memcached refuses it too
      "md a q b\r\n"
      "ma " +
      std::string(251, 'k') +
      "\r\n"
      "mn\r\n");
  CHECK(p.lines == std::vector<std::string>{"R:k1 |noreply|11", "W:abc |reply|17", "|reply|10",
                                            "|reply|12", "|reply|10", "|reply|256", "|reply|4"});
  CHECK(p.counters.protocol_errors == 4);
}

TEST_CASE("memcached: after a gap the parser resyncs at the next valid command line", "[parsers]") {
  std::unique_ptr<RequestParser> parser = NewMemcachedRequestParser(ParserLimits{});
  Recorder sink;
  ParserCounters c;
  parser->Feed("set a 0 0 10\r\n01234", sink, c);
  parser->Gap(c);  // the rest of the value was lost
  parser->Feed("56789\r\nget b\r\n", sink, c);
  CHECK(sink.lines == std::vector<std::string>{"W:a |reply|26", "R:b |reply|7"});
  CHECK(c.resyncs == 1);
  CHECK(c.unknown_commands == 0);  // "56789" was discarded, not counted

  // Joined mid-line: the tail of a multi-get is not a command; a bad set line is not taken.
  sink.lines.clear();
  parser->Gap(c);
  parser->Feed("y z\r\nset q 0 0 x\r\ndelete d\r\n", sink, c);
  CHECK(sink.lines == std::vector<std::string>{"W:d |reply|10"});

  // The limit of the heuristic: a value holding a command line is read as a command.
  sink.lines.clear();
  parser->Gap(c);
  parser->Feed("abc\r\nget x\r\nmore\r\n", sink, c);
  CHECK(sink.lines == std::vector<std::string>{"R:x |reply|7", "|reply|6"});
}

TEST_CASE("memcached: hostile input is counted, never crashes, memory stays bounded", "[parsers]") {
  std::mt19937_64 gen(11);
  const std::string alphabet = "get set ms mg 0 1 5 \r\n\x80\x81 abc noreply q b";
  for (int round = 0; round < 200; ++round) {
    std::string s;
    const size_t n = gen() % 4000;
    for (size_t i = 0; i < n; ++i) {
      s += gen() % 4 == 0 ? static_cast<char>(gen()) : alphabet[gen() % alphabet.size()];
    }
    ParserLimits limits;
    limits.max_buffer_bytes = gen() % 8192;
    std::vector<size_t> cuts;
    for (size_t at = gen() % 50 + 1; at < s.size(); at += gen() % 50 + 1) cuts.push_back(at);
    const Parsed whole = Parse(s, limits);
    const Parsed cut = ParseCut(s, cuts, limits);
    REQUIRE(cut.lines == whole.lines);
    REQUIRE(SameCounters(cut.counters, whole.counters));
    REQUIRE(whole.max_memory <= std::max<size_t>(limits.max_buffer_bytes, 2600));
    ParsedReplies r1 = ParseReplies(s), r2 = ParseRepliesCut(s, cuts);
    REQUIRE(r1.replies == r2.replies);
  }
}

TEST_CASE("memcached: huge lengths are refused or skipped by counting, never buffered",
          "[parsers]") {
  // A <bytes> of 2^62: memcached refuses it (over INT_MAX - 2) and reads no data block.
  const Parsed p = Parse("set a 0 0 4611686018427387904\r\nget b\r\n");
  CHECK(p.lines == std::vector<std::string>{"|reply|31", "R:b |reply|7"});
  CHECK(p.counters.protocol_errors == 1);

  // A binary body of 4 GiB - 1: skipped as it passes; a gap then resyncs on text.
  std::string header = Binary(0x80, 0x01, std::string(8, '\0'), "huge", "");
  header[8] = header[9] = header[10] = header[11] = '\xff';
  std::unique_ptr<RequestParser> parser = NewMemcachedRequestParser(ParserLimits{});
  Recorder sink;
  ParserCounters c;
  parser->Feed(header, sink, c);
  const std::string chunk(1 << 16, 'v');
  for (int i = 0; i < 64; ++i) parser->Feed(chunk, sink, c);
  CHECK(sink.lines ==
        std::vector<std::string>{"W:huge |reply|" + std::to_string(24 + 0xffffffffULL)});
  CHECK(parser->memory_bytes() <= ParserLimits{}.max_buffer_bytes);
  parser->Gap(c);
  parser->Feed("vvv\r\ndelete x\r\n", sink, c);
  CHECK(sink.lines.back() == "W:x |reply|10");
}

// Replies.

TEST_CASE("memcached: replies frame one per request", "[parsers]") {
  const std::string stream =
      "VALUE a 0 5\r\nhello\r\nVALUE bb 3 2 77\r\nhi\r\nEND\r\n"  // a multi-get: one reply
      "END\r\n"                                                   // a miss
      "STORED\r\nNOT_STORED\r\nEXISTS\r\nNOT_FOUND\r\nDELETED\r\nTOUCHED\r\nOK\r\n"
      "ERROR\r\nCLIENT_ERROR bad command line format\r\nSERVER_ERROR out of memory\r\n"
      "42\r\nVERSION 1.6.18\r\n"
      "STAT pid 1\r\nSTAT uptime 2\r\nEND\r\n"
      "VA 3 t0\r\nabc\r\nHD\r\nEN\r\nNF\r\nNS\r\nEX\r\nMN\r\n"
      "ME k exp=-1 la=0\r\n";
  const ParsedReplies r = ParseReplies(stream);
  const std::vector<uint64_t> want = {46, 5,  8,  12, 8, 11, 9, 9, 4, 7, 38, 28,
                                      4,  16, 32, 14, 4, 4,  4, 4, 4, 4, 18};
  CHECK(r.replies == want);
  CHECK(r.counters.protocol_errors == 0);
  uint64_t sum = 0;
  for (uint64_t b : r.replies) sum += b;
  CHECK(sum == stream.size());
  for (size_t cut = 1; cut < stream.size(); ++cut) {
    REQUIRE(ParseRepliesCut(stream, {cut}).replies == want);
  }
  std::vector<size_t> every;
  for (size_t i = 1; i < stream.size(); ++i) every.push_back(i);
  CHECK(ParseRepliesCut(stream, every).replies == want);
}

TEST_CASE("memcached: binary replies frame by their body length; stat packets are one reply",
          "[parsers]") {
  const std::string stream =
      Binary(0x81, 0x00, std::string(4, '\0'), "", "value") + Binary(0x81, 0x10, "", "pid", "1") +
      Binary(0x81, 0x10, "", "uptime", "2") + Binary(0x81, 0x10, "", "", "") + "STORED\r\n";
  const ParsedReplies r = ParseReplies(stream);
  CHECK(r.replies == std::vector<uint64_t>{33, 28 + 31 + 24, 8});
}

TEST_CASE("memcached: a 1 MB reply value is skipped as it passes", "[parsers]") {
  const std::string value(1 << 20, 'v');
  const std::string stream =
      "VALUE big 0 " + std::to_string(value.size()) + "\r\n" + value + "\r\nEND\r\nSTORED\r\n";
  std::vector<size_t> cuts;
  for (size_t at = 1000; at < stream.size(); at += 1000) cuts.push_back(at);
  const ParsedReplies r = ParseRepliesCut(stream, cuts);
  CHECK(r.replies == std::vector<uint64_t>{stream.size() - 8, 8});
  CHECK(NewMemcachedReplyParser(ParserLimits{})->memory_bytes() < 1024);
}

TEST_CASE("memcached: the reply parser resyncs after a gap at the next reply line", "[parsers]") {
  std::unique_ptr<ReplyParser> parser = NewMemcachedReplyParser(ParserLimits{});
  ReplyRecorder sink;
  ParserCounters c;
  parser->Feed("VALUE a 0 10\r\nabcde", sink, c);
  parser->Gap(c);
  parser->Feed("fghij\r\nEND\r\nSTORED\r\n", sink, c);
  // The reply whose start was lost is charged only the bytes seen from its END.
  CHECK(sink.replies == std::vector<uint64_t>{5, 8});
  CHECK(c.resyncs == 1);
  CHECK(c.protocol_errors == 0);
  // The limit of the heuristic: a value line that looks like a reply (digits: an incr
  // reply) is taken for one.
  sink.replies.clear();
  parser->Feed("VALUE a 0 10\r\nabcde", sink, c);
  parser->Gap(c);
  parser->Feed("56789\r\nEND\r\n", sink, c);
  CHECK(sink.replies == std::vector<uint64_t>{7, 5});
  // An unknown line is a protocol error whose bytes join the next reply.
  sink.replies.clear();
  parser->Feed("WHAT\r\nOK\r\n", sink, c);
  CHECK(sink.replies == std::vector<uint64_t>{10});
  CHECK(c.protocol_errors == 1);
}

}  // namespace
}  // namespace hotkey::parsers
