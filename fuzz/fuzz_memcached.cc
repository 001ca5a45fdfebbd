// libFuzzer target: the memcached request and reply parsers (daemon/input/parsers/memcached.cc),
// fed one stream whole and again cut at points the input chooses, as TCP reassembly hands it over.
//
// Input: byte 0 picks ParserLimits::max_buffer_bytes (0 to 7936, so keys are dropped and
// multi-gets go out in pieces); byte 1 seeds the cut points (pieces of 1 to 64 bytes);
// byte 2 picks where a Gap() falls in a third run; the rest is the stream, given to a
// request parser and, the same bytes, to a reply parser.
//
// Checked beyond "no crash, no sanitizer report": the cut stream parses exactly as the
// whole one (requests, keys, access, wire bytes, replies and every counter); every key is
// 1 to 250 bytes and is a substring of the stream, or its base64 form is (a meta key
// given with the b flag is reported decoded; non-canonical padding bits allowed); the key
// counters add up to the keys reported; replies never claim more bytes than the stream
// holds; and memory_bytes() stays within max_buffer_bytes (or the parser's fixed buffers,
// when the limit is below them) at every step, the Gap() run included.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../daemon/input/parsers/factories.h"
#include "fuzz_util.h"
#include "hotkey/parsers/request.h"

namespace hotkey::fuzz {
namespace {

// The request parser's fixed buffers (daemon/input/parsers/memcached.cc's kFixedBytes, 2578 bytes)
// with margin: memory may reach them even under a smaller limit.
constexpr size_t kFixedBytesBound = 2600;

std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<uint8_t>(in[i])} << 16) |
                       (uint32_t{static_cast<uint8_t>(in[i + 1])} << 8) |
                       static_cast<uint8_t>(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += kAlphabet[(v >> s) & 63];
  }
  if (i + 1 == in.size()) {
    const uint32_t v = uint32_t{static_cast<uint8_t>(in[i])} << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const uint32_t v = (uint32_t{static_cast<uint8_t>(in[i])} << 16) |
                       (uint32_t{static_cast<uint8_t>(in[i + 1])} << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

// Base64(key) up to its last character that carries unused low bits: a decoder reads
// "YWJ=" as "ab" as well as the canonical "YWI=" (memcached's does), so the stream may hold
// either. A key of a multiple of 3 bytes has no such character: its whole form.
std::string Base64Stem(std::string_view key) {
  std::string b = Base64(key);
  if (key.size() % 3 != 0) b.resize(b.find('=') - 1);
  return b;
}

class Recorder : public parsers::RequestSink, public parsers::ReplySink {
 public:
  explicit Recorder(std::string_view stream) : stream_(stream) {}

  void OnRequest(const parsers::Request& r) override {
    std::string line;
    for (const parsers::KeyRef& k : r.keys) {
      FUZZ_CHECK(!k.key.empty() && k.key.size() <= 250);
      // The cut run must equal the whole one, checked after: search the stream once.
      if (check_keys) {
        FUZZ_CHECK(stream_.find(k.key) != std::string_view::npos ||
                   stream_.find(Base64Stem(k.key)) != std::string_view::npos);
      }
      line += k.access == parsers::Access::kRead ? 'r' : 'w';
      line += std::to_string(k.key.size()) + ':';
      line += k.key;
    }
    line += r.expects_reply ? "|y|" : "|n|";
    line += std::to_string(r.wire_bytes);
    requests.push_back(std::move(line));
    keys += r.keys.size();
  }
  void OnReply(uint64_t wire_bytes) override {
    replies.push_back(wire_bytes);
    reply_bytes += wire_bytes;
  }

  bool check_keys = true;
  std::vector<std::string> requests;
  std::vector<uint64_t> replies;
  uint64_t keys = 0;
  uint64_t reply_bytes = 0;

 private:
  std::string_view stream_;
};

bool Same(const parsers::ParserCounters& a, const parsers::ParserCounters& b) {
  return a.requests == b.requests && a.read_keys == b.read_keys && a.write_keys == b.write_keys &&
         a.unknown_commands == b.unknown_commands && a.protocol_errors == b.protocol_errors &&
         a.resyncs == b.resyncs && a.keys_dropped == b.keys_dropped &&
         a.excluded_requests == b.excluded_requests;
}

struct Run {
  explicit Run(std::string_view stream) : sink(stream) {}
  Recorder sink;
  parsers::ParserCounters requests;
  parsers::ParserCounters replies;
};

// Feeds `stream` in the given pieces (their sizes sum to the stream's); calls Gap() on
// both parsers before piece `gap_before` (none when out of range).
void Feed(std::string_view stream, const std::vector<size_t>& pieces, size_t gap_before,
          const parsers::ParserLimits& limits, Run& run) {
  std::unique_ptr<parsers::RequestParser> request = parsers::NewMemcachedRequestParser(limits);
  std::unique_ptr<parsers::ReplyParser> reply = parsers::NewMemcachedReplyParser(limits);
  const size_t bound = std::max(limits.max_buffer_bytes, kFixedBytesBound);
  size_t at = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i == gap_before) {
      request->Gap(run.requests);
      reply->Gap(run.replies);
    }
    const std::string_view piece = stream.substr(at, pieces[i]);
    at += pieces[i];
    request->Feed(piece, run.sink, run.requests);
    reply->Feed(piece, run.sink, run.replies);
    FUZZ_CHECK(request->memory_bytes() <= bound);
    FUZZ_CHECK(reply->memory_bytes() <= bound);
  }
  FUZZ_CHECK(run.requests.read_keys + run.requests.write_keys == run.sink.keys);
  FUZZ_CHECK(run.requests.requests <= run.sink.requests.size());
  FUZZ_CHECK(run.sink.reply_bytes <= stream.size());
}

}  // namespace

int FuzzMemcached(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  parsers::ParserLimits limits;
  limits.max_buffer_bytes = size_t{data[0]} % 32 * 256;
  uint32_t seed = data[1] * 2654435761u + 1;
  const size_t gap_at = data[2];
  const std::string_view stream(reinterpret_cast<const char*>(data) + 3, size - 3);

  std::vector<size_t> whole = {stream.size()};
  std::vector<size_t> cut;
  for (size_t left = stream.size(); left > 0;) {
    seed = seed * 1103515245u + 12345u;
    const size_t n = std::min<size_t>(left, 1 + (seed >> 16) % 64);
    cut.push_back(n);
    left -= n;
  }

  Run a(stream), b(stream);
  b.sink.check_keys = false;
  Feed(stream, whole, SIZE_MAX, limits, a);
  Feed(stream, cut, SIZE_MAX, limits, b);
  FUZZ_CHECK(a.sink.requests == b.sink.requests);
  FUZZ_CHECK(a.sink.replies == b.sink.replies);
  FUZZ_CHECK(Same(a.requests, b.requests));
  FUZZ_CHECK(Same(a.replies, b.replies));

  Run c(stream);
  Feed(stream, cut, cut.empty() ? 0 : gap_at % cut.size(), limits, c);
  return 0;
}

}  // namespace hotkey::fuzz

#ifndef HOTKEY_FUZZ_NO_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hotkey::fuzz::FuzzMemcached(data, size);
}
#endif
