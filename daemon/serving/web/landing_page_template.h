// The landing page as built from daemon/serving/web/page/ (index.html with page.css and page.js
// inlined), before LandingPage puts the telemetry path in its placeholders. Defined in the .cc
// that embed_page.cmake generates at build time.

#ifndef HOTKEY_WEB_LANDING_PAGE_TEMPLATE_H_
#define HOTKEY_WEB_LANDING_PAGE_TEMPLATE_H_

#include <string_view>

namespace hotkey::web {

// Static storage: the view is valid for the life of the process. Holds "@TELEMETRY_HREF@" and
// "@TELEMETRY_PATH@" once each, in the HTML only (embed_page.cmake checks).
std::string_view LandingPageTemplate();

}  // namespace hotkey::web

#endif  // HOTKEY_WEB_LANDING_PAGE_TEMPLATE_H_
