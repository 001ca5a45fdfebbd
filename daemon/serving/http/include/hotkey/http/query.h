// ParseQuery: the query string of a request target (after '?') as decoded name/value pairs,
// by Boost.URL (RFC 3986 section 3.4 grammar, percent-decoding, '+' as a space as HTML forms
// send it).
//
// Thread-safe (a pure function).

#ifndef HOTKEY_HTTP_QUERY_H_
#define HOTKEY_HTTP_QUERY_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace hotkey::http {

// "a=1&b=x%20y+z" gives {{"a", "1"}, {"b", "x y z"}}, in order. Empty parts ("a=1&&b=2", a
// trailing '&') are skipped; a name without '=' has the value "". A query that is not
// RFC 3986 (a malformed or truncated %-escape, a byte outside the query characters) is
// InvalidArgument, with a message that does not echo the query's bytes. Never throws but
// for std::bad_alloc. Decoded bytes are arbitrary (%00 and %ff included).
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseQuery(std::string_view query);

}  // namespace hotkey::http

#endif  // HOTKEY_HTTP_QUERY_H_
