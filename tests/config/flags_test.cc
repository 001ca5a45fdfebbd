// Tests for config/flags.h: the exporter-style flag parser.

#include "hotkey/config/flags.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "hotkey/version/build_info.h"
#include "test_util.h"

namespace hotkey::config {
namespace {

using Catch::Matchers::Contains;
using hotkey::model::Strategy;
using testing::Message;

absl::StatusOr<FlagsResult> Parse(const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"hotkeyd"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  return ParseFlags(static_cast<int>(argv.size()), argv.data());
}

DaemonOptions ParseOk(const std::vector<std::string>& args) {
  absl::StatusOr<FlagsResult> r = Parse(args);
  INFO(Message(r));
  REQUIRE(r.ok());
  REQUIRE(r->action == FlagsResult::Action::kRun);
  return r->options;
}

std::string ParseError(const std::vector<std::string>& args) {
  absl::StatusOr<FlagsResult> r = Parse(args);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  return Message(r);
}

TEST_CASE("Flags: no flags give the documented defaults", "[config][flags]") {
  DaemonOptions o = ParseOk({});
  CHECK(o.web.listen_addresses == std::vector<std::string>{":10110"});
  CHECK(o.web.telemetry_path == "/metrics");
  CHECK(o.udp.listen_address == "127.0.0.1:10111");
  CHECK(o.udp.receivers == 1);
  CHECK(o.udp.read_buffer_bytes == 16u << 20);
  CHECK(o.udp.batch == 64);
  CHECK(o.udp.allowed_sources.empty());
  CHECK(o.track.half_life == absl::Milliseconds(500));
  CHECK(o.track.publish_interval == absl::Milliseconds(250));
  CHECK(o.track.rate_window == absl::Seconds(10));
  CHECK(o.track.candidates == 104);
  CHECK(o.track.sketch_bytes == 52u << 10);
  CHECK(o.track.sketch_depth == 2);
  CHECK(o.track.max_key_bytes == 128);
  CHECK(o.exporter.top_k == 10);
  CHECK(o.exporter.min_share == 0.01);
  CHECK(o.exporter.hysteresis == 0.2);
  CHECK(o.exporter.label == KeyLabelMode::kRaw);
  CHECK(o.exporter.label_max_bytes == 128);
  CHECK(o.alert.default_threshold == 0.10);
  CHECK(o.alert.min_dwell == absl::Milliseconds(250));
  CHECK(o.alert.hysteresis == 0.2);
  CHECK(o.alert.min_ops_per_second == 1);
  CHECK(o.alert.rules.empty());
  CHECK(o.cluster.shards == 8);
  CHECK(o.cluster.replicas == 4);
  CHECK(o.cluster.order.size() == 5);
  CHECK(o.config_file.empty());
  CHECK_FALSE(o.demo);
  CHECK(o.demo_rate == 9500);
  CHECK(o.log_level == "info");
}

TEST_CASE("Flags: --name=value and --name value both set a value", "[config][flags]") {
  CHECK(ParseOk({"--udp.receivers=4"}).udp.receivers == 4);
  CHECK(ParseOk({"--udp.receivers", "4"}).udp.receivers == 4);
  CHECK(ParseOk({"--web.listen-address", "127.0.0.1:0"}).web.listen_addresses ==
        std::vector<std::string>{"127.0.0.1:0"});
  // A value may itself contain '='.
  CHECK(ParseOk({"--config.file=/etc/a=b.yml"}).config_file == "/etc/a=b.yml");
}

TEST_CASE("Flags: every kind of value is parsed", "[config][flags]") {
  DaemonOptions o = ParseOk({
      "--udp.read-buffer=64KiB",
      "--track.sketch-bytes=1MB",
      "--key.max-bytes=1KiB",
      "--track.half-life=1m30s",
      "--storage.interval=1h",
      "--udp.allowed-sources=10.0.0.0/8, ::1/128,,192.168.1.7",
      "--cluster.order=cache,split",
      "--cluster.refresh=500ms",
      "--cluster.capacity=2.5e4",
      "--demo.rate=100",
      "--log.level=debug",
  });
  CHECK(o.udp.read_buffer_bytes == 65536);
  CHECK(o.track.sketch_bytes == 1000000);
  CHECK(o.track.max_key_bytes == 1024);
  CHECK(o.track.half_life == absl::Seconds(90));
  CHECK(o.storage.interval == absl::Hours(1));
  CHECK(o.udp.allowed_sources == std::vector<std::string>{"10.0.0.0/8", "::1/128", "192.168.1.7"});
  CHECK(o.cluster.order == std::vector<Strategy>{Strategy::kCache, Strategy::kSplit});
  CHECK(o.cluster.refresh_seconds == 0.5);
  CHECK(o.cluster.capacity == 25000);
  CHECK(o.demo_rate == 100);
  CHECK(o.log_level == "debug");
}

TEST_CASE("Flags: --demo alone is true and --demo=false is false", "[config][flags]") {
  CHECK(ParseOk({"--demo"}).demo);
  CHECK(ParseOk({"--demo=true"}).demo);
  CHECK_FALSE(ParseOk({"--demo", "--demo=false"}).demo);
  // A bare boolean does not swallow the next argument.
  DaemonOptions o = ParseOk({"--demo", "--udp.receivers=2"});
  CHECK(o.demo);
  CHECK(o.udp.receivers == 2);
  CHECK_THAT(ParseError({"--demo=maybe"}), Contains("--demo") && Contains("maybe"));
}

TEST_CASE("Flags: the last of a repeated flag wins", "[config][flags]") {
  CHECK(ParseOk({"--udp.batch=8", "--udp.batch=16"}).udp.batch == 16);
}

TEST_CASE("Flags: a value that does not parse names the flag and the value", "[config][flags]") {
  CHECK_THAT(ParseError({"--udp.receivers=abc"}),
             Contains("--udp.receivers") && Contains("\"abc\" is not an integer"));
  CHECK_THAT(ParseError({"--udp.receivers=99999999999"}),
             Contains("--udp.receivers") && Contains("out of range"));
  CHECK_THAT(ParseError({"--track.candidates=-1"}),
             Contains("--track.candidates") && Contains("out of range"));
  CHECK_THAT(ParseError({"--track.sketch-depth=-1"}),
             Contains("--track.sketch-depth") && Contains("out of range"));
  CHECK_THAT(ParseError({"--track.half-life=1"}),
             Contains("--track.half-life") && Contains("needs a unit"));
  CHECK_THAT(ParseError({"--storage.interval=soon"}), Contains("is not a duration"));
  CHECK_THAT(ParseError({"--storage.interval=-1s"}), Contains("negative"));
  CHECK_THAT(ParseError({"--udp.read-buffer=16XB"}),
             Contains("--udp.read-buffer") && Contains("unknown size unit"));
  CHECK_THAT(ParseError({"--cluster.capacity=nan"}), Contains("not a finite number"));
  CHECK_THAT(ParseError({"--tap.protocol=http"}),
             Contains("--tap.protocol") && Contains("(redis, memcached)"));
  CHECK_THAT(ParseError({"--cluster.order=none,teleport"}), Contains("--cluster.order"));
}

TEST_CASE("Flags: out-of-range options are rejected with the allowed range", "[config][flags]") {
  CHECK_THAT(ParseError({"--udp.receivers=0"}), Contains("udp receivers must be in [1, 64]"));
  CHECK_THAT(ParseError({"--udp.receivers=65"}), Contains("got 65"));
  CHECK_THAT(ParseError({"--udp.batch=2000"}), Contains("udp batch must be in [1, 1024]"));
  CHECK_THAT(ParseError({"--udp.read-buffer=1KiB"}), Contains("udp read buffer"));
  CHECK_THAT(ParseError({"--key.max-bytes=15"}),
             Contains("key max bytes (--key.max-bytes) must be in [16, 65536]"));
  CHECK_THAT(ParseError({"--key.max-bytes=65537"}), Contains("key max bytes"));
  CHECK(ParseOk({"--key.max-bytes=16"}).track.max_key_bytes == 16);
  CHECK(ParseOk({"--key.max-bytes=64KiB"}).track.max_key_bytes == 65536);
  CHECK_THAT(ParseError({"--track.half-life=0s"}), Contains("track half-life"));
  CHECK_THAT(ParseError({"--track.publish-interval=1ms"}), Contains("track publish interval"));
  CHECK_THAT(ParseError({"--track.rate-window=100ms"}), Contains("track rate window"));
  CHECK_THAT(ParseError({"--udp.allowed-sources=10.0.0.0/8,10.0.0.0/33"}),
             Contains("udp allowed sources") && Contains("10.0.0.0/33"));
  CHECK_THAT(ParseError({"--udp.allowed-sources=not-an-ip"}), Contains("not-an-ip"));
  CHECK_THAT(ParseError({"--udp.listen-address=10111"}),
             Contains("udp") && Contains("\"10111\" has no port"));
  CHECK_THAT(ParseError({"--web.listen-address=::1:80"}), Contains("brackets"));
  CHECK_THAT(ParseError({"--web.listen-address=:70000"}), Contains("bad port"));
  CHECK_THAT(ParseError({"--web.telemetry-path=metrics"}), Contains("must start with '/'"));
  CHECK_THAT(ParseError({"--web.telemetry-path=/-/metrics"}), Contains("/-/"));
  CHECK_THAT(ParseError({"--cluster.shards=4", "--cluster.split=8"}),
             Contains("cluster: split must be in [1, shards=4]"));
  CHECK_THAT(ParseError({"--cluster.replicas=9"}), Contains("cluster: replicas"));
  CHECK_THAT(ParseError({"--cluster.order="}), Contains("cluster: order"));
  CHECK_THAT(ParseError({"--demo.rate=0"}), Contains("demo rate"));
  CHECK_THAT(ParseError({"--log.level=loud"}), Contains("log level \"loud\""));
}

TEST_CASE("Flags: an unknown flag is an error that suggests the near name", "[config][flags]") {
  CHECK_THAT(ParseError({"--web.listen_address=:1"}),
             Contains("unknown flag --web.listen_address") &&
                 Contains("did you mean --web.listen-address?"));
  std::string far = ParseError({"--completely-different"});
  CHECK_THAT(far, Contains("unknown flag --completely-different"));
  CHECK_THAT(far, !Contains("did you mean"));
}

TEST_CASE("Flags: a flag without its value is an error", "[config][flags]") {
  CHECK_THAT(ParseError({"--udp.receivers"}), Contains("--udp.receivers needs a value"));
  // The next flag is not taken as the value.
  CHECK_THAT(ParseError({"--config.file", "--demo"}), Contains("--config.file needs a value"));
}

TEST_CASE("Flags: positional arguments and single-dash flags are rejected", "[config][flags]") {
  CHECK_THAT(ParseError({"extra"}), Contains("unexpected argument \"extra\""));
  CHECK_THAT(ParseError({"-demo"}), Contains("unexpected argument \"-demo\""));
  CHECK_THAT(ParseError({"--"}), Contains("unexpected argument"));
}

TEST_CASE("Flags: --help and -h return the usage even beside bad flags", "[config][flags]") {
  for (const char* help : {"--help", "-h"}) {
    absl::StatusOr<FlagsResult> r = Parse({"--bogus", help});
    REQUIRE(r.ok());
    CHECK(r->action == FlagsResult::Action::kPrintHelp);
    CHECK(r->text == UsageText());
  }
}

TEST_CASE("Flags: --version returns the version text", "[config][flags]") {
  absl::StatusOr<FlagsResult> r = Parse({"--version"});
  REQUIRE(r.ok());
  CHECK(r->action == FlagsResult::Action::kPrintVersion);
  const hotkey::version::BuildInfo& b = hotkey::version::Build();
  CHECK_THAT(r->text, Contains("hotkeyd, version " + std::string(b.version) +
                               " (branch: " + std::string(b.branch) +
                               ", revision: " + std::string(b.revision) + ")\n"));
  CHECK_THAT(r->text, Contains("  build date:"));
  CHECK(r->text == VersionText());
}

TEST_CASE("Flags: the usage text lists every flag with its default", "[config][flags]") {
  const std::string usage = UsageText(FlagParser::HelpScope::kAll);
  const char* expected[] = {
      "--web.listen-address=:10110",
      "--web.telemetry-path=/metrics",
      "--web.config.file=\"\"",
      "--web.health-without-auth\n",
      "--udp.listen-address=127.0.0.1:10111",
      "--udp.receivers=1",
      "--udp.read-buffer=16MiB",
      "--udp.batch=64",
      "--udp.allowed-sources=\"\"",
      "--key.max-bytes=128",
      "--key.hash-secret-file=\"\"",
      "--track.half-life=500ms",
      "--track.publish-interval=250ms",
      "--track.rate-window=10s",
      "--track.candidates=104",
      "--track.sketch-bytes=52KiB",
      "--track.sketch-depth=2",
      "--cluster.shards=8",
      "--cluster.capacity=10000",
      "--cluster.app-servers=50",
      "--cluster.refresh=1s",
      "--cluster.replicas=4",
      "--cluster.split=8",
      "--cluster.target=0.8",
      "--cluster.order=none,cache,replicate,split,split_cache",
      "--storage.path=\"\"",
      "--storage.interval=1m",
      "--config.file=\"\"",
      "--demo\n",
      "--demo.rate=9500",
      "--log.level=info",
      "--help",
      "--help-all",
      "--version",
  };
  for (const char* flag : expected) {
    INFO(flag);
    CHECK_THAT(usage, Contains(flag));
  }
  CHECK_THAT(usage, Contains("(default: false)"));
}

// The flag lines ("  --name=DEFAULT" or "  --name") of a usage text, in order.
std::vector<std::string> FlagLines(const std::string& usage) {
  std::vector<std::string> out;
  std::istringstream lines(usage);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  --", 0) == 0) out.push_back(line.substr(2));
  }
  return out;
}

// The flag's name in a flag line: "--udp.batch=64" gives "udp.batch".
std::string FlagName(const std::string& flag_line) {
  return flag_line.substr(
      2, flag_line.find('=') == std::string::npos ? std::string::npos : flag_line.find('=') - 2);
}

TEST_CASE("Flags: no line of --help or --help-all is wider than the wrap width",
          "[config][flags]") {
  for (FlagParser::HelpScope scope :
       {FlagParser::HelpScope::kCommon, FlagParser::HelpScope::kAll}) {
    std::istringstream lines(UsageText(scope));
    int n = 0;
    for (std::string line; std::getline(lines, line); ++n) {
      INFO(line);
      CHECK(line.size() <= FlagParser::kHelpWidth);
    }
    CHECK(n > 40);
  }
}

TEST_CASE("Flags: --help is grouped: each flag family sits under one section heading",
          "[config][flags]") {
  for (FlagParser::HelpScope scope :
       {FlagParser::HelpScope::kCommon, FlagParser::HelpScope::kAll}) {
    // heading -> the families ("web", "udp", ...) of the flags listed under it
    std::vector<std::string> headings;
    std::map<std::string, std::set<std::string>> families_under;
    std::map<std::string, std::set<std::string>> headings_of;
    std::istringstream lines(UsageText(scope));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line[0] != ' ' && line.back() == ':') {
        headings.push_back(line);
      } else if (line.rfind("  --", 0) == 0) {
        REQUIRE_FALSE(headings.empty());
        const std::string name = FlagName(line.substr(2));
        const std::string family = name.substr(0, name.find_first_of(".-"));
        families_under[headings.back()].insert(family);
        headings_of[family].insert(headings.back());
      }
    }
    for (const char* h :
         {"General:", "Web:", "UDP events:", "Tap (the shard's own traffic, libpcap):", "Keys:",
          "Tracking:", "Cluster (the advice model):", "Storage:", "Logging:"}) {
      INFO(h);
      CHECK(std::find(headings.begin(), headings.end(), h) != headings.end());
    }
    for (const auto& [family, under] : headings_of) {
      INFO(family);
      CHECK(under.size() == 1);  // a family is not split over sections
    }
    CHECK(families_under["Web:"] == std::set<std::string>{"web"});
    CHECK(families_under["UDP events:"] == std::set<std::string>{"udp"});
    CHECK(families_under["Tracking:"] == std::set<std::string>{"track"});
    CHECK(families_under["Keys:"] == std::set<std::string>{"key"});
  }
}

