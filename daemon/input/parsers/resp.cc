// The Redis parsers: requests (client to server) into keys, replies (server to client) into
// sizes. Pure code over bytes; one parser per flow direction.
//
// RESP. A Redis client sends each command as a RESP array of bulk strings,
//   *3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n
// (RESP2 and RESP3 requests are the same; HELLO 3 only changes the replies), or as an
// "inline" command, one line split at blanks with Redis's quoting rules (sdssplitargs), as
// typed into telnet. Replies are typed frames: simple strings (+), errors (-), integers (:),
// bulk strings ($, with -1 the RESP2 null), arrays (*); RESP3 adds null (_), booleans (#),
// doubles (,), big numbers ((), blob errors (!), verbatim strings (=), maps (%), sets (~),
// attributes (|: metadata before a reply, not a reply) and pushes (>: out of band, not the
// reply to a request). References: https://redis.io/docs/reference/protocol-spec/ and
// https://github.com/redis/redis-specifications/blob/master/protocol/RESP3.md.
//
// Key specs. Since Redis 7.0 every command describes where its keys are with key
// specifications (https://redis.io/docs/reference/key-specs/): a begin_search step (a fixed
// index, or a keyword searched from `startfrom`: forward when it is positive, from
// argc+startfrom backward when negative) and a find_keys step from there (a range: lastkey
// relative to the start, or to argc when negative, every keystep-th argument, or with
// `limit` the first 1/limit of the rest; or a keynum: the argument at keynumidx says how
// many keys follow at firstkey, every keystep-th). Each spec carries flags: RO is a read;
// RW, OW and RM are writes. The table (redis_commands.inc) is generated from the real
// server's COMMAND reply and interpreted here as Redis's getKeysUsingKeySpecs() does, so
// EVAL's numkeys, XREAD's STREAMS, GEORADIUS's STORE and OBJECT ENCODING's key (a
// subcommand: "object|encoding") need no code of their own. Four commands Redis itself does
// not resolve from the specs (SORT, SORT_RO, MIGRATE, BITFIELD: an unknown, INCOMPLETE or
// VARIABLE_FLAGS spec) follow Redis's own getkeys functions (KeyFinder). A command whose
// arity is wrong, or whose numkeys is not a number, is rejected by the server: no keys.
//
// Memory bound. The parser never buffers a request. It streams each bulk string past and,
// knowing argc from the array header and the command from its first argument (and second,
// for a subcommand), decides per argument from its index and length alone whether it can be
// a key (stored), or must be read to find keys (numkeys, a keyword, an option of SORT,
// MIGRATE or BITFIELD: at most kScratchBytes, held in place), or neither (skipped: a 400 KB
// SET value costs nothing). Keyword searches need nothing stored before the keyword is
// found; only a backward keyword search (none in Redis 7.0 but MIGRATE's, which follows
// migrateGetKeys) stores every later argument. Stored keys, their index and their KeyRef
// fit in ParserLimits::max_buffer_bytes; a key that does not is counted in keys_dropped. An
// inline command is one line, buffered whole up to the same limit (longer: a protocol
// error); its bytes are zeroed once parsed. AUTH and HELLO have no key specs, so none of
// their arguments is ever stored, and MIGRATE's AUTH/AUTH2 passwords are skipped by
// position: a password never reaches a key or a counter. The request parser's
// memory_bytes() stays at most max_buffer_bytes plus its fixed size (under 1 KiB); the reply
// parser buffers nothing and holds a depth stack of at most kMaxReplyDepth frames (under
// 4 KiB in all). Both are pinned by tests/parsers and checked by fuzz/fuzz_resp.cc.
//
// Resync. A protocol error (no '$' where a bulk string must start, a bulk length above
// Redis's proto-max-bulk-len of 512 MB, an array header of more than 1M elements (see
// resp::kMaxRequestElements), a missing CRLF, an inline line longer than the limit) or a
// Gap() drops the request in progress, and the parser skips bytes until a line start (the
// byte after '\n', or the first byte after the gap or the failing byte, unless that is
// inside an overlong line) that reads
//   *<1-7 digits, not 0, at most 1M>\r\n$<1-2 digits>\r\n<a command name the table knows>\r\n
// with an argc the command's arity allows. Limits: a bulk value that itself holds such a
// line at a line start, seen before the real boundary, is parsed as a request (until the
// next protocol error); an inline command is never a resync point. Replies resync at a
// line start whose byte is a RESP type, which is weaker (a value line can look like that):
// after a gap, reply sizes are approximate until the pipeline drains. A reply's aggregate
// header above 1M elements (resp::kMaxReplyElements) is a protocol error too.
//
// Framing. Both parsers read bytes through one core, resp::Framer (resp_framing.h): type
// bytes, header numbers, bulk strings and their CRLF, simple and inline lines, the caps on
// lengths, protocol errors and the resync state. Each parser says what a type byte opens and
// what a header means: the request parser accepts '*' arrays of '$' bulk strings and inline
// lines, the reply parser every RESP2/RESP3 type.
//
// Replication. A flow that sends PSYNC, SYNC or REPLCONF is a replica's link to its master:
// that request and every later one on the flow count in excluded_requests, never as keys.

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include "factories.h"
#include "resp_commands.h"
#include "resp_framing.h"

