// gzip for HTTP responses: whether a client's Accept-Encoding admits gzip (RFC 9110
// section 12.5.3), and the gzip member (RFC 1952) of a body, through zlib.
//
// Prometheus asks for gzip on every scrape. The exposition text is repetitive (metric and
// label names on every line): web_test.cc pins at least a threefold cut on a small one.
//
// Thread-safe (no state).

#ifndef HOTKEY_HTTP_GZIP_H_
#define HOTKEY_HTTP_GZIP_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace hotkey::http {

// True when `accept_encoding` lists gzip (or x-gzip, or *) with a non-zero q-value.
bool AcceptsGzip(std::string_view accept_encoding);

// `data` as one gzip member, compressed at zlib's default level. Fails only when zlib
// cannot allocate its state.
absl::StatusOr<std::string> Gzip(std::string_view data);

}  // namespace hotkey::http

#endif  // HOTKEY_HTTP_GZIP_H_
