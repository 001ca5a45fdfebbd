// The shape every request parser shares: what a parsed request is, where it goes, the
// limits that bound a parser's memory and the counters of what it could not use.
//
// A parser reads one direction of one TCP stream (client to server) in order, as the
// reassembler (hotkey/tcp/reassembler.h) hands it over, in pieces cut anywhere. It never
// holds more than ParserLimits::max_buffer_bytes of the stream: arguments that cannot be
// keys (values) are skipped as they pass, not buffered. Pure: no I/O, no clock, no
// allocation once its buffer has grown to the size the traffic needs (at most the limit).
//
// Thread-compatible: one parser per flow direction, used by one thread.

#ifndef HOTKEY_PARSERS_REQUEST_H_
#define HOTKEY_PARSERS_REQUEST_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "hotkey/text/enum_names.h"

namespace hotkey::parsers {

enum class Protocol : uint8_t { kRedis, kMemcached };

// How a request touches a key: Redis key-spec flags RO (read) and RW, OW, RM (write);
// memcached retrievals (read) and storage, arithmetic, delete and touch (write).
enum class Access : uint8_t { kRead = 0, kWrite = 1 };
// The `access` label of the tap's key counts.
inline constexpr text::EnumName<Access> kAccessNames[] = {{Access::kRead, "read"},
                                                          {Access::kWrite, "write"}};

struct KeyRef {
  std::string_view key;
  Access access;
};

// One parsed request (one command; inside MULTI/EXEC, each queued command).
struct Request {
  std::span<const KeyRef> keys;  // in request order; valid only during OnRequest()
  uint64_t wire_bytes = 0;       // the request's bytes on the wire
  // False when the server sends no reply to this request (memcached noreply, quiet meta
  // commands): a reply matcher must not wait for one.
  bool expects_reply = true;
};

class RequestSink {
 public:
  virtual void OnRequest(const Request& request) = 0;

 protected:
  ~RequestSink() = default;
};

struct ParserLimits {
  // Bytes of one flow direction a parser may hold: the stored arguments of the request in
  // progress (keys, numkeys and keyword arguments) and a partial line. A key that does not
  // fit is counted in keys_dropped, not reported.
  size_t max_buffer_bytes = 16 * 1024;
};

// Counts over every flow a parser served; a parser adds to the caller's counters.
struct ParserCounters {
  uint64_t requests = 0;           // requests parsed, known commands or not
  uint64_t read_keys = 0;          // keys reported as reads
  uint64_t write_keys = 0;         // keys reported as writes
  uint64_t unknown_commands = 0;   // well-framed requests whose command is not in the table
  uint64_t protocol_errors = 0;    // bytes that did not frame as a request: a resync follows
  uint64_t resyncs = 0;            // searches for the next request boundary (errors and gaps)
  uint64_t keys_dropped = 0;       // keys past ParserLimits::max_buffer_bytes
  uint64_t excluded_requests = 0;  // not counted by design: replication links, binary memcached

  void Add(const ParserCounters& o) {
    requests += o.requests;
    read_keys += o.read_keys;
    write_keys += o.write_keys;
    unknown_commands += o.unknown_commands;
    protocol_errors += o.protocol_errors;
    resyncs += o.resyncs;
    keys_dropped += o.keys_dropped;
    excluded_requests += o.excluded_requests;
  }
};

// The client-to-server half of a flow.
class RequestParser {
 public:
  virtual ~RequestParser() = default;
  // The next bytes of the stream, in order. Calls sink.OnRequest once per complete request.
  virtual void Feed(std::string_view bytes, RequestSink& sink, ParserCounters& counters) = 0;
  // Bytes were lost before the next Feed (a gap, or a stream joined mid-request): drops the
  // request in progress and resyncs at the next request boundary. Counts a resync.
  virtual void Gap(ParserCounters& counters) = 0;
  // Bytes held now (buffer capacity included): at most about max_buffer_bytes.
  virtual size_t memory_bytes() const = 0;
};

// The server-to-client half: finds where each reply ends, so that --tap.weight=bytes can
// charge a request its reply's size. Replies come in request order; out-of-band frames
// (RESP3 pushes) are not replies.
class ReplySink {
 public:
  virtual void OnReply(uint64_t wire_bytes) = 0;

 protected:
  ~ReplySink() = default;
};

class ReplyParser {
 public:
  virtual ~ReplyParser() = default;
  virtual void Feed(std::string_view bytes, ReplySink& sink, ParserCounters& counters) = 0;
  virtual void Gap(ParserCounters& counters) = 0;
  virtual size_t memory_bytes() const = 0;
};

std::unique_ptr<RequestParser> NewRequestParser(Protocol protocol, const ParserLimits& limits);
std::unique_ptr<ReplyParser> NewReplyParser(Protocol protocol, const ParserLimits& limits);

}  // namespace hotkey::parsers

#endif  // HOTKEY_PARSERS_REQUEST_H_