namespace hotkey::parsers {
namespace {

using resp::BeginSearch;
using resp::CommandSpec;
using resp::FindKeys;
using resp::Framer;
using resp::HeaderNumber;
using resp::KeyFinder;
using resp::KeySpec;
using resp::kMaxSpecs;
using resp::Opens;

// Longer than every command and subcommand name of the table (29 bytes).
constexpr size_t kMaxNameBytes = 32;
// The longest argument read to find keys: a numkeys (at most 19 digits and a sign) or a
// keyword or option ("STOREDIST", "overflow").
constexpr size_t kScratchBytes = 24;
// A resync candidate: '*' 10 digits CRLF '$' 2 digits CRLF name CRLF.
constexpr size_t kMaxCandidateBytes = 1 + 10 + 2 + 1 + 2 + 2 + kMaxNameBytes + 2;
// Nesting of a reply: Redis's own replies nest a few levels (a script's reply can nest
// deeper, but rarely past this).
constexpr size_t kMaxReplyDepth = 128;

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + ('a' - 'A')) : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

// Redis's string2ll: an optional '-', digits, no leading zero, no sign on zero.
bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  bool negative = false;
  size_t i = 0;
  if (s[0] == '-') {
    negative = true;
    i = 1;
    if (s.size() == 1) return false;
  }
  if (s[i] == '0') {
    if (s.size() != i + 1 || negative) return false;
    *out = 0;
    return true;
  }
  if (s.size() - i > 18) return false;  // keeps v below 10^18: no overflow
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = negative ? -v : v;
  return true;
}

// ---------------------------------------------------------------------------------------
// Inline commands: Redis's sdssplitargs, one token at a time. The line ends at its first
// NUL byte, as for Redis (a C string there).

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes the token starting at line[pos] (not a blank), calling emit(char) for each byte;
// returns the position after it, or npos for unbalanced quotes.
template <class Emit>
size_t ScanToken(std::string_view line, size_t pos, Emit&& emit) {
  auto at = [&](size_t i) -> char { return i < line.size() ? line[i] : '\0'; };
  bool inq = false, insq = false;
  size_t p = pos;
  while (true) {
    const char c = at(p);
    if (inq) {
      if (c == '\\' && at(p + 1) == 'x' && HexValue(at(p + 2)) >= 0 && HexValue(at(p + 3)) >= 0) {
        emit(static_cast<char>(HexValue(at(p + 2)) * 16 + HexValue(at(p + 3))));
        p += 3;
      } else if (c == '\\' && at(p + 1) != '\0') {
        ++p;
        char e = at(p);
        switch (e) {
          case 'n':
            e = '\n';
            break;
          case 'r':
            e = '\r';
            break;
          case 't':
            e = '\t';
            break;
          case 'b':
            e = '\b';
            break;
          case 'a':
            e = '\a';
            break;
          default:
            break;
        }
        emit(e);
      } else if (c == '"') {
        if (at(p + 1) != '\0' && !IsSpace(at(p + 1))) return std::string_view::npos;
        return p + 1 < line.size() ? p + 2 : line.size();
      } else if (c == '\0') {
        return std::string_view::npos;
      } else {
        emit(c);
      }
    } else if (insq) {
      if (c == '\\' && at(p + 1) == '\'') {
        ++p;
        emit('\'');
      } else if (c == '\'') {
        if (at(p + 1) != '\0' && !IsSpace(at(p + 1))) return std::string_view::npos;
        return p + 1 < line.size() ? p + 2 : line.size();
      } else if (c == '\0') {
        return std::string_view::npos;
      } else {
        emit(c);
      }
    } else {
      switch (c) {
        case ' ':
        case '\n':
        case '\r':
        case '\t':
          return p + 1;
        case '\0':
          return line.size();
        case '"':
          inq = true;
          break;
        case '\'':
          insq = true;
          break;
        default:
          emit(c);
      }
    }
    ++p;
  }
}

size_t SkipBlanks(std::string_view line, size_t pos) {
  while (pos < line.size() && IsSpace(line[pos])) ++pos;
  return pos;
}

// ---------------------------------------------------------------------------------------

class RespRequestParser final : public RequestParser {
 public:
  explicit RespRequestParser(const ParserLimits& limits) : limit_(limits.max_buffer_bytes) {
    ResetRequest();
  }

  void Feed(std::string_view bytes, RequestSink& sink, ParserCounters& counters) override {
    sink_ = &sink;
    counters_ = &counters;
    framer_.Consume(bytes, *this, counters);
    sink_ = nullptr;
    counters_ = nullptr;
  }

  void Gap(ParserCounters& counters) override {
    ++counters.resyncs;
    OnProtocolError();
    framer_.StartResync();
  }

  size_t memory_bytes() const override { return sizeof(*this) + HeldBytes(); }

 private:
  // A stored argument: store_[offset, offset + len) is argument `index`.
  struct Entry {
    int64_t index;
    uint32_t offset;
    uint32_t len;
  };

  // One key spec's progress through the request (see the file comment).
  struct SpecState {
    enum Phase : uint8_t { kOff, kSearching, kBackward, kWaitKeynum, kResolved };
    Phase phase = kOff;
    int64_t first = 0, last = -1, step = 1;  // kResolved; kWaitKeynum: first and step to use
    int64_t keynum_pos = 0;                  // kWaitKeynum
    int64_t lo = 0, hi = -1;                 // kSearching, kBackward: the keyword's window
    int64_t match = -1;                      // kBackward: the last keyword seen
  };

