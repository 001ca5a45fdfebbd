// TraceReader: reads recorded key-access traces for Replayer and the benchmarks.
//
// One event per line, either "<op> <key>" or "<ts_ms> <op> <key>": op is "r" or "w",
// ts_ms a non-negative integer of milliseconds (any origin), and the key every byte after
// the single space that follows the op, up to the end of the line (so keys may hold
// spaces). A trailing "\r" is dropped (CRLF files). Empty lines and lines starting with
// '#' are skipped silently; any other line that does not parse, and lines longer than
// kMaxLineBytes, are counted in bad_lines() and skipped.
//
// Files are plain text or gzip, told apart by zlib (gzopen reads plain files as they are);
// "-" reads standard input.
//
// Keys may hold any byte but "\n", NUL included. Cost: a memchr and a copy per line, no
// allocation once the buffers have grown.
// Thread-compatible.

#ifndef HOTKEY_LOADGEN_TRACE_H_
#define HOTKEY_LOADGEN_TRACE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hotkey::loadgen {

struct TraceEvent {
  std::optional<int64_t> ts_ms;  // present when the line carries a timestamp
  char op = 'r';                 // 'r' or 'w'
  std::string key;               // non-empty, no '\n'
};

class TraceReader {
 public:
  // Lines longer than this (64 KiB, the largest UDP payload) cannot be sent anyway.
  static constexpr size_t kMaxLineBytes = 65536;

  // NotFound / Unavailable with the path and errno text when the file cannot be opened.
  static absl::StatusOr<std::unique_ptr<TraceReader>> Open(const std::string& path);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  // Reads the next good event into `*event`: true if one was read, false at the end of
  // the file; an error (DataLoss) if the file is unreadable, e.g. a corrupt gzip stream.
  absl::StatusOr<bool> Next(TraceEvent* event);

  uint64_t lines() const { return lines_; }          // lines read, good or not
  uint64_t bad_lines() const { return bad_lines_; }  // lines counted and skipped

  // Parses one line (without its "\n") into `*event`; false if the line is bad. Exposed
  // for tests and for callers with their own input.
  static bool ParseLine(std::string_view line, TraceEvent* event);

 private:
  explicit TraceReader(void* file) : file_(file), read_buffer_(kReadBytes) {}
  // Reads one line (without "\n") into buffer_: true if there was one, false at the end.
  // `*too_long` is set, and buffer_ left empty, for a line over kMaxLineBytes.
  absl::StatusOr<bool> ReadLine(bool* too_long);

  // 128 KiB per gzread: few system calls, and inflate works on large blocks.
  static constexpr size_t kReadBytes = 1 << 17;
  void* file_;  // gzFile; void* keeps <zlib.h> out of this header
  std::vector<char> read_buffer_;
  size_t pos_ = 0;  // unread bytes are read_buffer_[pos_, end_)
  size_t end_ = 0;
  std::string buffer_;  // the current line
  uint64_t lines_ = 0;
  uint64_t bad_lines_ = 0;
};

}  // namespace hotkey::loadgen

#endif  // HOTKEY_LOADGEN_TRACE_H_