TEST_CASE("Flags: tuning flags are listed only by --help-all, and still accepted",
          "[config][flags]") {
  const std::string help = UsageText();
  const std::string all = UsageText(FlagParser::HelpScope::kAll);
  absl::StatusOr<FlagsResult> r = Parse({"--help-all"});
  REQUIRE(r.ok());
  CHECK(r->action == FlagsResult::Action::kPrintHelp);
  CHECK(r->text == all);
  for (const char* flag : {"--udp.batch=", "--tap.snaplen=", "--track.publish-interval=",
                           "--udp.read-buffer=", "--tap.flow-buffer-bytes="}) {
    INFO(flag);
    CHECK_THAT(help, !Contains(flag));
    CHECK_THAT(all, Contains(flag));
  }
  CHECK_THAT(help, Contains("listed by --help-all"));
  CHECK_THAT(all, !Contains("listed by --help-all"));
  // Every flag of --help is in --help-all, and --help-all lists more.
  const std::vector<std::string> common = FlagLines(help);
  const std::vector<std::string> every = FlagLines(all);
  for (const std::string& f : common) {
    INFO(f);
    CHECK(std::find(every.begin(), every.end(), f) != every.end());
  }
  CHECK(every.size() > common.size());
  const DaemonOptions o =
      ParseOk({"--udp.batch=8", "--tap.snaplen=1500", "--track.publish-interval=100ms"});
  CHECK(o.udp.batch == 8);
  CHECK(o.tap.snaplen == 1500);
  CHECK(o.track.publish_interval == absl::Milliseconds(100));
}

