#include "hotkey/text/json.h"

#include <cmath>
#include <cstdint>
#include <string_view>

#include <boost/json/serialize.hpp>

#include "hotkey/text/escape.h"
#include "hotkey/text/utf8.h"

namespace hotkey::text {

namespace json = boost::json;

namespace {

// Doubles of magnitude below 2^53 are exact integers when whole, so the int64 written holds
// the same value.
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

std::string_view View(json::string_view s) { return std::string_view(s.data(), s.size()); }

void Repair(json::value& v) {
  switch (v.kind()) {
    case json::kind::string: {
      const std::string_view s = View(v.get_string());
      if (!IsValidUtf8(s)) v = ToValidUtf8(s);
      break;
    }
    case json::kind::double_: {
      const double d = v.get_double();
      if (!std::isfinite(d)) {
        v = nullptr;
      } else if (std::trunc(d) == d && std::fabs(d) < kMaxExactInteger &&
                 !(d == 0 && std::signbit(d))) {  // -0.0 stays a double: -0E0
        v = static_cast<int64_t>(d);
      }
      break;
    }
    case json::kind::array:
      for (json::value& item : v.get_array()) Repair(item);
      break;
    case json::kind::object: {
      json::object& o = v.get_object();
      bool names_valid = true;
      for (json::key_value_pair& member : o) {
        Repair(member.value());
        names_valid = names_valid && IsValidUtf8(View(member.key()));
      }
      if (!names_valid) {
        // Member names are immutable in place: rebuild the object in the same order.
        // Two names that differ only in invalid bytes may now be equal; the first is kept.
        json::object repaired;
        repaired.reserve(o.size());
        for (json::key_value_pair& member : o) {
          repaired.emplace(ToValidUtf8(View(member.key())), std::move(member.value()));
        }
        o = std::move(repaired);
      }
      break;
    }
    default:
      break;
  }
}

// `text` (valid JSON, valid UTF-8) with each character IsEscapedCodePoint() names written
// \uXXXX. Boost.JSON escapes only what RFC 8259 requires (U+0000-U+001F), so U+0085, U+2028
// or U+2029 would reach the reader raw, and a reader that splits lines as Unicode does would
// break the answer there. Such characters occur only inside strings (the rest of JSON is
// ASCII), where \uXXXX reads back as the same character. All of them are below U+10000.
std::string EscapeInvisible(std::string text) {
  // Their UTF-8 lead bytes: 0xC2 (U+0080-U+00BF), 0xD8 (U+061C), 0xE2 (U+2000-U+2FFF),
  // 0xEF (U+FEFF). Most answers hold none, and are returned as they are.
  if (text.find_first_of("\xc2\xd8\xe2\xef") == std::string::npos) return text;
  std::string out;
  out.reserve(text.size() + 16);
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t n = static_cast<unsigned char>(rest[0]) < 0x80 ? 1 : Utf8SequenceLength(rest);
    const uint32_t cp = n > 1 ? Utf8CodePoint(rest, n) : 0;
    if (n > 1 && IsEscapedCodePoint(cp)) {
      constexpr char kDigits[] = "0123456789abcdef";
      out += "\\u";
      for (int shift = 12; shift >= 0; shift -= 4) out.push_back(kDigits[(cp >> shift) & 0xF]);
    } else {
      out.append(rest.substr(0, n == 0 ? 1 : n));
    }
    rest.remove_prefix(n == 0 ? 1 : n);
  }
  return out;
}

}  // namespace

std::string JsonText(json::value v) {
  Repair(v);
  return EscapeInvisible(json::serialize(v));
}

}  // namespace hotkey::text
