#include "json.h"

#include <charconv>
#include <cmath>

#include "absl/strings/str_format.h"

namespace hotkey::daemon {

void JsonWriter::Separate() {
  if (need_comma_) out_.push_back(',');
  need_comma_ = true;
}

JsonWriter& JsonWriter::BeginObject() {
  Separate();
  out_.push_back('{');
  need_comma_ = false;
  return *this;
}
JsonWriter& JsonWriter::EndObject() {
  out_.push_back('}');
  need_comma_ = true;
  return *this;
}
JsonWriter& JsonWriter::BeginArray() {
  Separate();
  out_.push_back('[');
  need_comma_ = false;
  return *this;
}
JsonWriter& JsonWriter::EndArray() {
  out_.push_back(']');
  need_comma_ = true;
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view name) {
  String(name);
  out_.push_back(':');
  need_comma_ = false;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view s) {
  Separate();
  out_.push_back('"');
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out_ += "\\\"";
        break;
      case '\\':
        out_ += "\\\\";
        break;
      case '\n':
        out_ += "\\n";
        break;
      case '\t':
        out_ += "\\t";
        break;
      case '\r':
        out_ += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          absl::StrAppendFormat(&out_, "\\u%04x", c);
        } else {
          out_.push_back(ch);
        }
    }
  }
  out_.push_back('"');
  return *this;
}

JsonWriter& JsonWriter::Number(double v) {
  if (!std::isfinite(v)) return Null();
  Separate();
  // The shortest text that reads back as exactly `v`: counters stay exact (%.6g turned
  // 1234567 events into 1.23457e+06) and ratios are not padded with noise digits.
  // to_chars writes "1e+06"-style exponents and no "inf"/"nan" here: valid JSON numbers.
  char buf[32];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool v) {
  Separate();
  out_ += v ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Null() {
  Separate();
  out_ += "null";
  return *this;
}

}  // namespace hotkey::daemon
