// ThresholdMatcher: the rules file's threshold rules (config::AlertOptions) compiled once,
// for the aggregator, which works out the threshold of every tracked key.

#ifndef HOTKEY_AGGREGATE_THRESHOLD_MATCHER_H_
#define HOTKEY_AGGREGATE_THRESHOLD_MATCHER_H_

#include <string_view>
#include <vector>

#include "hotkey/config/options.h"

namespace hotkey::aggregate {

// AlertOptions' threshold rules compiled once (each glob into a CompiledGlob, values.h),
// for looking up many keys: ThresholdFor(key) gives what AlertOptions::ThresholdFor gives,
// without allocating, in O(sum over the rules tried of (tokens + 1) * (|key| + 2)) steps.
// Immutable after construction; thread-safe.
class ThresholdMatcher {
 public:
  explicit ThresholdMatcher(const config::AlertOptions& alert);
  ~ThresholdMatcher();
  ThresholdMatcher(ThresholdMatcher&&) noexcept;
  ThresholdMatcher& operator=(ThresholdMatcher&&) noexcept;

  double ThresholdFor(std::string_view key) const;
  // The lowest threshold ThresholdFor() can give: a share at or under it is over no key's
  // threshold. min(default, every rule's share).
  double MinThreshold() const { return min_threshold_; }

 private:
  struct Rule;  // threshold_matcher.cc: the rule and its compiled glob
  std::vector<Rule> rules_;
  double default_threshold_;
  double min_threshold_;
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_THRESHOLD_MATCHER_H_