  // ---- Framing (resp_framing.h) ---------------------------------------------------------

  friend class resp::Framer;

  Opens OnType(char c) {
    if (argc_ > 0) return c == '$' ? Opens::kHeader : Opens::kError;  // an argument
    framer_.ResetBytes();                                             // a request starts
    return c == '*' ? Opens::kHeader : Opens::kInline;
  }

  bool OnHeader(char type, const HeaderNumber& number) {
    const int64_t n = number.value();
    if (type == '*') {
      if (n > resp::kMaxRequestElements) return false;
      if (n > 0) BeginRequest(n);  // Redis ignores an empty or negative multibulk: no reply
      return true;
    }
    if (n < 0 || n > resp::kMaxBulkBytes) return false;
    BeginArg(static_cast<uint64_t>(n));
    framer_.StartBulk(static_cast<uint64_t>(n));
    return true;
  }

  void OnBulkData(std::string_view d) { ArgData(d); }

  void OnBulkEnd() {
    EndArg();
    if (++arg_index_ == argc_) EndRequest();
  }

  void OnLineEnd(char) {}  // OnType opens no simple line
  bool OnInlineData(std::string_view part) { return AppendLine(part); }
  void OnInlineEnd() { ProcessInline(); }

  void OnProtocolError() {
    AbandonRequest();
    candidate_len_ = 0;
  }

  // ---- Resync ----------------------------------------------------------------------------

  enum class Candidate { kMore, kBad, kGood };

  // Whether candidate_[0, candidate_len_) is a prefix of a request boundary (file comment).
  Candidate CheckCandidate() const {
    const std::string_view c(candidate_.data(), candidate_len_);
    size_t p = 1;  // c[0] == '*'
    int64_t argc = 0;
    size_t digits = 0;
    for (; p < c.size() && c[p] >= '0' && c[p] <= '9'; ++p, ++digits) {
      if (digits == 0 && c[p] == '0') return Candidate::kBad;
      if (digits == 10) return Candidate::kBad;
      argc = argc * 10 + (c[p] - '0');
    }
    if (p == c.size()) return Candidate::kMore;
    if (digits == 0 || argc > resp::kMaxRequestElements || c[p] != '\r') return Candidate::kBad;
    if (++p == c.size()) return Candidate::kMore;
    if (c[p] != '\n') return Candidate::kBad;
    if (++p == c.size()) return Candidate::kMore;
    if (c[p] != '$') return Candidate::kBad;
    ++p;
    size_t len = 0;
    digits = 0;
    for (; p < c.size() && c[p] >= '0' && c[p] <= '9'; ++p, ++digits) {
      if (digits == 2) return Candidate::kBad;
      len = len * 10 + static_cast<size_t>(c[p] - '0');
    }
    if (p == c.size()) return Candidate::kMore;
    if (digits == 0 || len == 0 || len > kMaxNameBytes || c[p] != '\r') return Candidate::kBad;
    if (++p == c.size()) return Candidate::kMore;
    if (c[p] != '\n') return Candidate::kBad;
    ++p;
    if (c.size() < p + len + 2) return Candidate::kMore;
    if (c[p + len] != '\r' || c[p + len + 1] != '\n') return Candidate::kBad;
    char name[kMaxNameBytes];
    for (size_t k = 0; k < len; ++k) name[k] = Lower(c[p + k]);
    const CommandSpec* cmd = resp::FindCommand(std::string_view(name, len));
    if (cmd == nullptr) return Candidate::kBad;
    if (cmd->arity > 0 ? argc != cmd->arity : argc < -cmd->arity) return Candidate::kBad;
    return Candidate::kGood;
  }

  // Skips bytes up to a request boundary; returns the bytes of s it used.
  size_t ScanResync(std::string_view s) {
    size_t i = 0;
    if (candidate_len_ == 0) {
      i = framer_.FindLineStart(s, [](char b) { return b == '*'; });
      if (i == s.size()) return i;
      candidate_[0] = '*';
      candidate_len_ = 1;
      framer_.set_line_start(false);
      ++i;
    }
    for (; i < s.size(); ++i) {
      candidate_[candidate_len_++] = s[i];
      const Candidate c = CheckCandidate();
      if (c == Candidate::kMore) continue;
      // Either way the candidate's bytes leave candidate_ and are looked at again: as the
      // start of the request, or (all but its '*') for a later boundary.
      std::array<char, kMaxCandidateBytes> copy;
      const size_t n = candidate_len_;
      std::memcpy(copy.data(), candidate_.data(), n);
      candidate_len_ = 0;
      if (c == Candidate::kGood) {
        framer_.Resume();
        framer_.Consume(std::string_view(copy.data(), n), *this, *counters_);
      } else {
        framer_.set_line_start(false);
        framer_.Consume(std::string_view(copy.data() + 1, n - 1), *this, *counters_);
      }
      return i + 1;
    }
    return s.size();
  }

  // ---- Inline commands -------------------------------------------------------------------