TEST_CASE("Flags: a removed flag says where its setting lives now", "[config][flags]") {
  const std::pair<const char*, const char*> moved[] = {
      {"alert.share-threshold", "alert.share_threshold"},
      {"alert.min-dwell", "alert.min_dwell"},
      {"alert.hysteresis", "alert.hysteresis"},
      {"alert.min-ops", "alert.min_ops"},
      {"export.top-k", "export.top_k"},
      {"export.min-share", "export.min_share"},
      {"export.hysteresis", "export.hysteresis"},
      {"export.min-key-ops", "export.min_key_ops"},
      {"key.label", "export.key_label"},
      {"key.label-max-bytes", "export.label_max_bytes"},
  };
  const std::string all = UsageText(FlagParser::HelpScope::kAll);
  for (const auto& [flag, key] : moved) {
    const std::string name = std::string("--") + flag;
    INFO(name);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{name + "=1"}, {name, "1"}, {name}}) {
      const std::string message = ParseError(args);
      CHECK_THAT(message, Contains(name + " moved to the rules file (--config.file): " + key));
      CHECK_THAT(message, !Contains("unknown flag"));
    }
    CHECK_THAT(all, !Contains(name + "="));
  }
  CHECK_THAT(ParseError({"--track.stored-key-bytes=64"}),
             Contains("--track.stored-key-bytes was renamed: use --key.max-bytes"));
  // With --check-config the message is its verdict.
  absl::StatusOr<FlagsResult> check = Parse({"--check-config", "--alert.min-dwell=1s"});
  REQUIRE(check.ok());
  CHECK_THAT(std::string(check->flags_status.message()),
             Contains("--alert.min-dwell moved to the rules file"));
}

