# embed_page.cmake: the landing page's files (page/index.html, page.css, page.js) made into one
# C++ string at build time, so the daemon serves a self-contained page with nothing read from
# disk at run time. Run by the build (CMakeLists.txt: add_custom_command, again whenever a file
# changes) as
#   cmake -DPAGE_DIR=<page folder> -DOUTPUT=<generated .cc> -P embed_page.cmake
# The stylesheet and the script replace the <link> and <script> elements that name them; the
# result is a raw string literal defining LandingPageTemplate() (landing_page_template.h).
# Each check below fails the build on what would serve a broken page: an element or
# placeholder missing or repeated, a placeholder outside the HTML (LandingPage replaces every
# occurrence), a "</style" or "</script" that would end the inlined text early, or the literal's
# closing delimiter inside the content. g++ and clang++ take a literal of any length (clang
# warns on a long one only under -Wpedantic, which the build does not use).
cmake_minimum_required(VERSION 3.25)

foreach(var PAGE_DIR OUTPUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed_page.cmake: -D${var}= is required")
  endif()
endforeach()

file(READ "${PAGE_DIR}/index.html" html)
file(READ "${PAGE_DIR}/page.css" css)
file(READ "${PAGE_DIR}/page.js" js)

# How many times `needle` occurs in `haystack`, into `out`.
function(count_occurrences out haystack needle)
  string(LENGTH "${needle}" needle_length)
  set(n 0)
  string(FIND "${haystack}" "${needle}" at)
  while(at GREATER -1)
    math(EXPR n "${n} + 1")
    math(EXPR at "${at} + ${needle_length}")
    string(SUBSTRING "${haystack}" ${at} -1 haystack)
    string(FIND "${haystack}" "${needle}" at)
  endwhile()
  set(${out} ${n} PARENT_SCOPE)
endfunction()

function(require_once text needle where)
  count_occurrences(n "${text}" "${needle}")
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "embed_page.cmake: ${where} holds `${needle}` ${n} times, not once")
  endif()
endfunction()

function(require_absent text needle where)
  string(TOLOWER "${text}" lower)
  string(TOLOWER "${needle}" needle)
  string(FIND "${lower}" "${needle}" at)
  if(at GREATER -1)
    message(FATAL_ERROR "embed_page.cmake: ${where} holds `${needle}` (any case)")
  endif()
endfunction()

set(link_element [[<link rel="stylesheet" href="page.css" />]])
set(script_element [[<script src="page.js"></script>]])
require_once("${html}" "${link_element}" "index.html")
require_once("${html}" "${script_element}" "index.html")
foreach(placeholder @TELEMETRY_HREF@ @TELEMETRY_PATH@)
  require_once("${html}" "${placeholder}" "index.html")
  require_absent("${css}" "${placeholder}" "page.css")
  require_absent("${js}" "${placeholder}" "page.js")
endforeach()
require_absent("${css}" "</style" "page.css")
require_absent("${js}" "</script" "page.js")
# "<!--" in a script starts the HTML parser's escaped state, in which "<script" nests.
require_absent("${js}" "<!--" "page.js")

string(REPLACE "${link_element}" "<style>\n${css}</style>" html "${html}")
string(REPLACE "${script_element}" "<script>\n${js}</script>" html "${html}")

set(delimiter "hotkeyd_page")
require_absent("${html}" ")${delimiter}\"" "the page")

set(generated "// Generated from daemon/serving/web/page/ by daemon/serving/web/embed_page.cmake: edit\n")
string(APPEND generated "// those files, not this one.\n\n")
string(APPEND generated "#include \"landing_page_template.h\"\n\n")
string(APPEND generated "namespace hotkey::web {\n\n")
string(APPEND generated "std::string_view LandingPageTemplate() {\n")
string(APPEND generated "  static constexpr std::string_view kPage = R\"${delimiter}(${html})${delimiter}\";\n")
string(APPEND generated "  return kPage;\n}\n\n}  // namespace hotkey::web\n")
file(WRITE "${OUTPUT}" "${generated}")
