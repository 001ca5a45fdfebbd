// The RESP framing core that the request and the reply parser (resp.cc) share: type bytes,
// header numbers ("*3\r\n", "$5\r\n"), bulk strings and their CRLF, simple lines ("+OK\r\n"),
// inline command lines, the caps on lengths, and the protocol-error and resync states, over
// one direction of a stream cut anywhere. It knows nothing of commands or replies: a
// handler says what each type byte opens and what a header's number means.
//
// Cost: one pass over the bytes, one byte at a time in headers and CRLFs, bulk data in runs
// as they arrive; no allocation (the handler's hooks may buffer, within their own limits:
// the parsers' "allocates nothing once warm" tests in tests/parsers/ run through it).
// Reference: https://redis.io/docs/reference/protocol-spec/.
//
// Thread-compatible: one framer per parser, as the parser itself.

#ifndef HOTKEY_PARSERS_RESP_FRAMING_H_
#define HOTKEY_PARSERS_RESP_FRAMING_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hotkey/parsers/request.h"

namespace hotkey::parsers::resp {

// Redis's proto-max-bulk-len default: a longer bulk string in a request is a protocol error
// there.
inline constexpr int64_t kMaxBulkBytes = 512LL * 1024 * 1024;
// The most elements a request's array header may announce. Redis 7 accepts up to INT_MAX
// ("invalid multibulk length" above), but a parser that took such a header would read
// every later bulk string of the flow as that one request's arguments, reporting nothing
// and moving no counter until the flow ends. Above this cap (the one older Redis releases
// applied) the header is counted as a protocol error and resynced past instead; the cost
// is that a real request with more arguments is not parsed, only counted.
inline constexpr int64_t kMaxRequestElements = 1024 * 1024;
// The most elements a reply's aggregate header may announce (a map's or an attribute's
// pairs count twice), for the same reason: a reply header of INT_MAX elements would take
// every later reply of the flow as one of its elements, none reported, no counter moving.
// Above it the header is a protocol error and the parser resyncs. The cost: a real reply
// that large (KEYS, SMEMBERS or HGETALL of more than a million entries, each a blocking
// call on the server itself) is counted as an error, and reply sizes are approximate until
// the pipeline drains, as after any resync.
inline constexpr int64_t kMaxReplyElements = kMaxRequestElements;
// Digits of a header number: 10^18 fits int64_t; anything longer is far past every cap.
inline constexpr int kMaxHeaderDigits = 18;

// The number of a header line ("3\r\n" after a type byte), one byte at a time, so a header
// split across segments needs no buffer.
class HeaderNumber {
 public:
  enum Result { kMore, kDone, kError };
  void Reset(bool allow_question) {
    *this = HeaderNumber();
    allow_question_ = allow_question;
  }
  Result Feed(char c) {
    if (cr_) return c == '\n' ? kDone : kError;
    if (c == '\r') {
      if (digits_ == 0 && !question_) return kError;
      cr_ = true;
      return kMore;
    }
    if (question_) return kError;
    if (c == '?' && allow_question_ && digits_ == 0 && !negative_) {
      question_ = true;
      return kMore;
    }
    if (c == '-' && digits_ == 0 && !negative_) {
      negative_ = true;
      return kMore;
    }
    if (c < '0' || c > '9' || digits_ >= kMaxHeaderDigits) return kError;
    value_ = value_ * 10 + (c - '0');
    ++digits_;
    return kMore;
  }
  int64_t value() const { return negative_ ? -value_ : value_; }
  bool question() const { return question_; }  // RESP3 streamed: "$?" or "*?"

 private:
  int64_t value_ = 0;
  int digits_ = 0;
  bool negative_ = false;
  bool cr_ = false;
  bool question_ = false;
  bool allow_question_ = false;
};

// What a type byte opens, as its handler decides.
enum class Opens : uint8_t {
  kError,             // not a type here: a protocol error at this byte
  kHeader,            // a header number follows
  kStreamableHeader,  // a header number, or "?" (RESP3 streamed)
  kLine,              // a simple line, to its CRLF
  kInline,            // an inline command line, to its LF; the byte is part of the line
};

// The framing state machine. A handler passed to Consume() provides:
//   Opens OnType(char type)            at each frame start
//   bool OnHeader(char type, const HeaderNumber&)   false: a protocol error; may StartBulk()
//   void OnBulkData(std::string_view)  a bulk string's bytes, in runs
//   void OnBulkEnd()                   after the bulk string's CRLF
//   void OnLineEnd(char type)          after a simple line's CRLF
//   bool OnInlineData(std::string_view)  false: the line is too long, a protocol error
//   void OnInlineEnd()                 after an inline line's LF
//   void OnProtocolError()             drops what is in progress (counting is done here)
//   size_t ScanResync(std::string_view)  in resync: the bytes used looking for a boundary;
//                                      Resume() when found
// bytes() counts the bytes parsed since the handler last called ResetBytes() (or since the
// resync ended): the wire size of the request or reply in progress.
class Framer {
 public:
  template <class Handler>
  void Consume(std::string_view s, Handler& h, ParserCounters& counters) {
    counters_ = &counters;
    if (state_ == State::kBulk && remaining_ > s.size()) {  // all inside a long bulk string
      h.OnBulkData(s);
      remaining_ -= s.size();
      bytes_ += s.size();
      return;
    }
    while (!s.empty()) {
      const size_t n = state_ == State::kResync ? h.ScanResync(s) : Parse(s, h);
      s.remove_prefix(n);
    }
  }

