#include "hotkey/top/render.h"

#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace hotkey::top {
namespace {

// An /api/v1/top answer as hotkeyd's demo gives it, cut to the fields the screen reads (and
// a few it does not).
const char* const kDemo = R"({
  "time": "2026-12-04T14:39:18.227Z",
  "unit": "ops",
  "ops_per_second": {"read": 5682.98, "write": 3810.44},
  "tracked_keys": 200,
  "hot_keys": 1,
  "epsilon": 0.0013,
  "keys": [
    {"key": "post:viral:likes", "truncated": false, "share": 0.25250478,
     "write_ratio": 0.9477, "ops_per_second": {"read": 125.25, "write": 2271.89},
     "hot": true, "hot_since": "2026-12-04T14:36:15.972Z", "advice": "split"},
    {"key": "key:1", "truncated": false, "share": 0.0227, "write_ratio": 0.1,
     "ops_per_second": {"read": 200, "write": 22.5}, "hot": false, "advice": null}
  ]
})";

RenderOptions Opts(size_t width, size_t height = 0) {
  return {.width = width, .height = height, .source = ""};
}

std::string Keys(int n, std::string_view extra = "") {
  std::string body = R"({"time": "2026-12-04T14:39:18Z", "keys": [)";
  for (int i = 0; i < n; ++i) {
    if (i > 0) body += ",";
    body += R"({"key": "k)" + std::to_string(i) + std::string(extra) +
            R"(", "share": 0.01, "write_ratio": 0, "ops_per_second": {"read": 1, "write": 0},
                "hot": false, "advice": "none"})";
  }
  return body + "]}";
}

TEST_CASE("Render: the demo's answer gives the totals, a heading and one row per key", "[top]") {
  const std::vector<std::string> lines =
      Render(kDemo, {.width = 100, .height = 0, .source = "http://127.0.0.1:10110"});
  // total 5682.98 + 3810.44 = 9493.42 -> "9.5k/s"; the hot key has been hot from 14:36:15.972
  // to 14:39:18.227, 182.255 s -> "3m02s"; its ops 125.25 + 2271.89 = 2397.14 -> "2.4k/s";
  // key:1's 222.5 -> "222/s" (rounded to nearest: 222.5 is a binary tie, printf gives even).
  REQUIRE(lines.size() == 6);
  CHECK(lines[0] == "hotkeyd top  http://127.0.0.1:10110  14:39:18 UTC");
  CHECK(lines[1] == "total 9.5k/s  read 5.7k/s  write 3.8k/s  keys 200 tracked, 1 hot");
  CHECK(lines[2] == "");
  CHECK(lines[3] == " SHARE      OPS/S  WRITE     HOT  FIX          KEY");
  CHECK(lines[4] == " 25.3%     2.4k/s    95%   3m02s  split        post:viral:likes");
  CHECK(lines[5] == "  2.3%      222/s    10%       -  -            key:1");
}

TEST_CASE("Render: a key that is not hot shows no fix, whatever its advice", "[top]") {
  const std::vector<std::string> lines = Render(R"({"keys": [
      {"key": "hot", "share": 0.3, "hot": true, "advice": "cache"},
      {"key": "cool", "share": 0.02, "hot": false, "advice": "isolate"}]})",
                                                Opts(80));
  REQUIRE(lines.size() == 6);
  CHECK(lines[4].find("cache") != std::string::npos);
  CHECK(lines[5].find("isolate") == std::string::npos);
  CHECK(lines[5].ends_with("-            cool"));
}

TEST_CASE("Render: rows are sorted by the share shown, largest first", "[top]") {
  // hotkeyd lists keys by decayed share; the screen orders by its SHARE column. Equal shares
  // keep the answer's order, keys without a share go last.
  const std::vector<std::string> lines = Render(R"({"keys": [
      {"key": "a", "share": 0.248}, {"key": "none"}, {"key": "b", "share": 0.251},
      {"key": "c", "share": 0.1}, {"key": "d", "share": 0.1}]})",
                                                Opts(80));
  REQUIRE(lines.size() == 9);
  CHECK(lines[4].ends_with(" b"));
  CHECK(lines[5].ends_with(" a"));
  CHECK(lines[6].ends_with(" c"));
  CHECK(lines[7].ends_with(" d"));
  CHECK(lines[8].ends_with(" none"));
}

