// libFuzzer target: the RESP request and reply parsers (daemon/input/parsers/resp.cc), both fed the
// same bytes in pieces the input chooses, as a reassembler hands a flow over.
//
// Input: byte 0 picks max_buffer_bytes (64 << (b % 8): 64 B to 8 KiB, so keys overflow);
// byte 1 bit 0 allows gaps; bytes 2..9 are the piece lengths, used in turn (1..32 bytes;
// with gaps allowed, a set high bit calls Gap() before the piece); the rest is the stream.
//
// Checked beyond "no crash, no sanitizer report": memory_bytes() stays within the limit plus
// the request parser's fixed size, and within 4 KiB for the reply parser; every key fits the limit
// and the input; wire bytes reported add up to at most the input; without gaps, the pieces give
// exactly the requests, replies and counters of the whole stream fed at once (parsing does not
// depend on where TCP cut it).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "factories.h"
#include "fuzz_util.h"
#include "hotkey/parsers/request.h"

namespace hotkey::fuzz {
namespace {

// The request parser's fixed part beside ParserLimits::max_buffer_bytes, and the reply
// parser's whole bound (its depth stack of at most 128 frames), as resp.cc states them.
constexpr size_t kFixedBytes = 1024;
constexpr size_t kReplyBytes = 4096;

struct Seen {
  std::vector<std::pair<std::string, parsers::Access>> keys;
  uint64_t wire_bytes;
  bool operator==(const Seen&) const = default;
};

class Requests : public parsers::RequestSink {
 public:
  Requests(size_t limit, size_t input) : limit_(limit), input_(input) {}
  void OnRequest(const parsers::Request& r) override {
    Seen s{{}, r.wire_bytes};
    for (const parsers::KeyRef& k : r.keys) {
      FUZZ_CHECK(k.key.size() <= limit_ && k.key.size() <= input_);
      FUZZ_CHECK(k.access == parsers::Access::kRead || k.access == parsers::Access::kWrite);
      s.keys.emplace_back(std::string(k.key), k.access);
    }
    FUZZ_CHECK(r.keys.size() <= input_);
    wire += r.wire_bytes;
    seen.push_back(std::move(s));
  }
  std::vector<Seen> seen;
  uint64_t wire = 0;

 private:
  const size_t limit_, input_;
};

class Replies : public parsers::ReplySink {
 public:
  void OnReply(uint64_t wire_bytes) override {
    FUZZ_CHECK(wire_bytes > 0);
    wire += wire_bytes;
    seen.push_back(wire_bytes);
  }
  std::vector<uint64_t> seen;
  uint64_t wire = 0;
};

bool SameCounters(const parsers::ParserCounters& a, const parsers::ParserCounters& b) {
  return a.requests == b.requests && a.read_keys == b.read_keys && a.write_keys == b.write_keys &&
         a.unknown_commands == b.unknown_commands && a.protocol_errors == b.protocol_errors &&
         a.resyncs == b.resyncs && a.keys_dropped == b.keys_dropped &&
         a.excluded_requests == b.excluded_requests;
}

}  // namespace

int FuzzResp(const uint8_t* data, size_t size) {
  if (size < 10) return 0;
  parsers::ParserLimits limits;
  limits.max_buffer_bytes = size_t{64} << (data[0] % 8);
  const bool gaps = data[1] & 1;
  const uint8_t* cuts = data + 2;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 10, size - 10);

  auto request = parsers::NewRespRequestParser(limits);
  auto reply = parsers::NewRespReplyParser(limits);
  Requests requests(limits.max_buffer_bytes, stream.size());
  Replies replies;
  parsers::ParserCounters req_counters, rep_counters;
  bool gapped = false;
  size_t pos = 0;
  for (size_t n = 0; pos < stream.size(); ++n) {
    const uint8_t c = cuts[n % 8];
    if (gaps && (c & 0x80)) {
      request->Gap(req_counters);
      reply->Gap(rep_counters);
      gapped = true;
    }
    const std::string_view piece = stream.substr(pos, (c & 31) + 1);
    pos += piece.size();
    request->Feed(piece, requests, req_counters);
    reply->Feed(piece, replies, rep_counters);
    FUZZ_CHECK(request->memory_bytes() <= limits.max_buffer_bytes + kFixedBytes);
    FUZZ_CHECK(reply->memory_bytes() <= kReplyBytes);
  }
  FUZZ_CHECK(requests.wire <= stream.size());
  FUZZ_CHECK(replies.wire <= stream.size());
  FUZZ_CHECK(req_counters.read_keys + req_counters.write_keys <= stream.size());

  if (!gapped) {
    auto whole_request = parsers::NewRespRequestParser(limits);
    auto whole_reply = parsers::NewRespReplyParser(limits);
    Requests whole_requests(limits.max_buffer_bytes, stream.size());
    Replies whole_replies;
    parsers::ParserCounters wreq, wrep;
    whole_request->Feed(stream, whole_requests, wreq);
    whole_reply->Feed(stream, whole_replies, wrep);
    FUZZ_CHECK(whole_requests.seen == requests.seen);
    FUZZ_CHECK(whole_replies.seen == replies.seen);
    FUZZ_CHECK(SameCounters(wreq, req_counters));
    FUZZ_CHECK(SameCounters(wrep, rep_counters));
  }
  return 0;
}

}  // namespace hotkey::fuzz

#ifndef HOTKEY_FUZZ_NO_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hotkey::fuzz::FuzzResp(data, size);
}
#endif
