// Tests for config/measured_loads.h: the measured-loads file, its checks and its watcher;
// and the flags that name it.

#include "hotkey/config/measured_loads.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hotkey/config/flags.h"
#include "test_util.h"

namespace hotkey::config {
namespace {

using Catch::Matchers::Contains;
using testing::Message;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/hotkey-measured-loads-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  // Written as a feed should: a temporary file renamed over the old one.
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name + ".tmp"), std::ios::binary) << text;
    std::filesystem::rename(Path(name + ".tmp"), Path(name));
  }

 private:
  std::string dir_;
};

TEST_CASE("MeasuredLoads: a full file parses to its figures", "[config][measured_loads]") {
  absl::StatusOr<MeasuredLoads> m = ParseMeasuredLoads(R"({
    "timestamp": 1764604800.25, "ops_per_second": [1939.5, 437, 0],
    "strategy": "split_cache", "key": "user:42", "source": "INFO commandstats, 1 s",
    "interval_seconds": 1.5,
    "a later member": {"is": "ignored"}})");
  INFO(Message(m));
  REQUIRE(m.ok());
  CHECK(m->time == absl::FromUnixMillis(1764604800250));
  CHECK(m->ops_per_second == std::vector<double>{1939.5, 437, 0});
  CHECK(m->strategy == model::Strategy::kSplitCache);
  CHECK(m->key == "user:42");
  CHECK(m->source == "INFO commandstats, 1 s");
  CHECK(m->interval == absl::Milliseconds(1500));
}

TEST_CASE("MeasuredLoads: strategy, key and source are optional", "[config][measured_loads]") {
  absl::StatusOr<MeasuredLoads> m =
      ParseMeasuredLoads(R"({"timestamp": 1, "ops_per_second": [5]})");
  REQUIRE(m.ok());
  CHECK(m->strategy == model::Strategy::kNone);
  CHECK(m->key.empty());
  CHECK(m->source.empty());
  CHECK(m->interval == absl::ZeroDuration());
  CHECK(m->time == absl::FromUnixSeconds(1));
}

TEST_CASE("MeasuredLoads: bad content is an error naming what is wrong",
          "[config][measured_loads]") {
  const std::string big_key(MeasuredLoads::kMaxKeyBytes + 1, 'k');
  std::string too_many = "[0";
  for (int i = 1; i <= model::Cluster::kMaxShards; ++i) too_many += ",1";
  too_many += "]";
  const std::pair<std::string, std::string> cases[] = {
      {"", "not JSON"},
      {"{\"timestamp\": 1, \"ops_per_second\": [1]", "not JSON"},
      {"[1, 2]", "not a JSON object"},
      {R"({"ops_per_second": [1]})", "no \"timestamp\""},
      {R"({"timestamp": "now", "ops_per_second": [1]})", "\"timestamp\" must be Unix seconds"},
      {R"({"timestamp": -5, "ops_per_second": [1]})", "\"timestamp\" must be Unix seconds"},
      {R"({"timestamp": 1e300, "ops_per_second": [1]})", "\"timestamp\" must be Unix seconds"},
      {R"({"timestamp": 1})", "no \"ops_per_second\""},
      {R"({"timestamp": 1, "ops_per_second": [1], "interval_seconds": -1})",
       "\"interval_seconds\" must be a number in [0, 3600]"},
      {R"({"timestamp": 1, "ops_per_second": [1], "interval_seconds": "2s"})",
       "\"interval_seconds\" must be a number in [0, 3600]"},
      {R"({"timestamp": 1, "ops_per_second": 5})", "must be an array"},
      {R"({"timestamp": 1, "ops_per_second": []})", "must hold 1 to 10000 shards; it holds 0"},
      {absl::StrCat(R"({"timestamp": 1, "ops_per_second": )", too_many, "}"), "it holds 10001"},
      {R"({"timestamp": 1, "ops_per_second": [1, -2]})", "\"ops_per_second\"[1] must be a rate"},
      {R"({"timestamp": 1, "ops_per_second": [1, "2"]})", "\"ops_per_second\"[1] must be a rate"},
      {R"({"timestamp": 1, "ops_per_second": [1e999]})", "\"ops_per_second\"[0] must be a rate"},
      {R"({"timestamp": 1, "ops_per_second": [1], "strategy": "shard"})",
       "\"strategy\" must be one of"},
      {R"({"timestamp": 1, "ops_per_second": [1], "strategy": 3})", "\"strategy\" must be one of"},
      {R"({"timestamp": 1, "ops_per_second": [1], "key": 42})", "\"key\" must be a string"},
      {absl::StrCat(R"({"timestamp": 1, "ops_per_second": [1], "key": ")", big_key, "\"}"),
       "\"key\" is longer than 1024 bytes"},
      {R"({"timestamp": 1, "ops_per_second": [1], "source": null})", "\"source\" must be a string"},
      {"{\"timestamp\": 1, \"ops_per_second\": [1], \"key\": \"\xff\"}", "not JSON"},
  };
  for (const auto& [text, want] : cases) {
    INFO(text.substr(0, 120));
    absl::StatusOr<MeasuredLoads> m = ParseMeasuredLoads(text);
    REQUIRE_FALSE(m.ok());
    CHECK(m.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(Message(m), Contains("measured loads: ") && Contains(want));
  }
}

