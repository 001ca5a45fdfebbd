// Tests of History (aggregate/history.h) on explicit times: windows and their measured spans,
// late ticks, the coarse ring, figures, fixed memory and the serialised form. The query is
// serving's: tests/daemon/serving/web/history_routes_test.cc.

#include "hotkey/aggregate/history.h"

#include <string>

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "alloc_count.h"

namespace hotkey::aggregate {
namespace {

namespace json = boost::json;

const absl::Time kMono0 = absl::FromUnixSeconds(1000);
const absl::Time kWall0 = absl::FromUnixSeconds(1'800'000'000);

// A tick's snapshot: the shard at `shard_ops` ops/s (a quarter of them writes), and `keys`
// keys "k0", "k1", ... with key i at `ops / (i + 1)` ops/s (all reads) and share of it.
Snapshot Snap(absl::Duration t, double shard_ops, int keys, double ops, bool hot = false) {
  Snapshot s;
  s.time = kWall0 + t;
  s.ops_per_second[0] = shard_ops * 0.75;
  s.ops_per_second[1] = shard_ops * 0.25;
  for (int i = 0; i < keys; ++i) {
    KeySnapshot k;
    k.hash = 100 + i;
    k.label = absl::StrCat("k", i);
    k.ops_per_second[0] = ops / (i + 1);
    k.share = k.ops_per_second[0] / shard_ops;
    k.hot = hot && i == 0;
    s.keys.push_back(k);
  }
  return s;
}

json::value Windows(const History& h, History::Query q = {}) { return json::parse(h.Json(q)); }

History::Query Coarse() {
  History::Query q;
  q.resolution = History::Resolution::kCoarse;
  return q;
}

History::Query Rows() {
  History::Query q;
  q.rows = true;
  return q;
}

TEST_CASE("History: a window closes at the first tick 10 s after its start, with its span",
          "[aggregate][history]") {
  History h(HistoryOptions{});
  // Ticks every 250 ms: 1000 ops/s, key k0 at 200 ops/s, k1 at 100.
  for (int i = 0; i <= 40; ++i) {
    h.Record(Snap(absl::Milliseconds(250 * i), 1000, 2, 200), kMono0 + absl::Milliseconds(250 * i));
  }
  REQUIRE(h.fine_count() == 1);
  json::value v = Windows(h);
  const json::array& w = v.at("windows").as_array();
  REQUIRE(w.size() == 1);
  CHECK(w[0].at("span_seconds").to_number<double>() == Approx(10));
  CHECK(w[0].at("start_unix").to_number<double>() == Approx(1'800'000'000));
  CHECK(w[0].at("ticks").to_number<double>() == 41);
  CHECK(w[0].at("ops_per_second").at("read").to_number<double>() == Approx(750));
  CHECK(w[0].at("ops_per_second").at("write").to_number<double>() == Approx(250));
  const json::array& keys = w[0].at("keys").as_array();
  REQUIRE(keys.size() == 2);
  CHECK(keys[0].at("key").as_string() == "k0");
  CHECK(keys[0].at("share").to_number<double>() == Approx(0.2));  // 200 of 1000 ops/s
  CHECK(keys[0].at("write_ratio").to_number<double>() == 0);
  CHECK(keys[1].at("key").as_string() == "k1");
  CHECK(keys[1].at("share").to_number<double>() == Approx(0.1));
}

TEST_CASE("History: a late tick makes one longer window with its real span, never a lost one",
          "[aggregate][history]") {
  History h(HistoryOptions{});
  h.Record(Snap(absl::ZeroDuration(), 1000, 1, 100), kMono0);
  h.Record(Snap(absl::Seconds(1), 1000, 1, 100), kMono0 + absl::Seconds(1));
  // The daemon stalls 34 s.
  h.Record(Snap(absl::Seconds(35), 1000, 1, 100), kMono0 + absl::Seconds(35));
  REQUIRE(h.fine_count() == 1);
  json::value v = Windows(h);
  const json::value& w = v.at("windows").as_array().at(0);
  CHECK(w.at("span_seconds").to_number<double>() == Approx(35));
  // Rates integrated over the real span: still 1000 ops/s, the key still 10 %.
  CHECK(w.at("ops_per_second").at("read").to_number<double>() +
            w.at("ops_per_second").at("write").to_number<double>() ==
        Approx(1000));
  CHECK(w.at("keys").at(0).at("share").to_number<double>() == Approx(0.1));
}

TEST_CASE("History: the peak share is the highest share at a tick of the window",
          "[aggregate][history]") {
  History h(HistoryOptions{});
  for (int i = 0; i <= 10; ++i) {
    // k0 at 100 ops/s, but 500 at the 5th tick.
    h.Record(Snap(absl::Seconds(i), 1000, 1, i == 5 ? 500 : 100, /*hot=*/i == 5),
             kMono0 + absl::Seconds(i));
  }
  json::value v = Windows(h);
  const json::value& k = v.at("windows").as_array().at(0).at("keys").at(0);
  CHECK(k.at("peak_share").to_number<double>() == Approx(0.5));
  CHECK(k.at("share").to_number<double>() == Approx((9 * 100 + 500) / 10000.0));
  CHECK(k.at("hot").as_bool());
}

TEST_CASE("History: coarse windows are built from six fine ones", "[aggregate][history]") {
  History h(HistoryOptions{});
  for (int i = 0; i <= 120; ++i) {
    // The key's rate doubles in the second minute.
    h.Record(Snap(absl::Seconds(i), 1000, 1, i > 60 ? 200 : 100), kMono0 + absl::Seconds(i));
  }
  CHECK(h.fine_count() == 12);
  CHECK(h.coarse_count() == 2);
  json::value v = Windows(h, Coarse());
  CHECK(v.at("resolution").as_string() == "coarse");
  const json::array& w = v.at("windows").as_array();
  REQUIRE(w.size() == 2);
  CHECK(w[0].at("span_seconds").to_number<double>() == Approx(60));
  CHECK(w[0].at("keys").at(0).at("share").to_number<double>() == Approx(0.1));
  CHECK(w[1].at("keys").at(0).at("share").to_number<double>() == Approx(0.2));
  CHECK(w[1].at("start_unix").to_number<double>() == Approx(1'800'000'060));
}

TEST_CASE("History: a window keeps its top slots and tags beside its keys",
          "[aggregate][history]") {
  History h(HistoryOptions{});
  for (int i = 0; i <= 10; ++i) {
    Snapshot s = Snap(absl::Seconds(i), 1000, 1, 100);
    s.slots.enabled = true;
    for (uint16_t slot : {4244, 15994}) {
      SlotSnapshot sl;
      sl.slot = slot;
      sl.ops_per_second = slot == 4244 ? 300 : 100;
      sl.share = sl.ops_per_second / 1000;
      sl.hot = slot == 4244;
      s.slots.slots.push_back(sl);
    }
    TagSnapshot t;
    t.hash = 5;
    t.label = "{user42}";
    t.ops_per_second = 50;
    t.share = 0.05;
    s.slots.tags.push_back(t);
    h.Record(s, kMono0 + absl::Seconds(i));
  }
  json::value v = Windows(h);
  const json::value& w = v.at("windows").as_array().at(0);
  const json::array& slots = w.at("slots").as_array();
  REQUIRE(slots.size() == 2);
  CHECK(slots[0].at("slot").to_number<double>() == 4244);
  CHECK(slots[0].at("share").to_number<double>() == Approx(0.3));
  CHECK(slots[0].at("hot").as_bool());
  CHECK(slots[1].at("slot").to_number<double>() == 15994);
  CHECK(w.at("tags").at(0).at("tag").as_string() == "{user42}");
  CHECK(w.at("tags").at(0).at("share").to_number<double>() == Approx(0.05));
}

TEST_CASE("History: only the top keys of a window are kept, whatever the keys seen",
          "[aggregate][history]") {
  HistoryOptions o;
  o.keys = 3;
  History h(o);
  for (int i = 0; i <= 10; ++i) {
    h.Record(Snap(absl::Seconds(i), 1000, 50, 300), kMono0 + absl::Seconds(i));
  }
  json::value v = Windows(h);
  const json::array& keys = v.at("windows").as_array().at(0).at("keys").as_array();
  REQUIRE(keys.size() == 3);
  CHECK(keys[0].at("key").as_string() == "k0");
  CHECK(keys[2].at("key").as_string() == "k2");
}

TEST_CASE("History: memory is allocated at start and bounded; recording allocates nothing",
          "[aggregate][history]") {
  for (const HistoryOptions& o : {HistoryOptions{}, HistoryOptions::ForExport(1000, 16384),
                                  HistoryOptions::ForExport(1, 16)}) {
    History h(o);
    CHECK(h.MemoryBytes() == History::MemoryBound(o));
    // Thousands of distinct keys with the longest labels, over two hours of ticks.
    Snapshot s = Snap(absl::ZeroDuration(), 1e6, 200, 1e5);
    for (KeySnapshot& k : s.keys) k.label = std::string(20000, 'x') + k.label;
    const uint64_t before = testing::AllocationsOnThisThread();
    for (int i = 0; i < 7200; ++i) {
      s.time = kWall0 + absl::Seconds(i);
      for (KeySnapshot& k : s.keys) k.hash += 1000;  // a new set of keys each tick
      h.Record(s, kMono0 + absl::Seconds(i));
    }
    CHECK(testing::AllocationsOnThisThread() == before);
    CHECK(h.fine_count() == o.fine_windows);
    CHECK(h.MemoryBytes() == History::MemoryBound(o));
    CHECK(h.Serialize().size() <= History::MaxSerializedBytes());
  }
  // Figures for docs/benchmarks/history.md.
  INFO("defaults " << History::MemoryBound(HistoryOptions{}) << " largest "
                   << History::MemoryBound(HistoryOptions::ForExport(1000, 16384)));
  CHECK(History::MemoryBound(HistoryOptions{}) < (8u << 20));
}

TEST_CASE("History: serialised and read back, the windows are the same; a bad one is refused",
          "[aggregate][history]") {
  History h(HistoryOptions{});
  for (int i = 0; i <= 130; ++i) {
    h.Record(Snap(absl::Seconds(i), 1000, 3, 100, i > 100), kMono0 + absl::Seconds(i));
  }
  const std::string bytes = h.Serialize();
  History back(HistoryOptions{});
  REQUIRE(back.Deserialize(bytes).ok());
  CHECK(back.fine_count() == h.fine_count());
  CHECK(back.coarse_count() == h.coarse_count());
  CHECK(back.Serialize() == bytes);
  for (const History::Query& q : {History::Query{}, Coarse(), Rows()}) {
    CHECK(back.Json(q) == h.Json(q));
  }

  SECTION("read with fewer keys per window, the rest are cut") {
    HistoryOptions o;
    o.keys = 1;
    History small(o);
    REQUIRE(small.Deserialize(bytes).ok());
    json::value v = Windows(small);
    CHECK(v.at("windows").as_array().at(0).at("keys").as_array().size() == 1);
  }
  SECTION("cut short, or with a byte past its end, it is refused and changes nothing") {
    History other(HistoryOptions{});
    CHECK_FALSE(other.Deserialize(bytes.substr(0, bytes.size() - 1)).ok());
    CHECK_FALSE(other.Deserialize(bytes + "x").ok());
    CHECK_FALSE(other.Deserialize("").ok());
    CHECK(other.fine_count() == 0);
  }
  SECTION("a window count larger than the bytes can hold is refused before it is believed") {
    std::string lie = bytes;
    lie[1 + 8] = '\xff';
    lie[1 + 8 + 1] = '\xff';
    lie[1 + 8 + 2] = '\xff';
    lie[1 + 8 + 3] = '\x7f';
    History other(HistoryOptions{});
    CHECK_FALSE(other.Deserialize(lie).ok());
  }
}

}  // namespace
}  // namespace hotkey::aggregate
