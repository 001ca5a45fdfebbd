// resp_keys_tool: the test-only window on the RESP parser for command_table_test.py.
//   resp_keys_tool table   prints the built-in command table as JSON
//   resp_keys_tool keys    reads RESP requests on stdin and prints one line per request:
//                          its keys as "<r|w>:<hex of the key>", space-separated
// Not installed; the product never links it.

#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>
#include <string_view>

#include <boost/json.hpp>

#include "factories.h"
#include "resp_commands.h"

namespace hotkey::parsers {
namespace {

const char* FinderName(resp::KeyFinder f) {
  switch (f) {
    case resp::KeyFinder::kNone:
      return "none";
    case resp::KeyFinder::kSort:
      return "sort";
    case resp::KeyFinder::kSortRo:
      return "sort_ro";
    case resp::KeyFinder::kMigrate:
      return "migrate";
    case resp::KeyFinder::kBitfield:
      return "bitfield";
  }
  return "?";
}

int PrintTable() {
  boost::json::array commands;
  for (const resp::CommandSpec& c : resp::Commands()) {
    boost::json::array specs;
    for (int k = 0; k < c.num_specs; ++k) {
      const resp::KeySpec& s = c.specs[k];
      boost::json::object bs, fk;
      switch (s.begin_search) {
        case resp::BeginSearch::kIndex:
          bs = {{"type", "index"}, {"index", s.index_or_startfrom}};
          break;
        case resp::BeginSearch::kKeyword:
          bs = {{"type", "keyword"},
                {"keyword", std::string(s.keyword)},
                {"startfrom", s.index_or_startfrom}};
          break;
        case resp::BeginSearch::kUnknown:
          bs = {{"type", "unknown"}};
          break;
      }
      switch (s.find_keys) {
        case resp::FindKeys::kRange:
          fk = {{"type", "range"}, {"lastkey", s.fk0}, {"keystep", s.fk1}, {"limit", s.fk2}};
          break;
        case resp::FindKeys::kKeynum:
          fk = {{"type", "keynum"}, {"keynumidx", s.fk0}, {"firstkey", s.fk1}, {"keystep", s.fk2}};
          break;
        case resp::FindKeys::kUnknown:
          fk = {{"type", "unknown"}};
          break;
      }
      specs.push_back(boost::json::object{{"access", s.access == Access::kRead ? "read" : "write"},
                                          {"begin_search", bs},
                                          {"find_keys", fk}});
    }
    commands.push_back(boost::json::object{{"name", std::string(c.name)},
                                           {"arity", c.arity},
                                           {"has_subcommands", c.has_subcommands},
                                           {"finder", FinderName(c.finder)},
                                           {"specs", specs}});
  }
  std::cout << boost::json::serialize(commands) << "\n";
  return 0;
}

class PrintingSink : public RequestSink {
 public:
  void OnRequest(const Request& r) override {
    std::string line;
    for (const KeyRef& k : r.keys) {
      if (!line.empty()) line += ' ';
      line += k.access == Access::kRead ? "r:" : "w:";
      for (unsigned char ch : k.key) {
        static const char kHex[] = "0123456789abcdef";
        line += kHex[ch >> 4];
        line += kHex[ch & 15];
      }
    }
    std::cout << line << "\n";
  }
};

int PrintKeys() {
  const std::string input((std::istreambuf_iterator<char>(std::cin)), {});
  ParserLimits limits;
  limits.max_buffer_bytes = 1 << 20;
  auto parser = NewRespRequestParser(limits);
  PrintingSink sink;
  ParserCounters counters;
  parser->Feed(input, sink, counters);
  std::cerr << "requests " << counters.requests << " protocol_errors " << counters.protocol_errors
            << " keys_dropped " << counters.keys_dropped << "\n";
  return counters.protocol_errors == 0 && counters.keys_dropped == 0 ? 0 : 1;
}

}  // namespace
}  // namespace hotkey::parsers

int main(int argc, char** argv) {
  const std::string_view mode = argc == 2 ? argv[1] : "";
  if (mode == "table") return hotkey::parsers::PrintTable();
  if (mode == "keys") return hotkey::parsers::PrintKeys();
  std::fprintf(stderr, "usage: resp_keys_tool table|keys\n");
  return 2;
}
