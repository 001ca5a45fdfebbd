// Tests of the v1 wire protocol parser (parsers/wire.h): every line form, every
// rejection reason, isolation of bad lines, and how numbers are read.

#include "hotkey/parsers/wire.h"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "hotkey/sketch/heavy_hitters.h"

namespace hotkey::parsers {
namespace {

using sketch::Op;

struct Parsed {
  std::vector<std::string> keys;
  std::vector<Op> ops;
  std::vector<double> weights;
  ParseStats stats;

  uint64_t Rejected(Reject r) const { return stats.rejected[static_cast<size_t>(r)]; }
  uint64_t TotalRejected() const {
    uint64_t n = 0;
    for (uint64_t x : stats.rejected) n += x;
    return n;
  }
};

Parsed Parse(std::string_view datagram, size_t max_key_bytes = 1024) {
  Parsed p;
  p.stats = ParseDatagram(datagram, max_key_bytes, [&p](const Event& e) {
    p.keys.emplace_back(e.key);
    p.ops.push_back(e.op);
    p.weights.push_back(e.weight);
  });
  REQUIRE(p.stats.events == p.keys.size());
  return p;
}

// One line that must be rejected for `reason`, and nothing else.
void ExpectRejected(std::string_view line, Reject reason) {
  INFO("line: \"" << std::string(line) << "\"");
  const Parsed p = Parse(line);
  CHECK(p.stats.events == 0);
  CHECK(p.Rejected(reason) == 1);
  CHECK(p.TotalRejected() == 1);
}

TEST_CASE("Protocol: a plain read and a plain write are one event of weight 1", "[parsers][wire]") {
  const Parsed p = Parse("r user:42\nw cart:9");
  REQUIRE(p.keys == std::vector<std::string>{"user:42", "cart:9"});
  CHECK(p.ops == std::vector<Op>{Op::kRead, Op::kWrite});
  CHECK(p.weights == std::vector<double>{1.0, 1.0});
  CHECK(p.TotalRejected() == 0);
  CHECK_FALSE(p.stats.header_rejected);
}

TEST_CASE("Protocol: the key is every byte after the first space, spaces, NUL and 0xFF included",
          "[parsers][wire]") {
  const std::string weird = std::string("a b\0c\xff  d", 9);
  const Parsed p = Parse("r " + weird + "\nw  leading space");
  REQUIRE(p.keys.size() == 2);
  CHECK(p.keys[0] == weird);
  CHECK(p.keys[0].size() == 9);
  CHECK(p.keys[1] == " leading space");
}

TEST_CASE("Protocol: @p scales an event to 1/p ops and *w multiplies by its cost",
          "[parsers][wire]") {
  const Parsed p = Parse("r@0.01 a\nw*3 b\nr@0.5*2 c\nr*2@0.5 d\nw@1 e");
  REQUIRE(p.keys == std::vector<std::string>{"a", "b", "c", "d", "e"});
  CHECK(p.weights[0] == Approx(100.0));
  CHECK(p.weights[1] == Approx(3.0));
  CHECK(p.weights[2] == Approx(4.0));
  CHECK(p.weights[3] == Approx(4.0));
  CHECK(p.weights[4] == Approx(1.0));
  CHECK(p.ops[1] == Op::kWrite);
  CHECK(p.TotalRejected() == 0);
}

TEST_CASE("Protocol: a !v1 rate header scales every event, and a line's @ overrides it",
          "[parsers][wire]") {
  const Parsed p = Parse("!v1 rate=0.1\nr a\nw*2 b\nr@0.5 c\nr@1 d\n");
  REQUIRE(p.keys == std::vector<std::string>{"a", "b", "c", "d"});
  CHECK(p.weights[0] == Approx(10.0));
  CHECK(p.weights[1] == Approx(20.0));
  CHECK(p.weights[2] == Approx(2.0));
  CHECK(p.weights[3] == Approx(1.0));
  CHECK(p.TotalRejected() == 0);
}

TEST_CASE("Protocol: a bare !v1 header (or with a trailing space) keeps rate 1",
          "[parsers][wire]") {
  for (const char* d : {"!v1\nr a", "!v1 \nr a"}) {
    INFO(d);
    const Parsed p = Parse(d);
    REQUIRE(p.keys == std::vector<std::string>{"a"});
    CHECK(p.weights[0] == 1.0);
    CHECK_FALSE(p.stats.header_rejected);
  }
  const Parsed only = Parse("!v1 rate=0.5");
  CHECK(only.stats.events == 0);
  CHECK(only.TotalRejected() == 0);
}

TEST_CASE(
    "Protocol: a header of another version or with an unknown parameter rejects the "
    "whole datagram as bad_header",
    "[parsers][wire]") {
  for (const char* d :
       {"!v2\nr a\nr b", "!v1 foo=1\nr a", "!v1 rate=0.1 speed=2\nr a", "!v1 rate=0\nr a",
        "!v1 rate=1.5\nr a", "!v1 rate=abc\nr a", "!v1x\nr a", "!v10\nr a", "!\nr a"}) {
    INFO("datagram: " << d);
    const Parsed p = Parse(d);
    CHECK(p.stats.events == 0);
    CHECK(p.stats.header_rejected);
    CHECK(p.Rejected(Reject::kBadHeader) == 1);
    CHECK(p.TotalRejected() == 1);  // the lines after it are not looked at
  }
}

TEST_CASE("Protocol: a header is only a header on the first line", "[parsers][wire]") {
  const Parsed p = Parse("r a\n!v1 rate=0.1\nr b");
  CHECK(p.keys == std::vector<std::string>{"a", "b"});
  CHECK(p.weights == std::vector<double>{1.0, 1.0});
  CHECK(p.Rejected(Reject::kUnknownOp) == 1);
  CHECK_FALSE(p.stats.header_rejected);
}

TEST_CASE("Protocol: empty lines are rejected as empty_line", "[parsers][wire]") {
  ExpectRejected("\n", Reject::kEmptyLine);
  const Parsed p = Parse("\n\n");
  CHECK(p.Rejected(Reject::kEmptyLine) == 2);
  CHECK(p.TotalRejected() == 2);
  const Parsed q = Parse("r a\n\nr b\n");
  CHECK(q.keys == std::vector<std::string>{"a", "b"});
  CHECK(q.Rejected(Reject::kEmptyLine) == 1);
  CHECK(q.TotalRejected() == 1);
}

TEST_CASE("Protocol: an op other than r or w is rejected as unknown_op", "[parsers][wire]") {
  ExpectRejected("x k", Reject::kUnknownOp);
  ExpectRejected("rx k", Reject::kUnknownOp);
  ExpectRejected("R k", Reject::kUnknownOp);
  ExpectRejected(" r k", Reject::kUnknownOp);
  ExpectRejected("read k", Reject::kUnknownOp);
  ExpectRejected("wr k", Reject::kUnknownOp);
}

TEST_CASE("Protocol: a line without a key is rejected as missing_key", "[parsers][wire]") {
  ExpectRejected("r", Reject::kMissingKey);
  ExpectRejected("r ", Reject::kMissingKey);
  ExpectRejected("w", Reject::kMissingKey);
  ExpectRejected("r@0.1", Reject::kMissingKey);
  ExpectRejected("w*2 ", Reject::kMissingKey);
}

TEST_CASE("Protocol: keys are accepted up to the limit and rejected one byte past it",
          "[parsers][wire]") {
  const size_t limit = 16;
  const Parsed at = Parse("r " + std::string(limit, 'k'), limit);
  CHECK(at.stats.events == 1);
  CHECK(at.TotalRejected() == 0);
  const Parsed over = Parse("r " + std::string(limit + 1, 'k'), limit);
  CHECK(over.stats.events == 0);
  CHECK(over.Rejected(Reject::kKeyTooLong) == 1);
  CHECK(over.TotalRejected() == 1);
}

TEST_CASE("Protocol: a rate or weight out of range or malformed is rejected as bad_number",
          "[parsers][wire]") {
  for (const char* line :
       {"r@0 k",    "r@1.5 k", "r@abc k",   "r*-1 k", "r*inf k",  "r*1e400 k", "r@0.1@0.2 k",
        "r*2*3 k",  "r@ k",    "r* k",      "r*0 k",  "r@-0.5 k", "r@nan k",   "r*0x10 k",
        "r@+0.5 k", "r*1e7 k", "r@1e-10 k", "r*. k",  "r@0.5* k", "r*2@ k",    "r@0,5 k"}) {
    ExpectRejected(line, Reject::kBadNumber);
  }
}

TEST_CASE("Protocol: the heaviest event accepted is kMaxCost at kMinRate, and counts in full",
          "[parsers][wire]") {
  const Parsed p = Parse("r@1e-9*1e6 k");
  REQUIRE(p.weights.size() == 1);
  CHECK(p.weights[0] == kMaxCost / kMinRate);
  CHECK(p.weights[0] <= sketch::HeavyHitters::kMaxWeight);
  ExpectRejected("r@1e-9*1000000.1 k", Reject::kBadNumber);  // just above kMaxCost
  ExpectRejected("r@0.99e-9 k", Reject::kBadNumber);         // just below kMinRate
}

TEST_CASE("Protocol: a bad line never spoils its neighbours", "[parsers][wire]") {
  const std::string datagram =
      "r a\n"
      "x b\n"  // unknown_op
      "w c\n"
      "\n"       // empty_line
      "r\n"      // missing_key
      "r@2 d\n"  // bad_number
      "r " +
      std::string(9, 'k') +
      "\n"  // key_too_long (limit 8)
      "w*2 e\n";
  const Parsed p = Parse(datagram, 8);
  CHECK(p.keys == std::vector<std::string>{"a", "c", "e"});
  CHECK(p.weights == std::vector<double>{1.0, 1.0, 2.0});
  CHECK(p.Rejected(Reject::kUnknownOp) == 1);
  CHECK(p.Rejected(Reject::kEmptyLine) == 1);
  CHECK(p.Rejected(Reject::kMissingKey) == 1);
  CHECK(p.Rejected(Reject::kBadNumber) == 1);
  CHECK(p.Rejected(Reject::kKeyTooLong) == 1);
  CHECK(p.TotalRejected() == 5);
}

TEST_CASE("Protocol: the last newline is optional and adds no empty line", "[parsers][wire]") {
  const Parsed with = Parse("r a\nw b\n");
  const Parsed without = Parse("r a\nw b");
  CHECK(with.keys == without.keys);
  CHECK(with.TotalRejected() == 0);
  CHECK(without.TotalRejected() == 0);
}

TEST_CASE("Protocol: an empty datagram has no events and no rejections", "[parsers][wire]") {
  const Parsed p = Parse("");
  CHECK(p.stats.events == 0);
  CHECK(p.TotalRejected() == 0);
  CHECK_FALSE(p.stats.header_rejected);
}

TEST_CASE("Protocol: every rejection reason has its label value", "[parsers][wire]") {
  CHECK(RejectName(Reject::kEmptyLine) == "empty_line");
  CHECK(RejectName(Reject::kUnknownOp) == "unknown_op");
  CHECK(RejectName(Reject::kMissingKey) == "missing_key");
  CHECK(RejectName(Reject::kKeyTooLong) == "key_too_long");
  CHECK(RejectName(Reject::kBadNumber) == "bad_number");
  CHECK(RejectName(Reject::kBadHeader) == "bad_header");
}

TEST_CASE("Protocol: numbers follow text/number.h, and a signed rate or weight is refused",
          "[parsers][wire]") {
  // The grammar itself is pinned in tests/daemon/common/text/number_test.cc; here, that the
  // protocol reads by it and that a "-" (which the grammar allows) never makes a line valid.
  const Parsed p = Parse("r@.5*2e0 a\nw*0.25e+1 b\nr@1E-3 c");
  CHECK(p.weights == std::vector<double>{4.0, 2.5, 1000.0});
  CHECK(p.TotalRejected() == 0);
  for (const char* line : {"r@-0 k", "r*-0 k", "r*-2 k", "r@-1 k", "r*+2 k", "r*2e k", "r@ 0.5 k",
                           "r*0x1p1 k", "r*-inf k"}) {
    ExpectRejected(line, Reject::kBadNumber);
  }
  for (const char* d : {"!v1 rate=-0.5\nr a", "!v1 rate=+0.5\nr a", "!v1 rate=-0\nr a"}) {
    INFO("datagram: " << d);
    const Parsed h = Parse(d);
    CHECK(h.stats.events == 0);
    CHECK(h.Rejected(Reject::kBadHeader) == 1);
  }
}

}  // namespace
}  // namespace hotkey::parsers
