// Tests of the one escaper (text/escape.h): what passes, what becomes \xHH, the backslash,
// the byte limit, and that its output is valid UTF-8 with no control character.

#include "hotkey/text/escape.h"

#include <cstring>
#include <random>
#include <string>

#include <catch2/catch.hpp>

#include "hotkey/text/json.h"
#include "hotkey/text/utf8.h"

namespace hotkey::text {
namespace {

using namespace std::string_literals;

std::string Keep(std::string_view s) { return Escape(s, {.escape_backslash = false}); }

TEST_CASE("Escape: valid printable UTF-8 passes as it is", "[text][escape]") {
  CHECK(Escape("user:42") == "user:42");
  CHECK(Escape("with space and \"quotes\"") == "with space and \"quotes\"");
  CHECK(Escape("caf\xc3\xa9:\xf0\x9f\x94\xa5 \xe9\x94\xae") ==
        "caf\xc3\xa9:\xf0\x9f\x94\xa5 \xe9\x94\xae");
  CHECK(Escape("").empty());
}

TEST_CASE("Escape: invalid bytes, C0, DEL and C1 controls become \\xHH, byte by byte",
          "[text][escape]") {
  CHECK(Escape("a\0b"s) == R"(a\x00b)");
  CHECK(Escape("\t\r\n\x7f"s) == R"(\x09\x0d\x0a\x7f)");
  CHECK(Escape("a\x1b[2Jb") == R"(a\x1b[2Jb)");
  CHECK(Escape("\u0085\u009b") == R"(\xc2\x85\xc2\x9b)");  // NEL, CSI
  CHECK(Escape("\u00a0") == "\u00a0");                     // the first character past C1
  CHECK(Escape("\xff\xfe") == R"(\xff\xfe)");
  CHECK(Escape("\xc0\x80") == R"(\xc0\x80)");          // overlong form: bytes, not a character
  CHECK(Escape("\xed\xa0\x80") == R"(\xed\xa0\x80)");  // surrogate
  CHECK(Escape("ok\xc3") == R"(ok\xc3)");              // truncated sequence at the end
}

TEST_CASE("Escape: bidirectional controls and line separators become \\xHH", "[text][escape]") {
  // U+202E (right-to-left override) would show "user:1337:gpj.exe" as "user:1337:exe.jpg".
  CHECK(Escape("user:1337:\xe2\x80\xaegpj.exe") == R"(user:1337:\xe2\x80\xaegpj.exe)");
  // Every code point of Unicode's Bidi_Control property, and U+2028, U+2029.
  for (const char* c :
       {"\xd8\x9c", "\xe2\x80\x8e", "\xe2\x80\x8f", "\xe2\x80\xaa", "\xe2\x80\xab", "\xe2\x80\xac",
        "\xe2\x80\xad", "\xe2\x80\xae", "\xe2\x81\xa6", "\xe2\x81\xa7", "\xe2\x81\xa8",
        "\xe2\x81\xa9", "\xe2\x80\xa8", "\xe2\x80\xa9"}) {
    const std::string s = Escape(std::string("a") + c + "b");
    INFO(s);
    CHECK(s.find(c) == std::string::npos);
    CHECK(s.size() == 2 + 4 * std::strlen(c));  // "a", "b" and 4 bytes per byte
  }
  // Their neighbours are ordinary characters and pass as they are.
  for (const char* plain : {"\xd8\x9b", "\xe2\x80\x8a", "\xe2\x80\x90", "\xe2\x80\xa7",
                            "\xe2\x80\xaf", "\xe2\x81\xa5", "\xe2\x81\xaa"}) {
    CHECK(Escape(plain) == plain);
  }
}

TEST_CASE("Escape: invisible formatting characters become \\xHH", "[text][escape]") {
  // "user:1" and "user:<U+200B>1" show alike; escaped, they read as the two keys they are.
  CHECK(Escape("user:\xe2\x80\x8b"
               "1") == R"(user:\xe2\x80\x8b1)");
  // U+00AD, U+200B-U+200F, U+2060-U+2064, U+FEFF.
  for (const char* c :
       {"\xc2\xad", "\xe2\x80\x8b", "\xe2\x80\x8c", "\xe2\x80\x8d", "\xe2\x81\xa0", "\xe2\x81\xa1",
        "\xe2\x81\xa2", "\xe2\x81\xa3", "\xe2\x81\xa4", "\xef\xbb\xbf"}) {
    const std::string s = Escape(std::string("a") + c + "b");
    INFO(s);
    CHECK(s.find(c) == std::string::npos);
    CHECK(s.size() == 2 + 4 * std::strlen(c));
  }
  // Their neighbours are ordinary: U+00AC, U+00AE, U+205F (a visible space), U+FEFE.
  for (const char* plain : {"\xc2\xac", "\xc2\xae", "\xe2\x81\x9f", "\xef\xbb\xbe"}) {
    CHECK(Escape(plain) == plain);
  }
}

TEST_CASE("IsEscapedCodePoint: exactly the 89 code points escape.h lists", "[text][escape]") {
  // 32 C0, DEL and 32 C1, U+00AD, U+061C, 5 in U+200B-U+200F, 7 in U+2028-U+202E, 5 in
  // U+2060-U+2064, 4 in U+2066-U+2069, U+FEFF: 32 + 33 + 1 + 1 + 5 + 7 + 5 + 4 + 1 = 89.
  int n = 0;
  for (uint32_t cp = 0; cp < 0x110000; ++cp) n += IsEscapedCodePoint(cp);
  CHECK(n == 89);
  CHECK_FALSE(IsEscapedCodePoint('\\'));  // the backslash is EscapeOptions' to decide
}

TEST_CASE("Escape: the backslash is escaped, so distinct bytes give distinct text",
          "[text][escape]") {
  CHECK(Escape("back\\slash") == R"(back\x5cslash)");
  CHECK(Escape(R"(\x41)") != Escape("A"));
  // Kept, text already escaped is shown as it is: escaping again changes nothing.
  CHECK(Keep("a\\b") == "a\\b");
  const std::string once = Escape("\x1b[31m\\\xff\u202e\u0085 ok"s);
  CHECK(Keep(once) == once);
  CHECK(Keep("a\\b\n") == R"(a\b\x0a)");
}

TEST_CASE("Escape: never longer than max_bytes, and says when it cut", "[text][escape]") {
  bool cut = true;
  CHECK(Escape("abc", {.max_bytes = 3}, &cut) == "abc");
  CHECK_FALSE(cut);
  CHECK(Escape("abcd", {.max_bytes = 3}, &cut) == "abc");
  CHECK(cut);
  // A character or an escape is never split: "é" needs 2 bytes, "\xff" needs 4.
  CHECK(Escape("a\xc3\xa9", {.max_bytes = 2}, &cut) == "a");
  CHECK(cut);
  CHECK(Escape("a\xff", {.max_bytes = 4}, &cut) == "a");
  CHECK(cut);
  CHECK(Escape("a\xff", {.max_bytes = 5}, &cut) == R"(a\xff)");
  CHECK_FALSE(cut);
  // 12 bytes of escapes do not fit in 11.
  CHECK(Escape("\xe2\x80\xae", {.max_bytes = 11}, &cut).empty());
  CHECK(cut);
  CHECK(Escape("abc", {.max_bytes = 0}, &cut).empty());
  CHECK(cut);
}

TEST_CASE("Escape: random bytes give valid UTF-8 with no control byte, within the limit",
          "[text][escape]") {
  std::mt19937_64 rng(20240601);
  for (int i = 0; i < 5000; ++i) {
    std::string bytes(rng() % 64, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    const size_t max_bytes = rng() % 300;
    bool cut;
    const std::string s = Escape(bytes, {.max_bytes = max_bytes}, &cut);
    INFO(s);
    REQUIRE(IsValidUtf8(s));
    REQUIRE(s.size() <= max_bytes);
    for (unsigned char c : s) REQUIRE((c >= 0x20 && c != 0x7f));
    if (!cut) REQUIRE(Keep(s) == s);
  }
}

TEST_CASE("Utf8CodePoint: the code point of each sequence length", "[text][utf8]") {
  CHECK(Utf8CodePoint("A", 1) == 0x41);
  CHECK(Utf8CodePoint("\xc3\xa9", 2) == 0xE9);
  CHECK(Utf8CodePoint("\xe2\x80\xae", 3) == 0x202E);
  CHECK(Utf8CodePoint("\xf0\x9f\x94\xa5", 4) == 0x1F525);
}

}  // namespace
}  // namespace hotkey::text

namespace hotkey::text {
namespace {

TEST_CASE("JsonText: every character Escape() escapes is written \\uXXXX, so no raw line break",
          "[text][json]") {
  // A string holding U+0085, U+2028, U+2029, U+200B and U+FEFF: JSON lets them be raw, but
  // a reader splitting lines as Unicode does would break the answer there.
  const std::string s =
      "a\xc2\x85"
      "b\xe2\x80\xa8"
      "c\xe2\x80\xa9"
      "d\xe2\x80\x8b"
      "e\xef\xbb\xbf"
      "f";
  CHECK(JsonText(boost::json::value(s)) == R"("a\u0085b\u2028c\u2029d\u200be\ufefff")");
  // Other text from U+0080 up is kept: a member name too.
  CHECK(JsonText(boost::json::object{{"caf\xc3\xa9", "\xe2\x82\xac"}}) ==
        "{\"caf\xc3\xa9\":\"\xe2\x82\xac\"}");
}

}  // namespace
}  // namespace hotkey::text
