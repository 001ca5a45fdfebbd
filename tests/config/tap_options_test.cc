#include <catch2/catch.hpp>

#include "hotkey/config/flags.h"
#include "hotkey/config/options.h"

namespace hotkey::config {
namespace {

using Catch::Matchers::Contains;

absl::StatusOr<FlagsResult> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "hotkeyd");
  return ParseFlags(static_cast<int>(args.size()), args.data());
}

TEST_CASE("TapOptions: the tap is off by default and needs no port then", "[config][tap]") {
  absl::StatusOr<FlagsResult> r = Parse({});
  REQUIRE(r.ok());
  CHECK_FALSE(r->options.tap.enabled());
  CHECK(r->options.tap.MemoryBoundBytes() == 0);
  CHECK(r->options.Sources() == 1);
}

TEST_CASE("TapOptions: one port taps one server", "[config][tap]") {
  absl::StatusOr<FlagsResult> r = Parse({"--tap.interface=lo", "--tap.port=6379"});
  REQUIRE(r.ok());
  CHECK(r->options.tap.ports == std::vector<uint16_t>{6379});
  CHECK(r->options.tap.enabled());
  CHECK(r->options.Sources() == 2);  // by ops the UDP receiver keeps listening beside the tap
  CHECK_FALSE(r->options.CountsBytes());
}

TEST_CASE("TapOptions: several ports are refused, saying to run one hotkeyd per instance",
          "[config][tap]") {
  const std::string list =
      std::string(Parse({"--tap.interface=lo", "--tap.port=6379,6380"}).status().message());
  CHECK_THAT(list, Contains("--tap.port takes one port"));
  CHECK_THAT(list, Contains("one hotkeyd per server instance"));
  const std::string repeated = std::string(
      Parse({"--tap.interface=lo", "--tap.port=6379", "--tap.port", "6380"}).status().message());
  CHECK_THAT(repeated, Contains("--tap.port takes one port, not 2"));
  CHECK_THAT(repeated, Contains("one hotkeyd per instance"));
  TapOptions o;
  o.interface = "lo";
  o.ports = {6379, 6380};
  CHECK_THAT(std::string(o.Validate().message()), Contains("takes one port"));
}

TEST_CASE("TapOptions: --tap.port's help says one port, one hotkeyd per instance",
          "[config][tap]") {
  const std::string help = UsageText();
  CHECK_THAT(help, Contains("one port, one server"));
  CHECK_THAT(help, Contains("one hotkeyd per instance"));
}

TEST_CASE("DaemonOptions: a bytes-weighted tap turns UDP off, and the daemon counts bytes",
          "[config][tap]") {
  absl::StatusOr<FlagsResult> r =
      Parse({"--tap.interface=lo", "--tap.port=6379", "--tap.weight=bytes"});
  REQUIRE(r.ok());
  CHECK(r->options.CountsBytes());
  CHECK_FALSE(r->options.udp.enabled());
  CHECK(r->options.Sources() == 1);  // the tap alone
}

TEST_CASE("DaemonOptions: a bytes-weighted tap beside UDP is refused, naming both flags",
          "[config][tap]") {
  const std::string m =
      std::string(Parse({"--tap.interface=lo", "--tap.port=6379", "--tap.weight=bytes",
                         "--udp.listen-address=127.0.0.1:10111"})
                      .status()
                      .message());
  CHECK_THAT(m, Contains("--tap.weight=bytes"));
  CHECK_THAT(m, Contains("--udp.listen-address=127.0.0.1:10111"));
  CHECK_THAT(m, Contains("Run two hotkeyds"));
  CHECK_THAT(m, Contains("--tap.weight=ops"));
  // --check-config reports the same verdict rather than failing the parse.
  absl::StatusOr<FlagsResult> c = Parse({"--check-config", "--tap.interface=lo", "--tap.port=6379",
                                         "--tap.weight=bytes", "--udp.listen-address=:10111"});
  REQUIRE(c.ok());
  CHECK(c->action == FlagsResult::Action::kCheckConfig);
  CHECK_THAT(std::string(c->flags_status.message()), Contains("Run two hotkeyds"));
  // An empty address is "UDP off", which a bytes tap accepts.
  CHECK(Parse({"--tap.interface=lo", "--tap.port=6379", "--tap.weight=bytes",
               "--udp.listen-address="})
            .ok());
  // The demo counts operations too.
  CHECK_THAT(
      std::string(Parse({"--tap.interface=lo", "--tap.port=6379", "--tap.weight=bytes", "--demo"})
                      .status()
                      .message()),
      Contains("--tap.weight=bytes and --demo"));
  // Options built in code are held to the same rule.
  DaemonOptions o;
  o.tap.interface = "lo";
  o.tap.ports = {6379};
  o.tap.weight = TapWeight::kBytes;
  CHECK_THAT(std::string(o.Validate().message()), Contains("Run two hotkeyds"));
  o.udp.listen_address.clear();
  CHECK(o.Validate().ok());
}

