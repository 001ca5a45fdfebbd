// hotkey-bench-parsers: throughput of the RESP request and reply parsers (hotkey::parsers).
//
// Builds each stream in memory first, then feeds it in 1448-byte pieces (a TCP segment on
// loopback with timestamps), as the reassembler does, to one parser on one thread. Prints
// the machine, then one JSON object per line per stream: requests (or replies) and bytes per
// CPU-second of this thread (CLOCK_THREAD_CPUTIME_ID, so a busy neighbour does not skew
// them) as the median [min, max] of --repeats rounds of --passes passes each, and the keys
// reported per request. Run on demand: hotkey-bench-parsers [--repeats=5] [--passes=20]
// [--stream=NAME] (one stream only, e.g. to count its instructions under callgrind).
//   get_set       redis-benchmark's GET/SET mix (16-byte keys, 3-byte values), 50/50
//   mixed         MGET of 10 keys, EVAL with 2 keys, XREAD STREAMS of 2, HSET, MULTI/EXEC
//   set_400k      SET with 400 KB values: the values stream past unbuffered
//   replies       the replies of get_set and mixed (bulk strings, arrays, +OK, integers)

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench_util.h"
#include "factories.h"  // the RESP constructors (private to daemon/input/parsers/)
#include "hotkey/config/flag_parser.h"
#include "hotkey/parsers/request.h"

namespace {

using hotkey::parsers::ParserCounters;
using hotkey::parsers::ParserLimits;

constexpr size_t kSegment = 1448;

std::string Cmd(const std::vector<std::string>& argv) {
  std::string s = "*" + std::to_string(argv.size()) + "\r\n";
  for (const std::string& a : argv) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return s;
}

std::string Key(uint64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "key:%012llu", static_cast<unsigned long long>(i % 100000));
  return buf;
}

class Sink : public hotkey::parsers::RequestSink {
 public:
  void OnRequest(const hotkey::parsers::Request& r) override { keys += r.keys.size(); }
  uint64_t keys = 0;
};

void Report(const char* name, const std::string& stream, int repeats, int passes, bool replies) {
  ParserLimits limits;
  struct Count : hotkey::parsers::ReplySink {
    uint64_t n = 0;
    void OnReply(uint64_t) override { ++n; }
  };
  std::vector<double> per_cpu_s, mb_per_cpu_s;
  double n = 0, keys_per_request = 0;
  uint64_t protocol_errors = 0;
  size_t memory_bytes = 0;
  for (int r = 0; r < repeats; ++r) {
    // A fresh parser each round, so every round starts from the same state.
    Sink sink;
    Count count;
    ParserCounters c;
    auto request = hotkey::parsers::NewRespRequestParser(limits);
    auto reply = hotkey::parsers::NewRespReplyParser(limits);
    const double t0 = hotkey::bench::ThreadCpuSeconds();
    for (int pass = 0; pass < passes; ++pass) {
      for (size_t i = 0; i < stream.size(); i += kSegment) {
        const std::string_view piece = std::string_view(stream).substr(i, kSegment);
        if (replies) {
          reply->Feed(piece, count, c);
        } else {
          request->Feed(piece, sink, c);
        }
      }
    }
    const double cpu = hotkey::bench::ThreadCpuSeconds() - t0;
    n = replies ? count.n : c.requests;
    const double bytes = static_cast<double>(stream.size()) * passes;
    per_cpu_s.push_back(n / cpu);
    mb_per_cpu_s.push_back(bytes / cpu / 1e6);
    keys_per_request = replies ? 0.0 : sink.keys / n;
    protocol_errors = c.protocol_errors;
    memory_bytes = replies ? reply->memory_bytes() : request->memory_bytes();
  }
  std::printf(
      "{\"stream\":\"%s\",\"%s\":%.0f,\"bytes\":%.0f,\"repeats\":%d,\"per_cpu_s\":%s,"
      "\"mb_per_cpu_s\":%s,\"keys_per_request\":%.2f,\"protocol_errors\":%llu,"
      "\"memory_bytes\":%zu}\n",
      name, replies ? "replies" : "requests", n, static_cast<double>(stream.size()) * passes,
      repeats, hotkey::bench::SpreadJson(per_cpu_s).c_str(),
      hotkey::bench::SpreadJson(mb_per_cpu_s).c_str(), keys_per_request,
      static_cast<unsigned long long>(protocol_errors), memory_bytes);
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 5, passes = 20;
  std::string only;
  hotkey::config::FlagParser p("hotkey-bench-parsers");
  p.AddInteger("repeats", "Rounds per stream (median, min and max are over these).", &repeats);
  p.AddInteger("passes", "Passes over the stream per round.", &passes);
  p.AddString("stream", "Run only this stream (get_set, mixed, set_400k, replies).", &only);
  if (auto parsed = p.Parse(argc, argv); !parsed.ok() || repeats <= 0 || passes <= 0) {
    std::fprintf(stderr, "%s\n%s",
                 parsed.ok() ? "--repeats and --passes must be positive"
                             : std::string(parsed.status().message()).c_str(),
                 p.Help().c_str());
    return 2;
  }
  std::printf("{\"machine\":{\"cpu\":\"%s\",\"loadavg_1_5_15\":\"%s\"}}\n",
              hotkey::bench::CpuModel().c_str(), hotkey::bench::LoadAvg().c_str());
  std::string get_set, mixed, big, replies;
  for (uint64_t i = 0; i < 100000; ++i) {
    get_set += i % 2 ? Cmd({"GET", Key(i * 7919)}) : Cmd({"SET", Key(i * 7919), "xxx"});
    replies += i % 2 ? "$3\r\nxxx\r\n" : "+OK\r\n";
  }
  for (uint64_t i = 0; i < 20000; ++i) {
    std::vector<std::string> mget = {"MGET"};
    for (int k = 0; k < 10; ++k) mget.push_back(Key(i * 10 + k));
    mixed += Cmd(mget);
    mixed += Cmd({"EVAL", "return redis.call('get', KEYS[1])", "2", Key(i), Key(i + 1), "a"});
    mixed += Cmd({"XREAD", "COUNT", "10", "STREAMS", Key(i), Key(i + 2), "0", "0"});
    mixed += Cmd({"HSET", Key(i), "field", "value"});
    mixed += Cmd({"MULTI"}) + Cmd({"INCR", Key(i)}) + Cmd({"EXEC"});
    replies += "*10\r\n";
    for (int k = 0; k < 10; ++k) replies += "$5\r\nvalue\r\n";
    replies += "$-1\r\n*0\r\n:1\r\n+OK\r\n+QUEUED\r\n*1\r\n:2\r\n";
  }
  const std::string value(400 * 1024, 'v');
  for (int i = 0; i < 250; ++i) big += Cmd({"SET", Key(i), value});
  const auto run = [&](const char* name, const std::string& stream, bool is_replies) {
    if (only.empty() || only == name) Report(name, stream, repeats, passes, is_replies);
  };
  run("get_set", get_set, false);
  run("mixed", mixed, false);
  run("set_400k", big, false);
  run("replies", replies, true);
  return 0;
}
