// Threshold rules and AlertOptions: matching, lookup and validation; see alert_options.h.

#include "hotkey/config/alert_options.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "hotkey/config/values.h"
#include "range.h"

namespace hotkey::config {

using internal::InRange;
using internal::IsHysteresis;
using internal::IsShare;
using internal::OutOfRange;

bool ThresholdRule::Matches(std::string_view key) const {
  return kind == kPrefix ? key.starts_with(pattern) : GlobMatch(pattern, key);
}

absl::Status ThresholdRule::Validate() const {
  if (kind != kPrefix && kind != kGlob) {
    return absl::InvalidArgumentError("threshold rule kind is not prefix or glob");
  }
  if (pattern.empty()) {
    return absl::InvalidArgumentError(
        "threshold rule pattern is empty (the default threshold covers every key)");
  }
  if (kind == kGlob) {
    if (absl::Status s = ValidateGlob(pattern); !s.ok()) return s;
  }
  if (!ignore && !IsShare(share)) {
    return OutOfRange(absl::StrCat("share of threshold rule \"", pattern, "\""), "(0, 1]", share);
  }
  return absl::OkStatus();
}

double AlertOptions::ThresholdFor(std::string_view key) const {
  for (const ThresholdRule& rule : rules) {
    if (!rule.Matches(key)) continue;
    return rule.ignore ? std::numeric_limits<double>::infinity() : rule.share;
  }
  return default_threshold;
}

absl::Status AlertOptions::Validate() const {
  if (!IsShare(default_threshold)) {
    return OutOfRange("alert share threshold", "(0, 1]", default_threshold);
  }
  if (!InRange(min_dwell, absl::ZeroDuration(), absl::Hours(1))) {
    return OutOfRange("alert min dwell", "[0s, 1h]", absl::FormatDuration(min_dwell));
  }
  if (!IsHysteresis(hysteresis)) return OutOfRange("alert hysteresis", "[0, 1)", hysteresis);
  if (!(advice_margin >= 0 && advice_margin < 1)) {
    return OutOfRange("alert advice margin", "[0, 1)", advice_margin);
  }
  if (!(min_ops_per_second >= 0) || min_ops_per_second > 1e12) {
    return OutOfRange("alert min ops", "[0, 1e12]", min_ops_per_second);
  }
  if (rules.size() > kMaxRules) {
    return absl::InvalidArgumentError(
        absl::StrCat("too many threshold rules: ", rules.size(), " (at most ", kMaxRules, ")"));
  }
  for (const ThresholdRule& rule : rules) {
    if (absl::Status s = rule.Validate(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace hotkey::config
