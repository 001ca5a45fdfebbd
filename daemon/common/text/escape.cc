#include "hotkey/text/escape.h"

#include <algorithm>
#include <cstdint>

#include "hotkey/text/enum_names.h"
#include "hotkey/text/utf8.h"

namespace hotkey::text {

namespace {

bool Escaped(uint32_t cp, bool escape_backslash) {
  return (cp == '\\' && escape_backslash) || IsEscapedCodePoint(cp);
}

void AppendHex(unsigned char c, std::string* out) {
  constexpr char kDigits[] = "0123456789abcdef";
  out->append("\\x");
  out->push_back(kDigits[c >> 4]);
  out->push_back(kDigits[c & 0xF]);
}

}  // namespace

bool IsEscapedCodePoint(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x00AD || cp == 0x061C ||
         (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) ||
         (cp >= 0x2060 && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF;
}

std::string Escape(std::string_view bytes, const EscapeOptions& options, bool* cut) {
  std::string out;
  out.reserve(std::min(bytes.size(), options.max_bytes));
  bool left_out = false;
  while (!bytes.empty()) {
    const size_t n = Utf8SequenceLength(bytes);
    const bool plain = n > 0 && !Escaped(Utf8CodePoint(bytes, n), options.escape_backslash);
    // Not plain: every byte of the character, or the one byte that starts no character.
    const size_t taken = n > 0 ? n : 1;
    const size_t need = plain ? n : 4 * taken;
    if (need > options.max_bytes - out.size()) {
      left_out = true;
      break;
    }
    if (plain) {
      out.append(bytes.substr(0, n));
    } else {
      for (size_t i = 0; i < taken; ++i) AppendHex(static_cast<unsigned char>(bytes[i]), &out);
    }
    bytes.remove_prefix(taken);
  }
  if (cut != nullptr) *cut = left_out;
  return out;
}

std::string Quote(std::string_view bytes) {
  std::string out = "\"";
  out.append(Escape(bytes, {.max_bytes = kQuotedMaxBytes}));
  out.push_back('"');
  return out;
}

namespace internal {

absl::Status UnknownName(std::string_view text, std::string_view what, std::string_view names) {
  std::string message = Quote(text);
  message.append(" is not a ").append(what).append(" (").append(names).append(")");
  return absl::InvalidArgumentError(message);
}

}  // namespace internal

}  // namespace hotkey::text
