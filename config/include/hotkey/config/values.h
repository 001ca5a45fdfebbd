// Parsers for the value types found in flags and in the rules file.
//
// Shared by flags.cc and rules_file.cc so that "16MiB" or "250ms" means the same thing in
// both, and by the daemon to turn validated option strings (listen addresses, CIDRs) into
// what sockets need. Every parser rejects trailing garbage and out-of-range numbers with a
// message quoting the text; none throws.
//
// Pure functions; thread-safe.

#ifndef HOTKEY_CONFIG_VALUES_H_
#define HOTKEY_CONFIG_VALUES_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace hotkey::config {

// A byte count: digits with an optional suffix, case-insensitive: B; KiB, MiB, GiB
// (powers of 1024); KB, MB, GB (powers of 1000). "16MiB", "64 KiB", "1024".
absl::StatusOr<uint64_t> ParseByteSize(std::string_view text);
// The shortest exact form: "16MiB", "32KiB", "1000".
std::string FormatByteSize(uint64_t bytes);

// A Go/Prometheus style duration ("250ms", "1s", "1m30s"), not negative. A bare number
// other than 0 is an error: "1" could mean seconds or milliseconds.
absl::StatusOr<absl::Duration> ParseDurationText(std::string_view text);
// ParseDurationText, or "inf" for absl::InfiniteDuration() (a load that runs until stopped).
absl::StatusOr<absl::Duration> ParseDurationOrInfinite(std::string_view text);

absl::StatusOr<int64_t> ParseInteger(std::string_view text);
// A finite decimal number by the one grammar of hotkey/text/number.h (as the UDP protocol
// reads its numbers): "0.25", "-1", "2e-3"; not "+1", " 1", "0x10", "inf". InvalidArgument
// naming the text otherwise.
absl::StatusOr<double> ParseNumber(std::string_view text);
// true/false, 1/0, yes/no, on/off (case-insensitive).
absl::StatusOr<bool> ParseBool(std::string_view text);
// Comma-separated, spaces around items ignored, empty items dropped: "a, b,,c" -> a b c.
std::vector<std::string> SplitList(std::string_view text);

namespace internal {
// `text` (any bytes) quoted for an error message, made printable: text::Quote.
std::string QuoteForError(std::string_view text);
}  // namespace internal

// A listen address split for the socket API.
struct HostPort {
  std::string host;  // "" for all interfaces; an IPv6 literal without its brackets
  uint16_t port = 0;
};
// "host:port", "[v6]:port" or ":port".
absl::StatusOr<HostPort> ParseListenAddress(std::string_view text);

// An IPv4 or IPv6 network.
struct Cidr {
  bool is_v6 = false;
  // Network order; IPv4 uses the first 4 bytes. Bits past prefix_length are zero.
  std::array<uint8_t, 16> network{};
  int prefix_length = 0;  // [0, 32] for IPv4, [0, 128] for IPv6

  // True if `address` (4 bytes for IPv4 or 16 for IPv6, network order, as Boost.Asio's
  // to_bytes() gives them) lies inside. An IPv4-mapped IPv6 address (::ffff:a.b.c.d, what
  // a dual-stack socket reports) is compared as its IPv4 address. Other sizes: false.
  bool Contains(std::span<const uint8_t> address) const;
};
// "10.0.0.0/8", "fd00::/8", or a bare address (a /32 or /128). Host bits set after the
// prefix are cleared, as Go's net.ParseCIDR does.
absl::StatusOr<Cidr> ParseCidr(std::string_view text);

// Checks a glob pattern (see ThresholdRule): no unclosed '[', no trailing '\\', no
// reversed range.
absl::Status ValidateGlob(std::string_view pattern);

// A glob pattern (see ThresholdRule) compiled once, to be matched against many keys.
//
// Our own matcher, not fnmatch(3): keys are bytes and may hold NUL, where fnmatch stops.
// Compiling turns each element into one token: a literal byte, '?', '*', or a byte class
// as a 256-bit set, so a class costs one bit test per byte of text, whatever its length.
// Matching is greedy with backtracking to the last '*' only (a later '*' can absorb
// whatever an earlier one would have), without recursion; it takes at most
// (tokens() + 1) * (|text| + 2) steps of O(1) each (pinned by options_test.cc), and does
// not allocate. A malformed pattern matches as if each bad '[' were a literal byte and a
// trailing '\\' a literal '\\'. Compiling allocates and costs O(|pattern|) for a valid one.
//
// Immutable after construction; thread-safe.
class CompiledGlob {
 public:
  explicit CompiledGlob(std::string_view pattern);

  // True if the pattern matches all of `text`, bytewise.
  bool Matches(std::string_view text) const { return Matches(text, nullptr); }
  // The same; adds the steps taken to *steps when it is not null.
  bool Matches(std::string_view text, uint64_t* steps) const;

  size_t tokens() const { return tokens_.size(); }

 private:
  struct Token {
    enum Kind : uint8_t { kByte, kAny, kStar, kClass } kind;
    uint8_t byte;    // kByte
    uint32_t index;  // kClass: into classes_
  };
  // Bit c of the 256-bit set: byte c is a member.
  using ByteSet = std::array<uint64_t, 4>;
  static bool Has(const ByteSet& set, unsigned char c) { return (set[c >> 6] >> (c & 63)) & 1; }

  std::vector<Token> tokens_;
  std::vector<ByteSet> classes_;
};

// True if `pattern` matches all of `text`, bytewise: CompiledGlob(pattern).Matches(text).
// Compiles on each call (allocates); compile once to match many keys.
bool GlobMatch(std::string_view pattern, std::string_view text);

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_VALUES_H_
