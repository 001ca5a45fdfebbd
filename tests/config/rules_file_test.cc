// Tests for config/rules_file.h: the YAML rules file.

#include "hotkey/config/rules_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "test_util.h"

namespace hotkey::config {
namespace {

using Catch::Matchers::Contains;
using testing::Message;

// A base unlike the defaults, so that "kept from base" is observable.
ReloadableOptions Base() {
  ReloadableOptions base;
  base.alert.default_threshold = 0.3;
  base.alert.rules = {{ThresholdRule::kPrefix, "old:", 0.5, false}};
  base.exporter.top_k = 7;
  base.cluster.shards = 12;
  return base;
}

ReloadableOptions ApplyOk(const std::string& yaml) {
  absl::StatusOr<ReloadableOptions> r = ApplyRulesFile(yaml, Base());
  INFO(Message(r));
  REQUIRE(r.ok());
  return *r;
}

std::string ApplyError(const std::string& yaml) {
  absl::StatusOr<ReloadableOptions> r = ApplyRulesFile(yaml, Base());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  return Message(r);
}

// A file in the temp directory, removed on scope exit.
class TempFile {
 public:
  explicit TempFile(const std::string& text)
      : path_(std::filesystem::temp_directory_path() /
              ("hotkey_rules_test_" + std::to_string(getpid()) + ".yml")) {
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

TEST_CASE("Rules file: the example file loads with every section", "[config][rules]") {
  absl::StatusOr<ReloadableOptions> r =
      LoadRulesFile(HOTKEY_SOURCE_DIR "/config/example-rules.yml", ReloadableOptions{});
  INFO(Message(r));
  REQUIRE(r.ok());
  CHECK(r->alert.default_threshold == 0.10);
  CHECK(r->alert.min_ops_per_second == 100);
  REQUIRE(r->alert.rules.size() == 3);
  CHECK(r->alert.ThresholdFor("session:9") == 0.25);
  CHECK(r->alert.ThresholdFor("user:42:profile") == 0.05);
  CHECK(std::isinf(r->alert.ThresholdFor("healthcheck/db")));
  CHECK(r->alert.ThresholdFor("cart:1") == 0.10);
  CHECK(r->exporter.label == KeyLabelMode::kRaw);
  CHECK(r->exporter.min_key_ops_per_second == 2);
}

TEST_CASE("Rules file: the example file's values are the defaults but for min_ops and the rules",
          "[config][rules]") {
  // The example says so in its opening comment.
  absl::StatusOr<ReloadableOptions> r =
      LoadRulesFile(HOTKEY_SOURCE_DIR "/config/example-rules.yml", ReloadableOptions{});
  REQUIRE(r.ok());
  CHECK(r->exporter == ExportOptions{});
  AlertOptions alert = r->alert;
  alert.min_ops_per_second = AlertOptions{}.min_ops_per_second;
  alert.rules.clear();
  CHECK(alert == AlertOptions{});
}

TEST_CASE("Rules file: given keys override the base and the rest is kept", "[config][rules]") {
  ReloadableOptions r = ApplyOk(
      "alert:\n"
      "  share_threshold: 0.2\n"
      "  min_dwell: 1s\n"
      "  advice_margin: 0.1\n"
      "export:\n"
      "  key_label: hash\n"
      "  label_max_bytes: 1KiB\n"
      "  min_key_ops: 0.5\n");
  CHECK(r.alert.default_threshold == 0.2);
  CHECK(r.alert.min_dwell == absl::Seconds(1));
  CHECK(r.alert.advice_margin == 0.1);
  CHECK(r.alert.hysteresis == Base().alert.hysteresis);
  CHECK(r.alert.rules == Base().alert.rules);  // no thresholds section: base rules kept
  CHECK(r.exporter.label == KeyLabelMode::kHash);
  CHECK(r.exporter.label_max_bytes == 1024);
  CHECK(r.exporter.min_key_ops_per_second == 0.5);
  CHECK(r.exporter.top_k == 7);
  CHECK(r.cluster.shards == 12);  // the cluster model is the flags' (base's)
}

TEST_CASE("Rules file: a thresholds list replaces the base's rules in order", "[config][rules]") {
  ReloadableOptions r = ApplyOk(
      "thresholds:\n"
      "  - glob: \"user:*\"\n"
      "    share: 0.05\n"
      "  - prefix: 'user:admin'\n"
      "    share: 0.5\n"
      "  - glob: \"ping*\"\n"
      "    ignore: true\n");
  REQUIRE(r.alert.rules.size() == 3);
  CHECK(r.alert.rules[0].kind == ThresholdRule::kGlob);
  CHECK(r.alert.rules[1].pattern == "user:admin");
  CHECK(r.alert.rules[2].ignore);
  CHECK(r.alert.ThresholdFor("user:admin") == 0.05);  // first match wins
  CHECK(r.alert.ThresholdFor("old:1") == 0.3);        // the base rule is gone
  CHECK(ApplyOk("thresholds: []\n").alert.rules.empty());
}

TEST_CASE("Rules file: an empty file keeps the base", "[config][rules]") {
  for (const char* text : {"", "\n\n", "# only a comment\n", "---\n"}) {
    INFO(text);
    ReloadableOptions r = ApplyOk(text);
    CHECK(r.alert == Base().alert);
    CHECK(r.exporter == Base().exporter);
    CHECK(r.cluster.shards == 12);
  }
  // An empty section is also harmless.
  CHECK(ApplyOk("alert:\n").alert == Base().alert);
}

TEST_CASE("Rules file: unknown keys are rejected with their line", "[config][rules]") {
  CHECK_THAT(ApplyError("alerts:\n  share_threshold: 0.1\n"),
             Contains("line 1: alerts: unknown key") && Contains("alert, thresholds"));
  CHECK_THAT(ApplyError("alert:\n  min_dwell: 1s\n  share_treshold: 0.1\n"),
             Contains("line 3: alert.share_treshold: unknown key"));
  CHECK_THAT(ApplyError("thresholds:\n  - prefix: a\n    share: 0.1\n    sahre: 0.2\n"),
             Contains("line 4: thresholds[0].sahre: unknown key"));
}

TEST_CASE("Rules file: wrong types are rejected with their line", "[config][rules]") {
  CHECK_THAT(ApplyError("alert:\n  min_dwell: [1, 2]\n"),
             Contains("line 2: alert.min_dwell: must be a single value"));
  CHECK_THAT(ApplyError("export:\n  top_k: ten\n"),
             Contains("line 2: export.top_k: \"ten\" is not an integer"));
  CHECK_THAT(ApplyError("export:\n\n  top_k: -3\n"), Contains("line 3: export.top_k: -3 is out"));
  CHECK_THAT(ApplyError("alert:\n  min_dwell: 5\n"),
             Contains("line 2") && Contains("needs a unit"));
  CHECK_THAT(ApplyError("alert:\n  hysteresis:\n"), Contains("alert.hysteresis: needs a value"));
  CHECK_THAT(ApplyError("alert: 3\n"), Contains("line 1: alert: must be a map"));
  CHECK_THAT(ApplyError("thresholds: {prefix: a}\n"), Contains("thresholds: must be a list"));
  CHECK_THAT(ApplyError("thresholds:\n  - just-a-string\n"),
             Contains("line 2: thresholds[0]: must be a map"));
  CHECK_THAT(ApplyError("thresholds:\n  - glob: 'x*'\n    ignore: sometimes\n"),
             Contains("line 3: thresholds[0].ignore") && Contains("not a boolean"));
  CHECK_THAT(ApplyError("export:\n  key_label: plain\n"), Contains("line 2: export.key_label"));
  CHECK_THAT(ApplyError("- a\n- b\n"), Contains("rules file: must be a map"));
  CHECK_THAT(ApplyError("just text\n"), Contains("must be a map"));
}

TEST_CASE("Rules file: malformed YAML is an error, not an exception", "[config][rules]") {
  CHECK_THAT(ApplyError("alert:\n  share_threshold: [0.1\n"), Contains("malformed YAML"));
  CHECK_THAT(ApplyError("alert: {\n"), Contains("line") && Contains("malformed YAML"));
  CHECK_THAT(ApplyError("\t- tab\n"), Contains("malformed YAML"));
  CHECK_THAT(ApplyError("alert:\n  min_ops: 1\n  min_ops: 2\n"),
             Contains("line 3: alert.min_ops: given twice"));
}

TEST_CASE("Rules file: bad rules are rejected with their line", "[config][rules]") {
  CHECK_THAT(ApplyError("thresholds:\n  - prefix: a\n"),
             Contains("line 2: thresholds[0]: needs share"));
  CHECK_THAT(ApplyError("thresholds:\n  - share: 0.2\n"),
             Contains("exactly one of prefix or glob"));
  CHECK_THAT(ApplyError("thresholds:\n  - prefix: a\n    glob: b\n    share: 0.2\n"),
             Contains("exactly one of prefix or glob"));
  CHECK_THAT(ApplyError("thresholds:\n  - prefix: a\n    share: 0.2\n    ignore: true\n"),
             Contains("not both"));
  CHECK_THAT(ApplyError("thresholds:\n  - prefix: a\n    share: 0.2\n  - glob: 'user:[ab'\n"
                        "    share: 0.2\n"),
             Contains("line 4: thresholds[1]") && Contains("unclosed '['"));
  CHECK_THAT(ApplyError("thresholds:\n  - prefix: a\n    share: 2\n"),
             Contains("thresholds[0]") && Contains("(0, 1]"));
  CHECK_THAT(ApplyError("thresholds:\n  - prefix: ''\n    share: 0.2\n"),
             Contains("pattern is empty"));
}

TEST_CASE("Rules file: out-of-range settings name their section's line", "[config][rules]") {
  CHECK_THAT(ApplyError("\nalert:\n  share_threshold: 1.5\n"),
             Contains("line 3: alert share threshold must be in (0, 1]; got 1.5"));
  CHECK_THAT(ApplyError("export:\n  top_k: 5000\n"), Contains("export top-k"));
  CHECK_THAT(ApplyError("export:\n  hysteresis: 1\n"), Contains("export hysteresis"));
  // The ranges the removed policy flags had, now the file's.
  CHECK_THAT(ApplyError("export:\n  top_k: 0\n"), Contains("export top-k must be in [1, 1000]"));
  CHECK_THAT(ApplyError("export:\n  min_share: 0\n"),
             Contains("export min share must be in (0, 1]"));
  CHECK(ApplyOk("export:\n  min_share: 1\n").exporter.min_share == 1);
  CHECK_THAT(ApplyError("export:\n  min_key_ops: -1\n"), Contains("export min key ops"));
  CHECK_THAT(ApplyError("export:\n  min_key_ops: nan\n"), Contains("not a finite number"));
  CHECK_THAT(ApplyError("export:\n  label_max_bytes: 4\n"), Contains("key label max bytes"));
  CHECK_THAT(ApplyError("alert:\n  hysteresis: -0.1\n"), Contains("alert hysteresis"));
  CHECK_THAT(ApplyError("alert:\n  min_ops: -1\n"), Contains("alert min ops"));
  CHECK_THAT(ApplyError("alert:\n  min_dwell: -1s\n"), Contains("negative"));
  CHECK_THAT(ApplyError("alert:\n  advice_margin: 1\n"), Contains("advice margin"));
  CHECK_THAT(ApplyError("alert:\n  advice_dwell: 30s\n"), Contains("alert.advice_margin"));
}

TEST_CASE("Rules file: a cluster section is refused with the flags that replace it",
          "[config][rules]") {
  const std::string e = ApplyError(
      "alert:\n"
      "  min_ops: 5\n"
      "cluster:\n"
      "  shards: 4\n"
      "  refresh: 500ms\n"
      "  app_servers: 20\n"
      "  order: [replicate, split]\n");
  CHECK_THAT(e, Contains("line 4: cluster: the cluster model moved to flags; remove this "
                         "section and pass --cluster.shards=4 --cluster.refresh=500ms "
                         "--cluster.app-servers=20 --cluster.order=replicate,split"));
  CHECK_THAT(ApplyError("cluster:\n"), Contains("the --cluster.* flags"));
  CHECK_THAT(ApplyError("cluster: 3\n"), Contains("cluster model moved to flags"));
}

TEST_CASE("Rules file: a missing file is an error naming the path", "[config][rules]") {
  absl::StatusOr<ReloadableOptions> r =
      LoadRulesFile("/nonexistent/dir/rules.yml", ReloadableOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(Message(r), Contains("/nonexistent/dir/rules.yml"));
}

TEST_CASE("Rules file: errors in a loaded file name the path and line", "[config][rules]") {
  TempFile file("alert:\n  share_threshold: nope\n");
  absl::StatusOr<ReloadableOptions> r = LoadRulesFile(file.path(), ReloadableOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(Message(r), Contains(file.path()) && Contains("line 2"));
}

TEST_CASE("Rules file: a directory is not a rules file", "[config][rules]") {
  absl::StatusOr<ReloadableOptions> r =
      LoadRulesFile(std::filesystem::temp_directory_path().string(), ReloadableOptions{});
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(Message(r), Contains(std::filesystem::temp_directory_path().string()));
}

TEST_CASE("Rules file: a FIFO or a device is refused at once, never read", "[config][rules]") {
  // A FIFO with no writer would block a read (and the reload on the I/O thread with it);
  // /dev/zero would never end.
  const std::string fifo =
      (std::filesystem::temp_directory_path() / absl::StrCat("hotkey_rules_fifo_", ::getpid()))
          .string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& path : {fifo, std::string("/dev/zero")}) {
    INFO(path);
    absl::StatusOr<ReloadableOptions> r = LoadRulesFile(path, ReloadableOptions{});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(Message(r),
               Contains(absl::StrCat("rules file \"", path, "\" is not a regular file")));
  }
  ::unlink(fifo.c_str());
}

TEST_CASE("Rules file: LoadReloadable is the flags' options without a file", "[config][rules]") {
  DaemonOptions o;
  o.alert.default_threshold = 0.3;
  absl::StatusOr<ReloadableOptions> r = LoadReloadable(o);
  REQUIRE(r.ok());
  CHECK(r->alert.default_threshold == 0.3);
}

TEST_CASE("Rules file: LoadReloadable overlays the file on the flags and reports its errors",
          "[config][rules]") {
  DaemonOptions o;
  o.alert.default_threshold = 0.3;
  o.exporter.top_k = 7;
  {
    TempFile file("alert:\n  share_threshold: 0.2\n");
    o.config_file = file.path();
    absl::StatusOr<ReloadableOptions> r = LoadReloadable(o);
    REQUIRE(r.ok());
    CHECK(r->alert.default_threshold == 0.2);
    CHECK(r->exporter.top_k == 7);  // from the flags
  }
  TempFile bad("alert:\n  sahre_threshold: 0.2\n");
  absl::StatusOr<ReloadableOptions> r = LoadReloadable(o);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(Message(r), Contains(bad.path()) && Contains("line 2") && Contains("sahre_threshold"));
}

TEST_CASE("Rules file: the example's feed section loads", "[config][rules][feed]") {
  absl::StatusOr<ReloadableOptions> r =
      LoadRulesFile(HOTKEY_SOURCE_DIR "/config/example-rules.yml", ReloadableOptions{});
  REQUIRE(r.ok());
  CHECK(r->feed.lease == absl::Seconds(10));
  CHECK(r->feed.heartbeat() == absl::Seconds(2));
  CHECK(r->feed.refresh == absl::Seconds(1));
  CHECK(r->feed.split_factor == 8);
  REQUIRE(r->feed.pins.size() == 2);
  CHECK(r->feed.pins[0] == FeedPin{{FeedPattern::kKey, "tenant:acme"}, model::Strategy::kIsolate});
  CHECK(r->feed.pins[1] == FeedPin{{FeedPattern::kPrefix, "flash:"}, model::Strategy::kCache});
  REQUIRE(r->feed.blocks.size() == 1);
  CHECK(r->feed.blocks[0].Matches("healthcheck/db"));
  CHECK_FALSE(r->feed.blocks[0].Matches("user:1"));
}

TEST_CASE("Rules file: feed pins and blocks take key, prefix and glob as documented",
          "[config][rules][feed]") {
  ReloadableOptions r = ApplyOk(
      "feed:\n"
      "  lease: 3s\n"
      "  pin:\n"
      "    - {key: \"a\", mode: split}\n"
      "  block:\n"
      "    - key: \"x\"\n"
      "    - prefix: \"p:\"\n"
      "    - glob: \"g*z\"\n");
  CHECK(r.feed.lease == absl::Seconds(3));
  CHECK_FALSE(r.feed.refresh.has_value());  // unset: the cluster model's
  REQUIRE(r.feed.blocks.size() == 3);
  CHECK(r.feed.blocks[0].Matches("x"));
  CHECK_FALSE(r.feed.blocks[0].Matches("xy"));
  CHECK(r.feed.blocks[1].Matches("p:1"));
  CHECK(r.feed.blocks[2].Matches("g-any-z"));
  CHECK_FALSE(r.feed.blocks[2].Matches("g-any-y"));
  // Deleting the section brings back the base's (the defaults').
  CHECK(ApplyOk("alert:\n  min_dwell: 1s\n").feed == FeedOptions{});
}

TEST_CASE("Rules file: feed.hold is a duration from 0s to 1h, 60s by default",
          "[config][rules][feed]") {
  CHECK(FeedOptions{}.hold == absl::Seconds(60));
  CHECK(ApplyOk("alert:\n  min_dwell: 1s\n").feed.hold == absl::Seconds(60));
  CHECK(ApplyOk("feed:\n  hold: 90s\n").feed.hold == absl::Seconds(90));
  CHECK(ApplyOk("feed:\n  hold: 0s\n").feed.hold == absl::ZeroDuration());
  CHECK(ApplyOk("feed:\n  hold: 1h\n").feed.hold == absl::Hours(1));
  CHECK_THAT(ApplyError("feed:\n  hold: -1s\n"),
             Contains("line 2") && Contains("feed.hold") && Contains("negative"));
  CHECK_THAT(ApplyError("feed:\n  hold: 61m\n"),
             Contains("line 2") && Contains("feed hold must be in [0s, 1h]; got 1h1m"));
  CHECK_THAT(ApplyError("feed:\n  hold: soon\n"),
             Contains("line 2") && Contains("feed.hold") && Contains("is not a duration"));
  CHECK_THAT(ApplyError("feed:\n  hold: 60\n"), Contains("needs a unit"));
  CHECK_THAT(ApplyError("feed:\n  hold: [1s]\n"), Contains("must be a single value"));
  FeedOptions f;
  f.hold = absl::Hours(2);
  CHECK_THAT(std::string(f.Validate().message()), Contains("feed hold"));
}

TEST_CASE("Rules file: a bad feed section is refused with its line", "[config][rules][feed]") {
  CHECK_THAT(ApplyError("feed:\n  leese: 1s\n"), Contains("unknown key"));
  CHECK_THAT(ApplyError("feed:\n  lease: 0s\n"), Contains("feed lease"));
  CHECK_THAT(ApplyError("feed:\n  split_factor: 1\n"), Contains("[2, 1024]"));
  CHECK_THAT(ApplyError("feed:\n  pin:\n    - glob: \"a*\"\n      mode: cache\n"),
             Contains("unknown key"));
  CHECK_THAT(ApplyError("feed:\n  pin:\n    - key: \"a\"\n"), Contains("needs mode"));
  CHECK_THAT(ApplyError("feed:\n  pin:\n    - key: \"a\"\n      mode: none\n"), Contains("mode"));
  CHECK_THAT(ApplyError("feed:\n  pin:\n    - key: \"a\"\n      mode: bogus\n"),
             Contains("line 4"));
  CHECK_THAT(ApplyError("feed:\n  block:\n    - key: \"a\"\n      prefix: \"b\"\n"),
             Contains("exactly one"));
  CHECK_THAT(ApplyError("feed:\n  block:\n    - glob: \"[a\"\n"), Contains("line 3"));
  CHECK_THAT(ApplyError("feed:\n  block: \"a\"\n"), Contains("must be a list"));
}

}  // namespace
}  // namespace hotkey::config
