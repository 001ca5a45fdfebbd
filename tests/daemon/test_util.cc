// Checkers and loopback clients for the daemon tests; see test_util.h.

#include "test_util.h"

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace hotkey::daemon::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((b(i + k) & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b(i + k) & 0x3F);
    }
    // The smallest code point each length may encode: anything less is overlong.
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

// ---------------------------------------------------------------------------------------
// JSON (RFC 8259), recursive descent.

namespace {

class JsonParser {
 public:
  explicit JsonParser(std::string_view s) : s_(s) {}

  std::optional<Json> ParseAll(std::string* error) {
    std::optional<Json> v = Value(0);
    if (v) {
      Ws();
      if (i_ != s_.size()) v = Fail("trailing characters");
    }
    if (!v && error) *error = error_;
    return v;
  }

 private:
  std::nullopt_t Fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at offset " + std::to_string(i_);
    return std::nullopt;
  }
  void Ws() {
    while (i_ < s_.size() &&
           (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) {
      ++i_;
    }
  }
  bool Literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  std::optional<Json> Value(int depth) {
    if (depth > 64) return Fail("nesting too deep");
    Ws();
    if (i_ >= s_.size()) return Fail("unexpected end");
    Json v;
    const char c = s_[i_];
    if (c == '{') return Object(depth);
    if (c == '[') return Array(depth);
    if (c == '"') {
      std::optional<std::string> str = String();
      if (!str) return std::nullopt;
      v.kind = Json::kString;
      v.string = *std::move(str);
      return v;
    }
    if (Literal("true")) {
      v.kind = Json::kBool;
      v.boolean = true;
      return v;
    }
    if (Literal("false")) {
      v.kind = Json::kBool;
      return v;
    }
    if (Literal("null")) return v;
    return Number();
  }

  std::optional<Json> Object(int depth) {
    ++i_;  // '{'
    Json v;
    v.kind = Json::kObject;
    Ws();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return v;
    }
    for (;;) {
      Ws();
      if (i_ >= s_.size() || s_[i_] != '"') return Fail("expected a member name");
      std::optional<std::string> name = String();
      if (!name) return std::nullopt;
      Ws();
      if (i_ >= s_.size() || s_[i_] != ':') return Fail("expected ':'");
      ++i_;
      std::optional<Json> member = Value(depth + 1);
      if (!member) return std::nullopt;
      if (!v.object.emplace(*name, *std::move(member)).second) {
        return Fail("duplicate member \"" + *name + "\"");
      }
      Ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return v;
      }
      return Fail("expected ',' or '}'");
    }
  }

  std::optional<Json> Array(int depth) {
    ++i_;  // '['
    Json v;
    v.kind = Json::kArray;
    Ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return v;
    }
    for (;;) {
      std::optional<Json> item = Value(depth + 1);
      if (!item) return std::nullopt;
      v.array.push_back(*std::move(item));
      Ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return v;
      }
      return Fail("expected ',' or ']'");
    }
  }

  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  bool Hex4(uint32_t* out) {
    if (i_ + 4 > s_.size()) return false;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_ + k];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= c - '0';
      } else if (c >= 'a' && c <= 'f') {
        v |= c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        v |= c - 'A' + 10;
      } else {
        return false;
      }
    }
    i_ += 4;
    *out = v;
    return true;
  }

  std::optional<std::string> String() {
    ++i_;  // '"'
    std::string out;
    const size_t start = i_;
    while (i_ < s_.size()) {
      const unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        // RFC 8259 section 8.1: text exchanged between systems must be UTF-8.
        if (!IsValidUtf8(out))
          return Fail("string starting at " + std::to_string(start) + " is not valid UTF-8");
        return out;
      }
      if (c < 0x20) return Fail("unescaped control character in a string");
      if (c != '\\') {
        out.push_back(static_cast<char>(c));
        ++i_;
        continue;
      }
      if (++i_ >= s_.size()) break;
      const char e = s_[i_++];
      switch (e) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          uint32_t cp;
          if (!Hex4(&cp)) return Fail("bad \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t lo;
            if (!Literal("\\u") || !Hex4(&lo) || lo < 0xDC00 || lo > 0xDFFF) {
              return Fail("unpaired surrogate");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return Fail("unpaired surrogate");
          }
          AppendUtf8(cp, &out);
          break;
        }
        default:
          return Fail("bad escape");
      }
    }
    return Fail("unterminated string");
  }

  std::optional<Json> Number() {
    const size_t start = i_;
    auto digits = [&] {
      const size_t d = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      return i_ - d;
    };
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;  // no leading zeros
    } else if (digits() == 0) {
      return Fail("expected a value");
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (digits() == 0) return Fail("expected digits after '.'");
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (digits() == 0) return Fail("expected exponent digits");
    }
    Json v;
    v.kind = Json::kNumber;
    v.number = std::strtod(std::string(s_.substr(start, i_ - start)).c_str(), nullptr);
    return v;
  }

  std::string_view s_;
  size_t i_ = 0;
  std::string error_;
};

}  // namespace

