// hotkey-bench-memcached-parser: throughput of the tap's memcached parsers
// (hotkey::parsers), the request and the reply side, with no socket and no capture.
//
// Builds each stream in memory before timing: pipelined text traffic as pymemcache sends
// it (get, 10-key get_many, set with 100-byte values, incr, delete), the same through meta
// commands (mg, ms, md), and binary Get/Set; and the replies memcached 1.6 sends to the text
// stream. Feeds each in 1448-byte pieces (a loopback TCP segment with timestamps) to one
// parser, on one thread, and prints the machine, then one JSON object per stream: requests
// (or replies) and bytes per CPU-second of this thread (CLOCK_THREAD_CPUTIME_ID, so a busy
// neighbour does not skew them), as the median [min, max] of --repeats rounds.
//
//   hotkey-bench-memcached-parser [--megabytes=64] [--repeats=5]   each stream's size
//   [--stream=NAME]   one stream only (e.g. to count its instructions under callgrind)

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../daemon/input/parsers/factories.h"
#include "bench_util.h"
#include "hotkey/config/flag_parser.h"
#include "hotkey/parsers/request.h"

namespace {

using namespace hotkey::parsers;

class Counter : public RequestSink, public ReplySink {
 public:
  void OnRequest(const Request& r) override {
    ++requests;
    keys += r.keys.size();
  }
  void OnReply(uint64_t) override { ++replies; }
  uint64_t requests = 0;
  uint64_t keys = 0;
  uint64_t replies = 0;
};

std::string Key(uint64_t i) { return "user:" + std::to_string(i * 2654435761u % 1000000); }

std::string Binary(uint8_t opcode, const std::string& key, size_t extras, size_t value) {
  std::string h(24, '\0');
  h[0] = static_cast<char>(0x80);
  h[1] = static_cast<char>(opcode);
  h[2] = static_cast<char>(key.size() >> 8);
  h[3] = static_cast<char>(key.size() & 0xff);
  h[4] = static_cast<char>(extras);
  const uint32_t body = static_cast<uint32_t>(extras + key.size() + value);
  h[10] = static_cast<char>(body >> 8);
  h[11] = static_cast<char>(body & 0xff);
  return h + std::string(extras, '\0') + key + std::string(value, 'v');
}

// Appends one round of each stream's mix.
void Text(uint64_t i, std::string& s) {
  const std::string value(100, 'v');
  s += "get " + Key(i) + "\r\n";
  s += "get";
  for (int k = 0; k < 10; ++k) s += " " + Key(i + k);
  s += "\r\n";
  s += "set " + Key(i) + " 0 0 100 noreply\r\n" + value + "\r\n";
  s += "incr " + Key(i + 1) + " 1\r\n";
  s += "delete " + Key(i + 2) + "\r\n";
}
void Meta(uint64_t i, std::string& s) {
  s += "mg " + Key(i) + " v t\r\n";
  s += "ms " + Key(i) + " 100 T0\r\n" + std::string(100, 'v') + "\r\n";
  s += "md " + Key(i + 1) + " q\r\n";
}
void BinaryMix(uint64_t i, std::string& s) {
  s += Binary(0x00, Key(i), 0, 0);
  s += Binary(0x01, Key(i), 8, 100);
}
void Replies(uint64_t i, std::string& s) {
  s += "VALUE " + Key(i) + " 0 100\r\n" + std::string(100, 'v') + "\r\nEND\r\n";
  s += "VALUE " + Key(i) + " 0 100\r\n" + std::string(100, 'v') + "\r\nVALUE " + Key(i + 1) +
       " 0 100\r\n" + std::string(100, 'v') + "\r\nEND\r\n";
  s += "42\r\nDELETED\r\n";
}

template <class Mix>
std::string Build(size_t bytes, Mix mix) {
  std::string s;
  s.reserve(bytes + 4096);
  for (uint64_t i = 0; s.size() < bytes; ++i) mix(i, s);
  return s;
}

void Run(const char* name, const std::string& stream, bool replies, int repeats) {
  constexpr size_t kSegment = 1448;
  std::vector<double> per_cpu_s, mb_per_cpu_s;
  double items = 0;
  uint64_t keys = 0, errors = 0;
  for (int r = 0; r < repeats; ++r) {
    // A fresh parser each round, so every round starts from the same state.
    Counter sink;
    ParserCounters counters;
    std::unique_ptr<RequestParser> request = NewMemcachedRequestParser(ParserLimits{});
    std::unique_ptr<ReplyParser> reply = NewMemcachedReplyParser(ParserLimits{});
    const std::string_view all(stream);
    const double t0 = hotkey::bench::ThreadCpuSeconds();
    for (size_t at = 0; at < all.size(); at += kSegment) {
      if (replies) {
        reply->Feed(all.substr(at, kSegment), sink, counters);
      } else {
        request->Feed(all.substr(at, kSegment), sink, counters);
      }
    }
    const double cpu = hotkey::bench::ThreadCpuSeconds() - t0;
    items = static_cast<double>(replies ? sink.replies : sink.requests);
    keys = sink.keys;
    errors = counters.protocol_errors + counters.unknown_commands;
    per_cpu_s.push_back(items / cpu);
    mb_per_cpu_s.push_back(static_cast<double>(stream.size()) / cpu / 1e6);
  }
  std::printf(
      "{\"stream\":\"%s\",\"bytes\":%zu,\"%s\":%.0f,\"keys\":%llu,\"repeats\":%d,"
      "\"per_cpu_s\":%s,\"mb_per_cpu_s\":%s,\"errors\":%llu}\n",
      name, stream.size(), replies ? "replies" : "requests", items,
      static_cast<unsigned long long>(keys), repeats, hotkey::bench::SpreadJson(per_cpu_s).c_str(),
      hotkey::bench::SpreadJson(mb_per_cpu_s).c_str(), static_cast<unsigned long long>(errors));
}

}  // namespace

int main(int argc, char** argv) {
  int megabytes = 64, repeats = 5;
  std::string only;
  hotkey::config::FlagParser p("hotkey-bench-memcached-parser");
  p.AddInteger("megabytes", "Each stream's size in MiB.", &megabytes);
  p.AddInteger("repeats", "Rounds per stream (median, min and max are over these).", &repeats);
  p.AddString("stream", "Run only this stream (text, meta, binary, text_replies).", &only);
  if (auto parsed = p.Parse(argc, argv); !parsed.ok() || megabytes <= 0 || repeats <= 0) {
    std::fprintf(stderr, "%s\n%s",
                 parsed.ok() ? "--megabytes and --repeats must be positive"
                             : std::string(parsed.status().message()).c_str(),
                 p.Help().c_str());
    return 2;
  }
  const size_t bytes = static_cast<size_t>(megabytes) << 20;
  std::printf("{\"machine\":{\"cpu\":\"%s\",\"loadavg_1_5_15\":\"%s\"}}\n",
              hotkey::bench::CpuModel().c_str(), hotkey::bench::LoadAvg().c_str());
  const auto run = [&](const char* name, auto build, bool replies) {
    if (only.empty() || only == name) Run(name, Build(bytes, build), replies, repeats);
  };
  run("text", Text, false);
  run("meta", Meta, false);
  run("binary", BinaryMix, false);
  run("text_replies", Replies, true);
  return 0;
}
