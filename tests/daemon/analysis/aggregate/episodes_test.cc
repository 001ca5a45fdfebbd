// Tests of EpisodeLog (aggregate/episodes.h): episodes open and close with the hot state,
// keep their peak, the fix advised and its changes, the fix in force (the feed's, or
// measured); the ring's bound; the serialised form and a restart's interrupted episodes.

#include "hotkey/aggregate/episodes.h"

#include <string>

#include <boost/json/parse.hpp>
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"

namespace hotkey::aggregate {
namespace {

namespace json = boost::json;
using Kind = EpisodeLog::Kind;

const absl::Time kWall0 = absl::FromUnixSeconds(1'800'000'000);

// One tick at kWall0 + s with key 1 hot at `share` (or not hot with share 0).
void Tick(EpisodeLog& log, int s, double share, std::string_view strategy = "cache") {
  log.Begin(kWall0 + absl::Seconds(s));
  if (share > 0) log.Hot(Kind::kKey, 1, "user:42", share, share * 1000, 0.1, strategy);
  log.Finish();
}

json::value Episodes(const EpisodeLog& log, size_t limit = 100) {
  return json::parse(log.Json(limit));
}

TEST_CASE(
    "EpisodeLog: an episode runs from the first hot tick to the first tick not hot, "
    "with its peak and the fix advised",
    "[aggregate][episodes]") {
  EpisodeLog log(10, 128);
  Tick(log, 0, 0);
  Tick(log, 1, 0.3, "");  // hot before any advice
  Tick(log, 2, 0.5, "cache");
  Tick(log, 3, 0.4, "cache");
  CHECK(log.open_count() == 1);
  {
    json::value v = Episodes(log);
    const json::value& e = v.at("episodes").at(0);
    CHECK(e.at("open").as_bool());
    CHECK(e.at("end").is_null());
    CHECK(v.at("open").to_number<double>() == 1);
  }
  Tick(log, 4, 0.45, "replicate");  // the advice changes
  Tick(log, 5, 0);                  // cooled
  CHECK(log.open_count() == 0);
  json::value v = Episodes(log);
  REQUIRE(v.at("episodes").as_array().size() == 1);
  const json::value& e = v.at("episodes").at(0);
  CHECK(e.at("id").to_number<double>() == 1);
  CHECK(e.at("kind").as_string() == "key");
  CHECK(e.at("key").as_string() == "user:42");
  CHECK(e.at("start_unix").to_number<double>() == 1'800'000'001);
  CHECK(e.at("end_unix").to_number<double>() == 1'800'000'005);
  CHECK(e.at("duration_seconds").to_number<double>() == 4);
  CHECK(e.at("peak_share").to_number<double>() == 0.5);
  CHECK(e.at("peak_ops_per_second").to_number<double>() == 500);
  CHECK(e.at("strategy").as_string() == "replicate");
  const json::array& changes = e.at("changes").as_array();
  REQUIRE(changes.size() == 2);
  CHECK(changes[0].at("strategy").as_string() == "cache");
  CHECK(changes[0].at("time").as_string() == "2027-01-15T08:00:02.000Z");
  CHECK(changes[1].at("strategy").as_string() == "replicate");
  CHECK(e.at("in_force").is_null());
}

TEST_CASE("EpisodeLog: measurements name the fix in force for the key's open episode",
          "[aggregate][episodes]") {
  EpisodeLog log(10, 128);
  Tick(log, 0, 0.3);
  log.NoteMeasured("none", "user:42", kWall0 + absl::Seconds(1));
  log.NoteMeasured("cache", "other", kWall0 + absl::Seconds(2));  // another key's
  log.NoteMeasured("cache", "user:42", kWall0 + absl::Seconds(3));
  log.NoteMeasured("cache", "", kWall0 + absl::Seconds(4));  // no key: the hot ones
  Tick(log, 5, 0);
  log.NoteMeasured("split", "user:42", kWall0 + absl::Seconds(6));  // after the episode
  json::value v = Episodes(log);
  const json::value& f = v.at("episodes").at(0).at("in_force");
  CHECK(f.at("strategy").as_string() == "cache");
  CHECK(f.at("by").as_string() == "measured_loads");
  CHECK(f.at("since").as_string() == "2027-01-15T08:00:03.000Z");
  CHECK(f.at("last").as_string() == "2027-01-15T08:00:04.000Z");
}

TEST_CASE(
    "EpisodeLog: the feed's fix is the fix in force, over the measured loads' and whatever "
    "is advised",
    "[aggregate][episodes]") {
  EpisodeLog log(10, 128);
  const auto hot = [&](int s, std::string_view advised, std::string_view in_force) {
    log.Begin(kWall0 + absl::Seconds(s));
    log.Hot(Kind::kKey, 1, "user:42", 0.3, 300, 0.1, advised, in_force);
    log.Finish();
  };
  hot(0, "cache", "");
  log.NoteMeasured("none", "user:42", kWall0);  // before the kits apply anything
  hot(1, "cache", "cache");
  hot(2, "none", "cache");  // the fix works: the advice follows what the shard sees
  log.NoteMeasured("none", "user:42", kWall0 + absl::Seconds(2));  // the feed's stands
  hot(3, "none", "split_cache");
  hot(4, "none", "");  // the entry left: the last one stands
  Tick(log, 5, 0);
  const json::value v = Episodes(log);
  const json::value& e = v.at("episodes").at(0);
  CHECK(e.at("strategy").as_string() == "none");
  const json::value& f = e.at("in_force");
  CHECK(f.at("strategy").as_string() == "split_cache");
  CHECK(f.at("by").as_string() == "feed");
  CHECK(f.at("since").as_string() == "2027-01-15T08:00:03.000Z");
  CHECK(f.at("last").as_string() == "2027-01-15T08:00:03.000Z");
  // And so after a restart.
  EpisodeLog back(10, 128);
  REQUIRE(back.Deserialize(log.Serialize(), kWall0 + absl::Seconds(6)).ok());
  CHECK(Episodes(back).at("episodes").at(0).at("in_force") == f);
}

TEST_CASE("EpisodeLog: a state file of format 1 (no `by`) reads, its fix in force measured",
          "[aggregate][episodes]") {
  EpisodeLog log(10, 128);
  Tick(log, 0, 0.3, "split");
  log.NoteMeasured("split", "", kWall0);
  Tick(log, 1, 0);
  std::string bytes = log.Serialize();
  // Format 1: the version byte, then no `by` byte after the fix in force's strategy (seq,
  // kind, id, start, end, interrupted, peak share, peak ops, threshold, change count,
  // dropped, strategy: 1 + 8 + 4 + 8 + 1 + 8 + 8 + 8 + 1 + 3 * 8 + 1 + 4 + 16 bytes in).
  REQUIRE(bytes[0] == 2);
  bytes[0] = 1;
  const size_t by = 1 + 8 + 4 + 8 + 1 + 8 + 8 + 8 + 1 + 3 * 8 + 1 + 4 + 16;
  REQUIRE(bytes[by] == 0);  // kMeasuredLoads
  bytes.erase(by, 1);
  EpisodeLog back(10, 128);
  REQUIRE(back.Deserialize(bytes, kWall0).ok());
  CHECK(Episodes(back) == Episodes(log));
}

TEST_CASE("EpisodeLog: keys, slots and tags are separate episodes; the ring keeps the newest",
          "[aggregate][episodes]") {
  EpisodeLog log(3, 4);
  log.Begin(kWall0);
  log.Hot(Kind::kKey, 7, "a-long-label", 0.2, 10, 0.1, "");
  log.Hot(Kind::kSlot, 7, "7", 0.2, 10, 0.1, "move");
  log.Hot(Kind::kTag, 7, "{t}", 0.2, 10, 0.1, "");
  log.Finish();
  CHECK(log.count() == 3);
  CHECK(log.open_count() == 3);
  json::value v = Episodes(log);
  CHECK(v.at("episodes").at(0).at("tag").as_string() == "{t}");
  CHECK(v.at("episodes").at(1).at("slot").to_number<double>() == 7);
  CHECK(v.at("episodes").at(2).at("key").as_string() == "a-lo");  // cut to 4 bytes
  // 20 more episodes of key 1: only the newest 3 stay, the memory does not grow.
  const size_t bytes = log.MemoryBytes();
  for (int i = 1; i <= 20; ++i) {
    Tick(log, 2 * i, 0.3);
    Tick(log, 2 * i + 1, 0);
  }
  CHECK(log.count() == 3);
  CHECK(log.open_count() == 0);
  CHECK(Episodes(log).at("episodes").at(0).at("id").to_number<double>() == 23);
  CHECK(log.MemoryBytes() <= bytes);
  CHECK(Episodes(log, 1).at("episodes").as_array().size() == 1);
}

TEST_CASE("EpisodeLog: memory is fixed at construction, within its bound",
          "[aggregate][episodes]") {
  EpisodeLog log(EpisodeLog::kDefaultCapacity, 256);
  CHECK(log.MemoryBytes() == EpisodeLog::MemoryBound(EpisodeLog::kDefaultCapacity, 256));
  for (int i = 0; i < 3000; ++i) {
    log.Begin(kWall0 + absl::Seconds(i));
    log.Hot(Kind::kKey, i, std::string(1000, 'k'), 0.2, 10, 0.1, "cache");
    log.Finish();
  }
  CHECK(log.count() == EpisodeLog::kDefaultCapacity);
  CHECK(log.MemoryBytes() == EpisodeLog::MemoryBound(EpisodeLog::kDefaultCapacity, 256));
  // Every episode open at once: the index does not grow.
  log.Begin(kWall0 + absl::Seconds(5000));
  for (int i = 0; i < 3000; ++i) log.Hot(Kind::kKey, i, "k", 0.2, 10, 0.1, "");
  log.Finish();
  CHECK(log.open_count() == EpisodeLog::kDefaultCapacity);
  CHECK(log.MemoryBytes() == EpisodeLog::MemoryBound(EpisodeLog::kDefaultCapacity, 256));
  CHECK(log.Serialize().size() <= EpisodeLog::MaxSerializedBytes(EpisodeLog::kDefaultCapacity));
}

TEST_CASE(
    "EpisodeLog: read back after a restart, open episodes are closed at the save and "
    "marked interrupted; a bad one is refused",
    "[aggregate][episodes]") {
  EpisodeLog log(10, 128);
  Tick(log, 0, 0.3);
  Tick(log, 1, 0);
  Tick(log, 2, 0.6, "split");
  log.NoteMeasured("split", "", kWall0 + absl::Seconds(2));
  const std::string bytes = log.Serialize();
  EpisodeLog back(10, 128);
  REQUIRE(back.Deserialize(bytes, kWall0 + absl::Seconds(3)).ok());
  CHECK(back.count() == 2);
  CHECK(back.open_count() == 0);
  json::value v = Episodes(back);
  const json::value& last = v.at("episodes").at(0);
  CHECK(last.at("interrupted").as_bool());
  CHECK(last.at("end_unix").to_number<double>() == 1'800'000'003);
  CHECK(last.at("strategy").as_string() == "split");
  CHECK(last.at("in_force").at("strategy").as_string() == "split");
  CHECK_FALSE(v.at("episodes").at(1).at("interrupted").as_bool());
  // Numbering goes on after the restored episodes.
  Tick(back, 10, 0.3);
  CHECK(Episodes(back).at("episodes").at(0).at("id").to_number<double>() == 3);

  SECTION("a smaller log keeps the newest") {
    EpisodeLog small(1, 128);
    REQUIRE(small.Deserialize(bytes, kWall0).ok());
    CHECK(Episodes(small).at("episodes").at(0).at("id").to_number<double>() == 2);
  }
  SECTION("cut, padded or empty: refused") {
    EpisodeLog other(10, 128);
    CHECK_FALSE(other.Deserialize(bytes.substr(0, bytes.size() - 1), kWall0).ok());
    CHECK_FALSE(other.Deserialize(bytes + "x", kWall0).ok());
    CHECK_FALSE(other.Deserialize("", kWall0).ok());
    CHECK(other.count() == 0);
  }
}

}  // namespace
}  // namespace hotkey::aggregate
