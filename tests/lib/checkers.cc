// Checkers and loopback clients for the daemon tests; see test_util.h.

#include "checkers.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/basic_parser_impl.hpp>

namespace hotkey::testing {

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
// JSON (RFC 8259): Boost.JSON's parser, strict options, with a handler that builds a Json.
//
// The handler rather than boost::json::parse, for two checks parse does not make: a
// duplicate member name is an error (parse keeps the last), and numbers are read from their
// text with std::from_chars, correctly rounded (Boost.JSON 1.81's own conversion may be off
// by one unit in the last place, which would hide or fake a round-trip bug).

namespace {

namespace json = boost::json;

class JsonBuilder {
 public:
  // No limits beyond the parser's depth limit.
  static constexpr size_t max_object_size = static_cast<size_t>(-1);
  static constexpr size_t max_array_size = static_cast<size_t>(-1);
  static constexpr size_t max_key_size = static_cast<size_t>(-1);
  static constexpr size_t max_string_size = static_cast<size_t>(-1);

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_array_begin(json::error_code&) { return Open(Json::kArray); }
  bool on_array_end(size_t, json::error_code& ec) { return Close(ec); }
  bool on_object_begin(json::error_code&) { return Open(Json::kObject); }
  bool on_object_end(size_t, json::error_code& ec) { return Close(ec); }
  bool on_string_part(json::string_view s, size_t, json::error_code&) {
    text_.append(s.data(), s.size());
    return true;
  }
  bool on_string(json::string_view s, size_t, json::error_code& ec) {
    Json v;
    v.kind = Json::kString;
    v.string = TakeText(s);
    return CheckUtf8(v.string, ec) && Add(std::move(v), ec);
  }
  bool on_key_part(json::string_view s, size_t, json::error_code&) {
    text_.append(s.data(), s.size());
    return true;
  }
  bool on_key(json::string_view s, size_t, json::error_code& ec) {
    names_.push_back(TakeText(s));
    return CheckUtf8(names_.back(), ec);
  }
  bool on_number_part(json::string_view s, json::error_code&) {
    text_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(int64_t, json::string_view s, json::error_code& ec) { return Number(s, ec); }
  bool on_uint64(uint64_t, json::string_view s, json::error_code& ec) { return Number(s, ec); }
  bool on_double(double, json::string_view s, json::error_code& ec) { return Number(s, ec); }
  bool on_bool(bool b, json::error_code& ec) {
    Json v;
    v.kind = Json::kBool;
    v.boolean = b;
    return Add(std::move(v), ec);
  }
  bool on_null(json::error_code& ec) { return Add(Json(), ec); }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

  std::optional<Json>& result() { return result_; }
  const std::string& error() const { return error_; }

 private:
  std::string TakeText(json::string_view last) {
    text_.append(last.data(), last.size());
    std::string out = std::move(text_);
    text_.clear();
    return out;
  }
  // RFC 8259 section 8.1, checked again by this file's own UTF-8 checker, independent of
  // Boost.JSON's.
  bool CheckUtf8(const std::string& s, json::error_code& ec) {
    return IsValidUtf8(s) || Fail("a string is not valid UTF-8", ec);
  }
  bool Fail(const std::string& why, json::error_code& ec) {
    error_ = why;
    ec = make_error_code(boost::system::errc::invalid_argument);
    return false;
  }
  bool Open(Json::Kind kind) {
    open_.emplace_back();
    open_.back().kind = kind;
    return true;
  }
  bool Close(json::error_code& ec) {
    Json v = std::move(open_.back());
    open_.pop_back();
    return Add(std::move(v), ec);
  }
  bool Number(json::string_view last, json::error_code& ec) {
    const std::string t = TakeText(last);
    Json v;
    v.kind = Json::kNumber;
    const std::from_chars_result r = std::from_chars(t.data(), t.data() + t.size(), v.number);
    if (r.ec != std::errc() || r.ptr != t.data() + t.size()) {
      return Fail("number " + t + " is out of range", ec);
    }
    return Add(std::move(v), ec);
  }
  bool Add(Json v, json::error_code& ec) {
    if (open_.empty()) {
      result_ = std::move(v);
      return true;
    }
    Json& parent = open_.back();
    if (parent.kind == Json::kArray) {
      parent.array.push_back(std::move(v));
      return true;
    }
    std::string name = std::move(names_.back());
    names_.pop_back();
    if (!parent.object.emplace(name, std::move(v)).second) {
      return Fail("duplicate member \"" + name + "\"", ec);
    }
    return true;
  }

  std::vector<Json> open_;          // the arrays and objects being filled, innermost last
  std::vector<std::string> names_;  // the pending member name of each open object
  std::string text_;                // the string, name or number read so far
  std::optional<Json> result_;
  std::string error_;
};

}  // namespace

std::optional<Json> ParseJson(std::string_view text, std::string* error) {
  json::parse_options strict;  // the defaults are RFC 8259: no comments, no trailing commas,
  strict.max_depth = 64;       // valid UTF-8 only
  json::basic_parser<JsonBuilder> parser(strict);
  json::error_code ec;
  const size_t n = parser.write_some(false, text.data(), text.size(), ec);
  std::string why;
  if (ec) {
    why = parser.handler().error().empty() ? ec.message() : parser.handler().error();
  } else if (n != text.size()) {
    why = "trailing characters";
  }
  if (!why.empty()) {
    if (error) *error = why + " at offset " + std::to_string(n);
    return std::nullopt;
  }
  return std::move(parser.handler().result());
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

// A float as Prometheus (Go's strconv.ParseFloat) reads it in the text format: the special
// values in any case (prometheus-cpp writes NaN as "Nan").
bool ParseFloatText(std::string_view t, double* out) {
  const auto is = [t](std::string_view word) {
    return t.size() == word.size() &&
           std::equal(t.begin(), t.end(), word.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) ==
                    std::tolower(static_cast<unsigned char>(b));
           });
  };
  if (is("+Inf") || is("Inf")) {
    *out = INFINITY;
    return true;
  }
  if (is("-Inf")) {
    *out = -INFINITY;
    return true;
  }
  if (is("NaN")) {
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

}  // namespace hotkey::testing
