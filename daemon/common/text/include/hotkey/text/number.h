// The one decimal-number grammar of hotkeyd: the UDP wire protocol's weights and rates
// (`*2`, `@0.01`, `!v1 rate=0.5`), numeric flags and the rules file's numbers all read
// numbers with ParseFiniteNumber, so a number means the same wherever a user writes it.
//
// Grammar (the whole text, nothing around it):
//
//   number   = [ "-" ] mantissa [ exponent ]
//   mantissa = digits [ "." [ digits ] ] | "." digits      (a digit before or after the point)
//   exponent = ( "e" | "E" ) [ "+" | "-" ] digits
//   digits   = one or more of 0-9, any count (leading zeros carry no precision)
//
// Refused: a leading "+", white space anywhere, hexadecimal ("0x10", "0x1p3"), "inf",
// "infinity", "nan", thousands or decimal commas, non-ASCII digits, a value too large for
// a double (1e400) and a non-zero value that would round to zero (1e-400); zero itself and
// subnormals (1e-320) are fine. The value is correctly rounded to the nearest double
// (std::from_chars), whatever the number of digits.
//
// A "-" is allowed so that a setting can answer "-0.5 is out of range" rather than "not a
// number". Every number of the wire protocol must be positive, so there a sign never makes
// a line valid (tests/daemon/input/parsers/wire_test.cc).
//
// Cost: O(length), no allocation, no exception, no locale (tests/daemon/common/text/number_test.cc
// pins the grammar and "no allocation").
//
// Thread-safe (a pure function).

#ifndef HOTKEY_TEXT_NUMBER_H_
#define HOTKEY_TEXT_NUMBER_H_

#include <string_view>

namespace hotkey::text {

// Sets *out to the number `text` spells, by the grammar above, and returns true; returns
// false and leaves *out untouched for anything else.
bool ParseFiniteNumber(std::string_view text, double* out);

}  // namespace hotkey::text

#endif  // HOTKEY_TEXT_NUMBER_H_