TEST_CASE("Render: no line is wider than the width, whatever the keys hold", "[top]") {
  // Wide characters, combining marks, escapes and a long key: each width from 1 to 130.
  const std::string body = R"({"time": "2026-12-04T14:39:18Z", "keys": [
    {"key": "\u952e\u952e\u952e:e\u0301:\u001b[2J:)" +
                           std::string(200, 'x') +
                           R"(", "share": 0.5, "hot": false},
    {"key": "plain", "share": 0.25, "hot": true, "hot_since": "2026-12-04T14:39:17Z"}]})";
  for (size_t width = 1; width <= 130; ++width) {
    for (const std::string& line : Render(body, {.width = width, .height = 0, .source = "s"})) {
      INFO("width " << width << ": " << line);
      CHECK(DisplayWidth(line) <= width);
    }
  }
}

TEST_CASE("Render: a long key is cut to the terminal's width with a marker", "[top]") {
  const std::string body =
      R"({"keys": [{"key": ")" + std::string(100, 'a') + R"(", "share": 0.5}]})";
  const std::vector<std::string> lines = Render(body, {.width = 80, .height = 0, .source = "s"});
  REQUIRE(lines.size() == 5);
  // 6 + 9 + 5 + 6 + 11 columns of figures and fix, 2 between each and before the key: 47;
  // then 32 of the key and the marker: 80.
  CHECK(lines[4] ==
        " 50.0%          -      -       -  -            " + std::string(32, 'a') + "\u2026");
  CHECK(DisplayWidth(lines[4]) == 80);
}

TEST_CASE("Render: control bytes in a key are escaped, never sent to the terminal", "[top]") {
  // ESC (a colour change), a C1 CSI (U+009B), a right-to-left override (U+202E), a newline.
  const std::string body =
      R"({"keys": [{"key": "evil\u001b[31m\u009b2J\u202eabc\ndef", "share": 0.5}]})";
  const std::vector<std::string> lines = Render(body, {.width = 200, .height = 0, .source = "s"});
  REQUIRE(lines.size() == 5);
  CHECK(lines[4].ends_with(R"(evil\x1b[31m\xc2\x9b2J\xe2\x80\xaeabc\x0adef)"));
  for (const std::string& line : lines) {
    for (unsigned char c : line) CHECK((c >= 0x20 && c != 0x7f));
  }
}

TEST_CASE("Render: a key the tracker kept a prefix of ends with the cut marker", "[top]") {
  const std::vector<std::string> lines =
      Render(R"({"keys": [{"key": "session:12", "truncated": true, "share": 0.5}]})", Opts(80));
  REQUIRE(lines.size() == 5);
  CHECK(lines[4].ends_with("session:12\u2026"));
}

TEST_CASE("Render: an empty key set says so under the totals", "[top]") {
  const std::vector<std::string> lines =
      Render(R"({"time": "2026-12-04T14:39:18Z", "ops_per_second": {"read": 0, "write": 0},
                 "tracked_keys": 0, "hot_keys": 0, "keys": []})",
             {.width = 80, .height = 0, .source = "s"});
  REQUIRE(lines.size() == 4);
  CHECK(lines[1] == "total 0.0/s  read 0.0/s  write 0.0/s  keys 0 tracked, 0 hot");
  CHECK(lines[3] == "no keys to show yet (none above the exported minimum share)");
}

TEST_CASE("Render: hotkeyd's error answer is shown as its message", "[top]") {
  const std::vector<std::string> lines =
      Render(R"({"error":"no snapshot yet"})", {.width = 80, .height = 0, .source = "http://h:1"});
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "hotkeyd top  http://h:1");
  CHECK(lines[1] == "hotkeyd answered: no snapshot yet");
}

TEST_CASE("Render: an answer that is not JSON, or has no keys list, says so", "[top]") {
  std::vector<std::string> lines = Render("<html>\x1b[2J", Opts(200));
  REQUIRE(lines.size() == 2);
  CHECK(lines[1].starts_with("the answer is not JSON ("));
  CHECK(lines[1].ends_with(R"(): <html>\x1b[2J)"));
  for (const char* body : {"{}", "[1, 2]", R"({"keys": 3})", "null", ""}) {
    lines = Render(body, Opts(200));
    REQUIRE(lines.size() == 2);
    INFO(body);
    CHECK((lines[1].starts_with("the answer is not JSON") ||
           lines[1] == "the answer has no \"keys\" list: is --url a hotkeyd?"));
  }
  CHECK(Render("{}", Opts(200))[1] == "the answer has no \"keys\" list: is --url a hotkeyd?");
}