TEST_CASE("DaemonOptions: an empty --udp.listen-address turns UDP off beside another source",
          "[config][tap]") {
  absl::StatusOr<FlagsResult> r =
      Parse({"--udp.listen-address=", "--tap.interface=lo", "--tap.port=6379"});
  REQUIRE(r.ok());
  CHECK_FALSE(r->options.udp.enabled());
  CHECK(r->options.Sources() == 1);
  CHECK_FALSE(r->options.CountsBytes());
  absl::StatusOr<FlagsResult> demo = Parse({"--udp.listen-address", "", "--demo"});
  REQUIRE(demo.ok());
  CHECK(demo->options.Sources() == 1);
  // With nothing else, there would be no source at all.
  CHECK_THAT(std::string(Parse({"--udp.listen-address="}).status().message()),
             Contains("no event source"));
  // By default UDP is on, and the daemon counts operations.
  absl::StatusOr<FlagsResult> d = Parse({});
  REQUIRE(d.ok());
  CHECK(d->options.udp.enabled());
  CHECK_FALSE(d->options.CountsBytes());
}

TEST_CASE("TapOptions: bad values are clear errors", "[config][tap]") {
  CHECK_THAT(std::string(Parse({"--tap.interface=lo"}).status().message()),
             Contains("--tap.port is required"));
  CHECK_THAT(std::string(Parse({"--tap.port=0"}).status().message()), Contains("not a port"));
  CHECK_THAT(std::string(Parse({"--tap.port=65536"}).status().message()), Contains("not a port"));
  CHECK_THAT(std::string(Parse({"--tap.protocol=mysql"}).status().message()),
             Contains("is not a tap protocol (redis, memcached)"));
  CHECK_THAT(std::string(Parse({"--tap.weight=keys"}).status().message()),
             Contains("is not a tap weight (ops, bytes)"));
  CHECK_THAT(
      std::string(
          Parse({"--tap.interface=lo", "--tap.file=x.pcap", "--tap.port=1"}).status().message()),
      Contains("not both"));
  CHECK_THAT(
      std::string(
          Parse({"--tap.interface=lo", "--tap.port=1", "--tap.snaplen=64"}).status().message()),
      Contains("tap snaplen"));
  CHECK_THAT(
      std::string(
          Parse({"--tap.interface=lo", "--tap.port=1", "--tap.max-flows=0"}).status().message()),
      Contains("tap max flows"));
}

TEST_CASE("TapOptions: the memory bound is max-flows x (buffers + state) + client hosts + 2 x ring",
          "[config][tap]") {
  TapOptions o;
  o.interface = "lo";
  o.ports = {6379};
  constexpr uint64_t kHosts = 112 << 10;
  // The README's figure for the defaults: 198 MiB.
  CHECK(o.MemoryBoundBytes() == 10'000ull * (16 * 1024 + 1024) + kHosts + 2ull * (16 << 20));
  CHECK(o.MemoryBoundBytes() / (1 << 20) == 198);
  o.weight = TapWeight::kBytes;
  CHECK(o.MemoryBoundBytes() == 10'000ull * (3 * 16 * 1024 + 1024) + kHosts + 2ull * (16 << 20));
  o.file = "x.pcap";
  o.interface.clear();
  CHECK(o.MemoryBoundBytes() == 10'000ull * (3 * 16 * 1024 + 1024) + kHosts);  // no ring
  o.max_flows = 1 << 20;
  o.flow_buffer_bytes = 16 << 20;
  CHECK_THAT(std::string(o.Validate().message()), Contains("tap memory too large"));
}

}  // namespace
}  // namespace hotkey::config
