// Tests of AuthLimiter (daemon/serving/http/auth_limiter.h) on a fake clock: one check at a time
// per address, a backoff that doubles to its cap after failures, a global queue bound and a bounded
// address table.

#include "auth_limiter.h"

#include <string>

#include <boost/asio/ip/address.hpp>
#include <catch2/catch.hpp>

#include "absl/time/time.h"

namespace hotkey::http {
namespace {

using Verdict = AuthLimiter::Verdict;
using Outcome = AuthLimiter::Outcome;

const absl::Time kT0 = absl::FromUnixSeconds(1'000'000);

AuthLimiter::Options Small() {
  AuthLimiter::Options o;
  o.max_queued = 2;
  o.max_addresses = 3;
  o.base_backoff = absl::Seconds(1);
  o.max_backoff = absl::Seconds(8);
  return o;
}

TEST_CASE("AuthLimiter: an address has one check at a time", "[http][auth_limiter]") {
  AuthLimiter l(Small());
  CHECK(l.Admit("a", kT0) == Verdict::kCheck);
  CHECK(l.Admit("a", kT0) == Verdict::kThrottled);  // its first is still queued
  CHECK(l.Admit("b", kT0) == Verdict::kCheck);      // another address is not held up
  l.Done("a", Outcome::kSucceeded, kT0);
  CHECK(l.Admit("a", kT0) == Verdict::kCheck);  // a success leaves no backoff
  CHECK(l.queued() == 2);
}

TEST_CASE("AuthLimiter: failures back off 1, 2, 4, 8, 8 s; a success forgets them",
          "[http][auth_limiter]") {
  AuthLimiter l(Small());
  absl::Time now = kT0;
  for (const int wait : {1, 2, 4, 8, 8}) {
    REQUIRE(l.Admit("a", now) == Verdict::kCheck);
    l.Done("a", Outcome::kFailed, now);
    // base * 2^(n-1), capped at max_backoff: refused until the wait is over, not after.
    CHECK(l.Admit("a", now + absl::Seconds(wait) - absl::Nanoseconds(1)) == Verdict::kThrottled);
    now += absl::Seconds(wait);
  }
  REQUIRE(l.Admit("a", now) == Verdict::kCheck);
  l.Done("a", Outcome::kSucceeded, now);
  REQUIRE(l.Admit("a", now) == Verdict::kCheck);
  l.Done("a", Outcome::kFailed, now);
  CHECK(l.Admit("a", now + absl::Seconds(1)) == Verdict::kCheck);  // back to 1 s
}

TEST_CASE("AuthLimiter: an abandoned check frees its places without a backoff",
          "[http][auth_limiter]") {
  AuthLimiter l(Small());
  REQUIRE(l.Admit("a", kT0) == Verdict::kCheck);
  l.Done("a", Outcome::kAbandoned, kT0);
  CHECK(l.queued() == 0);
  CHECK(l.Admit("a", kT0) == Verdict::kCheck);
}

TEST_CASE("AuthLimiter: at most max_queued checks wait, all addresses together",
          "[http][auth_limiter]") {
  AuthLimiter l(Small());
  CHECK(l.Admit("a", kT0) == Verdict::kCheck);
  CHECK(l.Admit("b", kT0) == Verdict::kCheck);
  CHECK(l.Admit("c", kT0) == Verdict::kBusy);
  l.Done("a", Outcome::kFailed, kT0);
  CHECK(l.Admit("c", kT0) == Verdict::kCheck);
}

TEST_CASE("AuthLimiter: the address table stays bounded; idle entries make room",
          "[http][auth_limiter]") {
  AuthLimiter::Options o = Small();
  o.max_queued = 10;
  AuthLimiter l(o);
  for (const char* a : {"a", "b", "c"}) {
    REQUIRE(l.Admit(a, kT0) == Verdict::kCheck);
    l.Done(a, Outcome::kFailed, kT0);  // each backs off for 1 s
  }
  CHECK(l.addresses() == 3);
  CHECK(l.Admit("d", kT0) == Verdict::kBusy);  // full, and every entry still backing off
  CHECK(l.addresses() == 3);
  // Once the backoffs are over, the sweep drops them and "d" gets a place.
  CHECK(l.Admit("d", kT0 + absl::Seconds(1)) == Verdict::kCheck);
  CHECK(l.addresses() == 1);
}

TEST_CASE("AuthLimiter: IPv4 and IPv4-mapped share a key; IPv6 is keyed by its /64",
          "[http][auth_limiter]") {
  namespace ip = boost::asio::ip;
  const auto key = [](const char* a) { return AuthLimiter::AddressKey(ip::make_address(a)); };
  CHECK(key("192.0.2.7") == key("::ffff:192.0.2.7"));
  CHECK(key("192.0.2.7") != key("192.0.2.8"));
  CHECK(key("2001:db8:1:2::1") == key("2001:db8:1:2:ffff::9"));
  CHECK(key("2001:db8:1:2::1") != key("2001:db8:1:3::1"));
  CHECK(key("192.0.2.7").size() == 4);
  CHECK(key("2001:db8::1").size() == 8);
}

}  // namespace
}  // namespace hotkey::http
