// The log line writer and its strict reader: every value survives a round trip through
// logfmt and through the json conversion, whatever bytes it holds.

#include "hotkey/log/log.h"

#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/time/time.h"
#include "checkers.h"

namespace hotkey::log {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

const absl::Time kT = absl::FromUnixMillis(1'700'000'000'123);

Fields Parse(const std::string& line) {
  auto f = ParseLogfmt(line);
  INFO(line);
  INFO(f.status().ToString());
  REQUIRE(f.ok());
  return *f;
}

TEST_CASE("Log: a reload-failure line with quotes in the path and error is valid logfmt",
          "[daemon][log]") {
  const std::string path = "/tmp/a \"quoted\" dir/rules.yml";
  const std::string err = "rules file \"" + path + "\": line 2: unknown key \"sahre\"";
  const std::string line = LogLine(kT, "error", "configuration reload failed")
                               .Quoted("file", path)
                               .Quoted("err", err)
                               .text();
  CHECK(line.find("err=\"rules file \\\"/tmp/a \\\"quoted\\\" dir/rules.yml\\\":") !=
        std::string::npos);
  const Fields f = Parse(line);
  REQUIRE(f.size() == 5);
  CHECK(f[0] == std::pair<std::string, std::string>{"ts", "2023-11-14T22:13:20.123Z"});
  CHECK(f[1].second == "error");
  CHECK(f[2].second == "configuration reload failed");
  CHECK(f[3].second == path);
  CHECK(f[4].second == err);
}

TEST_CASE("Log: the line the daemon used to write for a failed reload does not parse",
          "[daemon][log]") {
  // Unescaped inner quotes: what a strict reader must refuse, so the tests above can fail.
  CHECK_FALSE(ParseLogfmt("ts=x level=error msg=\"m\" err=\"rules file \"/p\": bad\"").ok());
  CHECK_FALSE(ParseLogfmt("k=\"a\nb\"").ok());   // raw newline
  CHECK_FALSE(ParseLogfmt("k=\"a\\qb\"").ok());  // unknown escape
  CHECK_FALSE(ParseLogfmt("k=a  j=b").ok());     // two spaces
  CHECK_FALSE(ParseLogfmt("k=\"open").ok());     // unclosed
  CHECK_FALSE(ParseLogfmt("k").ok());            // no '='
  CHECK_FALSE(ParseLogfmt("k=a\"b").ok());       // quote in a bare value
  CHECK_FALSE(ParseLogfmt("k=\"\xff\"").ok());   // not UTF-8
}

TEST_CASE(
    "Log: control characters, backslashes and invalid UTF-8 are escaped; values "
    "round-trip",
    "[daemon][log]") {
  const std::string nasty = std::string("a\\b\"c\nd\re\tf\x01g\x7fh\0i", 17) + "\xc3\xa9";
  const std::string line = LogLine(kT, "info", "m\nsg").Quoted("v", nasty).Value("w", nasty).text();
  for (char c : line) {
    CHECK(static_cast<unsigned char>(c) >= 0x20);
    CHECK(c != 0x7f);
  }
  const Fields f = Parse(line);
  CHECK(f[2].second == "m\nsg");
  CHECK(f[3].second == nasty);
  CHECK(f[4].second == nasty);
  // A byte that is not UTF-8 becomes U+FFFD; the line stays valid UTF-8.
  const Fields g = Parse(LogLine(kT, "info", "m").Quoted("k", "x\xffy").text());
  CHECK(g[3].second == "x\xef\xbf\xbdy");
}

TEST_CASE("Log: simple values stay bare, anything else is quoted", "[daemon][log]") {
  const std::string line = LogLine(kT, "warn", "m")
                               .Value("web", "[::1]:10110")
                               .Value("n", "12")
                               .Value("empty", "")
                               .Value("sp", "a b")
                               .Value("eq", "a=b")
                               .Quoted("key", "k")
                               .text();
  CHECK(line ==
        "ts=2023-11-14T22:13:20.123Z level=warn msg=\"m\" web=[::1]:10110 n=12 empty=\"\" "
        "sp=\"a b\" eq=\"a=b\" key=\"k\"");
  CHECK(Parse(line).size() == 9);
}

TEST_CASE("Log: json output is one object with the line's fields as strings, in order",
          "[daemon][log]") {
  const std::string line = LogLine(kT, "error", "reload failed")
                               .Quoted("err", "rules file \"/x\": bad\n")
                               .Value("n", "3")
                               .text();
  const std::string json = LogfmtToJson(line);
  CHECK(json ==
        "{\"ts\":\"2023-11-14T22:13:20.123Z\",\"level\":\"error\",\"msg\":\"reload failed\","
        "\"err\":\"rules file \\\"/x\\\": bad\\n\",\"n\":\"3\"}");
  std::string error;
  CHECK(testing::ParseJson(json, &error).has_value());
  // A line that is not logfmt still gives one valid object.
  const std::string bad = LogfmtToJson("not \"logfmt");
  CHECK(testing::ParseJson(bad, &error).has_value());
  CHECK(bad.find("unparsable log line") != std::string::npos);
}

TEST_CASE(
    "Log: C1 controls, line separators and invisible characters are written \\uXXXX, in "
    "logfmt and in json",
    "[daemon][log]") {
  // U+0085 (next line), U+2028 (line separator), U+200B (zero-width space), as the shard
  // or a key could send them: a reader splitting lines as Unicode does would break here.
  const std::string line = LogLine(kT, "warn", "m")
                               .Quoted("err",
                                       "a\xc2\x85"
                                       "b\xe2\x80\xa8"
                                       "c\xe2\x80\x8b"
                                       "d")
                               .text();
  CHECK(line.find(R"(err="a\u0085b\u2028c\u200bd")") != std::string::npos);
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> fields = ParseLogfmt(line);
  REQUIRE(fields.ok());
  CHECK(fields->back().second ==
        "a\xc2\x85"
        "b\xe2\x80\xa8"
        "c\xe2\x80\x8b"
        "d");
  const std::string json = LogfmtToJson(line);
  CHECK(json.find(R"("err":"a\u0085b\u2028c\u200bd")") != std::string::npos);
  // Other characters from U+0080 up stay as they are.
  CHECK(LogLine(kT, "info", "caf\xc3\xa9").text().find("caf\xc3\xa9") != std::string::npos);
}

TEST_CASE("Log: the level filter reads the level field", "[daemon][log]") {
  const std::string warn = LogLine(kT, "warn", "m").text();
  CHECK(PassesLevel(warn, "info"));
  CHECK_FALSE(PassesLevel(warn, "error"));
}

}  // namespace
}  // namespace hotkey::log
