// Tests of ThresholdMatcher (aggregate/threshold_matcher.h): the compiled rules give what
// config::AlertOptions::ThresholdFor gives, for random keys, and their lowest threshold.

#include "hotkey/aggregate/threshold_matcher.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"  // tests/config: threshold rules by kind

namespace hotkey::aggregate {
namespace {

using namespace std::string_literals;  // "a\0b"s keeps the NUL
using config::AlertOptions;
using config::testing::Glob;
using config::testing::IgnoreGlob;
using config::testing::Prefix;

TEST_CASE("ThresholdMatcher: gives what AlertOptions::ThresholdFor gives",
          "[aggregate][threshold]") {
  AlertOptions alert;
  alert.default_threshold = 0.15;
  alert.rules = {Prefix("session:", 0.25), IgnoreGlob("health*"), Glob("user:*:[0-9]", 0.05),
                 Glob("*\x00*"s, 0.5),     Prefix("user:", 0.3),  Glob("[!a-z]*", 0.7)};
  REQUIRE(alert.Validate().ok());
  const ThresholdMatcher matcher(alert);
  std::mt19937 rng(7);
  const std::string bytes = "user:sion0129h\0ealth[]-*Z\xff"s;
  for (int i = 0; i < 20000; ++i) {
    std::string key;
    if (rng() % 2) key = std::vector<std::string>{"user:", "session:", "health"}[rng() % 3];
    for (int n = rng() % 10; n > 0; --n) key += bytes[rng() % bytes.size()];
    const double want = alert.ThresholdFor(key);
    const double got = matcher.ThresholdFor(key);
    INFO("key \"" << key << "\"");
    REQUIRE((got == want || (std::isinf(got) && std::isinf(want))));
    REQUIRE(got >= matcher.MinThreshold());
  }
  // The lowest any key can get: the 0.05 rule's, under the default.
  CHECK(matcher.MinThreshold() == 0.05);
  AlertOptions only_ignore;
  only_ignore.rules = {IgnoreGlob("health*")};
  CHECK(ThresholdMatcher(only_ignore).MinThreshold() == only_ignore.default_threshold);
  AlertOptions higher;
  higher.rules = {Prefix("big:", 0.9)};
  CHECK(ThresholdMatcher(higher).MinThreshold() == higher.default_threshold);
  CHECK(std::isinf(matcher.ThresholdFor("healthz")));
  CHECK(matcher.ThresholdFor("user:a:7") == 0.05);
  CHECK(matcher.ThresholdFor("user:a") == 0.3);
  CHECK(matcher.ThresholdFor("x") == 0.15);
  CHECK(matcher.ThresholdFor("X") == 0.7);
  CHECK(ThresholdMatcher(AlertOptions{}).ThresholdFor("") == AlertOptions{}.default_threshold);
}

}  // namespace
}  // namespace hotkey::aggregate
