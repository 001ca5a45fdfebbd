// The memcached framing core that the request and the reply parser (memcached.cc) share:
// text lines split into tokens, lines skipped to their end, data blocks skipped by count
// (with their trailing "\r\n" checked), and binary packets (a 24-byte header, then extras,
// key and value framed by the header's lengths), over one direction of a stream cut
// anywhere; plus the resync flag both sides keep after a gap. It knows nothing of commands
// or reply words: a handler says what each token, line and header means.
//
// Cost: one pass over the bytes; a token is copied only when a segment boundary cuts it
// (into a kTokenBytes buffer); data blocks and binary values are skipped by counting; no
// allocation (tests/daemon/input/parsers/memcached_alloc_test.cc runs through it). References:
// memcached's doc/protocol.txt, proto_text.c and protocol_binary.h.
//
// Thread-compatible: one framer per parser, as the parser itself.

#ifndef HOTKEY_PARSERS_MEMCACHED_FRAMING_H_
#define HOTKEY_PARSERS_MEMCACHED_FRAMING_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "hotkey/parsers/request.h"

namespace hotkey::parsers::memcached {

// memcached closes a connection whose pending command line passes 2048 bytes without a
// newline, unless it is a get or gets (try_read_command_ascii).
inline constexpr uint64_t kMaxLineBytes = 2048;
// The longest token kept when a token is cut by a segment boundary: a key (250) or a
// number. Longer tokens are seen only as "too long".
inline constexpr size_t kTokenBytes = 256;
inline constexpr size_t kBinaryHeaderBytes = 24;

inline uint32_t Be16(const uint8_t* p) { return (uint32_t{p[0]} << 8) | p[1]; }
inline uint32_t Be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// Splits command lines into tokens the way memcached's tokenize_command does, across
// Feed() calls: ' ' separates, "\n" ends the line, a "\r" right before "\n" is dropped.
// A token wholly inside one piece is passed as a view of it; one cut by a boundary is
// copied into a fixed buffer (kTokenBytes; a longer one is passed as "too long").
class LineScanner {
 public:
  // Consumes bytes from data[pos] on; calls on_token(token, too_long) for each token and
  // returns the position after what it consumed. Sets *line_end when it consumed the
  // "\n", *too_long_line when the line passed `max_line` bytes (it stops there).
  template <class OnToken>
  size_t Scan(std::string_view data, size_t pos, const uint64_t* max_line, OnToken&& on_token,
              bool* line_end, bool* too_long_line) {
    const size_t n = data.size();
    while (pos < n) {
      const char c = data[pos];
      if (pending_cr_) {
        pending_cr_ = false;
        if (c != '\n') Append("\r");  // not the line's end: the "\r" is token data
      }
      if (c == '\n') {
        // The token first, as at a space: a piece sent from on_token counts the bytes
        // up to the token's end, wherever the segment boundaries fell.
        EndToken(on_token);
        ++pos;
        ++line_bytes_;
        *line_end = true;
        return pos;
      }
      if (c == ' ') {
        EndToken(on_token);
        ++pos;
        ++line_bytes_;
      } else if (c == '\r') {
        pending_cr_ = true;
        ++pos;
        ++line_bytes_;
      } else {
        size_t end = pos + 1;
        while (end < n && data[end] != ' ' && data[end] != '\r' && data[end] != '\n') ++end;
        const std::string_view run = data.substr(pos, end - pos);
        line_bytes_ += run.size();
        pos = end;
        if (!in_token_ && end < n && data[end] != '\r') {
          // The whole token is in this piece: no copy.
          if (line_bytes_ > *max_line) break;
          on_token(run, false);
          continue;
        }
        Append(run);
      }
      if (line_bytes_ > *max_line) break;
    }
    if (line_bytes_ > *max_line) *too_long_line = true;
    return pos;
  }

  void Reset() {
    line_bytes_ = 0;
    token_len_ = 0;
    in_token_ = false;
    too_long_ = false;
    pending_cr_ = false;
  }
  uint64_t line_bytes() const { return line_bytes_; }

 private:
  // Keeps what fits: a too-long token still shows its first bytes (a meta flag's letter).
  void Append(std::string_view run) {
    in_token_ = true;
    const size_t fits = std::min(run.size(), kTokenBytes - token_len_);
    if (fits < run.size()) too_long_ = true;
    std::memcpy(token_.data() + token_len_, run.data(), fits);
    token_len_ += fits;
  }
  template <class OnToken>
  void EndToken(OnToken& on_token) {
    if (!in_token_) return;
    on_token(std::string_view(token_.data(), token_len_), too_long_);
    in_token_ = false;
    too_long_ = false;
    token_len_ = 0;
  }

