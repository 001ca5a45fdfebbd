// TraceReader: "<op> <key>" / "<ts_ms> <op> <key>" lines from plain or gzip files.

#include "hotkey/loadgen/trace.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace hotkey::loadgen {
namespace {

gzFile File(void* f) { return static_cast<gzFile>(f); }

bool IsEmptyOrComment(std::string_view line) { return line.empty() || line.front() == '#'; }

}  // namespace

bool TraceReader::ParseLine(std::string_view line, TraceEvent* event) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  event->ts_ms.reset();
  if (!line.empty() && line.front() >= '0' && line.front() <= '9') {
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) return false;
    int64_t ts = 0;
    const auto [end, ec] = std::from_chars(line.data(), line.data() + space, ts);
    if (ec != std::errc() || end != line.data() + space) return false;
    event->ts_ms = ts;
    line.remove_prefix(space + 1);
  }
  // "<op> <key>" with a one-byte op and a non-empty key.
  if (line.size() < 3 || (line[0] != 'r' && line[0] != 'w') || line[1] != ' ') return false;
  event->op = line[0];
  event->key.assign(line.data() + 2, line.size() - 2);
  return true;
}

absl::StatusOr<std::unique_ptr<TraceReader>> TraceReader::Open(const std::string& path) {
  gzFile f = nullptr;
  if (path == "-") {
    const int fd = dup(STDIN_FILENO);
    if (fd >= 0) f = gzdopen(fd, "rb");
  } else {
    f = gzopen(path.c_str(), "rb");
  }
  if (f == nullptr) {
    const int e = errno;
    const std::string message =
        absl::StrCat("cannot open trace '", path, "': ", e != 0 ? strerror(e) : "out of memory");
    return e == ENOENT ? absl::NotFoundError(message) : absl::UnavailableError(message);
  }
  return std::unique_ptr<TraceReader>(new TraceReader(f));
}

TraceReader::~TraceReader() { gzclose(File(file_)); }

absl::StatusOr<bool> TraceReader::ReadLine(bool* too_long) {
  buffer_.clear();
  *too_long = false;
  bool any = false;
  for (;;) {
    if (pos_ == end_) {
      const int n = gzread(File(file_), read_buffer_.data(), read_buffer_.size());
      if (n < 0) {
        int err = 0;
        const char* message = gzerror(File(file_), &err);
        return absl::DataLossError(absl::StrCat("trace read failed: ", message));
      }
      if (n == 0) return any;  // end of file; a last line without "\n" still counts
      pos_ = 0;
      end_ = static_cast<size_t>(n);
    }
    any = true;
    const char* start = read_buffer_.data() + pos_;
    const char* newline = static_cast<const char*>(std::memchr(start, '\n', end_ - pos_));
    const size_t n = newline != nullptr ? newline - start : end_ - pos_;
    if (!*too_long) {
      if (buffer_.size() + n > kMaxLineBytes) {
        *too_long = true;
        buffer_.clear();
      } else {
        buffer_.append(start, n);
      }
    }
    pos_ += n;
    if (newline != nullptr) {
      ++pos_;
      return true;
    }
  }
}

absl::StatusOr<bool> TraceReader::Next(TraceEvent* event) {
  for (;;) {
    bool too_long = false;
    absl::StatusOr<bool> got = ReadLine(&too_long);
    if (!got.ok() || !*got) return got;
    ++lines_;
    if (too_long) {
      ++bad_lines_;
      continue;
    }
    if (IsEmptyOrComment(buffer_) || buffer_ == "\r") continue;
    if (ParseLine(buffer_, event)) return true;
    ++bad_lines_;
  }
}

}  // namespace hotkey::loadgen
