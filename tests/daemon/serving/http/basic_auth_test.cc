// Tests of BasicAuth (daemon/serving/http/basic_auth.h): bcrypt checks, what must fail, and the
// bounded cache of verified credentials. Over real sockets: tls_auth_e2e.sh.

#include "basic_auth.h"

#include <map>
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace hotkey::http {
namespace {

// bcrypt (cost 4, so the tests stay fast) of "s3cret", made by `htpasswd -nbBC 4 alice s3cret`.
constexpr char kAliceHash[] = "$2y$04$oq0sbqR7xRbBx86XxsDJ3.BeXSa2YKkI.7mClcrSl/hOFUPD4wQym";

std::string BasicHeader(std::string_view user_colon_password) {
  return "Basic " + absl::Base64Escape(
                        absl::string_view(user_colon_password.data(), user_colon_password.size()));
}

TEST_CASE("BasicAuth: the right password passes and is then answered from the cache",
          "[basic_auth]") {
  BasicAuth auth(std::map<std::string, std::string>{{"alice", kAliceHash}});
  const std::string good = BasicHeader("alice:s3cret");
  CHECK_FALSE(auth.CheckCached(good).has_value());  // not verified yet: bcrypt needed
  CHECK(auth.Check(good));
  CHECK(auth.cached() == 1);
  CHECK(auth.CheckCached(good) == std::optional<bool>(true));
  // The scheme is case-insensitive and surrounding blanks do not matter.
  CHECK(auth.Check("  bAsIc   " + absl::Base64Escape("alice:s3cret") + " "));
}

TEST_CASE("BasicAuth: wrong, unknown, malformed and truncating credentials fail", "[basic_auth]") {
  BasicAuth auth(std::map<std::string, std::string>{{"alice", kAliceHash}});
  CHECK_FALSE(auth.Check(BasicHeader("alice:s3cre")));
  CHECK_FALSE(auth.Check(BasicHeader("alice:s3cret ")));
  CHECK_FALSE(auth.Check(BasicHeader("Alice:s3cret")));
  CHECK_FALSE(auth.Check(BasicHeader("mallory:s3cret")));  // checked against the decoy hash
  CHECK_FALSE(
      auth.Check(BasicHeader(std::string("alice:s3cret\0tail", 17))));  // crypt stops at NUL
  CHECK_FALSE(auth.Check(BasicHeader("alice:" + std::string(73, 'x'))));
  CHECK(auth.cached() == 0);  // failures are not remembered
  // Malformed headers are answered at once, without bcrypt.
  for (const std::string& h :
       {std::string(), std::string("Basic"), std::string("Bearer abc"),
        std::string("Basic !!!notbase64"), "Basic " + absl::Base64Escape("nocolon"),
        "Basicx " + absl::Base64Escape("alice:s3cret")}) {
    INFO(h);
    CHECK(auth.CheckCached(h) == std::optional<bool>(false));
    CHECK_FALSE(auth.Check(h));
  }
}

TEST_CASE("BasicAuth: an empty password and a colon in the password work", "[basic_auth]") {
  // `htpasswd -nbBC 4 bob 'a:b'` and `htpasswd -nbBC 4 carol ''`.
  BasicAuth auth({{"bob", "$2y$04$DZ5RUySiONYUDO2Boj.VeObZvzrENgHG2THG.USGZymAObMr8scOC"},
                  {"carol", "$2y$04$QZWMVbQXn2ETjUnp9er2BuuVLn80AxxiQo4Op5XPAUMXElFq9Bi3i"}});
  CHECK(auth.Check(BasicHeader("bob:a:b")));
  CHECK_FALSE(auth.Check(BasicHeader("bob:a")));
  CHECK(auth.Check(BasicHeader("carol:")));
  CHECK_FALSE(auth.Check(BasicHeader("carol:x")));
}

TEST_CASE("BasicAuth: the cache stays bounded", "[basic_auth]") {
  // Every user shares alice's hash, so each is a distinct verified credential.
  std::map<std::string, std::string> users;
  for (size_t i = 0; i < BasicAuth::kMaxCached + 10; ++i) users[absl::StrCat("u", i)] = kAliceHash;
  BasicAuth auth(users);
  for (size_t i = 0; i < BasicAuth::kMaxCached + 10; ++i) {
    REQUIRE(auth.Check(BasicHeader(absl::StrCat("u", i, ":s3cret"))));
    REQUIRE(auth.cached() <= BasicAuth::kMaxCached);
  }
  CHECK(auth.cached() >= 1);
}

}  // namespace
}  // namespace hotkey::http
