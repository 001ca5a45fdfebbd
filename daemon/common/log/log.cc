#include "hotkey/log/log.h"

#include <boost/json/object.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hotkey/text/escape.h"
#include "hotkey/text/json.h"
#include "hotkey/text/utf8.h"

namespace hotkey::log {

namespace {

bool IsBareValue(std::string_view v) {
  if (v.empty()) return false;
  for (unsigned char c : v) {
    if (c <= ' ' || c == '=' || c == '"' || c == '\\' || c >= 0x7f) return false;
  }
  return true;
}

bool IsKeyByte(unsigned char c) { return c > ' ' && c != '=' && c != '"' && c != 0x7f; }

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Appends code point `cp` (below U+10000, not a surrogate: checked by the caller) as UTF-8.
void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

}  // namespace

std::string LogfmtQuote(std::string_view value) {
  std::string out;
  out.reserve(value.size() + 2);
  out.push_back('"');
  while (!value.empty()) {
    const unsigned char c = value[0];
    if (c >= 0x80) {
      const size_t n = text::Utf8SequenceLength(value);
      if (n == 0) {
        out += "\xef\xbf\xbd";  // U+FFFD
        value.remove_prefix(1);
      } else if (const uint32_t cp = text::Utf8CodePoint(value, n); text::IsEscapedCodePoint(cp)) {
        // C1 controls, U+2028, U+2029 and the invisible formatting characters: as \uXXXX,
        // as the C0 controls below, so no reader takes them for a line break or a control.
        absl::StrAppendFormat(&out, "\\u%04x", cp);
        value.remove_prefix(n);
      } else {
        out.append(value.substr(0, n));
        value.remove_prefix(n);
      }
      continue;
    }
    value.remove_prefix(1);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < ' ' || c == 0x7f) {
          absl::StrAppendFormat(&out, "\\u%04x", static_cast<unsigned>(c));
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  out.push_back('"');
  return out;
}

LogLine::LogLine(absl::Time ts, std::string_view level, std::string_view msg) {
  text_ = "ts=" + absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", ts, absl::UTCTimeZone());
  Value("level", level);
  Quoted("msg", msg);
}

LogLine& LogLine::Quoted(std::string_view key, std::string_view value) {
  text_.append(" ").append(key).append("=").append(LogfmtQuote(value));
  return *this;
}

LogLine& LogLine::Value(std::string_view key, std::string_view value) {
  if (!IsBareValue(value)) return Quoted(key, value);
  text_.append(" ").append(key).append("=").append(value);
  return *this;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseLogfmt(
    std::string_view line) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!text::IsValidUtf8(line)) return absl::InvalidArgumentError("not valid UTF-8");
  size_t i = 0;
  while (i < line.size()) {
    if (!out.empty()) {
      if (line[i] != ' ') return absl::InvalidArgumentError(absl::StrCat("no space at ", i));
      ++i;
    }
    const size_t key_start = i;
    while (i < line.size() && IsKeyByte(line[i])) ++i;
    if (i == key_start) return absl::InvalidArgumentError(absl::StrCat("no key at byte ", i));
    std::string key(line.substr(key_start, i - key_start));
    if (i >= line.size() || line[i] != '=') {
      return absl::InvalidArgumentError(absl::StrCat("no '=' after key ", key));
    }
    ++i;
    std::string value;
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        const unsigned char c = line[i];
        if (c == '"') {
          closed = true;
          ++i;
          break;
        }
        if (c < ' ' || c == 0x7f) {
          return absl::InvalidArgumentError(absl::StrCat("raw control character in ", key));
        }
        if (c != '\\') {
          value.push_back(static_cast<char>(c));
          ++i;
          continue;
        }
        if (i + 1 >= line.size()) break;
        const char e = line[i + 1];
        i += 2;
        switch (e) {
          case '"':
            value.push_back('"');
            break;
          case '\\':
            value.push_back('\\');
            break;
          case 'n':
            value.push_back('\n');
            break;
          case 'r':
            value.push_back('\r');
            break;
          case 't':
            value.push_back('\t');
            break;
          case 'u': {
            uint32_t cp = 0;
            for (int k = 0; k < 4; ++k) {
              const int d = i < line.size() ? HexDigit(line[i]) : -1;
              if (d < 0) return absl::InvalidArgumentError(absl::StrCat("bad \\u in ", key));
              cp = cp * 16 + static_cast<uint32_t>(d);
              ++i;
            }
            if (cp >= 0xd800 && cp <= 0xdfff) {
              return absl::InvalidArgumentError(absl::StrCat("surrogate \\u in ", key));
            }
            AppendUtf8(cp, &value);
            break;
          }
          default:
            return absl::InvalidArgumentError(
                absl::StrCat("bad escape \\", std::string(1, e), " in ", key));
        }
      }
      if (!closed) return absl::InvalidArgumentError(absl::StrCat("unclosed quote in ", key));
    } else {
      const size_t value_start = i;
      while (i < line.size() && line[i] != ' ') {
        const unsigned char c = line[i];
        if (c < ' ' || c == '=' || c == '"' || c == 0x7f) {
          return absl::InvalidArgumentError(absl::StrCat("bad byte in bare value of ", key));
        }
        ++i;
      }
      value = std::string(line.substr(value_start, i - value_start));
    }
    out.emplace_back(std::move(key), std::move(value));
  }
  if (out.empty()) return absl::InvalidArgumentError("empty line");
  return out;
}

std::string LogfmtToJson(std::string_view line) {
  boost::json::object o;
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> fields = ParseLogfmt(line);
  if (!fields.ok()) {
    o["level"] = "error";
    o["msg"] = "unparsable log line";
    o["line"] = std::string(line);
  } else {
    for (auto& [k, v] : *fields) o[k] = std::move(v);
  }
  return text::JsonText(std::move(o));
}

}  // namespace hotkey::log