TEST_CASE("Render: missing or mistyped fields show as '-'", "[top]") {
  const std::vector<std::string> lines = Render(
      R"({"ops_per_second": "fast", "keys": [{"key": 5, "share": "x", "hot": "yes",
          "write_ratio": null, "ops_per_second": [], "advice": 7}, 3]})",
      Opts(80));
  REQUIRE(lines.size() == 6);
  CHECK(lines[0] == "hotkeyd top  ");
  CHECK(lines[1] == "total -  read -  write -");
  CHECK(lines[4] == "     -          -      -       -  -            -");
  CHECK(lines[5] == "     -          -      -       -  -            -");
}

TEST_CASE("Render: a hot key without a parsable hot_since shows 'yes'", "[top]") {
  const std::vector<std::string> lines = Render(
      R"({"keys": [{"key": "k", "share": 0.5, "hot": true, "hot_since": "soon"}]})", Opts(80));
  REQUIRE(lines.size() == 5);
  CHECK(lines[4] == " 50.0%          -      -     yes  -            k");
}

TEST_CASE("Render: the keys that do not fit the height are counted on the last line", "[top]") {
  // 4 lines above the rows, 3 rows, then "+7 more keys": 8 lines for 10 keys.
  std::vector<std::string> lines = Render(Keys(10), {.width = 80, .height = 8, .source = "s"});
  REQUIRE(lines.size() == 8);
  CHECK(lines[6].ends_with(" k2"));
  CHECK(lines[7] == "+7 more keys");
  // Room for 9 of them: 9 - 8 shown, "+2 more keys"; exactly room for all: no count.
  lines = Render(Keys(10), Opts(80, 13));
  REQUIRE(lines.size() == 13);
  CHECK(lines[12] == "+2 more keys");
  lines = Render(Keys(10), Opts(80, 14));
  REQUIRE(lines.size() == 14);
  CHECK(lines[13].ends_with(" k9"));
  // Less height than the header: the first lines only.
  CHECK(Render(Keys(10), Opts(80, 2)).size() == 2);
  CHECK(Render(Keys(10), Opts(80, 0)).size() == 14);
}

TEST_CASE("Render: a bytes-weighted tap's rates are bytes per second", "[top]") {
  const std::vector<std::string> lines =
      Render(R"({"unit": "bytes", "ops_per_second": {"read": 12000, "write": 345},
                 "keys": [{"key": "k", "share": 1, "ops_per_second": {"read": 1.5e6, "write": 0}}]})",
             Opts(80));
  REQUIRE(lines.size() == 5);
  CHECK(lines[1] == "total 12.3kB/s  read 12.0kB/s  write 345B/s");
  CHECK(lines[3] == " SHARE    BYTES/S  WRITE     HOT  FIX          KEY");
  CHECK(lines[4] == "100.0%    1.5MB/s      -       -  -            k");
}

TEST_CASE("RenderError: the header and the message, escaped and fitted", "[top]") {
  const std::vector<std::string> lines =
      RenderError("connect: refused\n\x1b[2J", {.width = 20, .height = 0, .source = "u"});
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "hotkeyd top  u");
  CHECK(lines[1] == "connect: refused\\x0\u2026");
}

TEST_CASE("FormatRate: four significant characters at most, with an SI prefix", "[top]") {
  CHECK(FormatRate(0) == "0.0/s");
  CHECK(FormatRate(8.54) == "8.5/s");
  CHECK(FormatRate(85.3) == "85.3/s");
  CHECK(FormatRate(99.94) == "99.9/s");
  CHECK(FormatRate(99.96) == "100/s");  // the rounded figure picks the format
  CHECK(FormatRate(853) == "853/s");
  CHECK(FormatRate(999.4) == "999/s");
  CHECK(FormatRate(999.6) == "1.0k/s");  // the rounded figure picks the prefix
  CHECK(FormatRate(8500) == "8.5k/s");
  CHECK(FormatRate(12345) == "12.3k/s");
  CHECK(FormatRate(123456) == "123k/s");
  CHECK(FormatRate(1.2e6) == "1.2M/s");
  CHECK(FormatRate(3.4e9) == "3.4G/s");
  CHECK(FormatRate(12345, "B") == "12.3kB/s");
  CHECK(FormatRate(2e18) == "2000P/s");  // past the last prefix: more digits
  CHECK(FormatRate(-1) == "-");
  CHECK(FormatRate(std::nan("")) == "-");
}

