// memcached request and reply parsers: the text protocol, the meta commands and the binary
// protocol, framed from one direction of a TCP stream cut anywhere.
//
// Protocol (memcached's doc/protocol.txt and proto_text.c, checked against memcached
// 1.6.18 by tests/daemon/input/parsers/memcached_server_test.py, which pins each server behaviour
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
// Framing and memory. Both parsers read bytes through one core, memcached::Framer
// (memcached_framing.h): lines and their tokens, lines skipped to their end, data blocks
// skipped by count, binary packets framed by their header, and the resync flag; each parser
// says what a token, a line or a packet header means. Lines are tokenized as they pass; only the
// key arguments are kept, in one arena bounded by ParserLimits::max_buffer_bytes (less the fixed
// buffers, see kFixedBytes), and data blocks and binary values are skipped by counting. A
// non-retrieval line over kMaxLineBytes is a protocol error and skipped to its end: memcached
// closes such a connection when the line arrives in pieces (try_read_command_ascii), so no client
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
// (tests/daemon/input/parsers/memcached_alloc_test.cc), and memory_bytes() <= max_buffer_bytes
// whenever the limit is at least kFixedBytes (tests/daemon/input/parsers/memcached_test.cc,
// fuzz_memcached).
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
#include "memcached_framing.h"

namespace hotkey::parsers {
namespace {

using memcached::BinaryHeader;
using memcached::Framer;
using memcached::kBinaryHeaderBytes;
using memcached::kTokenBytes;

// memcached's KEY_MAX_LENGTH: a longer key is answered CLIENT_ERROR.
constexpr size_t kMaxKeyBytes = 250;
// Keys held before a long multi-get goes out in pieces: bounds the KeyRef vectors.
constexpr size_t kMaxKeysPerPiece = 64;
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
    sink_ = &sink;
    counters_ = &counters;
    framer_.Feed(bytes, *this, counters);
    sink_ = nullptr;
    counters_ = nullptr;
  }

  void Gap(ParserCounters& counters) override {
    framer_.Gap(counters);
    ClearKeys();
  }

  size_t memory_bytes() const override {
    return arena_capacity_ + spans_.capacity() * sizeof(Span) + refs_.capacity() * sizeof(KeyRef) +
           kTokenBytes + kBinaryHeaderBytes + kMaxKeyBytes;
  }

 private:
  friend class memcached::Framer;
  static constexpr bool kChecksDataEnd = true;  // "bad data chunk" is a protocol error

  struct Span {
    uint32_t offset;
    uint32_t size;
  };

  // ---- Framing (memcached_framing.h) ----------------------------------------------------

  void OnLineStart() {
    command_ = &kUnknownCommand;
    tokens_ = 0;
    reported_bytes_ = 0;
    line_error_ = false;
    noreply_ = false;
    base64_ = false;
    quiet_ = false;
    data_ok_ = false;
    data_bytes_ = 0;
    ClearKeys();
  }

  void OnToken(std::string_view token, bool too_long) {
    OnToken(token, too_long, *sink_, *counters_);
  }

  void OnLineEnd() { EndLine(*sink_, *counters_); }

  // The server would close the connection: no request, the line is skipped.
  void OnLineTooLong() { ClearKeys(); }

  void OnSkipped(uint64_t) {}  // a data block's bytes were charged to its request

  void OnDataEnd(bool crlf) {
    if (!crlf) ProtocolError(*counters_);
  }

  bool OnBinaryHeader(const BinaryHeader& h) {
    bool known;
    binary_op_ = BinaryOp(h.opcode, &known);
    if (uint64_t{h.key_len} + h.extras_len > h.body_len) {
      // memcached closes the connection; nothing here frames the rest.
      ProtocolError(*counters_);
      framer_.set_resyncing(true);
      return false;
    }
    if (!known) ++counters_->unknown_commands;
    binary_body_ = h.body_len;
    binary_key_error_ = false;
    ClearKeys();
    reported_bytes_ = 0;
    if (binary_op_.has_item_key && (h.key_len == 0 || h.key_len > kMaxKeyBytes)) {
      // memcached answers EINVAL and swallows the body.
      ProtocolError(*counters_);
      binary_key_error_ = true;
    }
    key_scratch_len_ = 0;
    return true;
  }

