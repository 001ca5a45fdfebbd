// LandingPage: the page served is daemon/serving/web/page/'s files as embedded at build time
// (embed_page.cmake), with the telemetry path put in its placeholders.

#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "hotkey/web/web.h"

namespace hotkey::web {
namespace {

using Catch::Matchers::Contains;

std::string ReadPageFile(const std::string& name) {
  std::ifstream in(std::string(HOTKEY_PAGE_DIR) + "/" + name, std::ios::binary);
  REQUIRE(in);
  std::stringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST_CASE("LandingPage: the page is index.html with page.css and page.js inlined",
          "[daemon][web]") {
  const std::string page = LandingPage("/metrics");
  const std::string html = ReadPageFile("index.html");
  // The files as they are now: the build embedded the last edit of each.
  CHECK_THAT(page, Contains("<style>\n" + ReadPageFile("page.css") + "</style>"));
  CHECK_THAT(page, Contains("<script>\n" + ReadPageFile("page.js") + "</script>"));
  const std::string head = html.substr(0, html.find("<link"));
  CHECK(page.substr(0, head.size()) == head);
  const std::string tail = html.substr(html.find("<script src=\"page.js\"></script>") +
                                       std::string("<script src=\"page.js\"></script>").size());
  CHECK(page.ends_with(tail));
  // One self-contained response: nothing the browser would fetch to draw the page.
  CHECK(page.find("<link") == std::string::npos);
  CHECK(page.find("<script src") == std::string::npos);
  CHECK(page.find("@TELEMETRY_") == std::string::npos);
}

TEST_CASE("LandingPage: a telemetry path holding a placeholder's text is put in as it is",
          "[daemon][web]") {
  // Each placeholder is filled once: the path in the link's target is not filled in turn.
  const std::string page = LandingPage("/@TELEMETRY_PATH@");
  CHECK_THAT(page, Contains("<a href=\"@TELEMETRY_PATH@\">/@TELEMETRY_PATH@</a>"));
}

}  // namespace
}  // namespace hotkey::web
