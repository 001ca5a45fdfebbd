// Helpers of parsers_test: sinks that record what a parser reported, and the allocation
// counter of alloc_count.cc.

#ifndef HOTKEY_TESTS_PARSERS_TEST_UTIL_H_
#define HOTKEY_TESTS_PARSERS_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hotkey/parsers/request.h"

#include "alloc_count.h"

namespace hotkey::parsers::testing {

using ::hotkey::testing::AllocationsOnThisThread;  // tests/lib/alloc_count.h

struct SeenRequest {
  std::vector<std::pair<std::string, Access>> keys;
  uint64_t wire_bytes = 0;
  bool operator==(const SeenRequest&) const = default;
};

// Copies every request's keys (they are valid only during OnRequest).
class RecordingSink : public RequestSink {
 public:
  void OnRequest(const Request& r) override {
    SeenRequest s;
    for (const KeyRef& k : r.keys) s.keys.emplace_back(std::string(k.key), k.access);
    s.wire_bytes = r.wire_bytes;
    requests.push_back(std::move(s));
  }
  std::vector<SeenRequest> requests;
};

// Counts requests and keys without allocating (for the allocation test).
class CountingSink : public RequestSink {
 public:
  void OnRequest(const Request& r) override {
    ++requests;
    keys += r.keys.size();
  }
  uint64_t requests = 0;
  uint64_t keys = 0;
};

class RecordingReplySink : public ReplySink {
 public:
  void OnReply(uint64_t wire_bytes) override { replies.push_back(wire_bytes); }
  std::vector<uint64_t> replies;
};

}  // namespace hotkey::parsers::testing

#endif  // HOTKEY_TESTS_PARSERS_TEST_UTIL_H_