  std::array<char, kTokenBytes> token_;
  size_t token_len_ = 0;
  uint64_t line_bytes_ = 0;
  bool in_token_ = false;
  bool too_long_ = false;
  bool pending_cr_ = false;
};

// A binary packet's header (requests and responses share the layout).
struct BinaryHeader {
  uint8_t opcode;
  uint32_t key_len;
  uint32_t extras_len;
  uint32_t body_len;  // extras, key and value
};

// The framing state machine. A handler passed to Feed() provides:
//   void OnLineStart()                    a text line starts
//   void OnToken(std::string_view, bool too_long)  each token of the line
//   void OnLineEnd()                      after its "\n"; may StartData()
//   void OnLineTooLong()                  past max_line: the framer has counted a protocol
//                                         error (unless resyncing) and skips to the "\n"
//   void OnSkipped(uint64_t n)            bytes of a skipped line or data block as they pass
//   void OnDataEnd(bool crlf)             a data block passed; crlf: it ended in "\r\n"
//                                         (looked at only when kChecksDataEnd is true)
//   static constexpr bool kChecksDataEnd  whether OnDataEnd's crlf is wanted
//   bool OnBinaryHeader(const BinaryHeader&)  false: not framed (back to a line start)
//   void OnBinaryKeyData(std::string_view)    the key's bytes, in runs
//   void OnBinaryKey()                    after the key (at once when it is empty)
//   void OnBinaryEnd()                    after the packet's last byte
class Framer {
 public:
  // binary_magic: the first byte of a binary packet in this direction (0x80 requests, 0x81
  // responses).
  explicit Framer(uint8_t binary_magic) : binary_magic_(binary_magic) {}

