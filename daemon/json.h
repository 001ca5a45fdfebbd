// A minimal JSON writer for the daemon's API: strings escaped per RFC 8259, numbers that
// are not finite written as null. Output only; the daemon never parses JSON.
// Thread-compatible.

#ifndef HOTKEY_DAEMON_JSON_H_
#define HOTKEY_DAEMON_JSON_H_

#include <string>
#include <string_view>

namespace hotkey::daemon {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  // In an object: the next value's name.
  JsonWriter& Key(std::string_view name);
  // `s` must be valid UTF-8 (labels are: key_label.h); control characters are escaped.
  JsonWriter& String(std::string_view s);
  JsonWriter& Number(double v);
  JsonWriter& Bool(bool v);
  JsonWriter& Null();

  const std::string& str() const { return out_; }

 private:
  void Separate();
  std::string out_;
  bool need_comma_ = false;
};

}  // namespace hotkey::daemon

#endif  // HOTKEY_DAEMON_JSON_H_
