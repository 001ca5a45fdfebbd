// Tests of the one decimal-number grammar (text/number.h): every accepted and refused form,
// correct rounding, long inputs, and "no allocation".

#include "hotkey/text/number.h"

#include <cmath>
#include <cstdint>
#include <string>

#include <catch2/catch.hpp>

#include "alloc_count.h"

namespace hotkey::text {
namespace {

struct Good {
  const char* text;
  double value;
};

TEST_CASE("Number: decimal forms with an optional minus and exponent are accepted",
          "[text][number]") {
  for (const Good& g :
       {Good{"0", 0}, Good{"1", 1}, Good{"0.5", 0.5}, Good{".5", 0.5}, Good{"5.", 5},
        Good{"1e3", 1000}, Good{"1E3", 1000}, Good{"2.5e-2", 0.025}, Good{"1e+2", 100},
        Good{"0001", 1}, Good{"123456789", 123456789}, Good{"0.000001", 1e-6}, Good{"-1", -1},
        Good{"-0.25", -0.25}, Good{"-.5e1", -5}, Good{"1e0003", 1000}, Good{"1e-320", 1e-320}}) {
    INFO(g.text);
    double v = 42;
    REQUIRE(ParseFiniteNumber(g.text, &v));
    CHECK(v == g.value);
  }
  double v = 42;
  REQUIRE(ParseFiniteNumber("-0", &v));
  CHECK((v == 0 && std::signbit(v)));
}

TEST_CASE("Number: everything else is refused and the output left untouched", "[text][number]") {
  for (const char* bad : {
           "",         ".",      "-",        "-.",     "e3",   "1e",  "1e+",  "1e-",  // no digits
           "+1",       "--1",    "-+1",      "1e++2",  "- 1",                         // signs
           " 1",       "1 ",     "\t1",      "1\n",    "1 e3",                        // white space
           "0x10",     "0x1p3",  "0X1P-2",   "1p3",                                   // hexadecimal
           "inf",      "-inf",   "infinity", "INF",    "nan",  "NaN", "-nan",         // not finite
           "1e400",    "-1e400", "1e-400",   "2e-324",                       // out of range
           "1.2.3",    "1,5",    "1_000",    "1e3.5",  "0.2x", "1f",  "1d",  // other text
           "\xd9\xa1",                                                       // Arabic-Indic 1
       }) {
    INFO("\"" << bad << "\"");
    double v = 42;
    CHECK_FALSE(ParseFiniteNumber(bad, &v));
    CHECK(v == 42);
  }
  // A NUL byte ends nothing: the whole view is read.
  double v = 42;
  CHECK_FALSE(ParseFiniteNumber(std::string_view("1\0", 2), &v));
  CHECK(v == 42);
}

TEST_CASE("Number: values are correctly rounded to the nearest double", "[text][number]") {
  // Each text reads as exactly the double the compiler makes of the same literal (C++
  // requires literals to be correctly rounded). Scaling digits by a power of ten would
  // read 0.3 as 0.30000000000000004 and 1e23 as 1.0000000000000001e23.
  for (const Good& c : {
           Good{"0.1", 0.1},
           Good{"0.3", 0.3},
           Good{"0.7", 0.7},
           Good{"1e-9", 1e-9},
           Good{"0.30000000000000004", 0.30000000000000004},
           Good{"0.123456789012345678", 0.123456789012345678},
           Good{"3.14159265358979323", 3.14159265358979323},
           Good{"123456789012345678", 123456789012345678.0},
           Good{"1e23", 1e23},
           Good{"2.2250738585072011e-308", 2.2250738585072011e-308},
           // 1 + 2^-53 exactly is halfway between 1 and the next double: ties go to even (1);
           // one more digit past it goes up.
           Good{"1.00000000000000011102230246251565404236316680908203125", 1.0},
           Good{"1.00000000000000011102230246251565404236316680908203126",
                1.0000000000000002220446049250313},
       }) {
    INFO(c.text);
    double v = -1;
    REQUIRE(ParseFiniteNumber(c.text, &v));
    CHECK(v == c.value);
  }
}

TEST_CASE("Number: leading zeros and long digit runs keep full precision", "[text][number]") {
  double v = 0;
  REQUIRE(ParseFiniteNumber("0000000000000000000000000001", &v));
  CHECK(v == 1.0);
  REQUIRE(ParseFiniteNumber("0.0000000000000000000000025", &v));
  CHECK(v == 2.5e-24);
  REQUIRE(ParseFiniteNumber("12345678901234567890123", &v));
  CHECK(v == 12345678901234567890123.0);
  // 100,000 characters: a 1 behind zeros, trailing zeros after a point, too many digits
  // for a double either way.
  const std::string zeros(100000, '0');
  REQUIRE(ParseFiniteNumber(zeros + "1", &v));
  CHECK(v == 1.0);
  REQUIRE(ParseFiniteNumber("0.5" + zeros, &v));
  CHECK(v == 0.5);
  REQUIRE(ParseFiniteNumber("0." + zeros + "5e100000", &v));
  CHECK(v == 0.5);
  v = 42;
  CHECK_FALSE(ParseFiniteNumber("1" + zeros, &v));         // 1e100000: too large
  CHECK_FALSE(ParseFiniteNumber("0." + zeros + "1", &v));  // 1e-100001: rounds to zero
  CHECK(v == 42);
}

TEST_CASE("Number: parsing allocates nothing, however long the text", "[text][number]") {
  const std::string zeros(100000, '0');
  const std::string texts[] = {"0.25",
                               "1e23",
                               "-1e-9",
                               "1e400",
                               "inf",
                               "0x10",
                               "1.00000000000000011102230246251565404236316680908203126",
                               zeros + "1",
                               "0." + zeros + "1",
                               "1" + zeros};
  double v = 0;
  const uint64_t before = testing::AllocationsOnThisThread();
  for (const std::string& t : texts) ParseFiniteNumber(t, &v);
  CHECK(testing::AllocationsOnThisThread() - before == 0);
}

}  // namespace
}  // namespace hotkey::text