  bool AppendLine(std::string_view part) {
    if (part.empty()) return true;
    const size_t want = line_.size() + part.size();
    if (want > line_.capacity()) {
      const size_t others = HeldBytes() - line_.capacity();
      if (others + want > limit_) {
        // Too long. How much of it was buffered depends on where the stream was cut: the
        // buffer is freed (no allocation), so no later decision depends on the cuts.
        ClearLine();
        line_.shrink_to_fit();
        return false;
      }
      // A power of two (vector's reserve is exact): the capacity then depends on the
      // longest line, not on the cuts, either.
      line_.reserve(std::min(std::bit_ceil(want), limit_ - others));
    }
    line_.insert(line_.end(), part.begin(), part.end());
    return true;
  }

  void ClearLine() {
    // The line may hold a password (AUTH, HELLO ... AUTH): it does not outlive its parse.
    std::fill(line_.begin(), line_.end(), '\0');
    line_.clear();
  }

  void ProcessInline() {
    std::string_view line(line_.data(), line_.size());
    if (const size_t nul = line.find('\0'); nul != std::string_view::npos) {
      line = line.substr(0, nul);
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    int64_t argc = 0;
    for (size_t p = SkipBlanks(line, 0); p < line.size(); p = SkipBlanks(line, p)) {
      p = ScanToken(line, p, [](char) {});
      if (p == std::string_view::npos) {  // unbalanced quotes: Redis's protocol error
        ++counters_->protocol_errors;
        ++counters_->resyncs;
        ClearLine();
        return;
      }
      ++argc;
    }
    if (argc > 0) {
      BeginRequest(argc);
      for (size_t p = SkipBlanks(line, 0); p < line.size(); p = SkipBlanks(line, p)) {
        uint64_t len = 0;
        ScanToken(line, p, [&](char) { ++len; });
        BeginArg(len);
        std::array<char, 64> chunk;
        size_t n = 0;
        p = ScanToken(line, p, [&](char ch) {
          chunk[n++] = ch;
          if (n == chunk.size()) {
            ArgData(std::string_view(chunk.data(), n));
            n = 0;
          }
        });
        if (n > 0) ArgData(std::string_view(chunk.data(), n));
        EndArg();
        ++arg_index_;
      }
      EndRequest();
    }
    ClearLine();
  }

  // ---- One request -----------------------------------------------------------------------

  void ResetRequest() {
    argc_ = 0;
    arg_index_ = 0;
    cmd_ = nullptr;
    unknown_ = false;
    awaiting_subcommand_ = false;
    resolved_ = false;
    arity_ok_ = false;
    invalid_ = false;
    replication_ = false;
    name_len_ = 0;
    name_too_long_ = false;
    for (SpecState& s : specs_) s = SpecState();
    walk_next_ = -1;
    sort_store_key_ = -1;
    migrate_key3_empty_ = false;
    migrate_first_ = -1;
    bitfield_readonly_ = true;
    store_.clear();
    entries_.clear();
    refs_.clear();
  }

  void AbandonRequest() {
    ResetRequest();
    ClearLine();
  }

  void BeginRequest(int64_t argc) {
    ResetRequest();
    argc_ = argc;
  }

  void BeginArg(uint64_t len) {
    const int64_t i = arg_index_;
    capture_name_ = capture_scratch_ = capture_store_ = false;
    scratch_len_ = 0;
    if (excluded_ || unknown_) return;
    if (i == 0 || (i == 1 && awaiting_subcommand_)) {
      if (len > kMaxNameBytes) {
        name_too_long_ = true;
      } else {
        capture_name_ = true;
        if (i == 1) name_[name_len_++] = '|';
      }
      return;
    }
    if (!resolved_) return;
    if (cmd_->finder == KeyFinder::kMigrate && i == 3) migrate_key3_empty_ = len == 0;
    capture_scratch_ = len <= kScratchBytes && NeedsContent(i, len);
    if (IsCandidate(i) && Reserve(len)) {
      entries_.push_back(
          Entry{i, static_cast<uint32_t>(store_.size()), static_cast<uint32_t>(len)});
      capture_store_ = true;
    }
  }

  void ArgData(std::string_view d) {
    if (capture_name_) {
      for (char c : d) name_[name_len_++] = Lower(c);  // BeginArg checked the length
    }
    if (capture_scratch_) {
      const size_t n = std::min(d.size(), scratch_.size() - scratch_len_);  // BeginArg checked
      std::memcpy(scratch_.data() + scratch_len_, d.data(), n);
      scratch_len_ += n;
    }
    if (capture_store_) store_.insert(store_.end(), d.begin(), d.end());  // reserved
  }

  void EndArg() {
    const int64_t i = arg_index_;
    if (excluded_ || unknown_) return;
    if (i == 0) {
      const CommandSpec* cmd =
          name_too_long_ ? nullptr : resp::FindCommand(std::string_view(name_.data(), name_len_));
      if (cmd == nullptr) {
        unknown_ = true;
      } else if (cmd->has_subcommands && argc_ >= 2) {
        awaiting_subcommand_ = true;
      } else {
        Resolve(cmd);
      }
      return;
    }
    if (i == 1 && awaiting_subcommand_) {
      awaiting_subcommand_ = false;
      const CommandSpec* cmd =
          name_too_long_ ? nullptr : resp::FindCommand(std::string_view(name_.data(), name_len_));
      if (cmd == nullptr) {
        unknown_ = true;
      } else {
        Resolve(cmd);
      }
      return;
    }
    if (!resolved_ || !capture_scratch_) {
      // Not read: too long to be a number, keyword or option.
      if (resolved_ && arity_ok_) OnUnreadArg(i);
      return;
    }
    OnArgContent(i, std::string_view(scratch_.data(), scratch_len_));
  }

  void Resolve(const CommandSpec* cmd) {
    cmd_ = cmd;
    resolved_ = true;
    replication_ = cmd->name == "psync" || cmd->name == "sync" || cmd->name == "replconf";
    arity_ok_ = cmd->arity > 0 ? argc_ == cmd->arity : argc_ >= -cmd->arity;
    if (!arity_ok_) return;  // the server rejects it: no keys
    switch (cmd->finder) {
      case KeyFinder::kNone:
        for (int k = 0; k < cmd->num_specs; ++k) {
          const KeySpec& spec = cmd->specs[k];
          SpecState& st = specs_[k];
          switch (spec.begin_search) {
            case BeginSearch::kIndex:
              StartFind(spec, st, spec.index_or_startfrom);
              break;
            case BeginSearch::kKeyword:
              if (spec.index_or_startfrom > 0) {
                st.phase = SpecState::kSearching;
                st.lo = spec.index_or_startfrom;
                st.hi = argc_ - 2;
              } else {
                st.phase = SpecState::kBackward;
                st.lo = 2;
                st.hi = argc_ + spec.index_or_startfrom;
              }
              break;
            case BeginSearch::kUnknown:
              break;
          }
        }
        break;
      case KeyFinder::kSort:
      case KeyFinder::kBitfield:
        walk_next_ = 2;
        break;
      case KeyFinder::kMigrate:
        if (argc_ > 6) walk_next_ = 6;
        break;
      case KeyFinder::kSortRo:
        break;
    }
  }

  // Redis's find_keys step for a spec whose keys start at `first`.
  void StartFind(const KeySpec& spec, SpecState& st, int64_t first) {
    switch (spec.find_keys) {
      case FindKeys::kRange:
        st.phase = SpecState::kResolved;
        st.first = first;
        if (spec.fk0 >= 0) {
          st.last = first + spec.fk0;
        } else if (spec.fk2 == 0) {
          st.last = argc_ + spec.fk0;
        } else {
          st.last = first + ((argc_ - first) / spec.fk2 + spec.fk0);
        }
        st.step = std::max(spec.fk1, 1);
        break;
      case FindKeys::kKeynum:
        if (spec.fk0 >= argc_ || first + spec.fk0 >= argc_) {
          invalid_ = true;
          st.phase = SpecState::kOff;
          break;
        }
        st.phase = SpecState::kWaitKeynum;
        st.keynum_pos = first + spec.fk0;
        st.first = first + spec.fk1;
        st.step = std::max(spec.fk2, 1);
        break;
      case FindKeys::kUnknown:
        st.phase = SpecState::kOff;
        break;
    }
  }

  void ApplyKeynum(SpecState& st, std::string_view content) {
    int64_t numkeys = 0;
    if (!ParseInt(content, &numkeys) || numkeys < 0) {
      invalid_ = true;  // Redis's spec lookup fails; its getkeys function finds no key
      st.phase = SpecState::kOff;
      return;
    }
    st.phase = SpecState::kResolved;
    st.last = st.first + std::min(numkeys, argc_) - 1;
  }

  static bool InRange(const SpecState& st, int64_t i) {
    return st.phase == SpecState::kResolved && i >= st.first && i <= st.last &&
           (i - st.first) % st.step == 0;
  }

  // Whether argument i (of `len` bytes) must be read to find the keys.
  bool NeedsContent(int64_t i, uint64_t len) const {
    if (!arity_ok_) return false;
    switch (cmd_->finder) {
      case KeyFinder::kNone:
        for (int k = 0; k < cmd_->num_specs; ++k) {
          const SpecState& st = specs_[k];
          const std::string_view kw = cmd_->specs[k].keyword;
          if (st.phase == SpecState::kWaitKeynum && i == st.keynum_pos) return true;
          if ((st.phase == SpecState::kSearching || st.phase == SpecState::kBackward) &&
              i >= st.lo && i <= st.hi && len == kw.size()) {
            return true;
          }
        }
        return false;
      case KeyFinder::kSort:
      case KeyFinder::kBitfield:
      case KeyFinder::kMigrate:
        return i == walk_next_;
      case KeyFinder::kSortRo:
        return false;
    }
    return false;
  }

  // Whether argument i can be a key: stored if it fits.
  bool IsCandidate(int64_t i) const {
    if (!arity_ok_) return false;
    switch (cmd_->finder) {
      case KeyFinder::kNone:
        for (int k = 0; k < cmd_->num_specs; ++k) {
          const SpecState& st = specs_[k];
          if (InRange(st, i)) return true;
          // A backward search takes the last keyword: keep everything after the first.
          if (st.phase == SpecState::kBackward && st.match >= 0 && i > st.match) return true;
        }
        return false;
      case KeyFinder::kSort:
        return i == 1 || i == sort_store_key_;
      case KeyFinder::kSortRo:
      case KeyFinder::kBitfield:
        return i == 1;
      case KeyFinder::kMigrate:
        return i == 3 || (migrate_first_ >= 0 && i >= migrate_first_);
    }
    return false;
  }

  // An argument too long to have been read (so not a number, keyword or option).
  void OnUnreadArg(int64_t i) {
    if (cmd_->finder == KeyFinder::kNone) {
      for (SpecState& st : specs_) {
        if (st.phase == SpecState::kWaitKeynum && i == st.keynum_pos) {
          invalid_ = true;
          st.phase = SpecState::kOff;
        }
      }
    } else {
      OnArgContent(i, std::string_view());  // matches no option word
    }
  }

  void OnArgContent(int64_t i, std::string_view a) {
    if (!arity_ok_) return;
    switch (cmd_->finder) {
      case KeyFinder::kNone:
        for (int k = 0; k < cmd_->num_specs; ++k) {
          const KeySpec& spec = cmd_->specs[k];
          SpecState& st = specs_[k];
          if (st.phase == SpecState::kWaitKeynum && i == st.keynum_pos) {
            ApplyKeynum(st, a);
          } else if (st.phase == SpecState::kSearching && i >= st.lo && i <= st.hi &&
                     EqualsIgnoreCase(a, spec.keyword)) {
            StartFind(spec, st, i + 1);  // the first match, as Redis's forward search
          } else if (st.phase == SpecState::kBackward && i >= st.lo && i <= st.hi &&
                     EqualsIgnoreCase(a, spec.keyword)) {
            st.match = i;
          }
        }
        break;
      case KeyFinder::kSort:  // sortGetKeys
        if (i != walk_next_) break;
        if (EqualsIgnoreCase(a, "limit")) {
          walk_next_ = i + 3;
        } else if (EqualsIgnoreCase(a, "store") && i + 1 < argc_) {
          sort_store_key_ = i + 1;  // the last STORE wins
          walk_next_ = i + 1;
        } else if (EqualsIgnoreCase(a, "get") || EqualsIgnoreCase(a, "by")) {
          walk_next_ = i + 2;
        } else {
          walk_next_ = i + 1;
        }
        break;
      case KeyFinder::kMigrate:  // migrateGetKeys
        if (i != walk_next_) break;
        if (EqualsIgnoreCase(a, "keys") && migrate_key3_empty_) {
          migrate_first_ = i + 1;
          walk_next_ = -1;
        } else if (EqualsIgnoreCase(a, "auth")) {
          walk_next_ = i + 2;  // the password is skipped, never read
        } else if (EqualsIgnoreCase(a, "auth2")) {
          walk_next_ = i + 3;  // user and password
        } else {
          walk_next_ = i + 1;
        }
        break;
      case KeyFinder::kBitfield: {  // bitfieldGetKeys
        if (i != walk_next_) break;
        const int64_t remaining = argc_ - i - 1;
        if (EqualsIgnoreCase(a, "get") && remaining >= 2) {
          walk_next_ = i + 3;
        } else if ((EqualsIgnoreCase(a, "set") || EqualsIgnoreCase(a, "incrby")) &&
                   remaining >= 3) {
          bitfield_readonly_ = false;
          walk_next_ = -1;
        } else if (EqualsIgnoreCase(a, "overflow") && remaining >= 1) {
          walk_next_ = i + 2;
        } else {
          bitfield_readonly_ = false;  // a syntax error: Redis assumes a write
          walk_next_ = -1;
        }
        break;
      }
      case KeyFinder::kSortRo:
        break;
    }
  }

  // The stored argument i, or nullptr.
  const Entry* Stored(int64_t i) const {
    const auto it = std::lower_bound(entries_.begin(), entries_.end(), i,
                                     [](const Entry& e, int64_t v) { return e.index < v; });
    return it != entries_.end() && it->index == i ? &*it : nullptr;
  }

  // A backward keyword search ends with the request: its last match starts the keys.
  void FinishBackwardSearches() {
    if (cmd_->finder != KeyFinder::kNone) return;
    for (int k = 0; k < cmd_->num_specs; ++k) {
      SpecState& st = specs_[k];
      if (st.phase != SpecState::kBackward) continue;
      if (st.match < 0) {
        st.phase = SpecState::kOff;
        continue;
      }
      StartFind(cmd_->specs[k], st, st.match + 1);
      if (st.phase == SpecState::kWaitKeynum) {
        const Entry* e = Stored(st.keynum_pos);
        if (e == nullptr || e->len > kScratchBytes) {
          invalid_ = true;
          st.phase = SpecState::kOff;
        } else {
          ApplyKeynum(st, std::string_view(store_.data() + e->offset, e->len));
        }
      }
    }
  }

  // Calls f(access) once per key this request has at argument i.
  template <class F>
  void KeysAt(int64_t i, F&& f) const {
    switch (cmd_->finder) {
      case KeyFinder::kNone:
        for (int k = 0; k < cmd_->num_specs; ++k) {
          if (InRange(specs_[k], i) && i < argc_) f(cmd_->specs[k].access);
        }
        break;
      case KeyFinder::kSort:
        if (i == 1) f(Access::kRead);
        if (i == sort_store_key_) f(Access::kWrite);
        break;
      case KeyFinder::kSortRo:
        if (i == 1) f(Access::kRead);
        break;
      case KeyFinder::kMigrate:
        if (migrate_first_ >= 0 ? i >= migrate_first_ : i == 3) f(Access::kWrite);
        break;
      case KeyFinder::kBitfield:
        if (i == 1) f(bitfield_readonly_ ? Access::kRead : Access::kWrite);
        break;
    }
  }

  // How many keys the request has, stored or not.
  uint64_t KeyCount() const {
    switch (cmd_->finder) {
      case KeyFinder::kNone: {
        uint64_t n = 0;
        for (int k = 0; k < cmd_->num_specs; ++k) {
          const SpecState& st = specs_[k];
          if (st.phase != SpecState::kResolved) continue;
          const int64_t hi = std::min(st.last, argc_ - 1);
          if (hi >= st.first) n += static_cast<uint64_t>((hi - st.first) / st.step + 1);
        }
        return n;
      }
      case KeyFinder::kSort:
        return sort_store_key_ >= 0 ? 2 : 1;
      case KeyFinder::kSortRo:
      case KeyFinder::kBitfield:
        return 1;
      case KeyFinder::kMigrate:
        return migrate_first_ >= 0 ? static_cast<uint64_t>(argc_ - migrate_first_) : 1;
    }
    return 0;
  }

  void EndRequest() {
    if (excluded_ || replication_) {
      excluded_ = true;  // a replica's link: this request and all after it
      ++counters_->excluded_requests;
      ResetRequest();
      return;
    }
    ++counters_->requests;
    refs_.clear();
    if (unknown_ || cmd_ == nullptr) {
      ++counters_->unknown_commands;
    } else if (arity_ok_) {
      FinishBackwardSearches();
      if (!invalid_) {
        for (const Entry& e : entries_) {
          KeysAt(e.index, [&](Access a) {
            if (refs_.size() == refs_.capacity()) return;  // reserved with the entries
            refs_.push_back(KeyRef{std::string_view(store_.data() + e.offset, e.len), a});
          });
        }
        const uint64_t total = KeyCount();
        if (total > refs_.size()) counters_->keys_dropped += total - refs_.size();
        for (const KeyRef& r : refs_) {
          ++(r.access == Access::kRead ? counters_->read_keys : counters_->write_keys);
        }
      }
    }
    Request request;
    request.keys = std::span<const KeyRef>(refs_.data(), refs_.size());
    request.wire_bytes = framer_.bytes();
    sink_->OnRequest(request);
    ResetRequest();
  }

  // ---- Memory ----------------------------------------------------------------------------

  size_t HeldBytes() const {
    return store_.capacity() + entries_.capacity() * sizeof(Entry) +
           refs_.capacity() * sizeof(KeyRef) + line_.capacity();
  }

  // Makes room for one more stored argument of `len` bytes within the limit.
  bool Reserve(uint64_t len) {
    const size_t n = entries_.size() + 1;
    const size_t bytes = store_.size() + static_cast<size_t>(len);
    const size_t need_store = std::max(store_.capacity(), bytes);
    const size_t need_entries = std::max(entries_.capacity(), n);
    const size_t need_refs = std::max(refs_.capacity(), n);
    const size_t need =
        need_store + need_entries * sizeof(Entry) + need_refs * sizeof(KeyRef) + line_.capacity();
    if (len > limit_ || need > limit_) return false;
    size_t spare = limit_ - need;  // grow geometrically while the limit allows
    auto grow = [&spare](auto& v, size_t want, size_t elem) {
      if (want <= v.capacity()) return;
      const size_t extra = std::min(std::max(v.capacity(), size_t{4}), spare / elem / 2);
      v.reserve(want + extra);
      spare -= extra * elem;
    };
    grow(store_, bytes, 1);
    grow(entries_, n, sizeof(Entry));
    grow(refs_, n, sizeof(KeyRef));
    return true;
  }

  const size_t limit_;
  RequestSink* sink_ = nullptr;
  ParserCounters* counters_ = nullptr;

  Framer framer_;  // bytes() counts the request's bytes so far
  bool excluded_ = false;

  // Resync: a prefix of a possible request boundary.
  std::array<char, kMaxCandidateBytes> candidate_;
  size_t candidate_len_ = 0;

  // The request in progress.
  int64_t argc_ = 0;
  int64_t arg_index_ = 0;
  const CommandSpec* cmd_ = nullptr;
  bool unknown_ = false;
  bool awaiting_subcommand_ = false;
  bool resolved_ = false;
  bool arity_ok_ = false;
  bool invalid_ = false;
  bool replication_ = false;
  std::array<char, 2 * kMaxNameBytes + 1> name_;  // "name" or "name|sub", lower case
  size_t name_len_ = 0;
  bool name_too_long_ = false;
  bool capture_name_ = false;
  bool capture_scratch_ = false;
  bool capture_store_ = false;
  std::array<char, kScratchBytes> scratch_;
  size_t scratch_len_ = 0;
  SpecState specs_[kMaxSpecs];
  int64_t walk_next_ = -1;       // kSort, kMigrate, kBitfield: the next option word
  int64_t sort_store_key_ = -1;  // kSort: the argument after the latest STORE
  bool migrate_key3_empty_ = false;
  int64_t migrate_first_ = -1;  // kMigrate: the first key after KEYS
  bool bitfield_readonly_ = true;

  std::vector<char> store_;     // the stored arguments' bytes
  std::vector<Entry> entries_;  // by argument index
  std::vector<KeyRef> refs_;    // the request's keys, for OnRequest
  std::vector<char> line_;      // an inline command's line
};

// ---------------------------------------------------------------------------------------

class RespReplyParser final : public ReplyParser {
 public:
  explicit RespReplyParser(const ParserLimits&) {}

