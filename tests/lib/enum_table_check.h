// CheckEnumTable: the test every name table (hotkey/text/enum_names.h) gets. Header-only;
// needs Catch2.
//
// `is_enumerator` says whether a value is one of the enum's enumerators. Write it as a
// switch over the enum with no default that returns true: an enumerator added later then
// fails to compile there (-Wswitch, with -Werror) until it is added, and then fails this
// check until the table names it.

#ifndef HOTKEY_TESTS_LIB_ENUM_TABLE_CHECK_H_
#define HOTKEY_TESTS_LIB_ENUM_TABLE_CHECK_H_

#include <cstddef>
#include <set>
#include <string_view>

#include <catch2/catch.hpp>

#include "hotkey/text/enum_names.h"

namespace hotkey::testing {

// Every enumerator (underlying values 0..max_value) has a name; every name parses back to
// its value; no name is given twice; a name not in the table is an error.
template <class E, size_t N>
void CheckEnumTable(const text::EnumName<E> (&table)[N], bool (*is_enumerator)(E),
                    int max_value = 255) {
  for (int i = 0; i <= max_value; ++i) {
    const E e = static_cast<E>(i);
    if (!is_enumerator(e)) continue;
    INFO("enumerator " << i);
    bool named = false;
    for (const text::EnumName<E>& entry : table) named = named || entry.value == e;
    CHECK(named);
    CHECK(text::ParseName(table, text::NameOf(table, e), "thing").value() == e);
  }
  std::set<std::string_view> names;
  for (const text::EnumName<E>& entry : table) {
    INFO("name \"" << entry.name << "\"");
    CHECK(is_enumerator(entry.value));
    CHECK(names.insert(entry.name).second);
    const absl::StatusOr<E> back = text::ParseName(table, entry.name, "thing");
    REQUIRE(back.ok());
    CHECK(*back == entry.value);
  }
  const absl::StatusOr<E> unknown = text::ParseName(table, "no such name", "thing");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace hotkey::testing

#endif  // HOTKEY_TESTS_LIB_ENUM_TABLE_CHECK_H_