std::optional<Json> ParseJson(std::string_view text, std::string* error) {
  return JsonParser(text).ParseAll(error);
}

// ---------------------------------------------------------------------------------------
// Prometheus text format 0.0.4.

namespace {

bool IsNameStart(char c, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}
bool IsNameChar(char c, bool colon) { return IsNameStart(c, colon) || (c >= '0' && c <= '9'); }

// Consumes a metric (colon) or label name at the front of `s`.
bool TakeName(std::string_view* s, bool colon, std::string* out) {
  if (s->empty() || !IsNameStart(s->front(), colon)) return false;
  size_t n = 1;
  while (n < s->size() && IsNameChar((*s)[n], colon)) ++n;
  *out = std::string(s->substr(0, n));
  s->remove_prefix(n);
  return true;
}

// A float as Prometheus (Go's strconv.ParseFloat) reads it in the text format.
bool ParseFloatText(std::string_view t, double* out) {
  if (t == "+Inf" || t == "Inf") {
    *out = INFINITY;
    return true;
  }
  if (t == "-Inf") {
    *out = -INFINITY;
    return true;
  }
  if (t == "NaN") {
    *out = NAN;
    return true;
  }
  size_t i = 0;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
  size_t d = 0;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i, ++d;
  if (i < t.size() && t[i] == '.') {
    ++i;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i, ++d;
  }
  if (d == 0) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    size_t e = 0;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i, ++e;
    if (e == 0) return false;
  }
  if (i != t.size()) return false;
  *out = std::strtod(std::string(t).c_str(), nullptr);
  return true;
}

}  // namespace

std::vector<Sample> Exposition::Find(const std::string& name,
                                     const std::map<std::string, std::string>& match) const {
  std::vector<Sample> out;
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool ok = true;
    for (const auto& [k, v] : match) {
      auto it = s.labels.find(k);
      ok = ok && it != s.labels.end() && it->second == v;
    }
    if (ok) out.push_back(s);
  }
  return out;
}

std::optional<double> Exposition::Value(const std::string& name,
                                        const std::map<std::string, std::string>& match) const {
  const std::vector<Sample> found = Find(name, match);
  if (found.size() != 1) return std::nullopt;
  return found[0].value;
}

