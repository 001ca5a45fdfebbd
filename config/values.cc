// Value parsers shared by the flags and the rules file; see values.h.

#include "hotkey/config/values.h"

#include <arpa/inet.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl_compat.h"
#include "hotkey/text/escape.h"
#include "hotkey/text/number.h"

namespace hotkey::config {
namespace {

using internal::Av;
using internal::Sv;

struct SizeSuffix {
  std::string_view name;
  uint64_t multiplier;
};
// Longest names first is not needed: suffixes are compared whole.
constexpr SizeSuffix kSizeSuffixes[] = {
    {"", 1},
    {"b", 1},
    {"kib", uint64_t{1} << 10},
    {"mib", uint64_t{1} << 20},
    {"gib", uint64_t{1} << 30},
    {"kb", 1000},
    {"mb", 1000 * 1000},
    {"gb", 1000 * 1000 * 1000},
};

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Where the class starting at pattern[open] == '[' ends (the index of its ']'), or npos
// when it is unclosed. Classes: optional '!' or '^', then bytes, ranges a-z and '\'
// escapes; a ']' right after the opening (and negation) is a member.
size_t FindClassEnd(std::string_view pattern, size_t open) {
  size_t i = open + 1;
  if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) ++i;
  bool first = true;
  while (i < pattern.size()) {
    if (pattern[i] == ']' && !first) return i;
    if (pattern[i] == '\\') ++i;
    ++i;
    first = false;
  }
  return std::string_view::npos;
}

// Reads one class member byte at pattern[*i] (handling '\'), advancing *i.
unsigned char ClassByte(std::string_view pattern, size_t* i) {
  if (pattern[*i] == '\\' && *i + 1 < pattern.size()) ++*i;
  return static_cast<unsigned char>(pattern[(*i)++]);
}

}  // namespace

absl::StatusOr<uint64_t> ParseByteSize(std::string_view text) {
  std::string_view s = Sv(absl::StripAsciiWhitespace(Av(text)));
  size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  uint64_t value = 0;
  if (digits == 0 || !absl::SimpleAtoi(Av(s.substr(0, digits)), &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", Av(text), "\" is not a byte size (examples: 1024, 64KiB, 16MiB)"));
  }
  std::string suffix = absl::AsciiStrToLower(absl::StripAsciiWhitespace(Av(s.substr(digits))));
  for (const SizeSuffix& known : kSizeSuffixes) {
    if (suffix != known.name) continue;
    if (value > std::numeric_limits<uint64_t>::max() / known.multiplier) {
      return absl::InvalidArgumentError(absl::StrCat("byte size \"", Av(text), "\" is too large"));
    }
    return value * known.multiplier;
  }
  return absl::InvalidArgumentError(absl::StrCat("\"", Av(text),
                                                 "\" has an unknown size unit (use B, KiB, "
                                                 "MiB, GiB, KB, MB or GB)"));
}

std::string FormatByteSize(uint64_t bytes) {
  if (bytes != 0) {
    if (bytes % (uint64_t{1} << 30) == 0) return absl::StrCat(bytes >> 30, "GiB");
    if (bytes % (uint64_t{1} << 20) == 0) return absl::StrCat(bytes >> 20, "MiB");
    if (bytes % (uint64_t{1} << 10) == 0) return absl::StrCat(bytes >> 10, "KiB");
  }
  return absl::StrCat(bytes);
}

absl::StatusOr<absl::Duration> ParseDurationText(std::string_view text) {
  std::string s(absl::StripAsciiWhitespace(Av(text)));
  absl::Duration d;
  if (!absl::ParseDuration(s, &d) || d == absl::InfiniteDuration() ||
      d == -absl::InfiniteDuration()) {
    if (AllDigits(s)) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", Av(text), "\" needs a unit (examples: 250ms, 1s, 5m)"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("\"", Av(text), "\" is not a duration (examples: 250ms, 1s, 1m30s)"));
  }
  if (d < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("duration \"", Av(text), "\" is negative"));
  }
  return d;
}

absl::StatusOr<absl::Duration> ParseDurationOrInfinite(std::string_view text) {
  if (text == "inf") return absl::InfiniteDuration();
  return ParseDurationText(text);
}