  void Feed(std::string_view bytes, ReplySink& sink, ParserCounters& counters) override {
    sink_ = &sink;
    framer_.Consume(bytes, *this, counters);
    sink_ = nullptr;
  }

  void Gap(ParserCounters& counters) override {
    ++counters.resyncs;
    OnProtocolError();
    framer_.StartResync();
  }

  size_t memory_bytes() const override { return sizeof(*this) + stack_.capacity() * sizeof(Frame); }

 private:
  friend class resp::Framer;

  struct Frame {
    int64_t remaining;  // elements still to come; ignored when streamed
    bool attribute;     // '|': not an element of its parent, not a reply at the top
    bool streamed;      // "*?": ends at '.'
  };

  // What a reply's type byte opens ('.' only inside a streamed aggregate).
  static Opens TypeOpens(char c) {
    switch (c) {
      case '+':
      case '-':
      case ':':
      case '_':
      case '#':
      case ',':
      case '(':
      case '.':
        return Opens::kLine;
      case '!':
      case '=':
        return Opens::kHeader;
      case '$':
      case '*':
      case '~':
      case '>':
      case '%':
      case '|':
        return Opens::kStreamableHeader;
      default:
        return Opens::kError;
    }
  }

  // ---- Framing (resp_framing.h) ---------------------------------------------------------

