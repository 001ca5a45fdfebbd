// The screen of `hotkeyd top`; see render.h.

#include "hotkey/top/render.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "hotkey/text/escape.h"
#include "hotkey/text/utf8.h"

namespace hotkey::top {

namespace {

namespace json = boost::json;

// Debian's Abseil has its own string_view; Abseil's string functions take that one.
absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

constexpr std::string_view kCutMarker = "\u2026";  // "…": one column

// The row layout: right-aligned figures, the fix, then the key in the columns left.
constexpr size_t kShareColumns = 6;  // "100.0%"
constexpr size_t kRateColumns = 9;   // "999.9kB/s"
constexpr size_t kWriteColumns = 5;  // "100%"
constexpr size_t kHotColumns = 6;    // "59m59s"
constexpr size_t kFixColumns = 11;   // "split_cache", the longest strategy name

// Terminal columns of a printable code point: an approximation of wcwidth(3) that needs no
// locale. Two for the East Asian wide and fullwidth ranges of Markus Kuhn's wcwidth.c (the
// reference most terminals follow) plus the emoji blocks; none for the main blocks of
// combining marks, zero-width characters and variation selectors; one for the rest. A
// character it misjudges can shift the rest of its row, not wrap it: top turns the
// terminal's autowrap off while it draws.
size_t Columns(uint32_t cp) {
  if ((cp >= 0x0300 && cp <= 0x036F) || (cp >= 0x1AB0 && cp <= 0x1AFF) ||
      (cp >= 0x1DC0 && cp <= 0x1DFF) || (cp >= 0x200B && cp <= 0x200D) ||
      (cp >= 0x20D0 && cp <= 0x20FF) || (cp >= 0xFE00 && cp <= 0xFE0F) ||
      (cp >= 0xFE20 && cp <= 0xFE2F) || cp == 0xFEFF) {
    return 0;
  }
  if (cp >= 0x1100 && (cp <= 0x115F || cp == 0x2329 || cp == 0x232A ||
                       (cp >= 0x2E80 && cp <= 0xA4CF && cp != 0x303F) ||
                       (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) ||
                       (cp >= 0xFE10 && cp <= 0xFE19) || (cp >= 0xFE30 && cp <= 0xFE6F) ||
                       (cp >= 0xFF00 && cp <= 0xFF60) || (cp >= 0xFFE0 && cp <= 0xFFE6) ||
                       (cp >= 0x1F300 && cp <= 0x1F64F) || (cp >= 0x1F900 && cp <= 0x1F9FF) ||
                       (cp >= 0x20000 && cp <= 0x2FFFD) || (cp >= 0x30000 && cp <= 0x3FFFD))) {
    return 2;
  }
  return 1;
}

// The length of the character at the start of TerminalSafe() text (valid UTF-8).
size_t CharLength(std::string_view s) {
  const size_t n = text::Utf8SequenceLength(s);
  return n == 0 ? 1 : n;
}

// A field of a JSON object, or nullptr.
const json::value* Field(const json::value* v, std::string_view name) {
  if (v == nullptr || !v->is_object()) return nullptr;
  return v->as_object().if_contains(name);
}

// A number (any JSON number), or NaN when missing or not a number.
double Number(const json::value* v) {
  if (v == nullptr) return std::nan("");
  if (v->is_double()) return v->get_double();
  if (v->is_int64()) return static_cast<double>(v->get_int64());
  if (v->is_uint64()) return static_cast<double>(v->get_uint64());
  return std::nan("");
}

std::optional<std::string_view> String(const json::value* v) {
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return std::string_view(v->get_string());
}

std::optional<absl::Time> Time(const json::value* v) {
  const std::optional<std::string_view> s = String(v);
  absl::Time t;
  if (!s || !absl::ParseTime(absl::RFC3339_full, Sv(*s), &t, nullptr)) return std::nullopt;
  return t;
}

// read + write of an {"read": x, "write": y} object.
double ReadPlusWrite(const json::value* by_op) {
  return Number(Field(by_op, "read")) + Number(Field(by_op, "write"));
}

std::string Header(const RenderOptions& options, std::string_view rest) {
  std::string line = absl::StrCat("hotkeyd top  ", TerminalSafe(options.source));
  if (!rest.empty()) absl::StrAppend(&line, "  ", Sv(rest));
  return line;
}

// Each line fitted to the width, and to the height (with a last line naming the keys left
// out, `rows` being the number of key rows at the end of `lines`).
std::vector<std::string> Fit(std::vector<std::string> lines, size_t rows,
                             const RenderOptions& options) {
  const size_t width = std::max<size_t>(options.width, 1);
  if (options.height > 0 && lines.size() > options.height) {
    const size_t fixed = lines.size() - rows;  // header lines above the rows
    if (options.height > fixed) {
      const size_t shown = options.height - fixed - 1;
      const size_t hidden = rows - shown;
      lines.resize(fixed + shown);
      lines.push_back(absl::StrCat("+", hidden, hidden == 1 ? " more key" : " more keys"));
    } else {
      lines.resize(options.height);
    }
  }
  for (std::string& line : lines) line = FitWidth(line, width);
  return lines;
}

}  // namespace

std::string FormatRate(double per_second, std::string_view unit) {
  if (std::isnan(per_second) || per_second < 0) return "-";
  static constexpr std::string_view kPrefixes[] = {"", "k", "M", "G", "T", "P"};
  double v = per_second;
  for (size_t i = 0; i < std::size(kPrefixes); ++i) {
    const bool last = i + 1 == std::size(kPrefixes);
    // One decimal below 100 ("85.3"), none from there ("853"); the choice is made on the
    // rounded figure, so 99.96 shows as "100" and 999.6 moves up a prefix ("1.0k").
    if (v < 99.95) return absl::StrFormat("%.1f%s%s/s", v, Sv(kPrefixes[i]), Sv(unit));
    if (v < 999.5 || last) return absl::StrFormat("%.0f%s%s/s", v, Sv(kPrefixes[i]), Sv(unit));
    v /= 1000;
  }
  return "-";  // not reached
}

std::string FormatPercent(double ratio, int decimals) {
  if (std::isnan(ratio)) return "-";
  return absl::StrFormat("%.*f%%", decimals, ratio * 100);
}

std::string FormatDuration(double seconds) {
  if (!(seconds > 0)) seconds = 0;
  // Past a billion days, as good as forever; and no overflow converting to an integer.
  seconds = std::min(seconds, 1e9 * 86400);
  const int64_t s = static_cast<int64_t>(seconds);
  if (s < 60) return absl::StrFormat("%ds", s);
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  if (s < 86400) return absl::StrFormat("%dh%02dm", s / 3600, s % 3600 / 60);
  return absl::StrFormat("%dd%02dh", s / 86400, s % 86400 / 3600);
}

std::string TerminalSafe(std::string_view bytes) {
  // The server's labels are already escaped: their backslashes are kept, so they show as
  // they are.
  return text::Escape(bytes, {.escape_backslash = false});
}

size_t DisplayWidth(std::string_view safe_text) {
  size_t columns = 0;
  while (!safe_text.empty()) {
    const size_t n = CharLength(safe_text);
    columns += Columns(text::Utf8CodePoint(safe_text, n));
    safe_text.remove_prefix(n);
  }
  return columns;
}

std::string FitWidth(std::string_view safe_text, size_t width) {
  if (DisplayWidth(safe_text) <= width) return std::string(safe_text);
  if (width == 0) return "";
  std::string out;
  size_t columns = 0;
  while (!safe_text.empty()) {
    const size_t n = CharLength(safe_text);
    const size_t c = Columns(text::Utf8CodePoint(safe_text, n));
    if (columns + c > width - 1) break;  // one column for the marker
    out.append(safe_text.substr(0, n));
    columns += c;
    safe_text.remove_prefix(n);
  }
  // Zero-width characters that follow the last one kept belong to it (combining marks).
  while (!safe_text.empty()) {
    const size_t n = CharLength(safe_text);
    if (Columns(text::Utf8CodePoint(safe_text, n)) != 0) break;
    out.append(safe_text.substr(0, n));
    safe_text.remove_prefix(n);
  }
  out.append(kCutMarker);
  return out;
}

std::vector<std::string> RenderError(std::string_view message, const RenderOptions& options) {
  return Fit({Header(options, ""), TerminalSafe(message)}, 0, options);
}

std::vector<std::string> Render(std::string_view body, const RenderOptions& options) {
  std::error_code ec;
  const json::value doc = json::parse(json::string_view(body.data(), body.size()), ec);
  if (ec) {
    return RenderError(
        absl::StrCat("the answer is not JSON (", ec.message(), "): ", Sv(body.substr(0, 200))),
        options);
  }
  if (const std::optional<std::string_view> error = String(Field(&doc, "error"))) {
    return RenderError(absl::StrCat("hotkeyd answered: ", Sv(*error)), options);
  }
  const json::value* keys = Field(&doc, "keys");
  if (keys == nullptr || !keys->is_array()) {
    return RenderError("the answer has no \"keys\" list: is --url a hotkeyd?", options);
  }

  const std::optional<std::string_view> unit = String(Field(&doc, "unit"));
  const std::string_view rate_unit = unit == "bytes" ? "B" : "";
  const std::optional<absl::Time> now = Time(Field(&doc, "time"));
  const json::value* totals = Field(&doc, "ops_per_second");
  std::string summary =
      absl::StrCat("total ", FormatRate(ReadPlusWrite(totals), rate_unit), "  read ",
                   FormatRate(Number(Field(totals, "read")), rate_unit), "  write ",
                   FormatRate(Number(Field(totals, "write")), rate_unit));
  const double tracked = Number(Field(&doc, "tracked_keys"));
  const double hot = Number(Field(&doc, "hot_keys"));
  if (!std::isnan(tracked)) absl::StrAppendFormat(&summary, "  keys %.0f tracked", tracked);
  if (!std::isnan(hot)) absl::StrAppendFormat(&summary, ", %.0f hot", hot);

  std::vector<std::string> lines = {
      Header(options, now ? absl::FormatTime("%H:%M:%S UTC", *now, absl::UTCTimeZone()) : ""),
      std::move(summary), ""};
  const json::array& rows = keys->as_array();
  if (rows.empty()) {
    lines.push_back("no keys to show yet (none above the exported minimum share)");
    return Fit(std::move(lines), 0, options);
  }
  const std::string_view rate_heading = rate_unit.empty() ? "OPS/S" : "BYTES/S";
  lines.push_back(absl::StrFormat("%*s  %*s  %*s  %*s  %-*s  %s", kShareColumns, "SHARE",
                                  kRateColumns, Sv(rate_heading), kWriteColumns, "WRITE",
                                  kHotColumns, "HOT", kFixColumns, "FIX", "KEY"));
  // Largest shown share first, as top sorts by a column it shows (hotkeyd lists the keys by
  // their decayed share, which can order two close keys the other way); stable, so equal
  // shares keep hotkeyd's order; keys without a share last.
  std::vector<const json::value*> sorted;
  sorted.reserve(rows.size());
  for (const json::value& row : rows) sorted.push_back(&row);
  const auto share = [](const json::value* row) {
    const double s = Number(Field(row, "share"));
    return std::isnan(s) ? -1.0 : s;
  };
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](const json::value* a, const json::value* b) { return share(a) > share(b); });
  for (const json::value* row_ptr : sorted) {
    const json::value& row = *row_ptr;
    std::string hot_for = "-";
    const json::value* h = Field(&row, "hot");
    const bool hot = h != nullptr && h->is_bool() && h->get_bool();
    if (hot) {
      const std::optional<absl::Time> since = Time(Field(&row, "hot_since"));
      hot_for = now && since ? FormatDuration(absl::ToDoubleSeconds(*now - *since)) : "yes";
    }
    // null until the rate window has the key's figures. Shown for hot keys only, as the
    // landing page does: a key under its threshold needs no fix.
    const std::optional<std::string_view> advice = String(Field(&row, "advice"));
    const std::string fix = hot && advice ? FitWidth(TerminalSafe(*advice), kFixColumns) : "-";
    std::string key = TerminalSafe(String(Field(&row, "key")).value_or("-"));
    // The tracker kept only a prefix of a longer key.
    if (const json::value* t = Field(&row, "truncated");
        t != nullptr && t->is_bool() && t->get_bool()) {
      key.append(kCutMarker);
    }
    // %-*s pads by bytes: the fix is padded by columns here.
    const std::string fix_padded =
        fix + std::string(kFixColumns - std::min(kFixColumns, DisplayWidth(fix)), ' ');
    lines.push_back(absl::StrFormat(
        "%*s  %*s  %*s  %*s  %s  %s", kShareColumns, FormatPercent(Number(Field(&row, "share")), 1),
        kRateColumns, FormatRate(ReadPlusWrite(Field(&row, "ops_per_second")), rate_unit),
        kWriteColumns, FormatPercent(Number(Field(&row, "write_ratio")), 0), kHotColumns, hot_for,
        fix_padded, key));
  }
  return Fit(std::move(lines), rows.size(), options);
}

}  // namespace hotkey::top
