// Tests of KeyLabeler (aggregate/key_label.h): label values are valid UTF-8, bounded, distinct
// for distinct keys, and hide key bytes in hash and prefix modes.

#include "hotkey/aggregate/key_label.h"

#include <cstring>
#include <random>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "checkers.h"
#include "hotkey/sketch/hash.h"
#include "hotkey/text/utf8.h"

namespace hotkey::aggregate {
namespace {

using config::KeyLabelMode;
using testing::IsValidUtf8;

constexpr std::string_view kSecret = "a test secret, 32 bytes long...";

std::string RandomBytes(std::mt19937_64& rng, size_t max_len) {
  std::uniform_int_distribution<size_t> len(0, max_len);
  std::string s(len(rng), '\0');
  // Mostly ASCII with some high bytes, so valid multi-byte sequences show up too.
  std::uniform_int_distribution<int> byte(0, 255);
  std::bernoulli_distribution ascii(0.6);
  for (char& c : s) c = static_cast<char>(ascii(rng) ? byte(rng) % 128 : byte(rng));
  return s;
}

// The label of an untruncated key.
std::string Raw(std::string_view key, size_t max_bytes = 128) {
  return KeyLabeler(KeyLabelMode::kRaw, max_bytes, kSecret).Label(key, false, 0);
}

TEST_CASE("KeyLabel: the UTF-8 checker of the tests accepts and rejects the right things",
          "[daemon][key_label]") {
  CHECK(text::IsValidUtf8(""));
  CHECK(text::IsValidUtf8("plain"));
  CHECK(text::IsValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5"));
  CHECK_FALSE(text::IsValidUtf8("\xff"));
  CHECK_FALSE(text::IsValidUtf8("\xc3"));              // truncated
  CHECK_FALSE(text::IsValidUtf8("\xc0\x80"));          // overlong NUL
  CHECK_FALSE(text::IsValidUtf8("\xe0\x80\xaf"));      // overlong '/'
  CHECK_FALSE(text::IsValidUtf8("\xed\xa0\x80"));      // surrogate U+D800
  CHECK_FALSE(text::IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  CHECK_FALSE(text::IsValidUtf8("\x80"));              // lone continuation
}

TEST_CASE("KeyLabel: raw mode keeps valid UTF-8 as it is", "[daemon][key_label]") {
  CHECK(Raw("user:42") == "user:42");
  CHECK(Raw("with space and \"quotes\"") == "with space and \"quotes\"");
  CHECK(Raw("caf\xc3\xa9:\xf0\x9f\x94\xa5") == "caf\xc3\xa9:\xf0\x9f\x94\xa5");
}

TEST_CASE("KeyLabel: raw mode writes invalid bytes, control characters and backslash as \\xHH",
          "[daemon][key_label]") {
  CHECK(Raw(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(Raw("tab\there") == "tab\\x09here");
  CHECK(Raw("new\nline") == "new\\x0aline");
  CHECK(Raw("del\x7f") == "del\\x7f");
  CHECK(Raw("back\\slash") == "back\\x5cslash");
  CHECK(Raw("\xff\xfe") == "\\xff\\xfe");
  CHECK(Raw("\xc0\x80") == "\\xc0\\x80");           // overlong form: bytes, not a character
  CHECK(Raw("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // surrogate
  CHECK(Raw("ok\xc3") == "ok\\xc3");                // truncated sequence at the end
  // A literal "\x41" in a key cannot be confused with the byte it spells.
  CHECK(Raw("\\x41") != Raw("A"));
}

TEST_CASE(
    "KeyLabel: raw mode writes bidirectional controls as \\xHH, so a label cannot read "
    "backwards",
    "[daemon][key_label]") {
  // U+202E (right-to-left override) would show "user:1337:gpj.exe" as "user:1337:exe.jpg".
  CHECK(Raw("user:1337:\xe2\x80\xaegpj.exe") == "user:1337:\\xe2\\x80\\xaegpj.exe");
  // Every code point of Unicode's Bidi_Control property, as UTF-8.
  for (const char* bidi : {"\xd8\x9c", "\xe2\x80\x8e", "\xe2\x80\x8f", "\xe2\x80\xaa",
                           "\xe2\x80\xab", "\xe2\x80\xac", "\xe2\x80\xad", "\xe2\x80\xae",
                           "\xe2\x81\xa6", "\xe2\x81\xa7", "\xe2\x81\xa8", "\xe2\x81\xa9"}) {
    const std::string label = Raw(std::string("a") + bidi + "b");
    INFO(label);
    CHECK(label.find(bidi) == std::string::npos);
    CHECK(label.size() == 2 + 4 * std::strlen(bidi));  // "a", "b" and 4 bytes per byte
  }
  // Their neighbours are ordinary characters and pass as they are.
  for (const char* plain : {"\xd8\x9b", "\xe2\x80\x8a", "\xe2\x80\x90", "\xe2\x80\xa7",
                            "\xe2\x80\xaf", "\xe2\x81\xa5", "\xe2\x81\xaa"}) {
    CHECK(Raw(plain) == plain);
  }
  // Prefix mode escapes the family the same way.
  const KeyLabeler prefix(KeyLabelMode::kPrefix, 128, kSecret);
  CHECK(prefix.Label("\xe2\x81\xa6x:1", false, 0).starts_with("\\xe2\\x81\\xa6x:#"));
}

TEST_CASE("KeyLabel: raw mode writes C1 controls and line separators as \\xHH",
          "[daemon][key_label]") {
  // NEL (U+0085) and CSI (U+009B) are control characters; U+2028 breaks the line it is in.
  CHECK(Raw("a\u0085b\u009bc") == "a\\xc2\\x85b\\xc2\\x9bc");
  CHECK(Raw("a\u2028b") == "a\\xe2\\x80\\xa8b");
}

TEST_CASE("KeyLabel: every label of random bytes is valid UTF-8 and within the byte limit",
          "[daemon][key_label]") {
  std::mt19937_64 rng(20240601);
  for (const KeyLabelMode mode : {KeyLabelMode::kRaw, KeyLabelMode::kHash, KeyLabelMode::kPrefix}) {
    for (const size_t max_bytes : {size_t{16}, size_t{17}, size_t{18}, size_t{32}, size_t{128}}) {
      const KeyLabeler labeler(mode, max_bytes, kSecret);
      for (int i = 0; i < 3000; ++i) {
        const std::string key = RandomBytes(rng, 300);
        const bool truncated = i % 5 == 0;
        const std::string label = labeler.Label(key, truncated, sketch::HashKey(key, 7));
        INFO("mode " << static_cast<int>(mode) << " max_bytes " << max_bytes << " key size "
                     << key.size());
        REQUIRE(text::IsValidUtf8(label));
        REQUIRE(label.size() <= max_bytes);
        REQUIRE(label.find('\n') == std::string::npos);
      }
    }
  }
}

TEST_CASE("KeyLabel: distinct keys get distinct raw labels, long and truncated ones included",
          "[daemon][key_label]") {
  const size_t max_bytes = 48;
  const KeyLabeler labeler(KeyLabelMode::kRaw, max_bytes, kSecret);
  std::set<std::string> keys, labels;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) {
    std::string key = RandomBytes(rng, 120);
    if (!keys.insert(key).second) continue;
    const std::string label = labeler.Label(key, false, 0);
    INFO("key size " << key.size() << " label " << label);
    REQUIRE(labels.insert(label).second);
  }
  // Long keys sharing a prefix longer than the label: told apart by the hash suffix.
  const std::string prefix(200, 'p');
  const std::string a = labeler.Label(prefix + "a", false, 0);
  const std::string b = labeler.Label(prefix + "b", false, 0);
  CHECK(a != b);
  CHECK(a.size() <= max_bytes);
  CHECK(a.starts_with("ppp"));
  // Truncated by the tracker: the stored prefix is the same, the full hashes differ.
  const std::string stored(64, 's');
  const std::string t1 = labeler.Label(stored, true, sketch::HashKey(stored + "1", 0));
  const std::string t2 = labeler.Label(stored, true, sketch::HashKey(stored + "2", 0));
  CHECK(t1 != t2);
  // And a truncated key is not confused with the key that is exactly its stored prefix.
  const KeyLabeler wide(KeyLabelMode::kRaw, 128, kSecret);
  CHECK(wide.Label(stored, true, 99) != wide.Label(stored, false, 0));
  CHECK(wide.Label(stored, false, 0) == stored);
}

TEST_CASE("KeyLabel: hash mode shows no key bytes and is stable for a key", "[daemon][key_label]") {
  const KeyLabeler labeler(KeyLabelMode::kHash, 128, kSecret);
  // Letters outside the hex digits and "h:", so any key byte in the label would show.
  const std::string alphabet = "ijklmnopqrstuvwxyz";
  std::mt19937_64 rng(3);
  std::set<std::string> labels;
  for (int i = 0; i < 500; ++i) {
    std::string key(1 + rng() % 40, 'i');
    for (char& c : key) c = alphabet[rng() % alphabet.size()];
    const std::string label = labeler.Label(key, false, 0);
    INFO(key << " -> " << label);
    CHECK(label.find_first_of(alphabet) == std::string::npos);
    CHECK(label.starts_with("h:"));
    CHECK(label == labeler.Label(key, false, 0));
    labels.insert(label);
  }
  CHECK(labels.size() > 450);  // random keys repeat a little; labels track them
  // Another secret gives other labels: candidates cannot be hashed without it.
  const KeyLabeler other(KeyLabelMode::kHash, 128, "another test secret, 32 bytes..");
  CHECK(other.Label("user:42", false, 0) != labeler.Label("user:42", false, 0));
}

TEST_CASE("KeyLabel: prefix mode keeps the family and hides the id", "[daemon][key_label]") {
  const KeyLabeler labeler(KeyLabelMode::kPrefix, 128, kSecret);
  const std::string label = labeler.Label("user:12345", false, 0);
  CHECK(label.starts_with("user:#"));
  CHECK(label.find("12345") == std::string::npos);
  CHECK(label != labeler.Label("user:12346", false, 0));
  CHECK(label == labeler.Label("user:12345", false, 0));
  // The family is up to the last ':'.
  CHECK(labeler.Label("a:b:c", false, 0).starts_with("a:b:#"));
  // No ':' means no family: nothing of the key shows.
  const std::string bare = labeler.Label("secretid", false, 0);
  CHECK(bare.starts_with("#"));
  CHECK(bare.find("secret") == std::string::npos);
  // The family is escaped like a raw label.
  CHECK(labeler.Label("\xff:1", false, 0).starts_with("\\xff:#"));
}

}  // namespace
}  // namespace hotkey::aggregate
