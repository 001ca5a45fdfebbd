// Tests of ParseQuery (http/query.h): decoding, empty parts, and malformed queries as
// errors, never exceptions.

#include "hotkey/http/query.h"

#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

namespace hotkey::http {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

Pairs MustParse(std::string_view query) {
  absl::StatusOr<Pairs> p = ParseQuery(query);
  INFO(std::string(query));
  REQUIRE(p.ok());
  return *p;
}

TEST_CASE("Query: pairs are percent-decoded in order, '+' as a space", "[daemon][query]") {
  CHECK(MustParse("").empty());
  CHECK(MustParse("ops=120000&split=3") == Pairs{{"ops", "120000"}, {"split", "3"}});
  CHECK(MustParse("k=x%20y+z&%41=%2b") == Pairs{{"k", "x y z"}, {"A", "+"}});
  CHECK(MustParse("a=b=c") == Pairs{{"a", "b=c"}});
  CHECK(MustParse("bin=%00%ff") == Pairs{{"bin", std::string("\0\xff", 2)}});
}

TEST_CASE("Query: empty parts are skipped; a bare name has an empty value", "[daemon][query]") {
  CHECK(MustParse("a=1&&b=2&") == Pairs{{"a", "1"}, {"b", "2"}});
  CHECK(MustParse("&&").empty());
  CHECK(MustParse("flag&x=") == Pairs{{"flag", ""}, {"x", ""}});
  CHECK(MustParse("=5") == Pairs{{"", "5"}});
}

TEST_CASE("Query: malformed queries are errors that do not echo the query", "[daemon][query]") {
  for (const std::string& q :
       std::vector<std::string>{"a=%zz", "a=%4", "a=%", "a=\"x\"", "a=b c", "a=#",
                                std::string("a=\xff", 3), std::string("a=\0", 3), "a=%g0&b=1"}) {
    INFO(q);
    absl::StatusOr<Pairs> p = ParseQuery(q);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().code() == absl::StatusCode::kInvalidArgument);
    const std::string message(p.status().message());
    CHECK(message.find("malformed query string") == 0);
    CHECK(message.find(q) == std::string::npos);
  }
}

}  // namespace
}  // namespace hotkey::http
