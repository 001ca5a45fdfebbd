// The feed's patterns, pins and policy: matching and validation; see feed_options.h.

#include "hotkey/config/feed_options.h"

#include "absl/strings/str_cat.h"
#include "hotkey/config/values.h"
#include "range.h"

namespace hotkey::config {

using internal::InRange;
using internal::OutOfRange;

bool FeedPattern::Matches(std::string_view key) const {
  switch (kind) {
    case kKey:
      return key == pattern;
    case kPrefix:
      return key.starts_with(pattern);
    case kGlob:
      return GlobMatch(pattern, key);
  }
  return false;
}

absl::Status FeedPattern::Validate() const {
  if (kind != kKey && kind != kPrefix && kind != kGlob) {
    return absl::InvalidArgumentError("feed pattern kind is not key, prefix or glob");
  }
  if (pattern.empty()) return absl::InvalidArgumentError("feed pattern is empty");
  if (kind == kGlob) return ValidateGlob(pattern);
  return absl::OkStatus();
}

absl::Status FeedPin::Validate() const {
  if (match.kind == FeedPattern::kGlob) {
    return absl::InvalidArgumentError(
        "a feed pin names a key or a prefix, not a glob (clients match keys by bytes)");
  }
  if (absl::Status s = match.Validate(); !s.ok()) return s;
  if (mode == hotkey::model::Strategy::kNone) {
    return absl::InvalidArgumentError(
        "a feed pin's mode is one of cache, replicate, split, split_cache, isolate");
  }
  return absl::OkStatus();
}

absl::Status FeedOptions::Validate() const {
  if (!InRange(lease, absl::Seconds(1), absl::Hours(1))) {
    return OutOfRange("feed lease", "[1s, 1h]", absl::FormatDuration(lease));
  }
  if (refresh && !InRange(*refresh, absl::Milliseconds(1), absl::Hours(1))) {
    return OutOfRange("feed refresh", "[1ms, 1h]", absl::FormatDuration(*refresh));
  }
  if (!InRange(hold, absl::ZeroDuration(), absl::Hours(1))) {
    return OutOfRange("feed hold", "[0s, 1h]", absl::FormatDuration(hold));
  }
  if (split_factor && !InRange(*split_factor, 2, kMaxSplitFactor)) {
    return OutOfRange("feed split_factor", "[2, 1024]", *split_factor);
  }
  if (pins.size() > kMaxRules || blocks.size() > kMaxRules) {
    return absl::InvalidArgumentError(
        absl::StrCat("feed: at most ", kMaxRules, " pins and ", kMaxRules, " blocks"));
  }
  for (const FeedPin& p : pins) {
    if (absl::Status s = p.Validate(); !s.ok()) return s;
  }
  for (const FeedPattern& b : blocks) {
    if (absl::Status s = b.Validate(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace hotkey::config
