// Query decoding with Boost.URL; see query.h.
//
// Boost.URL is a compiled library, and Debian 12 ships its headers in libboost1.81-dev but
// its shared library in a separate package (libboost-url1.81-dev). Its documented
// header-only mode (src.hpp in exactly one file) is used instead: this is that file.

#include "hotkey/http/query.h"

#include <boost/url/encoding_opts.hpp>
#include <boost/url/parse_query.hpp>
#include <boost/url/src.hpp>

#include "absl/strings/str_cat.h"

namespace hotkey::http {

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ParseQuery(
    std::string_view query) {
  namespace urls = boost::urls;
  // The result<> form: parse_query reports a bad query as an error code, never throws.
  const urls::result<urls::params_encoded_view> params =
      urls::parse_query(urls::string_view(query.data(), query.size()));
  if (!params) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed query string: ", params.error().message()));
  }
  urls::encoding_opts opt;
  opt.space_as_plus = true;
  std::vector<std::pair<std::string, std::string>> out;
  for (const urls::param_pct_view p : *params) {
    if (p.key.empty() && !p.has_value) continue;  // "a&&b", or a trailing '&'
    out.emplace_back(p.key.decode(opt), p.has_value ? p.value.decode(opt) : std::string());
  }
  return out;
}

}  // namespace hotkey::http
