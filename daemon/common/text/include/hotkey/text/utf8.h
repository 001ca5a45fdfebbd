// UTF-8 checks for text built from arbitrary bytes (keys, request bytes): the escaper, the
// JSON writer and the log decide what is valid by one rule, RFC 3629.
//
// Thread-safe (pure functions).

#ifndef HOTKEY_TEXT_UTF8_H_
#define HOTKEY_TEXT_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hotkey::text {

// Length of the valid UTF-8 sequence at the start of `s` (1-4), or 0 if `s` is empty or
// does not start with one. Rejects overlong forms, surrogates and code points above
// U+10FFFF (RFC 3629).
size_t Utf8SequenceLength(std::string_view s);

// The code point of the sequence of `n` bytes at the start of `s`, where n is what
// Utf8SequenceLength(s) returned (1-4).
uint32_t Utf8CodePoint(std::string_view s, size_t n);

// True if all of `s` is valid UTF-8.
bool IsValidUtf8(std::string_view s);

// `bytes` with every byte that does not start a valid sequence replaced by U+FFFD (the
// replacement character); valid UTF-8 comes back unchanged. O(|bytes|).
std::string ToValidUtf8(std::string_view bytes);

}  // namespace hotkey::text

#endif  // HOTKEY_TEXT_UTF8_H_