  Opens OnType(char c) {
    if (in_chunk_) return c == ';' ? Opens::kHeader : Opens::kError;  // a streamed string
    if (c == '.' && (stack_.empty() || !stack_.back().streamed)) return Opens::kError;
    if (c == '>' && stack_.empty()) top_push_ = true;
    return TypeOpens(c);
  }

  // A header line ended; false on a protocol error.
  bool OnHeader(char type, const HeaderNumber& number) {
    const int64_t n = number.value();
    if (type == ';') {  // a chunk of a streamed string; ";0" ends it
      if (n < 0) return false;
      if (n == 0) {
        in_chunk_ = false;
        Complete(false);
      } else {
        framer_.StartBulk(static_cast<uint64_t>(n));
      }
      return true;
    }
    const bool aggregate = type == '*' || type == '~' || type == '>' || type == '%' || type == '|';
    if (!aggregate) {
      if (number.question()) {  // "$?": chunks follow
        in_chunk_ = true;
        return true;
      }
      if (n == -1 && type == '$') {  // the RESP2 null bulk string
        Complete(false);
        return true;
      }
      if (n < 0) return false;
      framer_.StartBulk(static_cast<uint64_t>(n));
      return true;
    }
    const bool attribute = type == '|';
    if (number.question()) {
      if (stack_.size() >= kMaxReplyDepth) return false;
      stack_.push_back(Frame{0, attribute, true});
      return true;
    }
    if (n == -1 && type == '*') {  // the RESP2 null array
      Complete(false);
      return true;
    }
    if (n < 0) return false;
    const int64_t elements = (type == '%' || type == '|') ? 2 * n : n;
    if (elements > resp::kMaxReplyElements) return false;
    if (elements == 0) {
      Complete(attribute);
      return true;
    }
    if (stack_.size() >= kMaxReplyDepth) return false;
    stack_.push_back(Frame{elements, attribute, false});
    return true;
  }

