#include "hotkey/aggregate/threshold_matcher.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "hotkey/config/values.h"

namespace hotkey::aggregate {

struct ThresholdMatcher::Rule {
  config::ThresholdRule::Kind kind;
  std::string prefix;                        // kPrefix
  std::optional<config::CompiledGlob> glob;  // kGlob
  double threshold;                          // +inf for ignore
};

ThresholdMatcher::ThresholdMatcher(const config::AlertOptions& alert)
    : default_threshold_(alert.default_threshold), min_threshold_(alert.default_threshold) {
  rules_.reserve(alert.rules.size());
  for (const config::ThresholdRule& r : alert.rules) {
    Rule rule{
        r.kind, {}, std::nullopt, r.ignore ? std::numeric_limits<double>::infinity() : r.share};
    min_threshold_ = std::min(min_threshold_, rule.threshold);
    if (r.kind == config::ThresholdRule::kPrefix) {
      rule.prefix = r.pattern;
    } else {
      rule.glob.emplace(r.pattern);
    }
    rules_.push_back(std::move(rule));
  }
}

ThresholdMatcher::~ThresholdMatcher() = default;
ThresholdMatcher::ThresholdMatcher(ThresholdMatcher&&) noexcept = default;
ThresholdMatcher& ThresholdMatcher::operator=(ThresholdMatcher&&) noexcept = default;

double ThresholdMatcher::ThresholdFor(std::string_view key) const {
  for (const Rule& rule : rules_) {
    const bool match = rule.kind == config::ThresholdRule::kPrefix ? key.starts_with(rule.prefix)
                                                                   : rule.glob->Matches(key);
    if (match) return rule.threshold;
  }
  return default_threshold_;
}

}  // namespace hotkey::aggregate
