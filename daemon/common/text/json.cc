#include "hotkey/text/json.h"

#include <cmath>
#include <cstdint>
#include <string_view>

#include <boost/json/serialize.hpp>

#include "hotkey/text/utf8.h"

namespace hotkey::text {

namespace json = boost::json;

namespace {

// Doubles of magnitude below 2^53 are exact integers when whole, so the int64 written holds
// the same value.
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

std::string_view View(json::string_view s) { return std::string_view(s.data(), s.size()); }

void Repair(json::value& v) {
  switch (v.kind()) {
    case json::kind::string: {
      const std::string_view s = View(v.get_string());
      if (!IsValidUtf8(s)) v = ToValidUtf8(s);
      break;
    }
    case json::kind::double_: {
      const double d = v.get_double();
      if (!std::isfinite(d)) {
        v = nullptr;
      } else if (std::trunc(d) == d && std::fabs(d) < kMaxExactInteger &&
                 !(d == 0 && std::signbit(d))) {  // -0.0 stays a double: -0E0
        v = static_cast<int64_t>(d);
      }
      break;
    }
    case json::kind::array:
      for (json::value& item : v.get_array()) Repair(item);
      break;
    case json::kind::object: {
      json::object& o = v.get_object();
      bool names_valid = true;
      for (json::key_value_pair& member : o) {
        Repair(member.value());
        names_valid = names_valid && IsValidUtf8(View(member.key()));
      }
      if (!names_valid) {
        // Member names are immutable in place: rebuild the object in the same order.
        // Two names that differ only in invalid bytes may now be equal; the first is kept.
        json::object repaired;
        repaired.reserve(o.size());
        for (json::key_value_pair& member : o) {
          repaired.emplace(ToValidUtf8(View(member.key())), std::move(member.value()));
        }
        o = std::move(repaired);
      }
      break;
    }
    default:
      break;
  }
}

}  // namespace

std::string JsonText(json::value v) {
  Repair(v);
  return json::serialize(v);
}

}  // namespace hotkey::text