  void OnBulkData(std::string_view) {}

  void OnBulkEnd() {
    if (!in_chunk_) Complete(false);  // in a streamed string, the next chunk follows
  }

  void OnLineEnd(char type) {
    if (type == '.') {  // the end of a streamed aggregate
      const bool attribute = stack_.back().attribute;
      stack_.pop_back();
      Complete(attribute);
    } else {
      Complete(false);
    }
  }

  bool OnInlineData(std::string_view) { return false; }  // OnType opens no inline line
  void OnInlineEnd() {}

  void OnProtocolError() {
    stack_.clear();
    top_push_ = false;
    in_chunk_ = false;
  }

  size_t ScanResync(std::string_view s) {
    const size_t i =
        framer_.FindLineStart(s, [](char c) { return c != '.' && TypeOpens(c) != Opens::kError; });
    if (i < s.size()) framer_.Resume();
    return i;
  }

  // The frame that just ended is an element of its parent (unless an attribute); closes
  // every aggregate it completes and reports a top-level reply.
  void Complete(bool attribute) {
    while (!stack_.empty()) {
      if (attribute) return;
      Frame& f = stack_.back();
      if (f.streamed || --f.remaining > 0) return;
      attribute = f.attribute;
      stack_.pop_back();
    }
    if (attribute) return;  // its bytes belong to the reply that follows
    if (!top_push_) sink_->OnReply(framer_.bytes());
    framer_.ResetBytes();
    top_push_ = false;
  }

  ReplySink* sink_ = nullptr;
  Framer framer_;             // bytes() counts the reply's bytes, attributes before it included
  bool top_push_ = false;     // the frame in progress is an out-of-band push
  bool in_chunk_ = false;     // inside a streamed string
  std::vector<Frame> stack_;  // open aggregates, at most kMaxReplyDepth
};

}  // namespace

std::unique_ptr<RequestParser> NewRespRequestParser(const ParserLimits& limits) {
  return std::make_unique<RespRequestParser>(limits);
}

std::unique_ptr<ReplyParser> NewRespReplyParser(const ParserLimits& limits) {
  return std::make_unique<RespReplyParser>(limits);
}

}  // namespace hotkey::parsers
