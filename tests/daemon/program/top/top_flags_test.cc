#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "hotkey/top/top.h"

namespace hotkey::top {
namespace {

absl::StatusOr<TopFlags> Parse(std::vector<const char*> args, const char* env = nullptr) {
  args.insert(args.begin(), "top");
  return ParseTopFlags(static_cast<int>(args.size()), args.data(), env);
}

std::string Message(const absl::StatusOr<TopFlags>& f) {
  REQUIRE(!f.ok());
  return std::string(f.status().message());
}

TEST_CASE("top flags: the defaults reach the daemon's default address each second", "[top]") {
  absl::StatusOr<TopFlags> f = Parse({});
  REQUIRE(f.ok());
  CHECK(!f->help);
  CHECK(f->options.fetch.url == "http://localhost:10110");
  CHECK(f->options.interval == absl::Seconds(1));
  CHECK(f->options.fetch.timeout == absl::Seconds(2));
  CHECK(!f->options.once);
  CHECK(f->options.fetch.username.empty());
  CHECK(!f->options.fetch.insecure_skip_verify);
}

TEST_CASE("top flags: every flag is read", "[top]") {
  absl::StatusOr<TopFlags> f =
      Parse({"--url=https://h:1", "--interval", "250ms", "--once", "--timeout=5s",
             "--ca-file=/etc/ca.pem", "--insecure-skip-verify"});
  REQUIRE(f.ok());
  CHECK(f->options.fetch.url == "https://h:1");
  CHECK(f->options.interval == absl::Milliseconds(250));
  CHECK(f->options.once);
  CHECK(f->options.fetch.timeout == absl::Seconds(5));
  CHECK(f->options.fetch.ca_file == "/etc/ca.pem");
  CHECK(f->options.fetch.insecure_skip_verify);
}

TEST_CASE("top flags: --help gives the usage and the flags", "[top]") {
  absl::StatusOr<TopFlags> f = Parse({"--url=x", "--help"});
  REQUIRE(f.ok());
  CHECK(f->help);
  CHECK(f->help_text.starts_with("usage: hotkeyd top [<flags>]\n"));
  for (const char* flag :
       {"--interval=1s", "--once", "--url=http://localhost:10110", "--timeout=2s", "--web.username",
        "--web.password-file", "--ca-file", "--insecure-skip-verify", "HOTKEYD_WEB_PASSWORD"}) {
    INFO(flag);
    CHECK(f->help_text.find(flag) != std::string::npos);
  }
}

TEST_CASE("top flags: --interval is at least 100ms, --timeout more than 0", "[top]") {
  CHECK(Message(Parse({"--interval=99ms"})) == "flag --interval: at least 100ms");
  CHECK(Parse({"--interval=100ms"}).ok());
  CHECK(Message(Parse({"--timeout=0s"})) == "flag --timeout: must be more than 0");
  CHECK(Message(Parse({"--interval=1"})).find("--interval") != std::string::npos);
}

TEST_CASE("top flags: an unknown flag or an argument is an error", "[top]") {
  CHECK(Message(Parse({"--urll=x"})).find("unknown flag --urll") != std::string::npos);
  CHECK(Message(Parse({"extra"})).find("unexpected argument") != std::string::npos);
}

TEST_CASE("top flags: the password comes from the environment for --web.username", "[top]") {
  absl::StatusOr<TopFlags> f = Parse({"--web.username=prom"}, "from env");
  REQUIRE(f.ok());
  CHECK(f->options.fetch.username == "prom");
  CHECK(f->options.fetch.password == "from env");
  // Without a username the variable is not used: no credentials are sent.
  f = Parse({}, "from env");
  REQUIRE(f.ok());
  CHECK(f->options.fetch.password.empty());
}

TEST_CASE("top flags: --web.password-file's first line wins over the environment", "[top]") {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / "hotkeyd_top_flags_test_password";
  std::ofstream(file) << "file pass\r\nsecond line\n";
  absl::StatusOr<TopFlags> f =
      Parse({"--web.username=prom", ("--web.password-file=" + file.string()).c_str()}, "from env");
  std::filesystem::remove(file);
  REQUIRE(f.ok());
  CHECK(f->options.fetch.password == "file pass");
  CHECK(Message(Parse({"--web.password-file=/x"})) ==
        "flag --web.password-file needs --web.username");
  CHECK(Message(Parse({"--web.username=u", "--web.password-file=/nonexistent"})) ==
        "flag --web.password-file: cannot read \"/nonexistent\"");
}

}  // namespace
}  // namespace hotkey::top
