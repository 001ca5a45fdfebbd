// Tests for hotkey::loadgen::TraceReader (tools/loadgen/trace.cc): both line forms, plain
// and gzip files, and bad lines counted and skipped.

#include "hotkey/loadgen/trace.h"

#include <catch2/catch.hpp>

#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace hotkey::loadgen {
namespace {

// A temporary file removed at scope exit.
class TempFile {
 public:
  explicit TempFile(const std::string& suffix) {
    std::string pattern = "/tmp/hotkey_trace_test_XXXXXX" + suffix;
    const int fd = mkstemps(pattern.data(), static_cast<int>(suffix.size()));
    REQUIRE(fd >= 0);
    close(fd);
    path_ = pattern;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Three good events, one bad line (unknown op), one comment, one empty line, one CRLF
// line, a key with spaces and a NUL byte, and no final newline.
const std::string kTrace = std::string(
                               "# a comment\n"
                               "r user:1\n"
                               "\n"
                               "1500 w cart 9 extra\n"
                               "x bad op\n"
                               "1600 r crlf\r\n"
                               "r ") +
                           std::string("nul\0byte", 8);

std::vector<TraceEvent> ReadAll(const std::string& path, TraceReader** keep = nullptr,
                                std::unique_ptr<TraceReader>* owner = nullptr) {
  absl::StatusOr<std::unique_ptr<TraceReader>> r = TraceReader::Open(path);
  REQUIRE(r.ok());
  std::vector<TraceEvent> events;
  TraceEvent e;
  for (;;) {
    absl::StatusOr<bool> more = (*r)->Next(&e);
    REQUIRE(more.ok());
    if (!*more) break;
    events.push_back(e);
  }
  if (keep != nullptr) *keep = r->get();
  if (owner != nullptr) *owner = std::move(*r);
  return events;
}

void CheckTraceEvents(const std::vector<TraceEvent>& events) {
  REQUIRE(events.size() == 4);
  CHECK(events[0].op == 'r');
  CHECK(events[0].key == "user:1");
  CHECK_FALSE(events[0].ts_ms.has_value());
  CHECK(events[1].op == 'w');
  CHECK(events[1].key == "cart 9 extra");
  REQUIRE(events[1].ts_ms.has_value());
  CHECK(*events[1].ts_ms == 1500);
  CHECK(events[2].key == "crlf");
  CHECK(*events[2].ts_ms == 1600);
  CHECK(events[3].key == std::string("nul\0byte", 8));
}

TEST_CASE("TraceReader: a plain file's events are read and its bad line skipped", "[loadgen]") {
  TempFile f(".txt");
  std::ofstream(f.path(), std::ios::binary) << kTrace;
  TraceReader* r = nullptr;
  std::unique_ptr<TraceReader> owner;
  CheckTraceEvents(ReadAll(f.path(), &r, &owner));
  CHECK(r->lines() == 7);
  CHECK(r->bad_lines() == 1);
}

TEST_CASE("TraceReader: a gzip file reads the same as the plain one", "[loadgen]") {
  TempFile f(".txt.gz");
  gzFile gz = gzopen(f.path().c_str(), "wb");
  REQUIRE(gz != nullptr);
  REQUIRE(gzwrite(gz, kTrace.data(), static_cast<unsigned>(kTrace.size())) ==
          static_cast<int>(kTrace.size()));
  gzclose(gz);
  // It really is compressed: the gzip magic bytes.
  std::ifstream in(f.path(), std::ios::binary);
  unsigned char magic[2] = {};
  in.read(reinterpret_cast<char*>(magic), 2);
  CHECK(magic[0] == 0x1f);
  CHECK(magic[1] == 0x8b);
  TraceReader* r = nullptr;
  std::unique_ptr<TraceReader> owner;
  CheckTraceEvents(ReadAll(f.path(), &r, &owner));
  CHECK(r->bad_lines() == 1);
}

TEST_CASE("TraceReader: long traces cross read buffers without losing lines", "[loadgen]") {
  TempFile f(".txt");
  {
    std::ofstream out(f.path(), std::ios::binary);
    for (int i = 0; i < 50000; ++i) out << i << " r key:" << i << "\n";
  }
  const std::vector<TraceEvent> events = ReadAll(f.path());
  REQUIRE(events.size() == 50000);
  for (int i = 0; i < 50000; i += 997) {
    CHECK(events[i].key == "key:" + std::to_string(i));
    CHECK(*events[i].ts_ms == i);
  }
}

TEST_CASE("TraceReader: a line longer than the limit is counted bad", "[loadgen]") {
  TempFile f(".txt");
  std::ofstream(f.path(), std::ios::binary)
      << "r a\nr " << std::string(TraceReader::kMaxLineBytes + 10, 'x') << "\nw b\n";
  TraceReader* r = nullptr;
  std::unique_ptr<TraceReader> owner;
  const std::vector<TraceEvent> events = ReadAll(f.path(), &r, &owner);
  REQUIRE(events.size() == 2);
  CHECK(events[1].key == "b");
  CHECK(r->bad_lines() == 1);
}

TEST_CASE("TraceReader: malformed lines are rejected by ParseLine", "[loadgen]") {
  TraceEvent e;
  for (const char* bad : {"r", "r ", "rr key", "read key", "w\tkey", "12", "12 ", "12 r",
                          "12x r key", "-5 r key", "99999999999999999999 r key", " r key"}) {
    INFO("'" << bad << "'");
    CHECK_FALSE(TraceReader::ParseLine(bad, &e));
  }
  REQUIRE(TraceReader::ParseLine("7 w  two spaces", &e));
  CHECK(e.key == " two spaces");  // everything after the op's single space
  CHECK(*e.ts_ms == 7);
  REQUIRE(TraceReader::ParseLine("w 123", &e));  // a numeric key, no timestamp
  CHECK(e.key == "123");
  CHECK_FALSE(e.ts_ms.has_value());
}

TEST_CASE("TraceReader: a missing file is NotFound", "[loadgen]") {
  absl::StatusOr<std::unique_ptr<TraceReader>> r =
      TraceReader::Open("/nonexistent/hotkey/trace.txt");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace hotkey::loadgen