  void OnBinaryKeyData(std::string_view d) {
    const bool keep = binary_op_.has_item_key && !binary_key_error_;
    if (keep && key_scratch_len_ + d.size() <= key_scratch_.size()) {
      std::memcpy(key_scratch_.data() + key_scratch_len_, d.data(), d.size());
      key_scratch_len_ += d.size();
    }
  }

  void OnBinaryKey() {
    if (binary_op_.has_item_key && !binary_key_error_) {
      AddKey(std::string_view(key_scratch_.data(), key_scratch_len_), false, false, *sink_,
             *counters_);
    }
    Emit(binary_op_.access, !binary_op_.quiet, true, /*line_bytes=*/0,
         kBinaryHeaderBytes + binary_body_, *sink_, *counters_);
  }

  void OnBinaryEnd() {}

  // ---- Requests --------------------------------------------------------------------------

  void ClearKeys() {
    spans_.clear();
    arena_used_ = 0;
  }

  void ProtocolError(ParserCounters& counters) {
    ++counters.protocol_errors;
    ++counters.resyncs;
  }

  void OnToken(std::string_view token, bool too_long, RequestSink& sink, ParserCounters& counters) {
    const size_t index = tokens_++;
    noreply_ = token == "noreply";
    if (index == 0) {
      command_ = too_long ? &kUnknownCommand : &LookUp(token);
      // get and gets lines are unbounded, as in memcached (multi-gets).
      if (command_->kind == Kind::kRetrieval && command_->first_key == 1) framer_.AllowLongLine();
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
      Emit(Access::kRead, /*expects_reply=*/false, /*last_piece=*/false, framer_.line_bytes(), 0,
           sink, counters);
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

  // Sends the held keys as one Request; line_bytes are the line's bytes so far (0 for a
  // binary request), extra_bytes the wire bytes beyond them (a data block, a binary body).
  void Emit(Access access, bool expects_reply, bool last_piece, uint64_t line_bytes,
            uint64_t extra_bytes, RequestSink& sink, ParserCounters& counters) {
    framer_.set_resyncing(false);
    refs_.clear();
    for (const Span& s : spans_) {
      refs_.push_back({std::string_view(arena_.get() + s.offset, s.size), access});
    }
    (access == Access::kRead ? counters.read_keys : counters.write_keys) += refs_.size();
    if (last_piece) ++counters.requests;
    Request request;
    request.keys = refs_;
    request.wire_bytes = line_bytes - reported_bytes_ + extra_bytes;
    reported_bytes_ = line_bytes;
    request.expects_reply = expects_reply;
    sink.OnRequest(request);
    ClearKeys();
  }

  void EndLine(RequestSink& sink, ParserCounters& counters) {
    const CommandInfo& c = *command_;
    const bool arity_ok = tokens_ >= c.min_tokens && tokens_ <= c.max_tokens;
    if (framer_.resyncing() && (c.kind == Kind::kUnknown || !arity_ok || line_error_)) {
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
    if (data > 0) framer_.StartData(data);
  }

  // The last piece of the line's request.
  void EmitLine(Access access, bool expects_reply, uint64_t data, RequestSink& sink,
                ParserCounters& counters) {
    Emit(access, expects_reply, /*last_piece=*/true, framer_.line_bytes(), data, sink, counters);
  }

  bool DecodeKey() {
    if (spans_.size() != 1) return spans_.empty();
    Span& s = spans_[0];
    const long size = DecodeBase64InPlace(arena_.get() + s.offset, s.size);
    if (size <= 0) return false;
    s.size = static_cast<uint32_t>(size);
    return true;
  }

  const size_t arena_limit_;
  Framer framer_{kBinaryRequestMagic};
  RequestSink* sink_ = nullptr;
  ParserCounters* counters_ = nullptr;

  // The line in progress.
  const CommandInfo* command_ = &kUnknownCommand;
  size_t tokens_ = 0;
  uint64_t reported_bytes_ = 0;  // line bytes already charged to a sent piece
  uint64_t data_bytes_ = 0;
  bool line_error_ = false;
  bool noreply_ = false;
  bool base64_ = false;
  bool quiet_ = false;
  bool data_ok_ = false;

  // A binary request in progress.
  BinaryOpcode binary_op_ = {};
  uint64_t binary_body_ = 0;
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
    sink_ = &sink;
    counters_ = &counters;
    framer_.Feed(bytes, *this, counters);
    sink_ = nullptr;
    counters_ = nullptr;
  }

  void Gap(ParserCounters& counters) override {
    framer_.Gap(counters);
    reply_bytes_ = 0;
  }

  size_t memory_bytes() const override { return kTokenBytes + kBinaryHeaderBytes; }

 private:
  friend class memcached::Framer;
  static constexpr bool kChecksDataEnd = false;

  // ---- Framing (memcached_framing.h) ----------------------------------------------------

  void OnLineStart() {
    tokens_ = 0;
    kind_ = ReplyKind::kUnknown;
    size_ok_ = false;
  }

  void OnToken(std::string_view token, bool too_long) {
    const size_t index = tokens_++;
    if (index == 0) {
      kind_ = too_long ? ReplyKind::kUnknown : ClassifyReply(token);
    } else if ((kind_ == ReplyKind::kVa && index == 1) ||
               (kind_ == ReplyKind::kValue && index == 3)) {
      size_ok_ = !too_long && ParseUnsigned(token, kMaxDataBytes, &size_);
    }
  }

  void OnLineTooLong() { reply_bytes_ += framer_.line_bytes(); }

  void OnLineEnd() {
    reply_bytes_ += framer_.line_bytes();
    ReplyKind kind = kind_;
    if ((kind == ReplyKind::kValue || kind == ReplyKind::kVa) && !size_ok_) {
      kind = ReplyKind::kUnknown;
    }
    switch (kind) {
      case ReplyKind::kValue:  // the reply goes on after the data block, up to END
      case ReplyKind::kVa:
        framer_.set_resyncing(false);
        data_ends_reply_ = kind == ReplyKind::kVa;
        framer_.StartData(size_ + 2);
        break;
      case ReplyKind::kListItem:  // the reply goes on up to END
        framer_.set_resyncing(false);
        break;
      case ReplyKind::kEnd:
      case ReplyKind::kSingle:
        // Inside a VALUE or STAT list any other line (END, an error) ends it.
        Reply();
        break;
      case ReplyKind::kUnknown:
        if (framer_.resyncing()) {
          reply_bytes_ = 0;
        } else {
          ++counters_->protocol_errors;
          ++counters_->resyncs;
        }
        break;
    }
  }

  void OnSkipped(uint64_t n) { reply_bytes_ += n; }

  void OnDataEnd(bool /*crlf*/) {
    if (data_ends_reply_) Reply();
  }

  bool OnBinaryHeader(const BinaryHeader& h) {
    reply_bytes_ += kBinaryHeaderBytes + h.body_len;
    // Stat answers with one packet per statistic and ends with an empty key.
    binary_ends_reply_ = !(h.opcode == 0x10 && h.key_len > 0);
    return true;
  }

  void OnBinaryKeyData(std::string_view) {}
  void OnBinaryKey() {}

  void OnBinaryEnd() {
    if (binary_ends_reply_) Reply();
  }

  void Reply() {
    framer_.set_resyncing(false);
    const uint64_t bytes = reply_bytes_;
    reply_bytes_ = 0;
    sink_->OnReply(bytes);
  }

  Framer framer_{kBinaryReplyMagic};
  ReplySink* sink_ = nullptr;
  ParserCounters* counters_ = nullptr;
  size_t tokens_ = 0;
  ReplyKind kind_ = ReplyKind::kUnknown;
  uint64_t size_ = 0;
  bool size_ok_ = false;
  bool data_ends_reply_ = false;
  bool binary_ends_reply_ = true;
  uint64_t reply_bytes_ = 0;  // bytes of the reply in progress
};

}  // namespace

std::unique_ptr<RequestParser> NewMemcachedRequestParser(const ParserLimits& limits) {
  return std::make_unique<MemcachedRequestParser>(limits);
}

std::unique_ptr<ReplyParser> NewMemcachedReplyParser(const ParserLimits& limits) {
  return std::make_unique<MemcachedReplyParser>(limits);
}

}  // namespace hotkey::parsers
