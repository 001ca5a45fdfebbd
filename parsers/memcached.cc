// memcached request and reply parsers: the text protocol, the meta commands and the binary
// protocol, framed from one direction of a TCP stream cut anywhere.
//
// Protocol (memcached's doc/protocol.txt and proto_text.c, checked against memcached
// 1.6.18 by tests/parsers/memcached_server_test.py, which pins each server behaviour
// named here). A text request is one command line ending in "\n" (a "\r" right before it is
// dropped), split into tokens on ' ' only (runs of spaces are one separator, a tab is part
// of a token). Storage commands (set, add, replace, append, prepend, cas: "<cmd> <key>
// <flags> <exptime> <bytes> [<cas>] [noreply]") and the meta set ("ms <key> <datalen>
// <flags>*") are followed by a data block of <bytes> bytes and "\r\n". The server picks a
// command by its word and its token count; a wrong count is answered "ERROR" like an unknown
// word, a bad number or a key over 250 bytes (KEY_MAX_LENGTH) "CLIENT_ERROR", and in both
// cases the server reads no data block: the bytes that follow are read as commands, and so
// they are here. A storage line whose numbers parse has its data block consumed even when
// the value is refused (too large) or the block does not end in "\r\n" (the server answers
// "CLIENT_ERROR bad data chunk" and reads on after <bytes>+2 bytes; so do we, counting a
// protocol error).
//
// What is counted. Each key is one KeyRef: get, gets, gat, gats (every key of a multi-key
// line) and mg are reads; gat and gats also reset the expiry, but what the client does is
// read the value, and a hot gat key is a hot read key, so they are reads. set, add,
// replace, append, prepend, cas, incr, decr, delete, touch, ms, md and ma are writes
// (touch changes only the expiry, but it changes the item and returns no value). Commands
// without keys (stats, version, flush_all, verbosity, mn, quit, ...) are requests with no
// keys, so a reply matcher stays aligned; an unknown word or a malformed line is a keyless
// request too (the server answers it "ERROR"/"CLIENT_ERROR"), counted in unknown_commands
// or protocol_errors. Request::expects_reply is false for "noreply" (text), the q flag
// (meta) and quit. With q the server still sends some replies: mg q suppresses only a miss
// (EN), ms, md and ma q only a success (HD; md q still answers NF), and mn is always
// answered (MN), which is how a client ends a quiet batch. A matcher that waits only for
// expects_reply requests charges such a reply (a quiet hit, a quiet error) to the next request that
// expects one, often the batch's mn: bytes weighting is approximate inside quiet batches, counts
// are exact. Likewise a get with a key over 250 bytes makes memcached 1.6 drop the replies it had
// queued for the requests pipelined before it (seen against 1.6.18): fewer replies come
// than requests that expect one.
// Meta keys with the b flag are base64: they are decoded and reported as the server stores
// them (so "mg YWJj b" and "get abc" count as the same key "abc"); a key that does not
// decode is a protocol error.
//
// Binary protocol (magic 0x80, memcached's protocol_binary.h): parsed, not skipped. The
// 24-byte header gives the opcode, the key length, the extras length and the total body
// length; the key (after the extras) is reported with the opcode's access (Get, GetK, GAT
// and their quiet forms are reads; Set, Add, Replace, Append, Prepend, Delete, Increment,
// Decrement, Touch and their quiet forms writes), the rest of the body is skipped as it
// passes. Quiet opcodes (GetQ, SetQ, ...) have expects_reply false. Stat's key is a stat
// group and SASL's a mechanism: not item keys, not reported. Each request is framed by its
// body length, so a 1 MB binary set costs O(1) memory too.
//
// Framing and memory. Lines are tokenized as they pass; only the key arguments are kept,
// in one arena bounded by ParserLimits::max_buffer_bytes (less the fixed buffers, see
// kFixedBytes), and data blocks and binary values are skipped by counting. A non-retrieval
// line over kMaxLineBytes is a protocol error and skipped to its end: memcached closes such
// a connection when the line arrives in pieces (try_read_command_ascii), so no client
// sends one. get and gets lines are unbounded, as in memcached (multi-gets); when their
// keys fill the arena (or kMaxKeysPerPiece of them are held) the keys so far go out as a
// Request with expects_reply false and the line goes on; the last piece carries the
// reply. The pieces' wire_bytes add up to the line's. A key that alone does not fit the
// arena is counted in keys_dropped. A storage request (and a binary one) goes out when its
// key is known, at the end of its line, before its data block passes; its wire_bytes
// count the block to come.
//
// Resync. Gap() drops the request in progress. Parsing resumes at once but in resync
// mode: a line is accepted only if it starts with a known command word and parses without
// error (the right token count, numbers, key lengths); lines that do not are discarded
// without being counted, and the first accepted line ends the resync. Limits of the
// heuristic: after a gap inside a data block, a value that contains a line such as
// "get x\r\n" or "set x 0 0 5\r\n" is read as that request (and a misread set then skips
// the following bytes as its value); and a binary stream is not resynced (binary requests
// have no boundary to search for), so after a gap its requests are lost until the flow
// ends. The reply parser resyncs the same way: the first line with a known reply word.
//
// Reply framing (for --tap.weight=bytes): a get's "VALUE <key> <flags> <bytes> [<cas>]"
// lines with their data blocks up to "END" are one reply, as are "STAT"/"ITEM" lines up to
// "END" and the meta "VA <size> <flags>*" line with its data block; single lines (STORED,
// NOT_STORED, EXISTS, NOT_FOUND, DELETED, TOUCHED, OK, ERROR, CLIENT_ERROR ..., SERVER_ERROR
// ..., VERSION ..., RESET, BUSY ..., a number, HD, EN, NF, NS, EX, MN, ME ...) are one reply
// each; a binary reply (magic 0x81) is one reply framed by its body length, but for Stat,
// whose packets up to the one with an empty key are one reply. A line with an unknown
// word is a protocol error whose bytes join the next reply.
//
// Cost: one pass over the bytes; a key is copied once (into the arena); no allocation once
// the arena and the key vectors have grown to what the traffic needs
// (tests/parsers/memcached_alloc_test.cc), and memory_bytes() <= max_buffer_bytes whenever
// the limit is at least kFixedBytes (tests/parsers/memcached_test.cc, fuzz_memcached).
//
// Thread-compatible: one parser per flow direction.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "factories.h"
#include "hotkey/parsers/request.h"