TEST_CASE("MeasuredLoads: a file names itself in its errors; a missing one is NotFound",
          "[config][measured_loads]") {
  TempDir dir;
  absl::StatusOr<MeasuredLoads> missing = LoadMeasuredLoadsFile(dir.Path("nope.json"));
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  dir.Write("bad.json", "{]");
  absl::StatusOr<MeasuredLoads> bad = LoadMeasuredLoadsFile(dir.Path("bad.json"));
  CHECK_THAT(Message(bad), Contains(dir.Path("bad.json")) && Contains("not JSON"));
  dir.Write("ok.json", R"({"timestamp": 2, "ops_per_second": [3, 4]})");
  absl::StatusOr<MeasuredLoads> ok = LoadMeasuredLoadsFile(dir.Path("ok.json"));
  REQUIRE(ok.ok());
  CHECK(ok->ops_per_second.size() == 2);
  // A wrong path to something endless is refused unread; a large file at the size cap.
  CHECK_THAT(Message(LoadMeasuredLoadsFile("/dev/zero")), Contains("not a regular file"));
  dir.Write("big.json", std::string((1 << 20) + 1, ' '));
  CHECK_THAT(Message(LoadMeasuredLoadsFile(dir.Path("big.json"))), Contains("larger than 1MiB"));
}

TEST_CASE("MeasuredLoads: the watcher reports a change once, and a lasting problem once",
          "[config][measured_loads]") {
  TempDir dir;
  MeasuredLoadsWatcher w(dir.Path("loads.json"));
  // Missing: an error, then no news while it stays missing.
  absl::StatusOr<std::optional<MeasuredLoads>> p = w.Poll();
  CHECK(p.status().code() == absl::StatusCode::kNotFound);
  p = w.Poll();
  REQUIRE(p.ok());
  CHECK_FALSE(p->has_value());
  // Appears: the measurement, then nothing until it changes.
  dir.Write("loads.json", R"({"timestamp": 10, "ops_per_second": [1, 2]})");
  p = w.Poll();
  REQUIRE(p.ok());
  REQUIRE(p->has_value());
  CHECK((*p)->time == absl::FromUnixSeconds(10));
  p = w.Poll();
  REQUIRE(p.ok());
  CHECK_FALSE(p->has_value());
  dir.Write("loads.json", R"({"timestamp": 11, "ops_per_second": [1, 2]})");
  p = w.Poll();
  REQUIRE(p.ok());
  REQUIRE(p->has_value());
  CHECK((*p)->time == absl::FromUnixSeconds(11));
  // Broken: one error, naming the file; then quiet until it changes again.
  dir.Write("loads.json", R"({"timestamp": 12, "ops_per_second": [1, -2]})");
  p = w.Poll();
  CHECK(p.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(p), Contains(dir.Path("loads.json")) && Contains("[1] must be a rate"));
  p = w.Poll();
  REQUIRE(p.ok());
  CHECK_FALSE(p->has_value());
  dir.Write("loads.json", R"({"timestamp": 13, "ops_per_second": [1, 2]})");
  p = w.Poll();
  REQUIRE(p.ok());
  REQUIRE(p->has_value());
  CHECK((*p)->time == absl::FromUnixSeconds(13));
}

absl::StatusOr<FlagsResult> Parse(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"hotkeyd"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  return ParseFlags(static_cast<int>(argv.size()), argv.data());
}

TEST_CASE("MeasuredLoads: the flags name the file and the age after which it is stale",
          "[config][measured_loads][flags]") {
  absl::StatusOr<FlagsResult> none = Parse({});
  REQUIRE(none.ok());
  CHECK(none->options.measured_loads.file.empty());
  CHECK(none->options.measured_loads.max_age == absl::Seconds(30));
  absl::StatusOr<FlagsResult> set =
      Parse({"--model.measured-loads-file=/run/loads.json", "--model.measured-loads-max-age=5s"});
  INFO(Message(set));
  REQUIRE(set.ok());
  CHECK(set->options.measured_loads.file == "/run/loads.json");
  CHECK(set->options.measured_loads.max_age == absl::Seconds(5));
  for (const char* bad :
       {"--model.measured-loads-max-age=500ms", "--model.measured-loads-max-age=25h"}) {
    absl::StatusOr<FlagsResult> r = Parse({bad});
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(Message(r), Contains("measured loads max age must be in [1s, 24h]"));
  }
  const std::string usage = UsageText(FlagParser::HelpScope::kAll);  // max-age is a tuning flag
  CHECK_THAT(usage, Contains("--model.measured-loads-file=\"\""));
  CHECK_THAT(usage, Contains("--model.measured-loads-max-age=30s"));
}

}  // namespace
}  // namespace hotkey::config
