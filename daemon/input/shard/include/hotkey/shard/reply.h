// The replies the shard prober (prober.h) reads, framed from a byte buffer: a RESP2 reply
// (https://redis.io/docs/reference/protocol-spec/) to INFO, CLUSTER NODES or AUTH, and a
// memcached text reply to stats or an authentication `set`.
//
// Pure functions over bytes: any input gives a reply, "incomplete" (read more) or an error,
// never undefined behaviour (tests/daemon/input/shard/reply_test.cc). A length over the caller's
// cap is an error as soon as its header is read, so a hostile or broken server cannot make the
// reader buffer more than the cap. Thread-compatible.

#ifndef HOTKEY_SHARD_REPLY_H_
#define HOTKEY_SHARD_REPLY_H_

#include <cstddef>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"

namespace hotkey::shard {

struct Reply {
  enum class Kind {
    kSimple,  // +OK
    kError,   // -ERR ..., or memcached's ERROR / CLIENT_ERROR ... / SERVER_ERROR ...
    kBulk,    // $<n> bytes (RESP), or the lines before the terminal line (memcached)
    kNull,    // $-1
  };
  Kind kind = Kind::kSimple;
  std::string_view text;  // into the buffer parsed: the payload, without framing
  size_t size = 0;        // bytes of the buffer the reply takes
};

// One RESP2 reply of kind simple, error or bulk string at the start of `buffer`; nullopt
// while incomplete. Other types (integers, arrays, RESP3) are errors: no command the
// prober sends answers with them. A bulk string longer than `max_bytes`, or a line that
// is still unended past `max_bytes`, is an error.
absl::StatusOr<std::optional<Reply>> ParseRespReply(std::string_view buffer, size_t max_bytes);

// A memcached text reply at the start of `buffer`: complete at a line equal to
// `terminal` ("END" for stats, "STORED" for an authentication set), whose preceding lines
// are the text (kBulk); or at an error line (kError). Nullopt while incomplete; an error
// when `buffer` holds more than `max_bytes` without the reply ending.
absl::StatusOr<std::optional<Reply>> ParseMemcachedReply(std::string_view buffer,
                                                         std::string_view terminal,
                                                         size_t max_bytes);

}  // namespace hotkey::shard

#endif  // HOTKEY_SHARD_REPLY_H_
