// Tests of the v1 wire protocol parser (parsers/wire.h): every line form, every
// rejection reason, isolation of bad lines, and the strict number grammar.

#include "hotkey/parsers/wire.h"

#include <string>
#include <vector>

#include <catch2/catch.hpp>

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

TEST_CASE("Protocol: ParseNumber accepts only unsigned decimal numbers", "[parsers][wire]") {
  struct Good {
    const char* text;
    double value;
  };
  for (const Good& g :
       {Good{"0", 0}, Good{"1", 1}, Good{"0.5", 0.5}, Good{".5", 0.5}, Good{"5.", 5},
        Good{"1e3", 1000}, Good{"1E3", 1000}, Good{"2.5e-2", 0.025}, Good{"1e+2", 100},
        Good{"0001", 1}, Good{"123456789", 123456789}, Good{"0.000001", 1e-6}}) {
    INFO(g.text);
    double v = -1;
    REQUIRE(internal::ParseNumber(g.text, &v));
    CHECK(v == Approx(g.value).margin(1e-15));
  }
  for (const char* bad : {"", ".", "e3", "1e", "1e+", "-1", "+1", " 1", "1 ", "inf", "nan", "0x10",
                          "1.2.3", "1e400", "1,5", "١"}) {
    INFO("\"" << bad << "\"");
    double v = 42;
    CHECK_FALSE(internal::ParseNumber(bad, &v));
    CHECK(v == 42);  // untouched on failure
  }
}

TEST_CASE("Protocol: ParseNumber rounds correctly to the nearest double", "[parsers][wire]") {
  // Each text reads as exactly the double the compiler makes of the same literal (C++
  // requires literals to be correctly rounded). Scaling digits by a power of ten, as the
  // parser once did, read 0.3 as 0.30000000000000004 and 1e23 as 1.0000000000000001e23.
  struct Case {
    const char* text;
    double value;
  };
  for (const Case& c : {
           Case{"0.1", 0.1},
           Case{"0.3", 0.3},
           Case{"0.7", 0.7},
           Case{"1e-9", 1e-9},
           Case{"0.30000000000000004", 0.30000000000000004},
           Case{"0.123456789012345678", 0.123456789012345678},
           Case{"3.14159265358979323", 3.14159265358979323},
           Case{"123456789012345678", 123456789012345678.0},
           Case{"1e23", 1e23},
           Case{"2.2250738585072011e-308", 2.2250738585072011e-308},
           // 1 + 2^-53 exactly is halfway between 1 and the next double: ties go to even (1);
           // one more digit past it goes up.
           Case{"1.00000000000000011102230246251565404236316680908203125", 1.0},
           Case{"1.00000000000000011102230246251565404236316680908203126",
                1.0000000000000002220446049250313},
       }) {
    INFO(c.text);
    double v = -1;
    REQUIRE(internal::ParseNumber(c.text, &v));
    CHECK(v == c.value);
  }
}

TEST_CASE("Protocol: ParseNumber keeps its precision behind many leading zeros",
          "[parsers][wire]") {
  // Leading zeros carry no precision; only significant digits may use up the 18 kept.
  double v = 0;
  REQUIRE(internal::ParseNumber("0000000000000000000000000001", &v));
  CHECK(v == 1.0);
  REQUIRE(internal::ParseNumber("0.0000000000000000000000025", &v));
  CHECK(v == Approx(2.5e-24));
  REQUIRE(internal::ParseNumber("12345678901234567890123", &v));
  CHECK(v == Approx(1.2345678901234568e22));
}

}  // namespace
}  // namespace hotkey::parsers