TEST_CASE("FormatPercent: a ratio as a percentage", "[top]") {
  CHECK(FormatPercent(0.312, 1) == "31.2%");
  CHECK(FormatPercent(0.3126, 1) == "31.3%");
  CHECK(FormatPercent(1, 1) == "100.0%");
  CHECK(FormatPercent(0.5, 0) == "50%");
  CHECK(FormatPercent(0, 0) == "0%");
  CHECK(FormatPercent(std::nan(""), 1) == "-");
}

TEST_CASE("FormatDuration: whole seconds in two units at most", "[top]") {
  CHECK(FormatDuration(0) == "0s");
  CHECK(FormatDuration(45.9) == "45s");
  CHECK(FormatDuration(60) == "1m00s");
  CHECK(FormatDuration(192) == "3m12s");
  CHECK(FormatDuration(3599) == "59m59s");
  CHECK(FormatDuration(7500) == "2h05m");
  CHECK(FormatDuration(3 * 86400 + 4 * 3600 + 59) == "3d04h");
  CHECK(FormatDuration(-5) == "0s");
  CHECK(FormatDuration(std::nan("")) == "0s");
  CHECK(FormatDuration(1e300) == "1000000000d00h");
}

TEST_CASE("TerminalSafe: controls, bidi controls and invalid UTF-8 become \\xHH", "[top]") {
  using namespace std::string_literals;
  CHECK(TerminalSafe("user:42") == "user:42");
  CHECK(TerminalSafe("a\\b") == "a\\b");  // backslash is printable
  CHECK(TerminalSafe("Jos\u00e9 \u952e") == "Jos\u00e9 \u952e");
  CHECK(TerminalSafe("a\x1b[2Jb") == R"(a\x1b[2Jb)");
  CHECK(TerminalSafe("\t\r\n\x7f"s) == R"(\x09\x0d\x0a\x7f)");
  CHECK(TerminalSafe("a\0b"s) == R"(a\x00b)");
  CHECK(TerminalSafe("\u009b") == R"(\xc2\x9b)");      // C1 CSI
  CHECK(TerminalSafe("\u202e") == R"(\xe2\x80\xae)");  // right-to-left override
  CHECK(TerminalSafe("\u2066x\u2069") == R"(\xe2\x81\xa6x\xe2\x81\xa9)");
  CHECK(TerminalSafe("\u2028") == R"(\xe2\x80\xa8)");        // line separator
  CHECK(TerminalSafe("\xff\xc3") == R"(\xff\xc3)");          // not UTF-8
  CHECK(TerminalSafe("\xed\xa0\x80") == R"(\xed\xa0\x80)");  // a surrogate
}

TEST_CASE("DisplayWidth: wide characters take two columns, combining marks none", "[top]") {
  CHECK(DisplayWidth("") == 0);
  CHECK(DisplayWidth("abc") == 3);
  CHECK(DisplayWidth("\u952e") == 2);      // CJK
  CHECK(DisplayWidth("\uac00") == 2);      // Hangul
  CHECK(DisplayWidth("\U0001F525") == 2);  // emoji
  CHECK(DisplayWidth("e\u0301") == 1);     // e + combining acute
  CHECK(DisplayWidth("\u00e9\u2026") == 2);
  CHECK(DisplayWidth(TerminalSafe("\x1b")) == 4);
}

TEST_CASE("FitWidth: cut on a character boundary, with the marker in the last column", "[top]") {
  CHECK(FitWidth("abcdef", 6) == "abcdef");
  CHECK(FitWidth("abcdef", 4) == "abc\u2026");
  CHECK(FitWidth("abcdef", 1) == "\u2026");
  CHECK(FitWidth("abcdef", 0) == "");
  // A wide character that would end past the room is left out whole: 2 + 1 = 3 <= 4.
  CHECK(FitWidth("\u952e\u952e\u952e", 4) == "\u952e\u2026");
  CHECK(FitWidth("\u952e\u952e\u952e", 6) == "\u952e\u952e\u952e");
  // A combining mark stays with its letter.
  CHECK(FitWidth("e\u0301xyz", 2) == "e\u0301\u2026");
  CHECK(FitWidth("\u00e9\u00e9\u00e9", 2) == "\u00e9\u2026");
}

}  // namespace
}  // namespace hotkey::top
