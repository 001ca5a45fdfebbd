// Tests for config/flag_parser.h: the command-line parser shared by every program.

#include "hotkey/config/flag_parser.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace hotkey::config {
namespace {

using Catch::Matchers::Contains;
using testing::Message;

// A parser over every kind of flag, with its variables.
struct Fixture {
  explicit Fixture(FlagParser::Positional positional = FlagParser::Positional::kReject)
      : parser("prog", positional) {
    parser.AddString("name", "A string.", &name);
    parser.AddBool("verbose", "A boolean.", &verbose);
    parser.AddNumber("share", "A number.", &share);
    parser.AddDuration("every", "A duration.", &every);
    parser.AddDuration("for", "A duration or inf.", &duration, /*allow_infinite=*/true);
    parser.AddInteger("count", "An int.", &count);
    parser.AddInteger("small", "A uint8_t.", &small);
    parser.AddSize("buffer", "A size.", &buffer);
    parser.AddList("item", "Repeatable.", &items).Shown("X");
  }

  absl::StatusOr<FlagParser::Parsed> Parse(const std::vector<std::string_view>& args) {
    return parser.Parse(args);
  }
  std::string Error(const std::vector<std::string_view>& args) {
    absl::StatusOr<FlagParser::Parsed> r = Parse(args);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    return Message(r);
  }

