// The one escaper of hotkeyd: arbitrary bytes (a key, a request's bytes, text a user gave)
// made into readable text that is valid UTF-8 and that nothing which shows it acts on. Key
// labels (in /metrics, the API, the page, the feed and the log), `hotkeyd top`'s screen and
// the names that ParseName() and config::internal::QuoteForError() quote in their errors
// all write bytes through Escape(), so a byte reads the same wherever it is shown.
//
// Valid UTF-8 is kept as it is, except these, written \xHH (two lowercase hex digits) for
// each of their bytes:
//   - each byte that does not start a valid sequence (RFC 3629: text::Utf8SequenceLength);
//   - C0 controls, DEL and C1 controls (U+0000-U+001F, U+007F-U+009F): a terminal acts on
//     them (ESC starts a control sequence, U+009B is a one-character CSI on some);
//   - Unicode's Bidi_Control characters (U+061C, U+200E, U+200F, U+202A-U+202E,
//     U+2066-U+2069) and the line and paragraph separators (U+2028, U+2029): shown as they
//     are, they reorder or break the text around them, so U+202E makes "user:1337:exe.gpj"
//     pass for another key, and a reader that splits lines as Unicode does (Python's
//     str.splitlines(), JavaScript's line terminators) takes U+0085, U+2028 and U+2029 for
//     line breaks;
//   - the invisible formatting characters: the zero-width space, joiners and marks
//     (U+200B-U+200F), the word joiner and invisible operators (U+2060-U+2064), the
//     byte-order mark (U+FEFF) and the soft hyphen (U+00AD): each shows as nothing, so
//     "user:1" and "user:\u200b1" would read as one key while being two;
//   - the backslash, unless EscapeOptions keeps it. Escaped, distinct bytes always give
//     distinct text (a key "\x41" cannot pass for "A").
// Every byte escaped is one this list names, so text already escaped (hotkeyd's labels) is
// unchanged when escaped again with the backslash kept.
//
// Cost: O(|bytes|), one allocation for the result. Thread-safe (a pure function).

#ifndef HOTKEY_TEXT_ESCAPE_H_
#define HOTKEY_TEXT_ESCAPE_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace hotkey::text {

struct EscapeOptions {
  // Write '\' as \x5c. Off for text that may already hold escapes and is only being made
  // safe to show (a label read back from hotkeyd's API).
  bool escape_backslash = true;
  // The result is never longer: it ends before the first character or escape that would
  // not fit whole.
  size_t max_bytes = std::numeric_limits<size_t>::max();
};

// Whether Escape() writes code point `cp` as \xHH bytes, whatever EscapeOptions say (the
// backslash aside): the list above. Every writer that keeps text as text (the log's
// logfmt, JSON) escapes the same code points its own way, from this one list.
bool IsEscapedCodePoint(uint32_t cp);

// `bytes` escaped as above. Sets *cut (when given) to whether max_bytes left some out.
std::string Escape(std::string_view bytes, const EscapeOptions& options = {}, bool* cut = nullptr);

// How a message shows text it was given (a flag's value, a name not in a table): escaped,
// cut to kQuotedMaxBytes, in double quotes. Quote("a\nb") is the 9 characters "a\x0ab".
inline constexpr size_t kQuotedMaxBytes = 64;
std::string Quote(std::string_view bytes);

}  // namespace hotkey::text

#endif  // HOTKEY_TEXT_ESCAPE_H_
