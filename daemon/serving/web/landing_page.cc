// LandingPage: the page built from daemon/serving/web/page/ (landing_page_template.h), its
// metrics link pointed at the configured telemetry path. What the page shows and does is said
// at the top of page/page.js; its markup, style and script are edited, linted and formatted
// there (tests/daemon/serving/web/page_lint_test.sh), not here.

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "hotkey/web/web.h"
#include "landing_page_template.h"

namespace hotkey::web {

namespace {

// For text and attribute values: the telemetry path may hold any printable byte but space.
std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// `page` with each placeholder replaced by its value, in one pass, so that a value holding a
// placeholder's text (a telemetry path may) is not replaced in turn.
std::string Fill(std::string_view page,
                 std::initializer_list<std::pair<std::string_view, std::string_view>> values) {
  std::string out;
  while (true) {
    size_t at = std::string_view::npos;
    const std::pair<std::string_view, std::string_view>* first = nullptr;
    for (const auto& value : values) {
      const size_t found = page.find(value.first);
      if (found < at) {
        at = found;
        first = &value;
      }
    }
    if (first == nullptr) return out.append(page);
    out.append(page.substr(0, at)).append(first->second);
    page.remove_prefix(at + first->first.size());
  }
}

}  // namespace

std::string LandingPage(std::string_view telemetry_path) {
  // Relative, like the page's other links, so the page also works behind a reverse proxy
  // that serves the daemon under a path prefix.
  const std::string href =
      HtmlEscape(telemetry_path.substr(telemetry_path.starts_with('/') ? 1 : 0));
  return Fill(LandingPageTemplate(),
              {{"@TELEMETRY_HREF@", href}, {"@TELEMETRY_PATH@", HtmlEscape(telemetry_path)}});
}

}  // namespace hotkey::web
