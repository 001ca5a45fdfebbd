// ParseFiniteNumber: a character check for the grammar in number.h, then std::from_chars
// for the value. from_chars alone would also take "inf", "nan", and a prefix of "1e" or
// "1x" (stopping early); the check refuses those before it converts.

#include "hotkey/text/number.h"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <system_error>

namespace hotkey::text {

bool ParseFiniteNumber(std::string_view s, double* out) {
  size_t i = 0;
  const auto digits = [&] {
    const size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - start;
  };
  if (i < s.size() && s[i] == '-') ++i;
  size_t mantissa_digits = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    mantissa_digits += digits();
  }
  if (mantissa_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  if (i != s.size()) return false;
  double v;
  const std::from_chars_result r = std::from_chars(s.data(), s.data() + s.size(), v);
  // from_chars reports a value beyond a double's range either way as result_out_of_range;
  // the isfinite check is a second guard against an infinity.
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace hotkey::text
