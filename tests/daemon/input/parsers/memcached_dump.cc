// memcached_dump: prints what the memcached parsers make of a recorded byte stream, one
// JSON object per line, for tests/daemon/input/parsers/memcached_server_test.py.
//
//   memcached_dump requests FILE [STEP]   {"keys":[["key","r"|"w"],...],"reply":bool,"bytes":N,
//                                          "last":bool}   (false: a multi-get's earlier piece)
//   memcached_dump replies FILE [STEP]    {"reply":N}
// then one {"counters":{...}} line. STEP (default: the whole file) feeds the file in pieces
// of STEP bytes. Keys are printed byte for byte: bytes outside printable ASCII as \u00XX.

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>

#include "factories.h"
#include "hotkey/parsers/request.h"

namespace {

using namespace hotkey::parsers;

void PrintJsonString(std::string_view s) {
  std::putchar('"');
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      std::printf("\\%c", c);
    } else if (c < 0x20 || c >= 0x7f) {
      std::printf("\\u%04x", c);
    } else {
      std::putchar(c);
    }
  }
  std::putchar('"');
}

class Printer : public RequestSink, public ReplySink {
 public:
  void OnRequest(const Request& r) override {
    std::printf("{\"keys\":[");
    for (size_t i = 0; i < r.keys.size(); ++i) {
      std::printf(i == 0 ? "[" : ",[");
      PrintJsonString(r.keys[i].key);
      std::printf(",\"%s\"]", r.keys[i].access == Access::kRead ? "r" : "w");
    }
    // The parser counts a request before it sends its last piece: an unchanged count
    // means a multi-get's earlier piece.
    const bool last = counters->requests != requests_seen;
    requests_seen = counters->requests;
    std::printf("],\"reply\":%s,\"bytes\":%llu,\"last\":%s}\n", r.expects_reply ? "true" : "false",
                static_cast<unsigned long long>(r.wire_bytes), last ? "true" : "false");
  }
  void OnReply(uint64_t wire_bytes) override {
    std::printf("{\"reply\":%llu}\n", static_cast<unsigned long long>(wire_bytes));
  }
  const ParserCounters* counters = nullptr;
  uint64_t requests_seen = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s requests|replies FILE [STEP]\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  std::ifstream in(argv[2], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", argv[2]);
    return 2;
  }
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t step = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : data.size();
  Printer printer;
  ParserCounters c;
  printer.counters = &c;
  std::unique_ptr<RequestParser> requests = NewMemcachedRequestParser(ParserLimits{});
  std::unique_ptr<ReplyParser> replies = NewMemcachedReplyParser(ParserLimits{});
  for (size_t at = 0; at < data.size(); at += step == 0 ? data.size() : step) {
    const std::string_view piece =
        std::string_view(data).substr(at, step == 0 ? data.size() : step);
    if (mode == "requests") {
      requests->Feed(piece, printer, c);
    } else {
      replies->Feed(piece, printer, c);
    }
  }
  std::printf(
      "{\"counters\":{\"requests\":%llu,\"read_keys\":%llu,\"write_keys\":%llu,"
      "\"unknown_commands\":%llu,\"protocol_errors\":%llu,\"resyncs\":%llu,"
      "\"keys_dropped\":%llu}}\n",
      static_cast<unsigned long long>(c.requests), static_cast<unsigned long long>(c.read_keys),
      static_cast<unsigned long long>(c.write_keys),
      static_cast<unsigned long long>(c.unknown_commands),
      static_cast<unsigned long long>(c.protocol_errors),
      static_cast<unsigned long long>(c.resyncs), static_cast<unsigned long long>(c.keys_dropped));
  return 0;
}