absl::StatusOr<int64_t> ParseInteger(std::string_view text) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(Av(text), &v)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", Av(text), "\" is not an integer"));
  }
  return v;
}

absl::StatusOr<double> ParseNumber(std::string_view text) {
  double v = 0;
  if (!text::ParseFiniteNumber(text, &v)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", Av(text), "\" is not a finite number"));
  }
  return v;
}

absl::StatusOr<bool> ParseBool(std::string_view text) {
  std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(Av(text)));
  if (s == "true" || s == "1" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "0" || s == "no" || s == "off") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("\"", Av(text), "\" is not a boolean (use true or false)"));
}

namespace internal {
std::string QuoteForError(std::string_view text) { return text::Quote(text); }
}  // namespace internal

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  for (absl::string_view item : absl::StrSplit(Av(text), ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (!item.empty()) out.emplace_back(item);
  }
  return out;
}

absl::StatusOr<HostPort> ParseListenAddress(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("listen address \"", Av(text), "\" ", Av(why),
                                                   " (use host:port, [ipv6]:port or :port)"));
  };
  HostPort out;
  std::string_view port;
  if (text.starts_with("[")) {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return bad("has an unclosed '['");
    out.host = std::string(text.substr(1, close - 1));
    if (out.host.empty()) return bad("has an empty IPv6 host");
    std::string_view rest = text.substr(close + 1);
    if (!rest.starts_with(":")) return bad("has no port");
    port = rest.substr(1);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad("has no port");
    out.host = std::string(text.substr(0, colon));
    if (out.host.find(':') != std::string::npos) return bad("needs brackets around IPv6 hosts");
    port = text.substr(colon + 1);
  }
  for (char c : out.host) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) || c == '/' || c == '[' || c == ']') {
      return bad("has a bad host");
    }
  }
  uint32_t p = 0;
  if (!AllDigits(port) || port.size() > 5 || !absl::SimpleAtoi(Av(port), &p) || p > 65535) {
    return bad("has a bad port (0 to 65535)");
  }
  out.port = static_cast<uint16_t>(p);
  return out;
}

bool Cidr::Contains(std::span<const uint8_t> address) const {
  static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (!is_v6 && address.size() == 16 &&
      std::memcmp(address.data(), kMappedPrefix, sizeof(kMappedPrefix)) == 0) {
    address = address.subspan(12);
  }
  if (address.size() != (is_v6 ? 16u : 4u)) return false;
  int full = prefix_length / 8;
  if (std::memcmp(address.data(), network.data(), full) != 0) return false;
  int rest = prefix_length % 8;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (address[full] & mask) == network[full];
}

absl::StatusOr<Cidr> ParseCidr(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("\"", Av(text), "\" is not a network: ", Av(why),
                                                   " (examples: 10.0.0.0/8, fd00::/8, ::1)"));
  };
  std::string_view addr = text;
  std::string_view prefix;
  bool has_prefix = false;
  if (size_t slash = text.find('/'); slash != std::string_view::npos) {
    addr = text.substr(0, slash);
    prefix = text.substr(slash + 1);
    has_prefix = true;
  }
  Cidr out;
  std::string addr_z(addr);  // inet_pton needs a terminated string
  if (inet_pton(AF_INET, addr_z.c_str(), out.network.data()) == 1) {
    out.is_v6 = false;
  } else if (inet_pton(AF_INET6, addr_z.c_str(), out.network.data()) == 1) {
    out.is_v6 = true;
  } else {
    return bad("bad address");
  }
  int max_len = out.is_v6 ? 128 : 32;
  out.prefix_length = max_len;
  if (has_prefix) {
    int len = 0;
    if (!AllDigits(prefix) || prefix.size() > 3 || !absl::SimpleAtoi(Av(prefix), &len) ||
        len > max_len) {
      return bad(absl::StrCat("prefix length must be 0 to ", max_len));
    }
    out.prefix_length = len;
  }
  for (int bit = out.prefix_length; bit < max_len; ++bit) {
    out.network[bit / 8] &= static_cast<uint8_t>(~(0x80 >> (bit % 8)));
  }
  return out;
}

