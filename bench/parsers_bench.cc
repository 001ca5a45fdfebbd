// hotkey-bench-parsers: throughput of the RESP request and reply parsers (hotkey::parsers).
//
// Builds each stream in memory first, then feeds it in 1448-byte pieces (a TCP segment on
// loopback with timestamps), as the reassembler does, to one parser on one thread. Prints
// one JSON object per line per stream: requests (or replies) and bytes per CPU-second of
// this thread (CLOCK_THREAD_CPUTIME_ID, so a busy neighbour does not skew them), and the
// keys reported per request. Run on demand: hotkey-bench-parsers [--rounds N].
//   get_set       redis-benchmark's GET/SET mix (16-byte keys, 3-byte values), 50/50
//   mixed         MGET of 10 keys, EVAL with 2 keys, XREAD STREAMS of 2, HSET, MULTI/EXEC
//   set_400k      SET with 400 KB values: the values stream past unbuffered
//   replies       the replies of get_set and mixed (bulk strings, arrays, +OK, integers)

#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "factories.h"  // the RESP constructors (private to parsers/)
#include "hotkey/parsers/request.h"

namespace {

using hotkey::parsers::ParserCounters;
using hotkey::parsers::ParserLimits;

constexpr size_t kSegment = 1448;

double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

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

void Report(const char* name, const std::string& stream, int rounds, bool replies) {
  ParserLimits limits;
  Sink sink;
  ParserCounters c;
  auto request = hotkey::parsers::NewRespRequestParser(limits);
  auto reply = hotkey::parsers::NewRespReplyParser(limits);
  uint64_t replies_seen = 0;
  struct Count : hotkey::parsers::ReplySink {
    uint64_t* n;
    void OnReply(uint64_t) override { ++*n; }
  } count;
  count.n = &replies_seen;
  const double t0 = CpuSeconds();
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < stream.size(); i += kSegment) {
      const std::string_view piece = std::string_view(stream).substr(i, kSegment);
      if (replies) {
        reply->Feed(piece, count, c);
      } else {
        request->Feed(piece, sink, c);
      }
    }
  }
  const double cpu = CpuSeconds() - t0;
  const double n = replies ? replies_seen : c.requests;
  const double bytes = static_cast<double>(stream.size()) * rounds;
  std::printf(
      "{\"stream\":\"%s\",\"%s\":%.0f,\"bytes\":%.0f,\"cpu_s\":%.3f,\"per_cpu_s\":%.0f,"
      "\"mb_per_cpu_s\":%.1f,\"keys_per_request\":%.2f,\"protocol_errors\":%llu,"
      "\"memory_bytes\":%zu}\n",
      name, replies ? "replies" : "requests", n, bytes, cpu, n / cpu, bytes / cpu / 1e6,
      replies ? 0.0 : sink.keys / n, static_cast<unsigned long long>(c.protocol_errors),
      replies ? reply->memory_bytes() : request->memory_bytes());
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 20;
  if (argc == 3 && std::strcmp(argv[1], "--rounds") == 0) rounds = std::atoi(argv[2]);
  if (rounds <= 0) {
    std::fprintf(stderr, "usage: hotkey-bench-parsers [--rounds N]\n");
    return 2;
  }
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
  Report("get_set", get_set, rounds, false);
  Report("mixed", mixed, rounds, false);
  Report("set_400k", big, rounds, false);
  Report("replies", replies, rounds, true);
  return 0;
}