  std::string name = "n";
  bool verbose = false;
  double share = 0.5;
  absl::Duration every = absl::Seconds(1);
  absl::Duration duration = absl::InfiniteDuration();
  int count = 3;
  uint8_t small = 7;
  size_t buffer = 16 << 20;
  std::vector<std::string> items;
  FlagParser parser;
};

TEST_CASE("FlagParser: --name=value and --name value set every kind of value", "[config][flags]") {
  Fixture f;
  REQUIRE(f.Parse({"--name=a=b", "--share", "0.25", "--every=1m30s", "--for", "2s", "--count=-4",
                   "--small", "255", "--buffer=64KiB", "--verbose"})
              .ok());
  CHECK(f.name == "a=b");  // a value may hold '='
  CHECK(f.share == 0.25);
  CHECK(f.every == absl::Seconds(90));
  CHECK(f.duration == absl::Seconds(2));
  CHECK(f.count == -4);
  CHECK(f.small == 255);
  CHECK(f.buffer == 65536);
  CHECK(f.verbose);
}

TEST_CASE("FlagParser: a boolean alone is true, and takes =false", "[config][flags]") {
  Fixture f;
  REQUIRE(f.Parse({"--verbose", "--count", "5"}).ok());
  CHECK(f.verbose);
  CHECK(f.count == 5);  // the boolean did not swallow the next argument
  REQUIRE(f.Parse({"--verbose=false"}).ok());
  CHECK_FALSE(f.verbose);
  CHECK_THAT(f.Error({"--verbose=maybe"}), Contains("flag --verbose: \"maybe\" is not a boolean"));
}

TEST_CASE("FlagParser: the last of a repeated flag wins; a list collects every one",
          "[config][flags]") {
  Fixture f;
  REQUIRE(f.Parse({"--count=1", "--item", "a", "--count=2", "--item=b"}).ok());
  CHECK(f.count == 2);
  CHECK(f.items == std::vector<std::string>{"a", "b"});
}

TEST_CASE("FlagParser: a duration needs a unit; inf only where allowed", "[config][flags]") {
  Fixture f;
  CHECK_THAT(f.Error({"--every=1"}), Contains("flag --every: \"1\" needs a unit"));
  CHECK_THAT(f.Error({"--for=1"}), Contains("flag --for: \"1\" needs a unit"));
  CHECK_THAT(f.Error({"--every=inf"}), Contains("flag --every") && Contains("not a duration"));
  REQUIRE(f.Parse({"--every=0", "--for=inf"}).ok());
  CHECK(f.every == absl::ZeroDuration());
  CHECK(f.duration == absl::InfiniteDuration());
}

TEST_CASE("FlagParser: bad values name the flag and the value", "[config][flags]") {
  Fixture f;
  CHECK_THAT(f.Error({"--count=abc"}), Contains("flag --count: \"abc\" is not an integer"));
  CHECK_THAT(f.Error({"--count=99999999999"}), Contains("flag --count: \"99999999999\" is out"));
  CHECK_THAT(f.Error({"--small=256"}), Contains("flag --small: \"256\" is out of range"));
  CHECK_THAT(f.Error({"--small=-1"}), Contains("out of range"));
  CHECK_THAT(f.Error({"--share=nan"}), Contains("flag --share: \"nan\" is not a finite number"));
  CHECK_THAT(f.Error({"--buffer=16XB"}),
             Contains("flag --buffer") && Contains("unknown size unit"));
}

TEST_CASE("FlagParser: unknown flags, missing values and stray arguments are errors",
          "[config][flags]") {
  Fixture f;
  CHECK_THAT(f.Error({"--cuont=1"}), Contains("unknown flag --cuont; did you mean --count?"));
  CHECK_THAT(f.Error({"--completely-different"}), !Contains("did you mean"));
  CHECK_THAT(f.Error({"--count"}),
             Contains("flag --count needs a value (--count=VALUE or --count VALUE)"));
  CHECK_THAT(f.Error({"--name", "--verbose"}), Contains("flag --name needs a value"));
  CHECK_THAT(f.Error({"extra"}),
             Contains("unexpected argument \"extra\": prog takes only --flags (see --help)"));
  CHECK_THAT(f.Error({"--"}), Contains("unexpected argument \"--\""));
}

TEST_CASE("FlagParser: positional arguments, and everything after --, when accepted",
          "[config][flags]") {
  Fixture f(FlagParser::Positional::kAccept);
  absl::StatusOr<FlagParser::Parsed> r =
      f.Parse({"file", "--count=2", "-", "--", "--verbose", "x"});
  REQUIRE(r.ok());
  CHECK(r->positional == std::vector<std::string>{"file", "-", "--verbose", "x"});
  CHECK(f.count == 2);
  CHECK_FALSE(f.verbose);
}

TEST_CASE("FlagParser: -h and --help are reported even beside bad flags", "[config][flags]") {
  Fixture f;
  for (std::string_view help : {"--help", "-h"}) {
    absl::StatusOr<FlagParser::Parsed> r = f.Parse({"--bogus", help, "--count=x"});
    REQUIRE(r.ok());
    CHECK(r->help);
  }
  CHECK(f.count == 3);  // nothing was set
}

TEST_CASE("FlagParser: help lists each flag with the default it had at registration",
          "[config][flags]") {
  Fixture f;
  CHECK(f.parser.Help() ==
        "  --name=n\n        A string.\n"
        "  --verbose\n        A boolean. (default: false)\n"
        "  --share=0.5\n        A number.\n"
        "  --every=1s\n        A duration.\n"
        "  --for=inf\n        A duration or inf.\n"
        "  --count=3\n        An int.\n"
        "  --small=7\n        A uint8_t.\n"
        "  --buffer=16MiB\n        A size.\n"
        "  --item=X\n        Repeatable.\n");
}

TEST_CASE("FlagParser: help wraps a long text at spaces within the width", "[config][flags]") {
  FlagParser parser("prog");
  std::string value;
  std::string help;
  for (int i = 0; i < 30; ++i) help += "word" + std::to_string(i) + " ";
  help += std::string(100, 'x');  // one word wider than the room: kept whole
  parser.AddString("long", help, &value);
  const std::string out = parser.Help();
  // 8 spaces of indent leave 72 columns for the words ("word0" to "word29").
  std::istringstream lines(out);
  std::vector<std::string> got;
  for (std::string line; std::getline(lines, line);) got.push_back(line);
  REQUIRE(got.size() >= 4);
  CHECK(got[0] == "  --long=\"\"");
  std::string rejoined;
  for (size_t i = 1; i + 1 < got.size(); ++i) {  // the last line is the over-wide word
    INFO(got[i]);
    CHECK(got[i].rfind("        ", 0) == 0);
    CHECK(got[i][8] != ' ');
    CHECK(got[i].size() <= FlagParser::kHelpWidth);
    rejoined += (rejoined.empty() ? "" : " ") + got[i].substr(8);
  }
  CHECK(got.back() == "        " + std::string(100, 'x'));
  // Nothing lost or reordered: the lines joined with spaces give the text back.
  CHECK(rejoined + " " + std::string(100, 'x') == help);
  // A line is broken only where the next word would not fit.
  for (size_t i = 1; i + 2 < got.size(); ++i) {
    const std::string next_word = got[i + 1].substr(8, got[i + 1].find(' ', 8) - 8);
    CHECK(got[i].size() + 1 + next_word.size() > FlagParser::kHelpWidth);
  }
}

TEST_CASE("FlagParser: help groups flags by section; advanced ones only in the full help",
          "[config][flags]") {
  FlagParser parser("prog");
  int a = 1, b = 2, c = 3;
  bool d = false;
  parser.Section("First");
  parser.AddInteger("a", "A.", &a);
  parser.AddInteger("b", "B.", &b).Advanced();
  parser.Section("Only tuning");
  parser.AddInteger("c", "C.", &c).Advanced();
  parser.Section("Last");
  parser.AddBool("d", "D.", &d);
  CHECK(parser.Help() ==
        "First:\n  --a=1\n        A.\n"
        "\n"
        "Last:\n  --d\n        D. (default: false)\n");
  CHECK(parser.Help(FlagParser::HelpScope::kAll) ==
        "First:\n  --a=1\n        A.\n  --b=2\n        B.\n"
        "\n"
        "Only tuning:\n  --c=3\n        C.\n"
        "\n"
        "Last:\n  --d\n        D. (default: false)\n");
  CHECK(parser.FlagCount() == 4);
  CHECK(parser.AdvancedCount() == 2);
  REQUIRE(parser.Parse({"--b=5", "--c=6"}).ok());  // advanced flags are accepted
  CHECK(b == 5);
  CHECK(c == 6);
}

TEST_CASE("FlagParser: a moved flag fails with its own message in every form", "[config][flags]") {
  Fixture f;
  f.parser.AddMoved("old-count", "--old-count moved: use --count");
  for (const std::vector<std::string_view>& args :
       {std::vector<std::string_view>{"--old-count=1"}, {"--old-count", "1"}, {"--old-count"}}) {
    CHECK(f.Error(args) == "--old-count moved: use --count");
  }
  // Neither listed nor suggested for a misspelling.
  CHECK_THAT(f.parser.Help(FlagParser::HelpScope::kAll), !Contains("old-count"));
  CHECK_THAT(f.Error({"--old-cont=1"}), !Contains("did you mean --old-count"));
  CHECK(f.parser.FlagCount() == 9);
}

}  // namespace
}  // namespace hotkey::config