TEST_CASE("Flags: --help describes the memcached tap and --version truthfully", "[config][flags]") {
  const std::string help = UsageText();
  // The memcached parser frames binary requests and reports their keys
  // (tests/daemon/input/parsers/memcached_test.cc): they are counted, not skipped.
  CHECK_THAT(help, Contains("binary requests, each counted with its keys"));
  CHECK_THAT(help, !Contains("skipped"));
  // daemon/common/version/build_info.cmake: the "build date" is the commit's date.
  CHECK_THAT(help, Contains("commit's date (shown as the build date"));
}

TEST_CASE("Flags: the defaults the usage text prints parse back to the defaults",
          "[config][flags]") {
  // Pins getters and setters to each other: a default printed in a form its own flag
  // rejects, or reads back differently, fails here.
  std::vector<std::string> args;
  std::istringstream lines(UsageText(FlagParser::HelpScope::kAll));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  --", 0) != 0 || line.find('=') == std::string::npos) continue;
    std::string arg = line.substr(2);
    if (arg.size() >= 2 && arg.substr(arg.size() - 2) == "\"\"") arg.resize(arg.size() - 2);
    args.push_back(arg);
  }
  REQUIRE(args.size() >= 30);
  DaemonOptions parsed = ParseOk(args);
  DaemonOptions defaults;
  CHECK(parsed.udp == defaults.udp);
  CHECK(parsed.web == defaults.web);
  CHECK(parsed.track == defaults.track);
  CHECK(parsed.exporter == defaults.exporter);
  CHECK(parsed.alert == defaults.alert);
  CHECK(parsed.cluster.shards == defaults.cluster.shards);
  CHECK(parsed.cluster.capacity == defaults.cluster.capacity);
  CHECK(parsed.cluster.app_servers == defaults.cluster.app_servers);
  CHECK(parsed.cluster.refresh_seconds == defaults.cluster.refresh_seconds);
  CHECK(parsed.cluster.replicas == defaults.cluster.replicas);
  CHECK(parsed.cluster.split == defaults.cluster.split);
  CHECK(parsed.cluster.target == defaults.cluster.target);
  CHECK(parsed.cluster.order == defaults.cluster.order);
  CHECK(parsed.demo_rate == defaults.demo_rate);
  CHECK(parsed.log_level == defaults.log_level);
}

}  // namespace
}  // namespace hotkey::config

