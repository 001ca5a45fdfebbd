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

TEST_CASE("TapOptions: ports repeat and separate with commas", "[config][tap]") {
  absl::StatusOr<FlagsResult> r =
      Parse({"--tap.interface=lo", "--tap.port=6379,6380", "--tap.port", "6381"});
  REQUIRE(r.ok());
  CHECK(r->options.tap.ports == std::vector<uint16_t>{6379, 6380, 6381});
  CHECK(r->options.tap.enabled());
  CHECK(r->options.Sources() == 2);  // the UDP receiver keeps listening beside the tap
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

TEST_CASE("TapOptions: the memory bound is max-flows x (buffers + state) + 2 x ring",
          "[config][tap]") {
  TapOptions o;
  o.interface = "lo";
  o.ports = {6379};
  // The README's figure for the defaults: 198 MiB.
  CHECK(o.MemoryBoundBytes() == 10'000ull * (16 * 1024 + 1024) + 2ull * (16 << 20));
  CHECK(o.MemoryBoundBytes() / (1 << 20) == 198);
  o.weight = TapWeight::kBytes;
  CHECK(o.MemoryBoundBytes() == 10'000ull * (3 * 16 * 1024 + 1024) + 2ull * (16 << 20));
  o.file = "x.pcap";
  o.interface.clear();
  CHECK(o.MemoryBoundBytes() == 10'000ull * (3 * 16 * 1024 + 1024));  // no ring for a file
  o.max_flows = 1 << 20;
  o.flow_buffer_bytes = 16 << 20;
  CHECK_THAT(std::string(o.Validate().message()), Contains("tap memory too large"));
}

}  // namespace
}  // namespace hotkey::config
