// /api/v1/history's query parsed against the history's rings (web.h).

#include <cmath>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "hotkey/http/query.h"
#include "hotkey/web/web.h"

namespace hotkey::web {

using aggregate::History;
using aggregate::HistoryOptions;

namespace {

// The time of a query parameter: Unix seconds, or RFC 3339.
absl::StatusOr<absl::Time> ParseWhen(std::string_view name, std::string_view v) {
  double seconds = 0;
  if (absl::SimpleAtod(absl::string_view(v.data(), v.size()), &seconds) && std::isfinite(seconds) &&
      std::abs(seconds) < 1e11) {
    return absl::FromUnixNanos(static_cast<int64_t>(seconds * 1e9));
  }
  absl::Time t;
  std::string err;
  if (absl::ParseTime(absl::RFC3339_full, std::string(v), &t, &err)) return t;
  return absl::InvalidArgumentError(
      absl::StrCat("\"", std::string(name), "\" is neither Unix seconds nor an RFC 3339 time"));
}

}  // namespace

absl::StatusOr<History::Query> ParseHistoryQuery(const History& history, std::string_view query,
                                                 absl::Time now) {
  const HistoryOptions& options = history.options();
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> params = http::ParseQuery(query);
  if (!params.ok()) return params.status();
  History::Query q;
  for (const auto& [name, value] : *params) {
    if (name == "from" || name == "to") {
      absl::StatusOr<absl::Time> t = ParseWhen(name, value);
      if (!t.ok()) return t.status();
      (name == "from" ? q.from : q.to) = *t;
    } else if (name == "step") {
      double seconds = 0;
      absl::Duration d;
      if (absl::SimpleAtod(absl::string_view(value.data(), value.size()), &seconds) &&
          std::isfinite(seconds) && seconds >= 0 && seconds < 1e9) {
        d = absl::Seconds(seconds);
      } else if (!absl::ParseDuration(value, &d) || d < absl::ZeroDuration()) {
        return absl::InvalidArgumentError(
            "\"step\" is neither seconds nor a duration such as 10s or 1m");
      }
      q.resolution =
          d >= options.coarse_step ? History::Resolution::kCoarse : History::Resolution::kFine;
    } else if (name == "format") {
      if (value != "windows" && value != "rows") {
        return absl::InvalidArgumentError("\"format\" is windows (the default) or rows");
      }
      q.rows = value == "rows";
    } else {
      return absl::InvalidArgumentError(
          "unknown parameter: the history takes from, to, step and format");
    }
  }
  if (q.from > q.to) return absl::InvalidArgumentError("\"from\" is after \"to\"");
  const bool coarse = q.resolution == History::Resolution::kCoarse;
  const absl::Duration held = coarse ? options.coarse_step * options.coarse_windows
                                     : options.fine_step * options.fine_windows;
  const absl::Time to = q.to == absl::InfiniteFuture() ? now : q.to;
  if (q.from != absl::InfinitePast() && to - q.from > held) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the range is wider than the ",
        std::string(text::NameOf(History::kResolutionNames, q.resolution)), " ring holds (",
        absl::FormatDuration(held), "); narrow it or ask a larger step"));
  }
  return q;
}

}  // namespace hotkey::web