namespace hotkey::parsers {
namespace {

// memcached's KEY_MAX_LENGTH: a longer key is answered CLIENT_ERROR.
constexpr size_t kMaxKeyBytes = 250;
// memcached closes a connection whose pending command line passes 2048 bytes without a
// newline, unless it is a get or gets (try_read_command_ascii).
constexpr uint64_t kMaxLineBytes = 2048;
// The longest token kept when a token is cut by a segment boundary: a key (250) or a
// number. Longer tokens are seen only as "too long".
constexpr size_t kTokenBytes = 256;
// Keys held before a long multi-get goes out in pieces: bounds the KeyRef vectors.
constexpr size_t kMaxKeysPerPiece = 64;
constexpr size_t kBinaryHeaderBytes = 24;
constexpr uint8_t kBinaryRequestMagic = 0x80;
constexpr uint8_t kBinaryReplyMagic = 0x81;
// memcached refuses a <bytes> over INT_MAX - 2 without reading a data block.
constexpr uint64_t kMaxDataBytes = 2147483647 - 2;
// The buffers every request parser may hold beside its key arena (the token buffer, the
// binary header and key, the key vectors at kMaxKeysPerPiece): the arena gets the rest of
// max_buffer_bytes, so memory_bytes() <= max_buffer_bytes.
constexpr size_t kFixedBytes = kTokenBytes + kBinaryHeaderBytes + kMaxKeyBytes +
                               kMaxKeysPerPiece * (sizeof(KeyRef) + 2 * sizeof(uint32_t));

bool ParseUnsigned(std::string_view s, uint64_t max, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (max - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

bool ParseSigned(std::string_view s) {  // a 32-bit exptime or delta: only validity matters
  if (!s.empty() && s[0] == '-') s.remove_prefix(1);
  uint64_t v;
  return ParseUnsigned(s, 2147483648ULL, &v);
}

int Base64Value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Decodes standard base64 in place (the output never overtakes the input). As memcached's
// base64_decode, the input must be whole 4-character groups, padded with "=". Returns the
// decoded length, or -1 when `data` is not base64.
long DecodeBase64InPlace(char* data, size_t size) {
  if (size == 0 || size % 4 != 0) return -1;
  size_t padding = 0;
  while (padding < 2 && data[size - 1 - padding] == '=') ++padding;
  size -= padding;
  size_t out = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < size; ++i) {
    const int v = Base64Value(static_cast<unsigned char>(data[i]));
    if (v < 0) return -1;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      data[out++] = static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return static_cast<long>(out);
}

uint32_t Be16(const uint8_t* p) { return (uint32_t{p[0]} << 8) | p[1]; }
uint32_t Be32(const uint8_t* p) {
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

// What a command word means for parsing: where its key and numbers are, how many tokens
// (the word included) the server accepts, and its access.
enum class Kind : uint8_t {
  kUnknown,
  kRetrieval,  // get gets gat gats: keys from first_key on, reads
  kStorage,    // set add replace append prepend cas: key, flags, exptime, bytes [cas]
  kKeyed,      // incr decr delete touch: one key, a write
  kMetaGet,    // mg
  kMetaSet,    // ms: key, datalen, flags
  kMetaKeyed,  // md ma: one key, a write
  kMetaDebug,  // me: a key, but an operator's debug read, not traffic: not reported
  kKeyless,    // stats version mn flush_all verbosity ...
  kQuit,
};

constexpr size_t kAny = SIZE_MAX;

struct CommandInfo {
  std::string_view word;
  Kind kind;
  size_t min_tokens;
  size_t max_tokens;  // kAny: no limit
  size_t first_key;   // token index of the (first) key
};

// The token counts are proto_text.c's process_command_ascii checks (its ntokens counts a
// final empty token: one less here).
constexpr CommandInfo kCommands[] = {
    {"get", Kind::kRetrieval, 2, kAny, 1},
    {"gets", Kind::kRetrieval, 2, kAny, 1},
    {"gat", Kind::kRetrieval, 3, kAny, 2},
    {"gats", Kind::kRetrieval, 3, kAny, 2},
    {"set", Kind::kStorage, 5, 6, 1},
    {"add", Kind::kStorage, 5, 6, 1},
    {"replace", Kind::kStorage, 5, 6, 1},
    {"append", Kind::kStorage, 5, 6, 1},
    {"prepend", Kind::kStorage, 5, 6, 1},
    {"cas", Kind::kStorage, 6, 7, 1},
    {"incr", Kind::kKeyed, 3, 4, 1},
    {"decr", Kind::kKeyed, 3, 4, 1},
    {"delete", Kind::kKeyed, 2, 4, 1},
    {"touch", Kind::kKeyed, 3, 4, 1},
    {"mg", Kind::kMetaGet, 2, kAny, 1},
    {"ms", Kind::kMetaSet, 3, kAny, 1},
    {"md", Kind::kMetaKeyed, 2, kAny, 1},
    {"ma", Kind::kMetaKeyed, 2, kAny, 1},
    {"me", Kind::kMetaDebug, 2, 2, 1},
    {"mn", Kind::kKeyless, 1, kAny, 0},
    {"stats", Kind::kKeyless, 1, kAny, 0},
    {"version", Kind::kKeyless, 1, kAny, 0},
    {"flush_all", Kind::kKeyless, 1, 3, 0},
    {"verbosity", Kind::kKeyless, 2, 3, 0},
    {"cache_memlimit", Kind::kKeyless, 2, 3, 0},
    {"shutdown", Kind::kKeyless, 1, 2, 0},
    {"slabs", Kind::kKeyless, 2, kAny, 0},
    {"lru", Kind::kKeyless, 2, kAny, 0},
    {"lru_crawler", Kind::kKeyless, 2, kAny, 0},
    {"watch", Kind::kKeyless, 1, kAny, 0},
    {"extstore", Kind::kKeyless, 2, kAny, 0},
    {"debugtime", Kind::kKeyless, 2, kAny, 0},
    {"misbehave", Kind::kKeyless, 1, kAny, 0},
    {"quit", Kind::kQuit, 1, 1, 0},
};

constexpr CommandInfo kUnknownCommand = {"", Kind::kUnknown, 0, kAny, 0};

const CommandInfo& LookUp(std::string_view word) {
  for (const CommandInfo& c : kCommands) {
    if (c.word == word) return c;
  }
  return kUnknownCommand;
}

// The binary opcodes (protocol_binary.h) and what they do to their key.
struct BinaryOpcode {
  bool has_item_key;
  Access access;
  bool quiet;
};

BinaryOpcode BinaryOp(uint8_t opcode, bool* known) {
  *known = true;
  switch (opcode) {
    case 0x00:  // Get
    case 0x0c:  // GetK
    case 0x1d:  // GAT
    case 0x23:  // GATK
      return {true, Access::kRead, false};
    case 0x09:  // GetQ
    case 0x0d:  // GetKQ
    case 0x1e:  // GATQ
    case 0x24:  // GATKQ
      return {true, Access::kRead, true};
    case 0x01:  // Set
    case 0x02:  // Add
    case 0x03:  // Replace
    case 0x04:  // Delete
    case 0x05:  // Increment
    case 0x06:  // Decrement
    case 0x0e:  // Append
    case 0x0f:  // Prepend
    case 0x1c:  // Touch
      return {true, Access::kWrite, false};
    case 0x11:  // SetQ
    case 0x12:  // AddQ
    case 0x13:  // ReplaceQ
    case 0x14:  // DeleteQ
    case 0x15:  // IncrementQ
    case 0x16:  // DecrementQ
    case 0x19:  // AppendQ
    case 0x1a:  // PrependQ
      return {true, Access::kWrite, true};
    case 0x17:  // QuitQ
    case 0x18:  // FlushQ
      return {false, Access::kRead, true};
    case 0x07:  // Quit
    case 0x08:  // Flush
    case 0x0a:  // No-op
    case 0x0b:  // Version
    case 0x10:  // Stat (its key is a stat group)
    case 0x1b:  // Verbosity
    case 0x20:  // SASL list mechanisms
    case 0x21:  // SASL auth (its key is a mechanism, its value a credential)
    case 0x22:  // SASL step
      return {false, Access::kRead, false};
    default:
      *known = false;
      return {false, Access::kRead, false};
  }
}

class MemcachedRequestParser final : public RequestParser {
 public:
  explicit MemcachedRequestParser(const ParserLimits& limits)
      : arena_limit_(limits.max_buffer_bytes > kFixedBytes ? limits.max_buffer_bytes - kFixedBytes
                                                           : 0) {}

  void Feed(std::string_view bytes, RequestSink& sink, ParserCounters& counters) override {
    size_t pos = 0;
    const size_t n = bytes.size();
    while (pos < n) {
      switch (state_) {
        case State::kLineStart:
          if (!resyncing_ && static_cast<uint8_t>(bytes[pos]) == kBinaryRequestMagic) {
            header_len_ = 0;
            state_ = State::kBinaryHeader;
          } else {
            StartLine();
            state_ = State::kLine;
          }
          break;
        case State::kLine:
          pos = ScanLine(bytes, pos, sink, counters);
          break;
        case State::kSkipLine: {
          const void* nl = std::memchr(bytes.data() + pos, '\n', n - pos);
          if (nl == nullptr) {
            pos = n;
          } else {
            pos = static_cast<size_t>(static_cast<const char*>(nl) - bytes.data()) + 1;
            state_ = State::kLineStart;
          }
          break;
        }
        case State::kData: {
          const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, n - pos));
          if (take >= 2) {
            tail_[0] = bytes[pos + take - 2];
            tail_[1] = bytes[pos + take - 1];
          } else {
            tail_[0] = tail_[1];
            tail_[1] = bytes[pos];
          }
          remaining_ -= take;
          pos += take;
          if (remaining_ == 0) {
            if (tail_[0] != '\r' || tail_[1] != '\n') ProtocolError(counters);
            state_ = State::kLineStart;
          }
          break;
        }
        case State::kBinaryHeader: {
          const size_t take = std::min(kBinaryHeaderBytes - header_len_, n - pos);
          std::memcpy(header_.data() + header_len_, bytes.data() + pos, take);
          header_len_ += take;
          pos += take;
          if (header_len_ == kBinaryHeaderBytes) StartBinaryBody(sink, counters);
          break;
        }
        case State::kBinaryBody:
          pos = BinaryBody(bytes, pos, sink, counters);
          break;
      }
    }
  }

  void Gap(ParserCounters& counters) override {
    ++counters.resyncs;
    resyncing_ = true;
    state_ = State::kLineStart;
    ClearKeys();
  }

  size_t memory_bytes() const override {
    return arena_capacity_ + spans_.capacity() * sizeof(Span) + refs_.capacity() * sizeof(KeyRef) +
           kTokenBytes + kBinaryHeaderBytes + kMaxKeyBytes;
  }

 private:
  enum class State : uint8_t { kLineStart, kLine, kSkipLine, kData, kBinaryHeader, kBinaryBody };
  struct Span {
    uint32_t offset;
    uint32_t size;
  };

  void StartLine() {
    scanner_.Reset();
    command_ = &kUnknownCommand;
    tokens_ = 0;
    reported_bytes_ = 0;
    line_error_ = false;
    noreply_ = false;
    base64_ = false;
    quiet_ = false;
    data_ok_ = false;
    data_bytes_ = 0;
    max_line_ = kMaxLineBytes;
    ClearKeys();
  }

  void ClearKeys() {
    spans_.clear();
    arena_used_ = 0;
  }

  void ProtocolError(ParserCounters& counters) {
    ++counters.protocol_errors;
    ++counters.resyncs;
  }

  size_t ScanLine(std::string_view bytes, size_t pos, RequestSink& sink, ParserCounters& counters) {
    bool line_end = false;
    bool too_long = false;
    pos = scanner_.Scan(
        bytes, pos, &max_line_,
        [&](std::string_view token, bool token_too_long) {
          OnToken(token, token_too_long, sink, counters);
        },
        &line_end, &too_long);
    if (too_long) {
      // The server would close the connection: no request, the line is skipped.
      if (!resyncing_) ProtocolError(counters);
      ClearKeys();
      state_ = State::kSkipLine;
    } else if (line_end) {
      EndLine(sink, counters);
    }
    return pos;
  }

  void OnToken(std::string_view token, bool too_long, RequestSink& sink, ParserCounters& counters) {
    const size_t index = tokens_++;
    noreply_ = token == "noreply";
    if (index == 0) {
      command_ = too_long ? &kUnknownCommand : &LookUp(token);
      // get and gets lines are unbounded, as in memcached (multi-gets).
      if (command_->kind == Kind::kRetrieval && command_->first_key == 1) max_line_ = UINT64_MAX;
      return;
    }
    if (line_error_) return;  // memcached stops at the first bad argument
    switch (command_->kind) {
      case Kind::kRetrieval:
        if (index >= command_->first_key) {
          AddKey(token, too_long, /*streaming=*/true, sink, counters);
        } else if (!ParseSigned(token)) {  // gat's exptime
          line_error_ = true;
        }
        break;
      case Kind::kStorage:
        if (index == 1) {
          AddKey(token, too_long, false, sink, counters);
        } else if (index == 2) {
          uint64_t flags;
          if (!ParseUnsigned(token, UINT32_MAX, &flags)) line_error_ = true;
        } else if (index == 3) {
          if (!ParseSigned(token)) line_error_ = true;
        } else if (index == 4) {
          data_ok_ = ParseUnsigned(token, kMaxDataBytes, &data_bytes_);
          if (!data_ok_) line_error_ = true;
        } else if (index == 5 && command_->min_tokens == 6) {  // cas unique
          uint64_t cas;
          if (!ParseUnsigned(token, UINT64_MAX, &cas)) line_error_ = true;
        }
        break;
      case Kind::kKeyed:
        if (index == 1) {
          AddKey(token, too_long, false, sink, counters);
        } else if (index == 2) {
          uint64_t delta;
          const std::string_view word = command_->word;
          const bool ok = word == "delete"  ? token == "0" || token == "noreply"
                          : word == "touch" ? ParseSigned(token)
                                            : ParseUnsigned(token, UINT64_MAX, &delta);
          if (!ok) line_error_ = true;
        }
        break;
      case Kind::kMetaGet:
      case Kind::kMetaSet:
      case Kind::kMetaKeyed:
        if (index == 1) {
          AddKey(token, too_long, false, sink, counters);
        } else if (index == 2 && command_->kind == Kind::kMetaSet) {
          data_ok_ = ParseUnsigned(token, kMaxDataBytes, &data_bytes_);
          if (!data_ok_) line_error_ = true;
        } else if (!token.empty()) {
          if (token[0] == 'b') base64_ = true;
          if (token[0] == 'q') quiet_ = true;
        }
        break;
      case Kind::kMetaDebug:
        if (index == 1 && (too_long || token.size() > kMaxKeyBytes)) line_error_ = true;
        break;
      case Kind::kUnknown:
      case Kind::kKeyless:
      case Kind::kQuit:
        break;
    }
  }

  // Stores a key argument; for a multi-get, sends the keys so far first when the arena or
  // the key vectors are full.
  void AddKey(std::string_view key, bool too_long, bool streaming, RequestSink& sink,
              ParserCounters& counters) {
    if (too_long || key.size() > kMaxKeyBytes) {
      line_error_ = true;  // the server answers CLIENT_ERROR
      return;
    }
    if (streaming && !spans_.empty() &&
        (spans_.size() == kMaxKeysPerPiece || arena_used_ + key.size() > arena_limit_)) {
      Emit(Access::kRead, /*expects_reply=*/false, /*last_piece=*/false, 0, sink, counters);
    }
    if (arena_used_ + key.size() > arena_limit_) {
      ++counters.keys_dropped;
      return;
    }
    if (arena_used_ + key.size() > arena_capacity_) Grow(arena_used_ + key.size());
    if (spans_.capacity() == 0) {
      spans_.reserve(kMaxKeysPerPiece);
      refs_.reserve(kMaxKeysPerPiece);
    }
    if (!key.empty()) std::memcpy(arena_.get() + arena_used_, key.data(), key.size());
    spans_.push_back({static_cast<uint32_t>(arena_used_), static_cast<uint32_t>(key.size())});
    arena_used_ += key.size();
  }

  void Grow(size_t need) {
    size_t capacity = std::max<size_t>({need, arena_capacity_ * 2, 512});
    capacity = std::min(capacity, arena_limit_);
    std::unique_ptr<char[]> bigger(new char[capacity]);
    if (arena_used_ > 0) std::memcpy(bigger.get(), arena_.get(), arena_used_);
    arena_ = std::move(bigger);
    arena_capacity_ = capacity;
  }

  // Sends the held keys as one Request; extra_bytes are wire bytes beyond the line's (a
  // data block, a binary body).
  void Emit(Access access, bool expects_reply, bool last_piece, uint64_t extra_bytes,
            RequestSink& sink, ParserCounters& counters) {
    resyncing_ = false;
    refs_.clear();
    for (const Span& s : spans_) {
      refs_.push_back({std::string_view(arena_.get() + s.offset, s.size), access});
    }
    (access == Access::kRead ? counters.read_keys : counters.write_keys) += refs_.size();
    if (last_piece) ++counters.requests;
    Request request;
    request.keys = refs_;
    const uint64_t line = state_ == State::kLine ? scanner_.line_bytes() : 0;
    request.wire_bytes = line - reported_bytes_ + extra_bytes;
    reported_bytes_ = line;
    request.expects_reply = expects_reply;
    sink.OnRequest(request);
    ClearKeys();
  }

  void EndLine(RequestSink& sink, ParserCounters& counters) {
    const CommandInfo& c = *command_;
    const bool arity_ok = tokens_ >= c.min_tokens && tokens_ <= c.max_tokens;
    state_ = State::kLineStart;  // unless a data block follows (below)
    if (resyncing_ && (c.kind == Kind::kUnknown || !arity_ok || line_error_)) {
      ClearKeys();  // not a request boundary we trust: discarded uncounted
      return;
    }
    if (c.kind == Kind::kUnknown) {
      ++counters.unknown_commands;
      ClearKeys();
      EmitLine(Access::kRead, true, 0, sink, counters);
      return;
    }
    if (!arity_ok) {  // answered "ERROR", no data block read
      ProtocolError(counters);
      ClearKeys();
      EmitLine(Access::kRead, true, 0, sink, counters);
      return;
    }
    if (c.kind == Kind::kRetrieval) {
      // After a bad key or exptime the keys before it were still read.
      if (line_error_) ProtocolError(counters);
      EmitLine(Access::kRead, true, 0, sink, counters);
      return;
    }
    if (line_error_) {  // CLIENT_ERROR (unless noreply), no data block read
      ProtocolError(counters);
      ClearKeys();
      const bool meta =
          c.kind == Kind::kMetaGet || c.kind == Kind::kMetaSet || c.kind == Kind::kMetaKeyed;
      EmitLine(Access::kRead, meta || !noreply_, 0, sink, counters);
      return;
    }
    const uint64_t data = data_ok_ ? data_bytes_ + 2 : 0;
    switch (c.kind) {
      case Kind::kStorage:
      case Kind::kKeyed:
        EmitLine(Access::kWrite, !noreply_, data, sink, counters);
        break;
      case Kind::kMetaGet:
      case Kind::kMetaSet:
      case Kind::kMetaKeyed:
        if (base64_ && !DecodeKey()) {
          ProtocolError(counters);  // CLIENT_ERROR error decoding key; ms's data is read
          ClearKeys();
          EmitLine(Access::kRead, true, data, sink, counters);
          break;
        }
        EmitLine(c.kind == Kind::kMetaGet ? Access::kRead : Access::kWrite, !quiet_, data, sink,
                 counters);
        break;
      case Kind::kKeyless: {
        // Of the keyless commands only these read a noreply (proto_text.c).
        const bool takes_noreply =
            c.word == "flush_all" || c.word == "verbosity" || c.word == "cache_memlimit";
        EmitLine(Access::kRead, !(takes_noreply && noreply_), 0, sink, counters);
        break;
      }
      case Kind::kQuit:
        EmitLine(Access::kRead, false, 0, sink, counters);
        break;
      case Kind::kMetaDebug:
        ClearKeys();
        EmitLine(Access::kRead, true, 0, sink, counters);
        break;
      case Kind::kUnknown:
      case Kind::kRetrieval:
        break;
    }
    if (data > 0) {
      remaining_ = data;
      tail_ = {'\r', '\n'};
      state_ = State::kData;
    }
  }

  // The last piece of the line's request.
  void EmitLine(Access access, bool expects_reply, uint64_t data, RequestSink& sink,
                ParserCounters& counters) {
    const State saved = state_;
    state_ = State::kLine;  // so that Emit counts the line's bytes
    Emit(access, expects_reply, /*last_piece=*/true, data, sink, counters);
    state_ = saved;
  }

  bool DecodeKey() {
    if (spans_.size() != 1) return spans_.empty();
    Span& s = spans_[0];
    const long size = DecodeBase64InPlace(arena_.get() + s.offset, s.size);
    if (size <= 0) return false;
    s.size = static_cast<uint32_t>(size);
    return true;
  }

  void StartBinaryBody(RequestSink& sink, ParserCounters& counters) {
    const uint8_t* h = header_.data();
    const uint32_t key_len = Be16(h + 2);
    const uint32_t extras_len = h[4];
    const uint32_t body_len = Be32(h + 8);
    bool known;
    binary_op_ = BinaryOp(h[1], &known);
    if (uint64_t{key_len} + extras_len > body_len) {
      // memcached closes the connection; nothing here frames the rest.
      ProtocolError(counters);
      resyncing_ = true;
      state_ = State::kLineStart;
      return;
    }
    if (!known) ++counters.unknown_commands;
    binary_extras_ = extras_len;
    binary_key_ = key_len;
    binary_rest_ = body_len - extras_len - key_len;
    binary_body_ = body_len;
    binary_reported_ = false;
    binary_key_error_ = false;
    ClearKeys();
    reported_bytes_ = 0;
    if (binary_op_.has_item_key && (key_len == 0 || key_len > kMaxKeyBytes)) {
      // memcached answers EINVAL and swallows the body.
      ProtocolError(counters);
      binary_key_error_ = true;
    }
    key_scratch_len_ = 0;
    state_ = State::kBinaryBody;
    if (body_len == 0) FinishBinaryKey(sink, counters);
  }

  size_t BinaryBody(std::string_view bytes, size_t pos, RequestSink& sink,
                    ParserCounters& counters) {
    const size_t n = bytes.size();
    if (binary_extras_ > 0) {
      const size_t take = std::min<size_t>(binary_extras_, n - pos);
      binary_extras_ -= static_cast<uint32_t>(take);
      return pos + take;
    }
    if (!binary_reported_) {
      const size_t take = std::min<size_t>(binary_key_, n - pos);
      const bool keep = binary_op_.has_item_key && !binary_key_error_;
      if (keep && key_scratch_len_ + take <= key_scratch_.size()) {
        std::memcpy(key_scratch_.data() + key_scratch_len_, bytes.data() + pos, take);
        key_scratch_len_ += take;
      }
      binary_key_ -= static_cast<uint32_t>(take);
      pos += take;
      if (binary_key_ == 0) FinishBinaryKey(sink, counters);
      return pos;
    }
    const size_t take = static_cast<size_t>(std::min<uint64_t>(binary_rest_, n - pos));
    binary_rest_ -= take;
    pos += take;
    if (binary_rest_ == 0) state_ = State::kLineStart;
    return pos;
  }

  void FinishBinaryKey(RequestSink& sink, ParserCounters& counters) {
    binary_reported_ = true;
    if (binary_op_.has_item_key && !binary_key_error_) {
      AddKey(std::string_view(key_scratch_.data(), key_scratch_len_), false, false, sink, counters);
    }
    const State saved = state_;
    state_ = State::kBinaryBody;
    Emit(binary_op_.access, !binary_op_.quiet, true, kBinaryHeaderBytes + binary_body_, sink,
         counters);
    state_ = saved;
    if (binary_rest_ == 0) state_ = State::kLineStart;
  }

  const size_t arena_limit_;
  State state_ = State::kLineStart;
  bool resyncing_ = false;

  // The line in progress.
  LineScanner scanner_;
  const CommandInfo* command_ = &kUnknownCommand;
  size_t tokens_ = 0;
  uint64_t max_line_ = kMaxLineBytes;
  uint64_t reported_bytes_ = 0;  // line bytes already charged to a sent piece
  uint64_t data_bytes_ = 0;
  bool line_error_ = false;
  bool noreply_ = false;
  bool base64_ = false;
  bool quiet_ = false;
  bool data_ok_ = false;

  // A data block being skipped, and its last two bytes (must be "\r\n").
  uint64_t remaining_ = 0;
  std::array<char, 2> tail_ = {'\r', '\n'};

  // A binary request in progress.
  std::array<uint8_t, kBinaryHeaderBytes> header_;
  size_t header_len_ = 0;
  BinaryOpcode binary_op_ = {};
  uint32_t binary_extras_ = 0;
  uint32_t binary_key_ = 0;
  uint64_t binary_rest_ = 0;
  uint64_t binary_body_ = 0;
  bool binary_reported_ = false;
  bool binary_key_error_ = false;
  std::array<char, kMaxKeyBytes> key_scratch_;
  size_t key_scratch_len_ = 0;

  // The keys of the request in progress.
  std::unique_ptr<char[]> arena_;
  size_t arena_capacity_ = 0;
  size_t arena_used_ = 0;
  std::vector<Span> spans_;
  std::vector<KeyRef> refs_;
};

// The reply words of the text and meta protocols (memcached's proto_text.c, proto_meta).
enum class ReplyKind : uint8_t { kUnknown, kValue, kVa, kListItem, kEnd, kSingle };

ReplyKind ClassifyReply(std::string_view word) {
  static constexpr std::string_view kSingles[] = {
      "STORED",  "NOT_STORED",   "EXISTS",       "NOT_FOUND", "DELETED", "TOUCHED", "OK",
      "ERROR",   "CLIENT_ERROR", "SERVER_ERROR", "VERSION",   "RESET",   "BUSY",    "BADCLASS",
      "NOSPARE", "NOTFULL",      "UNSAFE",       "SAME",      "HD",      "EN",      "NF",
      "NS",      "EX",           "MN",           "ME"};
  if (word == "VALUE") return ReplyKind::kValue;
  if (word == "VA") return ReplyKind::kVa;
  if (word == "END") return ReplyKind::kEnd;
  if (word == "STAT" || word == "ITEM") return ReplyKind::kListItem;
  for (std::string_view s : kSingles) {
    if (word == s) return ReplyKind::kSingle;
  }
  uint64_t v;
  if (ParseUnsigned(word, UINT64_MAX, &v)) return ReplyKind::kSingle;  // incr, decr
  return ReplyKind::kUnknown;
}

class MemcachedReplyParser final : public ReplyParser {
 public:
  explicit MemcachedReplyParser(const ParserLimits& /*limits*/) {}

  void Feed(std::string_view bytes, ReplySink& sink, ParserCounters& counters) override {
    size_t pos = 0;
    const size_t n = bytes.size();
    while (pos < n) {
      switch (state_) {
        case State::kLineStart:
          if (!resyncing_ && static_cast<uint8_t>(bytes[pos]) == kBinaryReplyMagic) {
            header_len_ = 0;
            state_ = State::kBinaryHeader;
          } else {
            scanner_.Reset();
            tokens_ = 0;
            kind_ = ReplyKind::kUnknown;
            size_ok_ = false;
            state_ = State::kLine;
          }
          break;
        case State::kLine:
          pos = ScanLine(bytes, pos, sink, counters);
          break;
        case State::kSkipLine: {
          const void* nl = std::memchr(bytes.data() + pos, '\n', n - pos);
          const size_t end =
              nl == nullptr ? n
                            : static_cast<size_t>(static_cast<const char*>(nl) - bytes.data()) + 1;
          reply_bytes_ += end - pos;
          pos = end;
          if (nl != nullptr) state_ = State::kLineStart;
          break;
        }
        case State::kData: {
          const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, n - pos));
          remaining_ -= take;
          pos += take;
          reply_bytes_ += take;
          if (remaining_ == 0) {
            state_ = State::kLineStart;
            if (data_ends_reply_) Reply(sink);
          }
          break;
        }
        case State::kBinaryHeader: {
          const size_t take = std::min(kBinaryHeaderBytes - header_len_, n - pos);
          std::memcpy(header_.data() + header_len_, bytes.data() + pos, take);
          header_len_ += take;
          pos += take;
          if (header_len_ == kBinaryHeaderBytes) {
            const uint8_t* h = header_.data();
            remaining_ = Be32(h + 8);
            reply_bytes_ += kBinaryHeaderBytes + remaining_;
            // Stat answers with one packet per statistic and ends with an empty key.
            binary_ends_reply_ = !(h[1] == 0x10 && Be16(h + 2) > 0);
            state_ = State::kBinaryBody;
            if (remaining_ == 0) EndBinary(sink);
          }
          break;
        }
        case State::kBinaryBody: {
          const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, n - pos));
          remaining_ -= take;
          pos += take;
          if (remaining_ == 0) EndBinary(sink);
          break;
        }
      }
    }
  }

  void Gap(ParserCounters& counters) override {
    ++counters.resyncs;
    resyncing_ = true;
    reply_bytes_ = 0;
    state_ = State::kLineStart;
  }

  size_t memory_bytes() const override { return kTokenBytes + kBinaryHeaderBytes; }

 private:
  enum class State : uint8_t { kLineStart, kLine, kSkipLine, kData, kBinaryHeader, kBinaryBody };

  void Reply(ReplySink& sink) {
    resyncing_ = false;
    const uint64_t bytes = reply_bytes_;
    reply_bytes_ = 0;
    sink.OnReply(bytes);
  }

  void EndBinary(ReplySink& sink) {
    state_ = State::kLineStart;
    if (binary_ends_reply_) Reply(sink);
  }

  size_t ScanLine(std::string_view bytes, size_t pos, ReplySink& sink, ParserCounters& counters) {
    bool line_end = false;
    bool too_long = false;
    pos = scanner_.Scan(
        bytes, pos, &kMaxLineBytes,
        [&](std::string_view token, bool token_too_long) {
          const size_t index = tokens_++;
          if (index == 0) {
            kind_ = token_too_long ? ReplyKind::kUnknown : ClassifyReply(token);
          } else if ((kind_ == ReplyKind::kVa && index == 1) ||
                     (kind_ == ReplyKind::kValue && index == 3)) {
            size_ok_ = !token_too_long && ParseUnsigned(token, kMaxDataBytes, &size_);
          }
        },
        &line_end, &too_long);
    if (too_long) {
      reply_bytes_ += scanner_.line_bytes();
      if (!resyncing_) {
        ++counters.protocol_errors;
        ++counters.resyncs;
      }
      state_ = State::kSkipLine;
      return pos;
    }
    if (!line_end) return pos;
    reply_bytes_ += scanner_.line_bytes();
    state_ = State::kLineStart;
    ReplyKind kind = kind_;
    if ((kind == ReplyKind::kValue || kind == ReplyKind::kVa) && !size_ok_) {
      kind = ReplyKind::kUnknown;
    }
    switch (kind) {
      case ReplyKind::kValue:  // the reply goes on after the data block, up to END
      case ReplyKind::kVa:
        resyncing_ = false;
        remaining_ = size_ + 2;
        data_ends_reply_ = kind == ReplyKind::kVa;
        state_ = State::kData;
        break;
      case ReplyKind::kListItem:  // the reply goes on up to END
        resyncing_ = false;
        break;
      case ReplyKind::kEnd:
      case ReplyKind::kSingle:
        // Inside a VALUE or STAT list any other line (END, an error) ends it.
        Reply(sink);
        break;
      case ReplyKind::kUnknown:
        if (resyncing_) {
          reply_bytes_ = 0;
        } else {
          ++counters.protocol_errors;
          ++counters.resyncs;
        }
        break;
    }
    return pos;
  }

  State state_ = State::kLineStart;
  bool resyncing_ = false;
  LineScanner scanner_;
  size_t tokens_ = 0;
  ReplyKind kind_ = ReplyKind::kUnknown;
  uint64_t size_ = 0;
  bool size_ok_ = false;
  bool data_ends_reply_ = false;
  bool binary_ends_reply_ = true;
  uint64_t reply_bytes_ = 0;  // bytes of the reply in progress
  uint64_t remaining_ = 0;
  std::array<uint8_t, kBinaryHeaderBytes> header_;
  size_t header_len_ = 0;
};

}  // namespace

std::unique_ptr<RequestParser> NewMemcachedRequestParser(const ParserLimits& limits) {
  return std::make_unique<MemcachedRequestParser>(limits);
}

std::unique_ptr<ReplyParser> NewMemcachedReplyParser(const ParserLimits& limits) {
  return std::make_unique<MemcachedReplyParser>(limits);
}

}  // namespace hotkey::parsers