  // Drops the frame in progress and looks for a boundary from the next byte, which counts
  // as a line start.
  void StartResync() {
    state_ = State::kResync;
    line_start_ = true;
    bytes_ = 0;
  }
  // The position in s of the first byte at a line start (the first byte of a resync, or the
  // byte after '\n') for which starts(byte) holds, or s.size().
  template <class Starts>
  size_t FindLineStart(std::string_view s, Starts&& starts) {
    for (size_t i = 0; i < s.size(); ++i) {
      if (line_start_ && starts(s[i])) return i;
      line_start_ = s[i] == '\n';
    }
    return s.size();
  }
  void set_line_start(bool line_start) { line_start_ = line_start; }
  // A boundary was found: the next byte is a type byte.
  void Resume() { state_ = State::kType; }

  // From OnHeader: a bulk string of n >= 0 bytes and its CRLF follow.
  void StartBulk(uint64_t n) {
    remaining_ = n;
    state_ = n > 0 ? State::kBulk : State::kBulkCr;
  }

  uint64_t bytes() const { return bytes_; }
  void ResetBytes() { bytes_ = 0; }

 private:
  enum class State : uint8_t {
    kType,    // a frame starts
    kHeader,  // the number after a type byte
    kBulk,
    kBulkCr,
    kBulkLf,
    kLine,  // a simple line, to its CR
    kLineLf,
    kInline,  // an inline line, to its LF
    kResync,  // looking for a boundary (the handler's ScanResync)
  };

  // Counts a protocol error at s[i] and resyncs from there (the byte is not consumed: it
  // may start the next frame, unless it is inside a line). Returns i.
  template <class Handler>
  [[gnu::noinline]] size_t Fail(size_t i, Handler& h, bool at_line_start = true) {
    ++counters_->protocol_errors;
    ++counters_->resyncs;
    h.OnProtocolError();
    StartResync();
    line_start_ = at_line_start;
    return i;
  }

  template <class Handler>
  size_t Parse(std::string_view s, Handler& h) {
    size_t i = 0;
    while (i < s.size()) {
      switch (state_) {
        case State::kType: {
          const char c = s[i];
          switch (h.OnType(c)) {
            case Opens::kError:
              return Fail(i, h);
            case Opens::kInline:
              state_ = State::kInline;
              continue;  // the byte is the line's
            case Opens::kHeader:
              number_.Reset(false);
              state_ = State::kHeader;
              break;
            case Opens::kStreamableHeader:
              number_.Reset(true);
              state_ = State::kHeader;
              break;
            case Opens::kLine:
              state_ = State::kLine;
              break;
          }
          type_ = c;
          ++i;
          ++bytes_;
          break;
        }
        case State::kHeader: {
          // The whole number in one go when this piece holds it.
          HeaderNumber::Result r;
          do {
            r = number_.Feed(s[i]);
            if (r == HeaderNumber::kError) return Fail(i, h);
            ++i;
            ++bytes_;
          } while (r == HeaderNumber::kMore && i < s.size());
          if (r == HeaderNumber::kDone) {
            state_ = State::kType;  // unless OnHeader starts a bulk string
            if (!h.OnHeader(type_, number_)) return Fail(i, h);
          }
          break;
        }
        case State::kBulk: {
          const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, s.size() - i));
          h.OnBulkData(s.substr(i, take));
          i += take;
          bytes_ += take;
          remaining_ -= take;
          if (remaining_ > 0) break;
          state_ = State::kBulkCr;
          if (i == s.size()) break;
          [[fallthrough]];
        }
        case State::kBulkCr:
          if (s[i] != '\r') return Fail(i, h);
          ++i;
          ++bytes_;
          state_ = State::kBulkLf;
          if (i == s.size()) break;
          [[fallthrough]];
        case State::kBulkLf:
          if (s[i] != '\n') return Fail(i, h);
          ++i;
          ++bytes_;
          state_ = State::kType;
          h.OnBulkEnd();
          break;
        case State::kLineLf:
          if (s[i] != '\n') return Fail(i, h);
          ++i;
          ++bytes_;
          state_ = State::kType;
          h.OnLineEnd(type_);
          break;
        case State::kLine: {
          // A simple line ends at CR LF; a bare LF inside it is a protocol error there.
          const size_t cr = s.find('\r', i);
          const size_t end = cr == std::string_view::npos ? s.size() : cr;
          const size_t nl = s.substr(i, end - i).find('\n');
          if (nl != std::string_view::npos) return Fail(i + nl, h);
          bytes_ += end - i;
          i = end;
          if (cr != std::string_view::npos) {
            ++i;
            ++bytes_;
            state_ = State::kLineLf;
          }
          break;
        }
        case State::kInline: {
          const size_t nl = s.find('\n', i);
          const size_t end = nl == std::string_view::npos ? s.size() : nl;
          // Too long: where it fails depends on the cuts, but that is inside the line.
          if (!h.OnInlineData(s.substr(i, end - i))) {
            return Fail(i, h, /*at_line_start=*/false);
          }
          bytes_ += end - i;
          i = end;
          if (nl != std::string_view::npos) {
            ++i;
            ++bytes_;
            state_ = State::kType;
            h.OnInlineEnd();
          }
          break;
        }
        case State::kResync:
          return i;
      }
    }
    return i;
  }

  State state_ = State::kType;
  char type_ = 0;
  HeaderNumber number_;
  uint64_t remaining_ = 0;  // bytes of the bulk string still to come
  uint64_t bytes_ = 0;
  bool line_start_ = false;
  ParserCounters* counters_ = nullptr;  // Consume()'s
};

}  // namespace hotkey::parsers::resp

#endif  // HOTKEY_PARSERS_RESP_FRAMING_H_