std::optional<Exposition> ParseExposition(std::string_view text, std::string* error) {
  Exposition out;
  auto fail = [&](size_t line_no, const std::string& why, std::string_view line) {
    if (error) {
      *error =
          "line " + std::to_string(line_no) + ": " + why + ": " + std::string(line.substr(0, 200));
    }
    return std::nullopt;
  };
  if (!IsValidUtf8(text)) return fail(0, "not valid UTF-8", "");
  if (!text.empty() && text.back() != '\n') return fail(0, "does not end with a newline", "");
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    ++line_no;
    if (line.empty()) continue;
    std::string_view rest = line;
    if (rest.front() == '#') {
      if (rest.starts_with("# HELP ") || rest.starts_with("# TYPE ")) {
        const bool is_help = rest[2] == 'H';
        rest.remove_prefix(7);
        std::string name;
        if (!TakeName(&rest, true, &name)) return fail(line_no, "bad metric name", line);
        if (is_help) {
          if (!rest.empty() && rest.front() != ' ') return fail(line_no, "bad HELP", line);
          if (!rest.empty()) rest.remove_prefix(1);
          std::string help;
          for (size_t i = 0; i < rest.size(); ++i) {
            if (rest[i] != '\\') {
              help.push_back(rest[i]);
              continue;
            }
            if (i + 1 >= rest.size() || (rest[i + 1] != '\\' && rest[i + 1] != 'n')) {
              return fail(line_no, "bad escape in HELP", line);
            }
            help.push_back(rest[++i] == 'n' ? '\n' : '\\');
          }
          if (!out.help.emplace(name, help).second) return fail(line_no, "second HELP", line);
        } else {
          static const char* kTypes[] = {"counter", "gauge", "histogram", "summary", "untyped"};
          bool ok = false;
          for (const char* t : kTypes) ok = ok || rest == std::string(" ") + t;
          if (!ok) return fail(line_no, "bad TYPE", line);
          if (!out.types.emplace(name, std::string(rest.substr(1))).second) {
            return fail(line_no, "second TYPE", line);
          }
        }
      }
      continue;  // any other comment is allowed
    }
    Sample s;
    if (!TakeName(&rest, true, &s.name)) return fail(line_no, "bad metric name", line);
    if (!rest.empty() && rest.front() == '{') {
      rest.remove_prefix(1);
      while (!rest.empty() && rest.front() != '}') {
        std::string label;
        if (!TakeName(&rest, false, &label)) return fail(line_no, "bad label name", line);
        if (!rest.starts_with("=\"")) return fail(line_no, "expected =\" after label", line);
        rest.remove_prefix(2);
        std::string value;
        bool closed = false;
        while (!rest.empty()) {
          const char c = rest.front();
          rest.remove_prefix(1);
          if (c == '"') {
            closed = true;
            break;
          }
          if (c != '\\') {
            value.push_back(c);
            continue;
          }
          if (rest.empty()) break;
          const char e = rest.front();
          rest.remove_prefix(1);
          if (e == '\\') {
            value.push_back('\\');
          } else if (e == '"') {
            value.push_back('"');
          } else if (e == 'n') {
            value.push_back('\n');
          } else {
            return fail(line_no, "bad escape in label value", line);
          }
        }
        if (!closed) return fail(line_no, "unterminated label value", line);
        if (!s.labels.emplace(label, value).second) {
          return fail(line_no, "repeated label " + label, line);
        }
        if (!rest.empty() && rest.front() == ',') rest.remove_prefix(1);
      }
      if (rest.empty()) return fail(line_no, "unterminated label set", line);
      rest.remove_prefix(1);  // '}'
    }
    if (rest.empty() || rest.front() != ' ') return fail(line_no, "expected a space", line);
    rest.remove_prefix(1);
    const size_t sp = rest.find(' ');
    if (!ParseFloatText(rest.substr(0, sp), &s.value)) return fail(line_no, "bad value", line);
    if (sp != std::string_view::npos) {
      const std::string_view ts = rest.substr(sp + 1);
      size_t i = ts.starts_with("-") ? 1 : 0;
      if (i == ts.size()) return fail(line_no, "bad timestamp", line);
      for (; i < ts.size(); ++i) {
        if (ts[i] < '0' || ts[i] > '9') return fail(line_no, "bad timestamp", line);
      }
    }
    out.samples.push_back(std::move(s));
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Clients.

HttpReply HttpCall(uint16_t port, const std::string& method, const std::string& target,
                   const std::string& body) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  stream.expires_after(std::chrono::seconds(5));
  stream.connect(asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), port));
  http::request<http::string_body> req(http::string_to_verb(method), target, 11);
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::connection, "close");
  req.body() = body;
  req.prepare_payload();
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  http::read(stream, buffer, parser);
  HttpReply r;
  r.status = parser.get().result_int();
  r.content_type = std::string(parser.get()[http::field::content_type]);
  r.body = parser.get().body();
  beast::error_code ec;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  return r;
}

UdpClient::UdpClient(asio::ip::udp::endpoint to) : socket_(io_), to_(to) {
  socket_.open(to.protocol());
  socket_.bind(asio::ip::udp::endpoint(asio::ip::address_v4::loopback(), 0));
}

void UdpClient::Send(std::string_view datagram) {
  socket_.send_to(asio::buffer(datagram.data(), datagram.size()), to_);
}

bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace hotkey::daemon::testing
