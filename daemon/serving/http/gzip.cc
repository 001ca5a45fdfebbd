#include "hotkey/http/gzip.h"

#include <zlib.h>

#include <cctype>
#include <cstdlib>
#include <limits>
#include <string>

namespace hotkey::http {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

// The q-value of one list item's parameters (";q=0.5"); 1 without one, 0 if unreadable.
double Weight(std::string_view params) {
  double q = 1;
  while (!params.empty()) {
    const size_t semi = params.find(';');
    std::string_view p = Trim(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
    if (p.size() >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
      const std::string v(p.substr(2));
      char* end = nullptr;
      q = std::strtod(v.c_str(), &end);
      if (v.empty() || end != v.c_str() + v.size() || !(q >= 0)) q = 0;
    }
  }
  return q;
}

}  // namespace

bool AcceptsGzip(std::string_view accept_encoding) {
  bool gzip = false, gzip_seen = false, star = false;
  while (!accept_encoding.empty()) {
    const size_t comma = accept_encoding.find(',');
    const std::string_view item = accept_encoding.substr(0, comma);
    accept_encoding =
        comma == std::string_view::npos ? std::string_view() : accept_encoding.substr(comma + 1);
    const size_t semi = item.find(';');
    const std::string_view coding = Trim(item.substr(0, semi));
    const double q = semi == std::string_view::npos ? 1 : Weight(item.substr(semi + 1));
    if (EqualsIgnoreCase(coding, "gzip") || EqualsIgnoreCase(coding, "x-gzip")) {
      gzip_seen = true;
      gzip = q > 0;
    } else if (coding == "*") {
      star = q > 0;
    }
  }
  // An explicit "gzip;q=0" refuses gzip even beside "*".
  return gzip_seen ? gzip : star;
}

absl::StatusOr<std::string> Gzip(std::string_view data) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::ResourceExhaustedError("gzip: cannot initialise zlib");
  }
  std::string out;
  out.resize(deflateBound(&z, data.size()));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  // deflateBound is enough for one Z_FINISH call when the input fits a uInt.
  const int rc =
      data.size() <= std::numeric_limits<uInt>::max() ? deflate(&z, Z_FINISH) : Z_BUF_ERROR;
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return absl::InternalError("gzip: body too large to compress");
  return out;
}

}  // namespace hotkey::http
