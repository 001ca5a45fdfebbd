// Command-line parsing for hotkey-sim (see args.h).

#include "args.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hotkey::sim {

absl::StatusOr<Args> Args::Parse(const std::vector<std::string>& argv,
                                 const std::set<std::string>& value_flags,
                                 const std::set<std::string>& switches) {
  Args args;
  bool flags_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (flags_done || a.size() < 2 || a.compare(0, 2, "--") != 0) {
      args.positional_.push_back(a);
      continue;
    }
    if (a == "--") {
      flags_done = true;
      continue;
    }
    std::string name = a.substr(2);
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    if (switches.count(name)) {
      if (value.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
      }
      args.values_.emplace(name, "");
      continue;
    }
    if (!value_flags.count(name)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    }
    if (!value.has_value()) {
      if (i + 1 >= argv.size()) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      }
      value = argv[++i];
    }
    args.values_.emplace(name, *value);
  }
  return args;
}

std::optional<std::string> Args::Get(const std::string& name) const {
  auto [lo, hi] = values_.equal_range(name);
  if (lo == hi) return std::nullopt;
  return std::prev(hi)->second;
}

std::vector<std::string> Args::GetAll(const std::string& name) const {
  std::vector<std::string> all;
  for (auto [lo, hi] = values_.equal_range(name); lo != hi; ++lo) all.push_back(lo->second);
  return all;
}

bool ParseDouble(const std::string& text, double* out) {
  return absl::SimpleAtod(text, out) && std::isfinite(*out);
}

bool ParseInt(const std::string& text, int64_t* out) { return absl::SimpleAtoi(text, out); }

bool ParseDurationArg(const std::string& text, absl::Duration* out) {
  if (text == "inf" || text == "infinite") {
    *out = absl::InfiniteDuration();
    return true;
  }
  double seconds = 0;
  if (ParseDouble(text, &seconds)) {
    *out = absl::Seconds(seconds);
    return true;
  }
  return absl::ParseDuration(text, out) && *out != absl::InfiniteDuration() &&
         *out != -absl::InfiniteDuration();
}

absl::StatusOr<double> Args::Double(const std::string& name, double fallback) const {
  const std::optional<std::string> v = Get(name);
  if (!v.has_value()) return fallback;
  double d = 0;
  if (!ParseDouble(*v, &d)) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, ": '", *v, "' is not a number"));
  }
  return d;
}

absl::StatusOr<int64_t> Args::Int(const std::string& name, int64_t fallback) const {
  const std::optional<std::string> v = Get(name);
  if (!v.has_value()) return fallback;
  int64_t i = 0;
  if (!ParseInt(*v, &i)) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, ": '", *v, "' is not an integer"));
  }
  return i;
}

absl::StatusOr<absl::Duration> Args::Duration(const std::string& name,
                                              absl::Duration fallback) const {
  const std::optional<std::string> v = Get(name);
  if (!v.has_value()) return fallback;
  absl::Duration d;
  if (!ParseDurationArg(*v, &d)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": '", *v, "' is not a duration (e.g. 10s, 500ms, 2m, 1.5, inf)"));
  }
  return d;
}

}  // namespace hotkey::sim
