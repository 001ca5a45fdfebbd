// Tests for config/values.h: sizes, durations, listen addresses and CIDRs.

#include "hotkey/config/values.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "hotkey/config/export_options.h"
#include "hotkey/config/tap_options.h"
#include "test_util.h"

namespace hotkey::config {
namespace {

using Catch::Matchers::Contains;
using testing::Message;

TEST_CASE("Values: byte sizes take IEC and SI suffixes", "[config][values]") {
  CHECK(*ParseByteSize("1024") == 1024);
  CHECK(*ParseByteSize("0") == 0);
  CHECK(*ParseByteSize("7B") == 7);
  CHECK(*ParseByteSize("64KiB") == 65536);
  CHECK(*ParseByteSize("16MiB") == 16u << 20);
  CHECK(*ParseByteSize("16mib") == 16u << 20);
  CHECK(*ParseByteSize("2GiB") == uint64_t{2} << 30);
  CHECK(*ParseByteSize(" 64 KiB ") == 65536);
  CHECK(*ParseByteSize("5KB") == 5000);
  CHECK(*ParseByteSize("3MB") == 3000000);
  CHECK(*ParseByteSize("1GB") == 1000000000);
}

TEST_CASE("Values: bad byte sizes are rejected with the text quoted", "[config][values]") {
  CHECK_THAT(Message(ParseByteSize("")), Contains("is not a byte size"));
  CHECK_THAT(Message(ParseByteSize("KiB")), Contains("\"KiB\" is not a byte size"));
  CHECK_THAT(Message(ParseByteSize("-1")), Contains("is not a byte size"));
  CHECK_THAT(Message(ParseByteSize("1.5MiB")), Contains("unknown size unit"));
  CHECK_THAT(Message(ParseByteSize("16TiB")), Contains("unknown size unit"));
  CHECK_THAT(Message(ParseByteSize("99999999999999GiB")), Contains("too large"));
  CHECK_FALSE(ParseByteSize("99999999999999999999999").ok());
}

TEST_CASE("Values: every enum name parses back, and an unknown one is named with them all",
          "[config][values]") {
  for (KeyLabelMode m : {KeyLabelMode::kRaw, KeyLabelMode::kHash, KeyLabelMode::kPrefix}) {
    CHECK(ParseKeyLabelMode(KeyLabelModeName(m)).value() == m);
  }
  for (TapProtocol p : {TapProtocol::kRedis, TapProtocol::kMemcached}) {
    CHECK(ParseTapProtocol(TapProtocolName(p)).value() == p);
  }
  for (TapWeight w : {TapWeight::kOps, TapWeight::kBytes}) {
    CHECK(ParseTapWeight(TapWeightName(w)).value() == w);
  }
  CHECK(Message(ParseTapProtocol("Redis")) == "\"Redis\" is not a tap protocol (redis, memcached)");
  CHECK(Message(ParseTapWeight("")) == "\"\" is not a tap weight (ops, bytes)");
  CHECK(Message(ParseKeyLabelMode("x")) == "\"x\" is not a key label mode (raw, hash, prefix)");
  // Arbitrary bytes are escaped and cut, never echoed raw.
  const std::string bad = Message(ParseTapWeight(std::string("\xff\n") + std::string(100, 'a')));
  CHECK_THAT(bad, Contains("\"\\xff\\x0aaaa"));
  CHECK(bad.size() < 150);
}

TEST_CASE("Values: byte sizes format in their shortest exact form", "[config][values]") {
  CHECK(FormatByteSize(16u << 20) == "16MiB");
  CHECK(FormatByteSize(32u << 10) == "32KiB");
  CHECK(FormatByteSize(uint64_t{3} << 30) == "3GiB");
  CHECK(FormatByteSize(1000) == "1000");
  CHECK(FormatByteSize(0) == "0");
  for (uint64_t v :
       {uint64_t{0}, uint64_t{1}, uint64_t{1536}, uint64_t{1} << 20, uint64_t{12345}}) {
    CHECK(*ParseByteSize(FormatByteSize(v)) == v);
  }
}

TEST_CASE("Values: durations are Go style and need a unit", "[config][values]") {
  CHECK(*ParseDurationText("250ms") == absl::Milliseconds(250));
  CHECK(*ParseDurationText("1m30s") == absl::Seconds(90));
  CHECK(*ParseDurationText("0") == absl::ZeroDuration());
  CHECK(*ParseDurationText(" 2h ") == absl::Hours(2));
  CHECK_THAT(Message(ParseDurationText("5")), Contains("needs a unit"));
  CHECK_THAT(Message(ParseDurationText("-1s")), Contains("negative"));
  CHECK_THAT(Message(ParseDurationText("inf")), Contains("not a duration"));
  CHECK_THAT(Message(ParseDurationText("1 sec")), Contains("not a duration"));
}

TEST_CASE("Values: numbers, integers and booleans", "[config][values]") {
  CHECK(*ParseNumber("0.25") == 0.25);
  CHECK(*ParseNumber("1e3") == 1000);
  CHECK_FALSE(ParseNumber("inf").ok());
  CHECK_FALSE(ParseNumber("nan").ok());
  CHECK_FALSE(ParseNumber("0.2x").ok());
  // The grammar of text/number.h (pinned in tests/daemon/common/text/number_test.cc): a minus, no
  // plus, no white space, no hex, nothing that rounds to zero or beyond a double.
  CHECK(*ParseNumber("-0.5") == -0.5);
  CHECK_FALSE(ParseNumber("+0.5").ok());
  CHECK_FALSE(ParseNumber(" 0.5").ok());
  CHECK_FALSE(ParseNumber("0x10").ok());
  CHECK_FALSE(ParseNumber("1e-400").ok());
  CHECK_FALSE(ParseNumber("1e400").ok());
  CHECK_THAT(Message(ParseNumber("1,5")), Contains("\"1,5\" is not a finite number"));
  CHECK(*ParseInteger("-3") == -3);
  CHECK_FALSE(ParseInteger("3.0").ok());
  CHECK(*ParseBool("TRUE"));
  CHECK_FALSE(*ParseBool("off"));
  CHECK_THAT(Message(ParseBool("maybe")), Contains("is not a boolean"));
}

TEST_CASE("Values: listen addresses split into host and port", "[config][values]") {
  HostPort a = *ParseListenAddress(":10110");
  CHECK(a.host.empty());
  CHECK(a.port == 10110);
  a = *ParseListenAddress("127.0.0.1:10111");
  CHECK(a.host == "127.0.0.1");
  CHECK(a.port == 10111);
  a = *ParseListenAddress("[::1]:9000");
  CHECK(a.host == "::1");
  CHECK(a.port == 9000);
  a = *ParseListenAddress("localhost:0");
  CHECK(a.host == "localhost");
  CHECK(a.port == 0);
  CHECK(ParseListenAddress(":65535")->port == 65535);
}

TEST_CASE("Values: bad listen addresses say what is wrong", "[config][values]") {
  CHECK_THAT(Message(ParseListenAddress("10110")), Contains("has no port"));
  CHECK_THAT(Message(ParseListenAddress("::1:80")), Contains("brackets"));
  CHECK_THAT(Message(ParseListenAddress("host:65536")), Contains("bad port"));
  CHECK_THAT(Message(ParseListenAddress("host:")), Contains("bad port"));
  CHECK_THAT(Message(ParseListenAddress("host:-1")), Contains("bad port"));
  CHECK_THAT(Message(ParseListenAddress("[::1]80")), Contains("has no port"));
  CHECK_THAT(Message(ParseListenAddress("[::1:80")), Contains("unclosed"));
  CHECK_THAT(Message(ParseListenAddress("[]:80")), Contains("empty IPv6 host"));
  CHECK_THAT(Message(ParseListenAddress("my host:80")), Contains("bad host"));
}

TEST_CASE("Values: IPv4 CIDRs contain exactly their addresses", "[config][values]") {
  Cidr c = *ParseCidr("10.0.0.0/8");
  CHECK_FALSE(c.is_v6);
  CHECK(c.prefix_length == 8);
  CHECK(c.Contains(std::vector<uint8_t>{10, 1, 2, 3}));
  CHECK(c.Contains(std::vector<uint8_t>{10, 255, 255, 255}));
  CHECK_FALSE(c.Contains(std::vector<uint8_t>{11, 0, 0, 1}));
  CHECK_FALSE(c.Contains(std::vector<uint8_t>{10, 0, 0}));  // wrong size

  Cidr odd = *ParseCidr("192.168.1.128/25");
  CHECK(odd.Contains(std::vector<uint8_t>{192, 168, 1, 200}));
  CHECK_FALSE(odd.Contains(std::vector<uint8_t>{192, 168, 1, 127}));

  Cidr host_bits = *ParseCidr("10.1.2.3/8");  // host bits are cleared, as in Go
  CHECK(host_bits.network[1] == 0);
  CHECK(host_bits.Contains(std::vector<uint8_t>{10, 9, 9, 9}));

  Cidr single = *ParseCidr("127.0.0.1");
  CHECK(single.prefix_length == 32);
  CHECK(single.Contains(std::vector<uint8_t>{127, 0, 0, 1}));
  CHECK_FALSE(single.Contains(std::vector<uint8_t>{127, 0, 0, 2}));

  Cidr all = *ParseCidr("0.0.0.0/0");
  CHECK(all.Contains(std::vector<uint8_t>{203, 0, 113, 9}));
}

TEST_CASE("Values: IPv6 CIDRs, and IPv4-mapped addresses match IPv4 CIDRs", "[config][values]") {
  Cidr loop = *ParseCidr("::1/128");
  CHECK(loop.is_v6);
  std::vector<uint8_t> v6_loopback(16, 0);
  v6_loopback[15] = 1;
  CHECK(loop.Contains(v6_loopback));
  CHECK_FALSE(loop.Contains(std::vector<uint8_t>{127, 0, 0, 1}));

  Cidr ula = *ParseCidr("fd00::/8");
  std::vector<uint8_t> in(16, 0);
  in[0] = 0xfd;
  in[5] = 7;
  CHECK(ula.Contains(in));
  in[0] = 0xfe;
  CHECK_FALSE(ula.Contains(in));

  std::vector<uint8_t> mapped = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3};
  CHECK(ParseCidr("10.0.0.0/8")->Contains(mapped));
  CHECK_FALSE(ParseCidr("11.0.0.0/8")->Contains(mapped));
}

TEST_CASE("Values: bad CIDRs are rejected with the text quoted", "[config][values]") {
  CHECK_THAT(Message(ParseCidr("10.0.0.0/33")), Contains("\"10.0.0.0/33\"") && Contains("0 to 32"));
  CHECK_THAT(Message(ParseCidr("::/129")), Contains("0 to 128"));
  CHECK_THAT(Message(ParseCidr("10.0.0.0/")), Contains("prefix length"));
  CHECK_THAT(Message(ParseCidr("10.0.0.0/-1")), Contains("prefix length"));
  CHECK_THAT(Message(ParseCidr("10.0.0/8")), Contains("bad address"));
  CHECK_THAT(Message(ParseCidr("example.com")), Contains("bad address"));
  CHECK_FALSE(ParseCidr("").ok());
}

TEST_CASE("Values: lists split on commas and drop blanks", "[config][values]") {
  CHECK(SplitList(" a, b,,c ") == std::vector<std::string>{"a", "b", "c"});
  CHECK(SplitList("").empty());
}

}  // namespace
}  // namespace hotkey::config
