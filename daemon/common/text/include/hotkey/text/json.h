// JSON bodies of the daemon's API: built as Boost.JSON values, written by JsonText().
//
// JsonText() is the one place where a value becomes text, and it makes the text valid JSON
// (RFC 8259) whatever the value holds:
//   - Every string and member name becomes valid UTF-8 (RFC 8259 section 8.1). They are
//     built from keys, labels and request bytes, which are arbitrary bytes, and Boost.JSON
//     writes a string's bytes without checking them. Each byte that does not start a valid
//     sequence (RFC 3629, the key labeler's rule) becomes U+FFFD; valid text is unchanged.
//   - Every character text::IsEscapedCodePoint() names that Boost.JSON writes raw (C1
//     controls, U+2028, U+2029, the bidirectional and invisible formatting characters) is
//     written \uXXXX: the answer then holds no character a reader takes for a line break or
//     a control, and reads back as the same string.
//   - A double that is not finite becomes null: JSON has no infinity or NaN, and Boost.JSON
//     1.81 writes `Infinity` and `NaN`.
//   - A double holding a whole number below 2^53 in magnitude is written as an integer
//     (1234567, where Boost.JSON writes a double as 1.234567E6); every other double is
//     written by Boost.JSON in its shortest form that reads back as exactly the same double
//     (3E-1 for 0.3).
//
// Cost: one pass over the value to check it, plus Boost.JSON's serializer; a copy only of
// the strings that need repair. Thread-compatible.

#ifndef HOTKEY_TEXT_JSON_H_
#define HOTKEY_TEXT_JSON_H_

#include <string>

#include <boost/json/value.hpp>

namespace hotkey::text {

// `v` as JSON text, repaired as above.
std::string JsonText(boost::json::value v);

}  // namespace hotkey::text

#endif  // HOTKEY_TEXT_JSON_H_