absl::Status ValidateGlob(std::string_view pattern) {
  for (size_t p = 0; p < pattern.size(); ++p) {
    if (pattern[p] == '\\') {
      if (p + 1 == pattern.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("glob \"", Av(pattern), "\" ends with a lone '\\'"));
      }
      ++p;
    } else if (pattern[p] == '[') {
      size_t close = FindClassEnd(pattern, p);
      if (close == std::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat(
            "glob \"", Av(pattern), "\" has an unclosed '[' (write \\[ for the byte)"));
      }
      size_t i = p + 1;
      if (pattern[i] == '!' || pattern[i] == '^') ++i;
      while (i < close) {
        unsigned char lo = ClassByte(pattern, &i);
        if (i + 1 < close && pattern[i] == '-') {
          ++i;
          unsigned char hi = ClassByte(pattern, &i);
          if (hi < lo) {
            return absl::InvalidArgumentError(
                absl::StrCat("glob \"", Av(pattern), "\" has a reversed range in a [...] class"));
          }
        }
      }
      p = close;
    }
  }
  return absl::OkStatus();
}

CompiledGlob::CompiledGlob(std::string_view pattern) {
  for (size_t p = 0; p < pattern.size();) {
    const unsigned char c = static_cast<unsigned char>(pattern[p]);
    if (c == '*') {
      // "**" is "*": one star token keeps the step bound in terms of distinct elements.
      if (tokens_.empty() || tokens_.back().kind != Token::kStar) {
        tokens_.push_back({Token::kStar, 0, 0});
      }
      ++p;
      continue;
    }
    if (c == '?') {
      tokens_.push_back({Token::kAny, 0, 0});
      ++p;
      continue;
    }
    if (c == '\\' && p + 1 < pattern.size()) {
      tokens_.push_back({Token::kByte, static_cast<uint8_t>(pattern[p + 1]), 0});
      p += 2;
      continue;
    }
    if (c == '[') {
      const size_t close = FindClassEnd(pattern, p);
      if (close != std::string_view::npos) {
        ByteSet set{};
        size_t i = p + 1;
        bool negate = false;
        if (pattern[i] == '!' || pattern[i] == '^') {
          negate = true;
          ++i;
        }
        while (i < close) {
          const unsigned char lo = ClassByte(pattern, &i);
          unsigned char hi = lo;
          if (i + 1 < close && pattern[i] == '-') {
            ++i;
            hi = ClassByte(pattern, &i);
          }
          for (unsigned b = lo; b <= hi; ++b) set[b >> 6] |= uint64_t{1} << (b & 63);
        }
        if (negate) {
          for (uint64_t& w : set) w = ~w;
        }
        tokens_.push_back({Token::kClass, 0, static_cast<uint32_t>(classes_.size())});
        classes_.push_back(set);
        p = close + 1;
        continue;
      }
      // Unclosed: a literal '['.
    }
    tokens_.push_back({Token::kByte, c, 0});
    ++p;
  }
}

bool CompiledGlob::Matches(std::string_view text, uint64_t* steps) const {
  const size_t n = tokens_.size();
  size_t p = 0;
  size_t t = 0;
  size_t star_p = std::string_view::npos;  // token index just after the last '*'
  size_t star_t = 0;                       // text index that '*' is currently matched up to
  uint64_t count = 0;
  bool matched;
  for (;;) {
    ++count;
    if (t == text.size()) {
      while (p < n && tokens_[p].kind == Token::kStar) ++p;
      matched = p == n;
      break;
    }
    if (p < n) {
      const Token& tok = tokens_[p];
      const unsigned char c = static_cast<unsigned char>(text[t]);
      if (tok.kind == Token::kStar) {
        star_p = ++p;
        star_t = t;
        continue;
      }
      const bool hit = tok.kind == Token::kAny || (tok.kind == Token::kByte && tok.byte == c) ||
                       (tok.kind == Token::kClass && Has(classes_[tok.index], c));
      if (hit) {
        ++p;
        ++t;
        continue;
      }
    }
    if (star_p == std::string_view::npos) {
      matched = false;
      break;
    }
    p = star_p;
    t = ++star_t;
  }
  if (steps) *steps += count;
  return matched;
}

bool GlobMatch(std::string_view pattern, std::string_view text) {
  return CompiledGlob(pattern).Matches(text);
}

}  // namespace hotkey::config