namespace hotkey::config {
namespace {

TEST_CASE("Flags: hardening options parse and validate", "[config][flags]") {
  const DaemonOptions d = ParseOk({});
  CHECK(d.storage.path.empty());
  CHECK(d.storage.interval == absl::Minutes(1));
  CHECK(d.web.config_file.empty());
  CHECK_FALSE(d.web.health_without_auth);
  CHECK(d.key_hash_secret_file.empty());

  const DaemonOptions o =
      ParseOk({"--storage.path=/var/lib/hotkeyd/state", "--storage.interval=30s",
               "--web.config.file=/etc/hotkeyd/web.yml", "--web.health-without-auth",
               "--key.hash-secret-file=/etc/hotkeyd/secret"});
  CHECK(o.storage.path == "/var/lib/hotkeyd/state");
  CHECK(o.storage.interval == absl::Seconds(30));
  CHECK(o.web.config_file == "/etc/hotkeyd/web.yml");
  CHECK(o.web.health_without_auth);
  CHECK(o.key_hash_secret_file == "/etc/hotkeyd/secret");

  CHECK_THAT(ParseError({"--storage.interval=500ms"}),
             Catch::Matchers::Contains("storage interval"));
  CHECK_THAT(ParseError({"--web.health-without-auth=maybe"}),
             Catch::Matchers::Contains("web.health-without-auth"));
}

TEST_CASE("Flags: --web.listen-address given several times listens on each, in order",
          "[config][flags]") {
  CHECK(ParseOk({"--web.listen-address=127.0.0.1:1", "--web.listen-address", "[::1]:2"})
            .web.listen_addresses == std::vector<std::string>{"127.0.0.1:1", "[::1]:2"});
  CHECK_THAT(ParseError({"--web.listen-address=:1", "--web.listen-address=nohost"}),
             Contains("web:"));
}

TEST_CASE("Flags: the operator flags of Prometheus exporters", "[config][flags]") {
  const DaemonOptions defaults = ParseOk({});
  CHECK(defaults.log_format == "logfmt");
  CHECK_FALSE(defaults.web.enable_lifecycle);
  CHECK_FALSE(defaults.web.systemd_socket);
  const DaemonOptions o =
      ParseOk({"--log.format=json", "--web.enable-lifecycle", "--web.systemd-socket"});
  CHECK(o.log_format == "json");
  CHECK(o.web.enable_lifecycle);
  CHECK(o.web.systemd_socket);
  CHECK_THAT(ParseError({"--log.format=xml"}), Contains("log format \"xml\""));
}

TEST_CASE("Flags: --check-config reports bad flags in its result instead of failing",
          "[config][flags]") {
  absl::StatusOr<FlagsResult> ok = Parse({"--check-config", "--config.file=/x.yml"});
  REQUIRE(ok.ok());
  CHECK(ok->action == FlagsResult::Action::kCheckConfig);
  CHECK(ok->flags_status.ok());
  CHECK(ok->options.config_file == "/x.yml");
  absl::StatusOr<FlagsResult> bad = Parse({"--udp.receivers=0", "--check-config"});
  REQUIRE(bad.ok());
  CHECK(bad->action == FlagsResult::Action::kCheckConfig);
  CHECK_THAT(std::string(bad->flags_status.message()), Contains("udp receivers"));
  absl::StatusOr<FlagsResult> unknown = Parse({"--check-config", "--nope"});
  REQUIRE(unknown.ok());
  CHECK_THAT(std::string(unknown->flags_status.message()), Contains("unknown flag --nope"));
}

TEST_CASE("Flags: --help lists the operator flags", "[config][flags]") {
  const std::string help = UsageText();
  for (const char* flag : {"--log.format=logfmt", "--web.enable-lifecycle", "--web.systemd-socket",
                           "--check-config", "repeat the flag"}) {
    CHECK_THAT(help, Contains(flag));
  }
}

}  // namespace
}  // namespace hotkey::config

namespace hotkey::config {
namespace {

TEST_CASE("Flags: the cluster inputs given on the command line are marked as given",
          "[config][flags]") {
  const DaemonOptions none = ParseOk({});
  CHECK_FALSE(none.cluster_given.capacity);
  CHECK_FALSE(none.cluster_given.shards);
  CHECK_FALSE(none.cluster_given.app_servers);
  // Given at its default value, a flag still overrides what is measured.
  const DaemonOptions o = ParseOk({"--cluster.capacity=10000", "--cluster.app-servers", "3"});
  CHECK(o.cluster_given.capacity);
  CHECK_FALSE(o.cluster_given.shards);
  CHECK(o.cluster_given.app_servers);
  CHECK(o.cluster.app_servers == 3);
  CHECK(ParseOk({"--cluster.shards=4", "--cluster.replicas=2", "--cluster.split=2"})
            .cluster_given.shards);
}

}  // namespace
}  // namespace hotkey::config
