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

std::string Error(std::vector<const char*> args) {
  return std::string(Parse(std::move(args)).status().message());
}

TEST_CASE("ShardOptions: no address and no tap means no probing", "[config][shard]") {
  absl::StatusOr<FlagsResult> r = Parse({});
  REQUIRE(r.ok());
  const ShardOptions s = r->options.shard.Resolved(r->options.tap);
  CHECK(s.address.empty());
  CHECK(s.protocol == TapProtocol::kRedis);
  CHECK(s.cpus == 0);
  CHECK(s.interval == absl::Seconds(5));
}

TEST_CASE("ShardOptions: the address and protocol follow the tap unless given", "[config][shard]") {
  absl::StatusOr<FlagsResult> r =
      Parse({"--tap.interface=lo", "--tap.port=11211", "--tap.protocol=memcached"});
  REQUIRE(r.ok());
  ShardOptions s = r->options.shard.Resolved(r->options.tap);
  CHECK(s.address == "127.0.0.1:11211");
  CHECK(s.protocol == TapProtocol::kMemcached);

  r = Parse({"--tap.interface=lo", "--tap.port=6379", "--shard.address=/run/redis.sock",
             "--shard.protocol=memcached"});
  REQUIRE(r.ok());
  s = r->options.shard.Resolved(r->options.tap);
  CHECK(s.address == "/run/redis.sock");
  CHECK(s.unix_socket());
  CHECK(s.protocol == TapProtocol::kMemcached);

  // A capture file was recorded elsewhere: no shard is asked unless one is named.
  r = Parse({"--tap.file=x.pcap", "--tap.port=6379"});
  REQUIRE(r.ok());
  CHECK(r->options.shard.Resolved(r->options.tap).address.empty());
}

TEST_CASE("ShardOptions: every flag sets its field", "[config][shard]") {
  absl::StatusOr<FlagsResult> r = Parse(
      {"--shard.address=[::1]:6380", "--shard.password-file=/etc/pw", "--shard.tls",
       "--shard.tls-ca-file=ca.pem", "--shard.tls-cert-file=c.pem", "--shard.tls-key-file=k.pem",
       "--shard.tls-server-name=redis.internal", "--shard.cpus=0.5", "--shard.interval=10s"});
  REQUIRE(r.ok());
  const ShardOptions& s = r->options.shard;
  CHECK(s.address == "[::1]:6380");
  CHECK(s.password_file == "/etc/pw");
  CHECK(s.tls);
  CHECK(s.tls_ca_file == "ca.pem");
  CHECK(s.tls_cert_file == "c.pem");
  CHECK(s.tls_key_file == "k.pem");
  CHECK(s.tls_server_name == "redis.internal");
  CHECK(s.cpus == 0.5);
  CHECK(s.interval == absl::Seconds(10));
}

TEST_CASE("ShardOptions: bad values are clear errors", "[config][shard]") {
  CHECK_THAT(Error({"--shard.address=redis"}),
             Contains("shard address \"redis\" is not host:port"));
  CHECK_THAT(Error({"--shard.address=:6379"}), Contains("is not host:port"));
  CHECK_THAT(Error({"--shard.address=127.0.0.1:0"}), Contains("is not host:port"));
  CHECK_THAT(Error({"--shard.protocol=mysql"}),
             Contains("\"mysql\" is not a shard protocol (redis, memcached)"));
  CHECK_THAT(Error({"--shard.tls-ca-file=ca.pem"}),
             Contains("--shard.tls-ca-file is given without --shard.tls"));
  CHECK_THAT(Error({"--shard.tls", "--shard.address=/run/redis.sock"}),
             Contains("TLS on TCP only"));
  CHECK_THAT(Error({"--shard.tls", "--shard.tls-cert-file=c.pem"}), Contains("go together"));
  CHECK_THAT(Error({"--shard.cpus=-1"}), Contains("shard cpus must be in [0, 1024]"));
  CHECK_THAT(Error({"--shard.cpus=2000"}), Contains("shard cpus must be in [0, 1024]"));
  CHECK_THAT(Error({"--shard.interval=500ms"}), Contains("shard interval must be in [1s, 1h]"));
  ShardOptions o;
  o.timeout = absl::ZeroDuration();
  CHECK_THAT(std::string(o.Validate().message()), Contains("shard timeout"));
  // A timeout longer than the interval is cut to it: a round ends before the next starts.
  o.interval = absl::Seconds(1);
  o.timeout = absl::Seconds(2);
  CHECK(o.Validate().ok());
  CHECK(o.Resolved(TapOptions{}).timeout == absl::Seconds(1));
}

}  // namespace
}  // namespace hotkey::config
