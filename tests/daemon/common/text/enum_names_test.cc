// Tests of the name tables' functions (text/enum_names.h): NameOf, ParseName and its
// message, NameList, and an old name kept beside the current one.

#include "hotkey/text/enum_names.h"

#include <string>

#include <catch2/catch.hpp>

#include "enum_table_check.h"

namespace hotkey::text {
namespace {

enum class Fruit { kApple, kPear, kQuince };
constexpr EnumName<Fruit> kFruitNames[] = {{Fruit::kApple, "apple"},
                                           {Fruit::kPear, "pear"},
                                           {Fruit::kQuince, "quince"},
                                           {Fruit::kQuince, "coing"}};  // an old name, still read

bool IsFruit(Fruit f) {
  switch (f) {
    case Fruit::kApple:
    case Fruit::kPear:
    case Fruit::kQuince:
      return true;
  }
  return false;
}

TEST_CASE("EnumNames: a value's name is its first entry, found at compile time",
          "[text][enum_names]") {
  static_assert(NameOf(kFruitNames, Fruit::kPear) == "pear");
  CHECK(NameOf(kFruitNames, Fruit::kQuince) == "quince");
  CHECK(NameOf(kFruitNames, static_cast<Fruit>(7)).empty());
}

TEST_CASE("EnumNames: names parse to their value; old names too", "[text][enum_names]") {
  CHECK(ParseName(kFruitNames, "apple", "fruit").value() == Fruit::kApple);
  CHECK(ParseName(kFruitNames, "coing", "fruit").value() == Fruit::kQuince);
  ::hotkey::testing::CheckEnumTable(kFruitNames, &IsFruit);
}

TEST_CASE("EnumNames: an unknown name is an error naming it, the setting and every name",
          "[text][enum_names]") {
  const absl::StatusOr<Fruit> bad = ParseName(kFruitNames, "Apple", "fruit");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(bad.status().message() == "\"Apple\" is not a fruit (apple, pear, quince, coing)");
  CHECK_FALSE(ParseName(kFruitNames, "", "fruit").ok());
  CHECK_FALSE(ParseName(kFruitNames, "apple ", "fruit").ok());
  // The name given is escaped and cut, never echoed raw.
  const std::string message(
      ParseName(kFruitNames, "\x1b[2J" + std::string(200, 'x'), "fruit").status().message());
  CHECK(message.starts_with(R"("\x1b[2Jxxx)"));
  CHECK(message.size() < 120);
  CHECK(NameList(kFruitNames) == "apple, pear, quince, coing");
}

}  // namespace
}  // namespace hotkey::text
