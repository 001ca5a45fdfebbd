// One table per enum: the names an enum's values have wherever a user reads or writes them
// (flags, the rules file, metric labels, JSON, log lines, --help), kept in one constexpr
// array of {value, name} next to the enum, and read through NameOf() and ParseName(). A
// second hand-written switch or if-chain is a copy that can come to differ; the table is
// the one place a new value gets its name.
//
//   enum class TapWeight { kOps, kBytes };
//   inline constexpr text::EnumName<TapWeight> kTapWeightNames[] = {
//       {TapWeight::kOps, "ops"}, {TapWeight::kBytes, "bytes"}};
//   NameOf(kTapWeightNames, TapWeight::kBytes)      -> "bytes"
//   ParseName(kTapWeightNames, "ops", "tap weight") -> TapWeight::kOps
//   ParseName(kTapWeightNames, "x", "tap weight")   -> "\"x\" is not a tap weight (ops, bytes)"
//
// A value may have more than one entry (an old name still accepted): NameOf() gives the
// first. tests/daemon/common/text/enum_names_test.cc checks each table: every value has a
// name, every name parses back to its value.
//
// Cost: a linear scan of a handful of entries; NameOf() is constexpr and allocates nothing.
// Thread-safe (pure functions over constant tables).

#ifndef HOTKEY_TEXT_ENUM_NAMES_H_
#define HOTKEY_TEXT_ENUM_NAMES_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hotkey::text {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

// The name of `value`; "" when the table has no entry for it.
template <class E, size_t N>
constexpr std::string_view NameOf(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& e : table) {
    if (e.value == value) return e.name;
  }
  return {};
}

// Every name of the table in its order, joined by ", ": "ops, bytes".
template <class E, size_t N>
std::string NameList(const EnumName<E> (&table)[N]) {
  std::string names;
  for (const EnumName<E>& e : table) {
    if (!names.empty()) names += ", ";
    names += e.name;
  }
  return names;
}

namespace internal {
// InvalidArgument: "<text, quoted and escaped> is not a <what> (<names>)".
absl::Status UnknownName(std::string_view text, std::string_view what, std::string_view names);
}  // namespace internal

// The value named exactly `text` (case matters), else InvalidArgument naming `text` (made
// printable by Quote()), `what` the setting is, and every name it could have been.
template <class E, size_t N>
absl::StatusOr<E> ParseName(const EnumName<E> (&table)[N], std::string_view text,
                            std::string_view what) {
  for (const EnumName<E>& e : table) {
    if (e.name == text) return e.value;
  }
  return internal::UnknownName(text, what, NameList(table));
}

}  // namespace hotkey::text

#endif  // HOTKEY_TEXT_ENUM_NAMES_H_
