// Tests for config/options.h: threshold rules, glob matching and validation.

#include "hotkey/config/options.h"

#include <fnmatch.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "hotkey/config/values.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "test_util.h"

namespace hotkey::config {
namespace {

using namespace std::string_literals;  // "a\0b"s keeps the NUL
using Catch::Matchers::Contains;
using testing::Glob;
using testing::IgnoreGlob;
using testing::Message;
using testing::Prefix;

TEST_CASE("Options: every default validates", "[config][options]") {
  CHECK(UdpOptions{}.Validate().ok());
  CHECK(WebOptions{}.Validate().ok());
  CHECK(TrackOptions{}.Validate().ok());
  CHECK(ExportOptions{}.Validate().ok());
  CHECK(AlertOptions{}.Validate().ok());
  CHECK(DaemonOptions{}.Validate().ok());
  CHECK(ReloadableOptions{}.Validate().ok());
}

TEST_CASE("Options: the tracker's options are TrackOptions' own, not a copy", "[config][options]") {
  TrackOptions t;
  // The defaults are the tracker's.
  CHECK(static_cast<const sketch::HeavyHittersOptions&>(t) == sketch::HeavyHittersOptions{});
  t.candidates = 64;
  t.max_key_bytes = 32;
  t.half_life = absl::Seconds(2);
  const sketch::HeavyHittersOptions& tracker = t;
  CHECK(&tracker.candidates == &t.candidates);
  CHECK(tracker.max_key_bytes == 32);
  CHECK(tracker.half_life == absl::Seconds(2));
  REQUIRE(t.Validate().ok());
  absl::StatusOr<sketch::HeavyHitters> hh = sketch::HeavyHitters::Create(t, absl::UnixEpoch());
  REQUIRE(hh.ok());
  CHECK(hh->options() == tracker);
}

TEST_CASE("Options: a tracker the ranges allow but the tracker refuses does not validate",
          "[config][options]") {
  TrackOptions t;
  // Each at its maximum, the keys' table would be 64 GiB: refused, naming both flags.
  t.candidates = 1u << 20;
  t.max_key_bytes = 65536;
  absl::Status s = t.Validate();
  CHECK_THAT(Message(s), Contains("track table too large") && Contains("--track.candidates") &&
                             Contains("--key.max-bytes"));
  // At the tracker's maximum exactly (4096 x 64 KiB = 256 MiB), it passes.
  t.candidates = 4096;
  CHECK(uint64_t{t.candidates} * t.max_key_bytes == sketch::HeavyHitters::kMaxTableBytes);
  CHECK(t.Validate().ok());
  // The sketch's depth, in its range or refused naming its flag; the tracker refuses it too.
  t = TrackOptions{};
  for (uint32_t depth : {1u, 16u}) {
    t.sketch_depth = depth;
    CHECK(t.Validate().ok());
  }
  for (uint32_t depth : {0u, 17u}) {
    t.sketch_depth = depth;
    s = t.Validate();
    CHECK_THAT(Message(s), Contains("--track.sketch-depth") && Contains("[1, 16]"));
    CHECK_FALSE(sketch::HeavyHitters::Create(t, absl::UnixEpoch()).ok());
  }
}

TEST_CASE("Options: the rate history's size is validated against its maximum",
          "[config][options]") {
  DaemonOptions o;
  CHECK(o.track.MaxRatePoints() == 84);    // 2 x (10 s / 250 ms) + 4
  CHECK(o.RateHistoryKeys() == 84 * 104);  // points x the default 104 candidates
  // The largest window at the shortest interval with the most candidates: refused, naming
  // the flags.
  o.track.rate_window = absl::Hours(1);
  o.track.publish_interval = absl::Milliseconds(10);
  o.track.candidates = 1u << 20;
  const absl::Status s = o.Validate();
  CHECK_FALSE(s.ok());
  CHECK_THAT(Message(s), Contains("rate history too large") && Contains("--track.rate-window") &&
                             Contains("--track.publish-interval") &&
                             Contains("--track.candidates") && Contains("--udp.receivers"));
  // Just under the maximum passes; one more source goes over.
  o.track.rate_window = absl::Seconds(6);
  o.track.publish_interval = absl::Milliseconds(100);  // 124 points
  o.track.candidates = 1u << 19;                       // 65,011,712 entries
  CHECK(o.RateHistoryKeys() <= DaemonOptions::kMaxRateHistoryKeys);
  CHECK(o.Validate().ok());
  o.demo = true;
  CHECK(o.RateHistoryKeys() > DaemonOptions::kMaxRateHistoryKeys);
  CHECK_FALSE(o.Validate().ok());
  // A window that is not a whole number of intervals rounds up.
  o.track.rate_window = absl::Milliseconds(1050);
  CHECK(o.track.MaxRatePoints() == 2 * 11 + 4);
}

TEST_CASE("Thresholds: a key no rule matches gets the default", "[config][options]") {
  AlertOptions alert;
  alert.default_threshold = 0.3;
  CHECK(alert.ThresholdFor("anything") == 0.3);
  alert.rules = {Prefix("session:", 0.25)};
  CHECK(alert.ThresholdFor("user:1") == 0.3);
  CHECK(alert.ThresholdFor("") == 0.3);
}

TEST_CASE("Thresholds: a prefix rule matches keys that start with it", "[config][options]") {
  AlertOptions alert;
  alert.rules = {Prefix("session:", 0.25)};
  CHECK(alert.ThresholdFor("session:abc") == 0.25);
  CHECK(alert.ThresholdFor("session:") == 0.25);
  CHECK(alert.ThresholdFor("session") == alert.default_threshold);
  CHECK(alert.ThresholdFor("Session:abc") == alert.default_threshold);
  CHECK(alert.ThresholdFor("x-session:abc") == alert.default_threshold);
}

TEST_CASE("Thresholds: the first matching rule wins", "[config][options]") {
  AlertOptions alert;
  alert.rules = {Prefix("user:admin", 0.5), Glob("user:*", 0.05), Prefix("user:", 0.9)};
  CHECK(alert.ThresholdFor("user:admin:1") == 0.5);
  CHECK(alert.ThresholdFor("user:42") == 0.05);
  alert.rules = {Glob("user:*", 0.05), Prefix("user:admin", 0.5)};
  CHECK(alert.ThresholdFor("user:admin:1") == 0.05);
}

TEST_CASE("Thresholds: an ignore rule gives an infinite threshold", "[config][options]") {
  AlertOptions alert;
  alert.rules = {IgnoreGlob("healthcheck*"), Prefix("health", 0.5)};
  CHECK(std::isinf(alert.ThresholdFor("healthcheck:1")));
  CHECK(alert.ThresholdFor("healthcheck:1") > 1.0);
  CHECK(alert.ThresholdFor("healthz") == 0.5);
}

TEST_CASE("Glob: * ? and classes match whole keys", "[config][options]") {
  CHECK(GlobMatch("user:*:profile", "user:42:profile"));
  CHECK(GlobMatch("user:*:profile", "user::profile"));
  CHECK(GlobMatch("user:*:profile", "user:a:b:profile"));
  CHECK_FALSE(GlobMatch("user:*:profile", "user:42:profile:x"));
  CHECK_FALSE(GlobMatch("user:*:profile", "xuser:42:profile"));
  CHECK(GlobMatch("a?c", "abc"));
  CHECK_FALSE(GlobMatch("a?c", "ac"));
  CHECK(GlobMatch("[a-c]x", "bx"));
  CHECK_FALSE(GlobMatch("[a-c]x", "dx"));
  CHECK(GlobMatch("[!a-c]x", "dx"));
  CHECK(GlobMatch("[^a-c]x", "dx"));
  CHECK_FALSE(GlobMatch("[!a-c]x", "ax"));
  CHECK(GlobMatch("[]]", "]"));
  CHECK(GlobMatch("[!]]", "a"));
  CHECK(GlobMatch("a\\*b", "a*b"));
  CHECK_FALSE(GlobMatch("a\\*b", "axb"));
  CHECK(GlobMatch("[\\]x]", "]"));
  CHECK(GlobMatch("*", "anything at all"));
  CHECK(GlobMatch("**a**", "xxaxx"));
  CHECK(GlobMatch("*a*b", "xaxxb"));
  CHECK(GlobMatch("*ab", "aab"));
  CHECK_FALSE(GlobMatch("*ab", "aba"));
  CHECK(GlobMatch("exact", "exact"));
  CHECK_FALSE(GlobMatch("exact", "exac"));
}

TEST_CASE("Glob: the empty key matches only patterns that allow nothing", "[config][options]") {
  CHECK(GlobMatch("*", ""));
  CHECK(GlobMatch("**", ""));
  CHECK(GlobMatch("", ""));
  CHECK_FALSE(GlobMatch("?", ""));
  CHECK_FALSE(GlobMatch("a*", ""));
  CHECK_FALSE(GlobMatch("", "a"));
  AlertOptions alert;
  alert.rules = {Glob("?*", 0.5), Glob("*", 0.7)};
  CHECK(alert.ThresholdFor("") == 0.7);
}

TEST_CASE("Glob: keys are bytes, NUL and bytes over 0x7f included", "[config][options]") {
  const std::string nul_key = "a\0c"s;
  REQUIRE(nul_key.size() == 3);
  CHECK(GlobMatch("a?c", nul_key));
  CHECK(GlobMatch("a*", nul_key));
  CHECK(GlobMatch("a\0c"s, nul_key));
  CHECK_FALSE(GlobMatch("a", nul_key));  // the NUL does not end the key
  // Classes compare bytes unsigned: 0x80..0xff is a valid, non-empty range.
  CHECK(ValidateGlob("[\x80-\xff]").ok());
  CHECK(GlobMatch("[\x80-\xff]", "\xff"));
  CHECK(GlobMatch("[\x80-\xff]", "\x80"));
  CHECK_FALSE(GlobMatch("[\x80-\xff]", "\x7f"));
  CHECK(GlobMatch("k:*\xfe", "k:\x01\x02\xfe"));
  AlertOptions alert;
  alert.rules = {Prefix("\xff\x00"s, 0.4)};
  CHECK(alert.ThresholdFor("\xff\x00rest"s) == 0.4);
  CHECK(alert.ThresholdFor("\xff") == alert.default_threshold);
}

TEST_CASE("Glob: many stars against a long miss finish quickly", "[config][options]") {
  // Naive recursive matching takes exponential time here; ours is O(|p| * |t|).
  std::string text(10000, 'a');
  CHECK_FALSE(GlobMatch("a*a*a*a*a*a*a*a*a*a*b", text));
  CHECK(GlobMatch("a*a*a*a*a*a*a*a*a*a*", text));
}

TEST_CASE("Glob: agrees with POSIX fnmatch on random valid patterns", "[config][options]") {
  // glibc's fnmatch (no flags, C locale) has the same syntax; NUL-free keys only, as it
  // takes C strings. Short strings over a small alphabet of the special bytes reach every
  // branch; a fixed seed keeps the test repeatable.
  std::mt19937 rng(20240601);
  const std::string pattern_bytes = "ab*?[]!^-\\";
  const std::string text_bytes = "ab]-![\\*";
  int compared = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string pattern, text;
    for (int n = rng() % 8; n > 0; --n) pattern += pattern_bytes[rng() % pattern_bytes.size()];
    for (int n = rng() % 8; n > 0; --n) text += text_bytes[rng() % text_bytes.size()];
    bool ours = GlobMatch(pattern, text);  // never crashes, valid or not
    if (!ValidateGlob(pattern).ok()) continue;
    ++compared;
    bool posix = fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
    if (ours != posix) {
      INFO("pattern \"" << pattern << "\" text \"" << text << "\"");
      REQUIRE(ours == posix);
    }
  }
  CHECK(compared > 100000);
}

TEST_CASE("Glob: a match takes at most (tokens + 1) * (|text| + 2) steps, classes included",
          "[config][options]") {
  // Long classes, unclosed '[' (literal bytes, each once scanned to the pattern's end by a
  // matcher that re-reads the pattern), stars: a step stays O(1) whatever the elements.
  std::string long_class = "[";
  for (int i = 0; i < 40; ++i) long_class += "\\a-\\y";
  long_class += "]";
  std::string classes = "*";
  for (int i = 0; i < 30; ++i) classes += long_class;
  classes += "b";
  const std::string unclosed = "*" + std::string(300, '[') + "x";
  const std::string stars = "a*a*a*a*a*a*a*a*a*a*b";
  struct Case {
    std::string pattern;
    std::string text;
    bool match;
  };
  for (const Case& c : {Case{classes, std::string(3000, 'a'), false},
                        Case{classes, std::string(3000, 'a') + "b", true},
                        Case{unclosed, std::string(2000, '['), false},
                        Case{unclosed, std::string(2000, '[') + "x", true},
                        Case{stars, std::string(10000, 'a'), false}}) {
    const CompiledGlob glob(c.pattern);
    uint64_t steps = 0;
    INFO("pattern of " << c.pattern.size() << " bytes, " << glob.tokens() << " tokens");
    CHECK(glob.Matches(c.text, &steps) == c.match);
    CHECK(glob.Matches(c.text) == GlobMatch(c.pattern, c.text));
    CHECK(steps <= (glob.tokens() + 1) * (c.text.size() + 2));
  }
  // One token per element: a 202-byte class is one token.
  CHECK(CompiledGlob(long_class).tokens() == 1);
  CHECK(CompiledGlob(unclosed).tokens() == 302);
  CHECK(CompiledGlob("a**b").tokens() == 3);
}

TEST_CASE("Options: export min key ops is a non-negative finite rate", "[config][options]") {
  ExportOptions e;
  CHECK(e.min_key_ops_per_second == 2);
  e.min_key_ops_per_second = 0;  // off
  CHECK(e.Validate().ok());
  for (double bad : {-1.0, 2e12, std::nan("")}) {
    e.min_key_ops_per_second = bad;
    CHECK_THAT(Message(e.Validate()), Contains("export min key ops must be in [0, 1e12]"));
  }
}

TEST_CASE("Glob: malformed patterns are rejected by validation", "[config][options]") {
  CHECK_THAT(Message(ValidateGlob("user:[abc")), Contains("unclosed '['"));
  CHECK_THAT(Message(ValidateGlob("abc\\")), Contains("lone '\\'"));
  CHECK_THAT(Message(ValidateGlob("[z-a]")), Contains("reversed range"));
  CHECK(ValidateGlob("\\[abc").ok());
  // Unvalidated, a lone '[' matches itself rather than crashing.
  CHECK(GlobMatch("a[b", "a[b"));
}

TEST_CASE("Thresholds: bad rules fail validation with the rule named", "[config][options]") {
  AlertOptions alert;
  alert.rules = {Prefix("", 0.2)};
  CHECK_THAT(Message(alert.Validate()), Contains("pattern is empty"));
  alert.rules = {Prefix("a:", 0)};
  CHECK_THAT(Message(alert.Validate()), Contains("share of threshold rule \"a:\""));
  alert.rules = {Prefix("a:", 1.5)};
  CHECK_FALSE(alert.Validate().ok());
  alert.rules = {Glob("[a", 0.2)};
  CHECK_THAT(Message(alert.Validate()), Contains("unclosed"));
  alert.rules = {IgnoreGlob("x*")};  // an ignore rule needs no share
  CHECK(alert.Validate().ok());
  alert.rules.assign(AlertOptions::kMaxRules + 1, Prefix("a", 0.2));
  CHECK_THAT(Message(alert.Validate()), Contains("too many threshold rules"));
}

TEST_CASE("Options: the telemetry path must not hide the server's own paths", "[config][options]") {
  WebOptions web;
  for (const char* bad : {"", "metrics", "/", "/-/healthy", "/api/v1/top", "/me trics", "/m?x"}) {
    web.telemetry_path = bad;
    INFO(bad);
    CHECK_FALSE(web.Validate().ok());
  }
  web.telemetry_path = "/prometheus/metrics";
  CHECK(web.Validate().ok());
}

TEST_CASE("Options: the reloadable part round-trips through DaemonOptions", "[config][options]") {
  DaemonOptions d;
  d.udp.receivers = 3;
  ReloadableOptions r = ReloadableFrom(d);
  r.alert.default_threshold = 0.5;
  r.exporter.top_k = 3;
  r.cluster.shards = 16;
  DaemonOptions next = WithReloadable(d, r);
  CHECK(next.alert.default_threshold == 0.5);
  CHECK(next.exporter.top_k == 3);
  CHECK(next.cluster.shards == 16);
  CHECK(next.udp.receivers == 3);  // not reloadable: kept
  CHECK(d.alert.default_threshold == 0.10);
}

}  // namespace
}  // namespace hotkey::config