  template <class Handler>
  void Feed(std::string_view bytes, Handler& h, ParserCounters& counters) {
    size_t pos = 0;
    const size_t n = bytes.size();
    while (pos < n) {
      switch (state_) {
        case State::kLineStart:
          if (!resyncing_ && static_cast<uint8_t>(bytes[pos]) == binary_magic_) {
            header_len_ = 0;
            state_ = State::kBinaryHeader;
          } else {
            scanner_.Reset();
            max_line_ = kMaxLineBytes;
            state_ = State::kLine;
            h.OnLineStart();
          }
          break;
        case State::kLine:
          pos = ScanLine(bytes, pos, h, counters);
          break;
        case State::kSkipLine: {
          const void* nl = std::memchr(bytes.data() + pos, '\n', n - pos);
          const size_t end =
              nl == nullptr ? n
                            : static_cast<size_t>(static_cast<const char*>(nl) - bytes.data()) + 1;
          h.OnSkipped(end - pos);
          pos = end;
          if (nl != nullptr) state_ = State::kLineStart;
          break;
        }
        case State::kData: {
          const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, n - pos));
          if constexpr (Handler::kChecksDataEnd) {
            if (take >= 2) {
              tail_[0] = bytes[pos + take - 2];
              tail_[1] = bytes[pos + take - 1];
            } else {
              tail_[0] = tail_[1];
              tail_[1] = bytes[pos];
            }
          }
          remaining_ -= take;
          pos += take;
          h.OnSkipped(take);
          if (remaining_ == 0) {
            state_ = State::kLineStart;
            h.OnDataEnd(tail_[0] == '\r' && tail_[1] == '\n');
          }
          break;
        }
        case State::kBinaryHeader: {
          const size_t take = std::min(kBinaryHeaderBytes - header_len_, n - pos);
          std::memcpy(header_.data() + header_len_, bytes.data() + pos, take);
          header_len_ += take;
          pos += take;
          if (header_len_ == kBinaryHeaderBytes) StartBinaryBody(h);
          break;
        }
        case State::kBinaryBody:
          pos = BinaryBody(bytes, pos, h);
          break;
      }
    }
  }

  // Bytes were lost: the next byte is read as a line start, in resync mode (no binary).
  void Gap(ParserCounters& counters) {
    ++counters.resyncs;
    resyncing_ = true;
    state_ = State::kLineStart;
  }

  // From OnLineEnd: a data block of n bytes (its "\r\n" included) follows.
  void StartData(uint64_t n) {
    remaining_ = n;
    tail_ = {'\r', '\n'};
    state_ = State::kData;
  }

  // Resync mode: lines are read until the handler accepts one; binary packets are not
  // looked for.
  bool resyncing() const { return resyncing_; }
  void set_resyncing(bool resyncing) { resyncing_ = resyncing; }
  // From OnToken: lines longer than kMaxLineBytes are allowed from now to the line's end.
  void AllowLongLine() { max_line_ = UINT64_MAX; }
  // Bytes of the current line so far ("\n" included once it is seen).
  uint64_t line_bytes() const { return scanner_.line_bytes(); }

 private:
  enum class State : uint8_t { kLineStart, kLine, kSkipLine, kData, kBinaryHeader, kBinaryBody };

  template <class Handler>
  size_t ScanLine(std::string_view bytes, size_t pos, Handler& h, ParserCounters& counters) {
    bool line_end = false;
    bool too_long = false;
    pos = scanner_.Scan(
        bytes, pos, &max_line_,
        [&h](std::string_view token, bool token_too_long) { h.OnToken(token, token_too_long); },
        &line_end, &too_long);
    if (too_long) {
      if (!resyncing_) {
        ++counters.protocol_errors;
        ++counters.resyncs;
      }
      state_ = State::kSkipLine;
      h.OnLineTooLong();
    } else if (line_end) {
      state_ = State::kLineStart;  // unless OnLineEnd starts a data block
      h.OnLineEnd();
    }
    return pos;
  }

  template <class Handler>
  void StartBinaryBody(Handler& h) {
    const uint8_t* p = header_.data();
    const BinaryHeader header{p[1], Be16(p + 2), p[4], Be32(p + 8)};
    if (!h.OnBinaryHeader(header)) {
      state_ = State::kLineStart;
      return;
    }
    // Clamped, so that a header whose extras and key overrun its body still frames
    // body_len bytes.
    extras_ = std::min(header.extras_len, header.body_len);
    key_ = std::min(header.key_len, header.body_len - extras_);
    rest_ = header.body_len - extras_ - key_;
    key_done_ = false;
    state_ = State::kBinaryBody;
    if (header.body_len == 0) FinishBinaryKey(h);
  }

  template <class Handler>
  size_t BinaryBody(std::string_view bytes, size_t pos, Handler& h) {
    const size_t n = bytes.size();
    if (extras_ > 0) {
      const size_t take = std::min<size_t>(extras_, n - pos);
      extras_ -= static_cast<uint32_t>(take);
      pos += take;
      if (extras_ > 0) return pos;  // else an empty key ends at once, here
    }
    if (!key_done_) {
      const size_t take = std::min<size_t>(key_, n - pos);
      h.OnBinaryKeyData(bytes.substr(pos, take));
      key_ -= static_cast<uint32_t>(take);
      pos += take;
      if (key_ == 0) FinishBinaryKey(h);
      return pos;
    }
    const size_t take = static_cast<size_t>(std::min<uint64_t>(rest_, n - pos));
    rest_ -= take;
    pos += take;
    if (rest_ == 0) {
      state_ = State::kLineStart;
      h.OnBinaryEnd();
    }
    return pos;
  }

  template <class Handler>
  void FinishBinaryKey(Handler& h) {
    key_done_ = true;
    h.OnBinaryKey();
    if (rest_ == 0) {
      state_ = State::kLineStart;
      h.OnBinaryEnd();
    }
  }

  const uint8_t binary_magic_;
  State state_ = State::kLineStart;
  bool resyncing_ = false;

  // The line in progress.
  LineScanner scanner_;
  uint64_t max_line_ = kMaxLineBytes;

  // A data block being skipped, and its last two bytes (must be "\r\n").
  uint64_t remaining_ = 0;
  std::array<char, 2> tail_ = {'\r', '\n'};

  // A binary packet in progress: its header, then what is left of its extras, key and rest.
  std::array<uint8_t, kBinaryHeaderBytes> header_;
  size_t header_len_ = 0;
  uint32_t extras_ = 0;
  uint32_t key_ = 0;
  uint64_t rest_ = 0;
  bool key_done_ = false;
};

}  // namespace hotkey::parsers::memcached

#endif  // HOTKEY_PARSERS_MEMCACHED_FRAMING_H_
