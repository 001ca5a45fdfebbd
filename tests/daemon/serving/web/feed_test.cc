// The hot-key feed: its set, diff and versions (FeedState), its JSON and key exposure, and
// the hub's bounds and heartbeats (FeedHub), on fake time.

#include "hotkey/web/feed.h"

#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "enum_table_check.h"
#include "fake_clock.h"

namespace hotkey::web {
namespace {

using aggregate::KeySnapshot;
using aggregate::Snapshot;

using model::Strategy;
using Type = FeedEvent::Type;

// A hot key whose shard carries `shard_load` (its projected load with no fix; over the
// default target of 0.8 unless told).
KeySnapshot Hot(std::string key, Strategy advice, double share = 0.3, double shard_load = 1.2) {
  KeySnapshot k;
  k.key = key;
  k.label = key;
  k.hot = true;
  k.share = share;
  k.write_ratio = 0.1;
  k.advice = advice;
  k.projected_load = {{Strategy::kNone, shard_load}, {advice, 0.5}};
  return k;
}

Snapshot With(std::vector<KeySnapshot> keys) {
  Snapshot s;
  s.keys = std::move(keys);
  return s;
}

config::ReloadableOptions Options() {
  config::ReloadableOptions o;
  o.cluster.refresh_seconds = 0.5;
  o.cluster.split = 4;
  return o;
}

// A tick time for tests of one set (no hold in play).
const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

boost::json::object Parse(const std::string& text) { return boost::json::parse(text).as_object(); }

TEST_CASE("Feed: hot keys with held advice are added once, each event one version further",
          "[web][feed]") {
  FeedState state("secret");
  const config::ReloadableOptions o = Options();
  std::vector<FeedEvent> ev =
      state.Update(With({Hot("a", Strategy::kCache), Hot("b", Strategy::kSplit)}), o, kT0);
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].type == Type::kAdd);
  CHECK(ev[0].version == 1);
  CHECK(ev[1].version == 2);
  CHECK(state.version() == 2);
  // Parameters from the cluster model when the feed section sets none.
  CHECK(state.entries().at("a").refresh_seconds == 0.5);
  CHECK(state.entries().at("a").split_factor == 0);
  CHECK(state.entries().at("b").split_factor == 4);
  // The same set again: no event, no version.
  CHECK(
      state.Update(With({Hot("a", Strategy::kCache), Hot("b", Strategy::kSplit)}), o, kT0).empty());
  CHECK(state.version() == 2);
}

TEST_CASE("Feed: keys not hot, without advice or truncated are left out", "[web][feed]") {
  FeedState state("secret");
  KeySnapshot cold = Hot("cold", Strategy::kCache);
  cold.hot = false;
  KeySnapshot none = Hot("none", Strategy::kNone);
  KeySnapshot early = Hot("early", Strategy::kCache);
  early.projected_load.clear();  // no advice yet (the rate window has no figures)
  KeySnapshot cut = Hot("cut", Strategy::kCache);
  cut.truncated = true;
  CHECK(state.Update(With({cold, none, early, cut}), Options(), kT0).empty());
  CHECK(state.entries().empty());
}

TEST_CASE("Feed: a share wiggle is no change; a new mode or parameter is", "[web][feed]") {
  FeedState state("secret");
  config::ReloadableOptions o = Options();
  state.Update(With({Hot("a", Strategy::kCache, 0.3)}), o, kT0);
  CHECK(state.Update(With({Hot("a", Strategy::kCache, 0.35)}), o, kT0).empty());
  CHECK(state.entries().at("a").share == 0.35);  // refreshed for GET and new snapshots
  std::vector<FeedEvent> ev = state.Update(With({Hot("a", Strategy::kSplitCache)}), o, kT0);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type == Type::kChange);
  CHECK(ev[0].entry.mode == Strategy::kSplitCache);
  CHECK(ev[0].version == 2);
  o.feed.refresh = absl::Seconds(2);
  ev = state.Update(With({Hot("a", Strategy::kSplitCache)}), o, kT0);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type == Type::kChange);
  CHECK(ev[0].entry.refresh_seconds == 2);
}

TEST_CASE("Feed: with no hold, a key no longer among the snapshot's keys is removed",
          "[web][feed]") {
  FeedState state("secret");
  config::ReloadableOptions o = Options();
  o.feed.hold = absl::ZeroDuration();
  state.Update(With({Hot("a", Strategy::kCache), Hot("b", Strategy::kCache)}), o, kT0);
  std::vector<FeedEvent> ev = state.Update(With({Hot("b", Strategy::kCache)}), o, kT0);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type == Type::kRemove);
  CHECK(ev[0].entry.key == "a");
  CHECK(ev[0].version == 3);
}

// The key as the snapshot shows it once it has cooled (still exported, no longer hot).
KeySnapshot Cold(std::string key, Strategy advice = Strategy::kCache) {
  KeySnapshot k = Hot(std::move(key), advice, 0.05);
  k.hot = false;
  return k;
}

TEST_CASE(
    "Feed hold: an advised entry stays while its key is hot, though the advice turns to "
    "none, with no event",
    "[web][feed][hold]") {
  testing::FakeClock clock;
  FeedState state("secret");
  const config::ReloadableOptions o = Options();
  REQUIRE(state.Update(With({Hot("a", Strategy::kCache)}), o, clock.Now()).size() == 1);
  // Two minutes of 250 ms ticks, twice the default hold: the kits' cache took the reads off
  // the shard, so the advice says none; the key is still hot.
  for (int tick = 0; tick < 480; ++tick) {
    clock.Advance(absl::Milliseconds(250));
    KeySnapshot k = Hot("a", Strategy::kNone, 0.2);
    if (tick % 2 == 1) k.projected_load.clear();  // no figures this tick: no advice either
    CHECK(state.Update(With({k}), o, clock.Now()).empty());
  }
  REQUIRE(state.entries().contains("a"));
  CHECK(state.entries().at("a").mode == Strategy::kCache);
  CHECK(state.entries().at("a").refresh_seconds == 0.5);
  CHECK(state.entries().at("a").share == 0.2);  // still refreshed
  CHECK(state.version() == 1);
}

TEST_CASE("Feed hold: another fix advised for a held entry is a change", "[web][feed][hold]") {
  testing::FakeClock clock;
  FeedState state("secret");
  const config::ReloadableOptions o = Options();
  state.Update(With({Hot("a", Strategy::kCache)}), o, clock.Now());
  clock.Advance(absl::Seconds(5));
  CHECK(state.Update(With({Hot("a", Strategy::kNone)}), o, clock.Now()).empty());
  clock.Advance(absl::Seconds(5));
  // The shard is still over its target with the cache in force: split goes on top of it.
  std::vector<FeedEvent> ev = state.Update(With({Hot("a", Strategy::kSplit)}), o, clock.Now());
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type == Type::kChange);
  CHECK(ev[0].version == 2);
  CHECK(ev[0].entry.mode == Strategy::kSplitCache);
  CHECK(ev[0].entry.split_factor == 4);
  // And the new fix is the one held.
  clock.Advance(absl::Seconds(5));
  CHECK(state.Update(With({Hot("a", Strategy::kNone)}), o, clock.Now()).empty());
  CHECK(state.entries().at("a").mode == Strategy::kSplitCache);
}

TEST_CASE("Feed hold: while the shard is under its target, the fix in force stays",
          "[web][feed][hold]") {
  // A cache in force hides the key's reads; the advice then sees a write-heavy key and names
  // split, and under split it would see the reads again and name cache.
  FeedState state("secret");
  const config::ReloadableOptions o = Options();
  state.Update(With({Hot("a", Strategy::kCache)}), o, kT0);
  for (int tick = 0; tick < 40; ++tick) {
    const Strategy advice = tick % 2 ? Strategy::kSplit : Strategy::kCache;
    CHECK(state.Update(With({Hot("a", advice, 0.3, /*shard_load=*/0.79)}), o, kT0).empty());
  }
  CHECK(state.entries().at("a").mode == Strategy::kCache);
  CHECK(state.version() == 1);
  // Over the target, the advice goes on top.
  std::vector<FeedEvent> ev = state.Update(With({Hot("a", Strategy::kSplit, 0.3, 0.81)}), o, kT0);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].entry.mode == Strategy::kSplitCache);
}

TEST_CASE("Feed: the next fix keeps the stronger of both for reads and for writes",
          "[web][feed][hold]") {
  using S = Strategy;
  // Under the target nothing moves.
  for (S a : {S::kCache, S::kReplicate, S::kSplit, S::kSplitCache, S::kIsolate}) {
    for (S b : {S::kCache, S::kReplicate, S::kSplit, S::kSplitCache, S::kIsolate}) {
      CHECK(FeedState::NextFix(a, b, /*over_target=*/false) == a);
    }
  }
  CHECK(FeedState::NextFix(S::kCache, S::kSplit, true) == S::kSplitCache);
  CHECK(FeedState::NextFix(S::kSplit, S::kCache, true) == S::kSplitCache);
  CHECK(FeedState::NextFix(S::kReplicate, S::kSplit, true) == S::kSplitCache);
  CHECK(FeedState::NextFix(S::kReplicate, S::kCache, true) == S::kCache);
  CHECK(FeedState::NextFix(S::kCache, S::kReplicate, true) == S::kCache);
  CHECK(FeedState::NextFix(S::kSplitCache, S::kCache, true) == S::kSplitCache);
  CHECK(FeedState::NextFix(S::kSplitCache, S::kSplit, true) == S::kSplitCache);
  CHECK(FeedState::NextFix(S::kSplit, S::kSplit, true) == S::kSplit);
  // Isolate: left for any other advice; advised over a fix, the strongest a kit applies.
  CHECK(FeedState::NextFix(S::kIsolate, S::kCache, true) == S::kCache);
  CHECK(FeedState::NextFix(S::kIsolate, S::kSplit, true) == S::kSplit);
  CHECK(FeedState::NextFix(S::kSplit, S::kIsolate, true) == S::kSplitCache);
  CHECK(FeedState::NextFix(S::kCache, S::kIsolate, true) == S::kSplitCache);
  CHECK(FeedState::NextFix(S::kIsolate, S::kIsolate, true) == S::kIsolate);
}

TEST_CASE("Feed: a key's shard load is its projected load with no fix", "[web][feed]") {
  KeySnapshot k = Hot("a", Strategy::kCache, 0.3, 0.93);
  CHECK(FeedState::ShardLoad(k) == 0.93);
  k.projected_load.clear();
  CHECK(FeedState::ShardLoad(k) == 0);
}

TEST_CASE(
    "Feed hold: an entry whose key is not hot leaves exactly feed.hold after its last hot "
    "tick",
    "[web][feed][hold]") {
  testing::FakeClock clock;
  FeedState state("secret");
  config::ReloadableOptions o = Options();
  REQUIRE(o.feed.hold == absl::Seconds(60));  // the default
  state.Update(With({Hot("a", Strategy::kCache)}), o, clock.Now());
  clock.Advance(absl::Seconds(1));
  state.Update(With({Hot("a", Strategy::kNone)}), o, clock.Now());
  const absl::Time last_hot = clock.Now();
  // Not hot from the next tick on (its advice still names a fix: it does not renew the hold),
  // for 60 s - 250 ms: still in, no event.
  for (int tick = 1; tick < 240; ++tick) {
    clock.Advance(absl::Milliseconds(250));
    CHECK(state.Update(With({Cold("a")}), o, clock.Now()).empty());
  }
  CHECK(clock.Now() == last_hot + absl::Seconds(60) - absl::Milliseconds(250));
  CHECK(state.entries().contains("a"));
  clock.Advance(absl::Milliseconds(250));  // last_hot + 60 s
  std::vector<FeedEvent> ev = state.Update(With({Cold("a")}), o, clock.Now());
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type == Type::kRemove);
  CHECK(ev[0].entry.key == "a");
  CHECK(ev[0].entry.mode == Strategy::kCache);
  CHECK(state.entries().empty());
  // Gone for good: hot again with no fix advised, it does not come back.
  clock.Advance(absl::Milliseconds(250));
  CHECK(state.Update(With({Hot("a", Strategy::kNone)}), o, clock.Now()).empty());
}

TEST_CASE("Feed hold: a hot tick within the hold starts it again", "[web][feed][hold]") {
  testing::FakeClock clock;
  FeedState state("secret");
  config::ReloadableOptions o = Options();
  o.feed.hold = absl::Seconds(10);
  state.Update(With({Hot("a", Strategy::kCache)}), o, clock.Now());
  clock.Advance(absl::Seconds(8));
  CHECK(state.Update(With({Cold("a")}), o, clock.Now()).empty());
  clock.Advance(absl::Seconds(1));  // 9 s: hot again, advice none
  CHECK(state.Update(With({Hot("a", Strategy::kNone)}), o, clock.Now()).empty());
  clock.Advance(absl::Milliseconds(9750));  // 18.75 s: 9.75 s since the last hot tick
  CHECK(state.Update(With({Cold("a")}), o, clock.Now()).empty());
  clock.Advance(absl::Milliseconds(250));  // 19 s: 10 s since
  std::vector<FeedEvent> ev = state.Update(With({Cold("a")}), o, clock.Now());
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type == Type::kRemove);
}

TEST_CASE(
    "Feed hold: a key gone from the snapshot keeps its entry for the hold, then is "
    "forgotten",
    "[web][feed][hold]") {
  testing::FakeClock clock;
  FeedState state("secret");
  config::ReloadableOptions o = Options();
  o.feed.hold = absl::Seconds(10);
  state.Update(With({Hot("a", Strategy::kCache), Hot("b", Strategy::kCache)}), o, clock.Now());
  clock.Advance(absl::Milliseconds(250));
  // "a" held (advice none), then not even exported (a cache that hides its reads took it out
  // of the tracker, and a late report of the kits out of the Snapshot): it stays for the hold.
  CHECK(state.Update(With({Hot("a", Strategy::kNone), Hot("b", Strategy::kCache)}), o, clock.Now())
            .empty());
  const absl::Time last_hot = clock.Now();
  while (clock.Now() - last_hot < absl::Milliseconds(9750)) {
    clock.Advance(absl::Milliseconds(250));
    CHECK(state.Update(With({Hot("b", Strategy::kCache)}), o, clock.Now()).empty());
  }
  CHECK(state.entries().at("a").mode == Strategy::kCache);
  // Back in the snapshot within the hold, hot, with no fix advised: still held.
  clock.Advance(absl::Milliseconds(250));
  CHECK(state.Update(With({Hot("a", Strategy::kNone), Hot("b", Strategy::kCache)}), o, clock.Now())
            .empty());
  // Gone again: 10 s after its last hot tick it leaves.
  for (int tick = 1; tick < 40; ++tick) {
    clock.Advance(absl::Milliseconds(250));
    CHECK(state.Update(With({Hot("b", Strategy::kCache)}), o, clock.Now()).empty());
  }
  clock.Advance(absl::Milliseconds(250));
  std::vector<FeedEvent> ev = state.Update(With({Hot("b", Strategy::kCache)}), o, clock.Now());
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type == Type::kRemove);
  CHECK(ev[0].entry.key == "a");
  // Back in the snapshot, hot, with no fix advised: forgotten, so not added.
  clock.Advance(absl::Milliseconds(250));
  CHECK(state.Update(With({Hot("a", Strategy::kNone), Hot("b", Strategy::kCache)}), o, clock.Now())
            .empty());
  CHECK_FALSE(state.entries().contains("a"));
}

TEST_CASE("Feed hold: at most top_k entries are held for keys gone from the snapshot",
          "[web][feed][hold]") {
  testing::FakeClock clock;
  FeedState state("secret");
  config::ReloadableOptions o = Options();
  o.feed.hold = absl::Seconds(60);
  o.exporter.top_k = 3;
  // Churn: each tick three new hot keys with a fix, the last tick's gone from the snapshot.
  for (int tick = 0; tick < 20; ++tick) {
    std::vector<KeySnapshot> keys;
    for (int i = 0; i < 3; ++i)
      keys.push_back(Hot(absl::StrCat("k", tick, "_", i), Strategy::kCache));
    state.Update(With(std::move(keys)), o, clock.Now());
    // The three in the snapshot, and the three most recently hot of those gone from it.
    CHECK(state.entries().size() == (tick == 0 ? 3u : 6u));
    clock.Advance(absl::Milliseconds(250));
  }
  CHECK(state.entries().contains("k18_0"));
  CHECK_FALSE(state.entries().contains("k17_2"));
  // A key the kits report (absorbed) is the most recently hot of those gone, and stays; one
  // forgotten at the cap is not added back by a report.
  Snapshot s = With({Hot("new", Strategy::kCache)});
  s.absorbed_keys = {"k0_0", "k18_1"};  // sorted, as the aggregator makes them
  state.Update(s, o, clock.Now());
  CHECK(state.entries().contains("k18_1"));
  CHECK_FALSE(state.entries().contains("k0_0"));
  CHECK(state.entries().size() == 1 + o.exporter.top_k);
}

TEST_CASE("Feed hold: 0s removes an entry at the first tick its key is not hot",
          "[web][feed][hold]") {
  testing::FakeClock clock;
  FeedState state("secret");
  config::ReloadableOptions o = Options();
  o.feed.hold = absl::ZeroDuration();
  state.Update(With({Hot("a", Strategy::kCache)}), o, clock.Now());
  clock.Advance(absl::Milliseconds(250));
  // Still held while hot, hold or not.
  CHECK(state.Update(With({Hot("a", Strategy::kNone)}), o, clock.Now()).empty());
  clock.Advance(absl::Milliseconds(250));
  std::vector<FeedEvent> ev = state.Update(With({Cold("a")}), o, clock.Now());
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type == Type::kRemove);
}

TEST_CASE("Feed hold: a block removes a held entry, and it needs a fix advised to come back",
          "[web][feed][hold]") {
  testing::FakeClock clock;
  FeedState state("secret");
  config::ReloadableOptions o = Options();
  state.Update(With({Hot("a", Strategy::kCache)}), o, clock.Now());
  clock.Advance(absl::Milliseconds(250));
  CHECK(state.Update(With({Hot("a", Strategy::kNone)}), o, clock.Now()).empty());
  o.feed.blocks = {{config::FeedPattern::kKey, "a"}};
  clock.Advance(absl::Milliseconds(250));
  std::vector<FeedEvent> ev = state.Update(With({Hot("a", Strategy::kNone)}), o, clock.Now());
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type == Type::kRemove);
  o.feed.blocks.clear();
  clock.Advance(absl::Milliseconds(250));
  CHECK(state.Update(With({Hot("a", Strategy::kNone)}), o, clock.Now()).empty());
  clock.Advance(absl::Milliseconds(250));
  ev = state.Update(With({Hot("a", Strategy::kCache)}), o, clock.Now());
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type == Type::kAdd);
}

TEST_CASE("Feed hold: a pinned key that is unpinned falls back to its held advice",
          "[web][feed][hold]") {
  testing::FakeClock clock;
  FeedState state("secret");
  config::ReloadableOptions o = Options();
  o.feed.pins = {{{config::FeedPattern::kKey, "a"}, Strategy::kIsolate}};
  state.Update(With({Hot("a", Strategy::kCache)}), o, clock.Now());
  clock.Advance(absl::Milliseconds(250));
  CHECK(state.Update(With({Hot("a", Strategy::kNone)}), o, clock.Now()).empty());
  o.feed.pins.clear();
  clock.Advance(absl::Milliseconds(250));
  std::vector<FeedEvent> ev = state.Update(With({Hot("a", Strategy::kNone)}), o, clock.Now());
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type == Type::kChange);
  CHECK_FALSE(ev[0].entry.pinned);
  CHECK(ev[0].entry.mode == Strategy::kCache);
}

TEST_CASE("Feed: pins are always in, win over advice, and blocks win over both", "[web][feed]") {
  FeedState state("secret");
  config::ReloadableOptions o = Options();
  o.feed.pins = {{{config::FeedPattern::kKey, "tenant:acme"}, Strategy::kIsolate},
                 {{config::FeedPattern::kPrefix, "flash:"}, Strategy::kCache},
                 {{config::FeedPattern::kKey, "a"}, Strategy::kIsolate},
                 {{config::FeedPattern::kKey, "health"}, Strategy::kCache}};
  o.feed.blocks = {{config::FeedPattern::kGlob, "heal*"}, {config::FeedPattern::kKey, "b"}};
  state.Update(With({Hot("a", Strategy::kCache, 0.4), Hot("b", Strategy::kCache)}), o, kT0);
  const auto& e = state.entries();
  REQUIRE(e.size() == 3);
  CHECK(e.at("tenant:acme").pinned);
  CHECK(e.at("tenant:acme").mode == Strategy::kIsolate);
  CHECK(e.at("flash:").prefix);
  CHECK(e.at("a").pinned);
  CHECK(e.at("a").mode == Strategy::kIsolate);
  CHECK(e.at("a").share == 0.4);  // measured figures shown on the pin
  CHECK_FALSE(e.contains("b"));
  CHECK_FALSE(e.contains("health"));
  // Unpinning "a" while it is still advised: a change to the advice's fix.
  o.feed.pins.erase(o.feed.pins.begin() + 2);
  std::vector<FeedEvent> ev = state.Update(With({Hot("a", Strategy::kCache)}), o, kT0);
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type == Type::kChange);
  CHECK_FALSE(ev[0].entry.pinned);
  CHECK(ev[0].entry.mode == Strategy::kCache);
}

TEST_CASE("Feed: raw key bytes go only where the key exposure allows", "[web][feed]") {
  CHECK(RawKeysFor(config::KeyLabelMode::kRaw, false));
  CHECK(RawKeysFor(config::KeyLabelMode::kHash, true));
  CHECK_FALSE(RawKeysFor(config::KeyLabelMode::kHash, false));
  CHECK_FALSE(RawKeysFor(config::KeyLabelMode::kPrefix, false));

  FeedState state("secret");
  config::ReloadableOptions o = Options();
  o.exporter.label = config::KeyLabelMode::kHash;
  const std::string key("user:\xff\x00", 7);
  o.feed.pins = {{{config::FeedPattern::kKey, key}, Strategy::kCache}};
  std::vector<FeedEvent> ev = state.Update(With({}), o, kT0);
  REQUIRE(ev.size() == 1);
  const std::string label = state.entries().at(key).label;
  CHECK(label.starts_with("h:"));

  boost::json::object hidden = Parse(FeedEntryJson(ev[0].entry, /*raw_keys=*/false));
  CHECK_FALSE(hidden.contains("key_b64"));
  CHECK_FALSE(hidden.contains("key"));
  CHECK(hidden.at("label").as_string() == label);

  boost::json::object shown = Parse(FeedEntryJson(ev[0].entry, /*raw_keys=*/true));
  CHECK(shown.at("key_b64").as_string() == absl::Base64Escape(key));
  CHECK_FALSE(shown.contains("key"));  // not valid UTF-8
  CHECK(shown.at("mode").as_string() == "cache");
  CHECK(shown.at("origin").as_string() == "pinned");
  CHECK(shown.at("match").as_string() == "key");

  // Removal carries key_b64 exactly when the entry did.
  o.feed.pins.clear();
  ev = state.Update(With({}), o, kT0);
  REQUIRE(ev.size() == 1);
  CHECK_FALSE(Parse(FeedEventJson(ev[0], false)).contains("key_b64"));
  CHECK(Parse(FeedEventJson(ev[0], true)).at("key_b64").as_string() == absl::Base64Escape(key));
}

TEST_CASE("Feed: the set's JSON gives version, lease and heartbeat", "[web][feed]") {
  FeedState state("secret");
  state.Update(With({Hot("a", Strategy::kSplit)}), Options(), kT0);
  boost::json::object o = Parse(FeedSetJson(state, absl::Seconds(10), true));
  CHECK(o.at("version").to_number<double>() == 1);
  CHECK(o.at("lease_seconds").to_number<double>() == 10);
  CHECK(o.at("heartbeat_seconds").to_number<double>() == 2);
  REQUIRE(o.at("entries").as_array().size() == 1);
  CHECK(o.at("entries").as_array()[0].as_object().at("split_factor").to_number<double>() == 4);
  CHECK(SseEvent("add", 7, "{}") == "event: add\nid: 7\ndata: {}\n\n");
}

// Everything a stream has been given, in order (what its session would write).
std::string Drain(http::EventStream& s) {
  std::string all, block;
  while (s.TakeFront(&block)) {
    all += block;
    s.Written();
  }
  return all;
}

TEST_CASE("Feed hub: a subscriber gets a snapshot, then events and heartbeats on time",
          "[web][feed]") {
  testing::FakeClock clock;
  config::ReloadableOptions o = Options();
  o.feed.lease = absl::Seconds(5);  // heartbeat every second
  FeedHub hub(4, "secret", o, clock.Now());
  std::shared_ptr<http::EventStream> s = hub.Subscribe(true);
  REQUIRE(s);
  CHECK(Drain(*s).starts_with("event: snapshot\nid: 0\n"));
  clock.Advance(absl::Milliseconds(250));
  hub.Update(With({Hot("a", Strategy::kCache)}), clock.Now());
  CHECK(Drain(*s).starts_with("event: add\nid: 1\n"));
  int heartbeats = 0;
  for (int tick = 0; tick < 16; ++tick) {  // 4 s more, 250 ms ticks
    clock.Advance(absl::Milliseconds(250));
    hub.Update(With({Hot("a", Strategy::kCache)}), clock.Now());
    const std::string out = Drain(*s);
    if (!out.empty()) {
      CHECK(out == "event: heartbeat\nid: 1\ndata: {\"version\":1}\n\n");
      ++heartbeats;
    }
  }
  // 4.25 s since the hub's start, one heartbeat a second: at 1, 2, 3 and 4 s.
  CHECK(heartbeats == 4);
  CHECK(hub.stats().heartbeats == 4);
  CHECK(hub.stats().events[static_cast<int>(Type::kAdd)] == 1);
  CHECK(hub.stats().entries == 1);
  CHECK(hub.stats().version == 1);
}

TEST_CASE("Feed hub: the hold runs on the tick's time", "[web][feed][hold]") {
  testing::FakeClock clock;
  config::ReloadableOptions o = Options();
  o.feed.hold = absl::Seconds(1);
  FeedHub hub(4, "secret", o, clock.Now());
  std::shared_ptr<http::EventStream> s = hub.Subscribe(true);
  hub.Update(With({Hot("a", Strategy::kCache)}), clock.Now());
  for (int tick = 0; tick < 3; ++tick) {
    clock.Advance(absl::Milliseconds(250));
    hub.Update(With({Cold("a")}), clock.Now());
  }
  CHECK(hub.stats().entries == 1);
  clock.Advance(absl::Milliseconds(250));  // 1 s since the last hot tick
  hub.Update(With({Cold("a")}), clock.Now());
  CHECK(hub.stats().entries == 0);
  CHECK(hub.stats().events[static_cast<int>(Type::kRemove)] == 1);
  CHECK(Drain(*s).find("event: remove\nid: 2\n") != std::string::npos);
}

TEST_CASE("Feed hub: at max_subscribers the next is refused and counted", "[web][feed]") {
  testing::FakeClock clock;
  FeedHub hub(2, "secret", Options(), clock.Now());
  auto a = hub.Subscribe(false);
  auto b = hub.Subscribe(false);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(hub.Subscribe(false) == nullptr);
  CHECK(hub.stats().dropped_limit == 1);
  CHECK(hub.stats().subscribers == 2);
  // A subscriber that left frees its place.
  a->Finish(http::EventStream::CloseReason::kClient);
  CHECK(hub.Subscribe(false) != nullptr);
  CHECK(hub.stats().dropped_slow == 0);
}

TEST_CASE("Feed hub: a subscriber that does not read is dropped as slow; another keeps receiving",
          "[web][feed]") {
  testing::FakeClock clock;
  config::ReloadableOptions o = Options();
  FeedHub hub(4, "secret", o, clock.Now());
  auto stuck = hub.Subscribe(true);
  auto reader = hub.Subscribe(true);
  // Pins with long keys, toggled: each tick well under kMaxUnsentBytes of events (the
  // reader drains between ticks), in all far more.
  size_t sent = 0;
  for (int round = 0; round < 20 && !stuck->closed(); ++round) {
    o.feed.pins.clear();
    for (int i = 0; i < 40; ++i) {
      o.feed.pins.push_back(
          {{config::FeedPattern::kKey,
            std::string(100, 'k') + std::to_string(round % 2) + "-" + std::to_string(i)},
           Strategy::kCache});
    }
    hub.SetReloadable(o);
    clock.Advance(absl::Milliseconds(250));
    hub.Update(With({}), clock.Now());
    CHECK(stuck->unsent_bytes() <= FeedHub::kMaxUnsentBytes);
    sent += Drain(*reader).size();
  }
  CHECK(stuck->closed());
  CHECK(stuck->reason() == http::EventStream::CloseReason::kSlow);
  CHECK(sent > FeedHub::kMaxUnsentBytes);
  clock.Advance(absl::Milliseconds(250));
  hub.Update(With({}), clock.Now());
  CHECK(hub.stats().dropped_slow == 1);
  CHECK(hub.stats().subscribers == 1);
  CHECK_FALSE(reader->closed());
}

TEST_CASE("Feed hub: a stream the server closed to make room is counted as evicted",
          "[web][feed]") {
  testing::FakeClock clock;
  FeedHub hub(4, "secret", Options(), clock.Now());
  auto a = hub.Subscribe(false);
  auto b = hub.Subscribe(false);
  a->Finish(http::EventStream::CloseReason::kEvicted);
  clock.Advance(absl::Milliseconds(250));
  hub.Update(With({}), clock.Now());
  const FeedStats st = hub.stats();
  CHECK(st.dropped_evicted == 1);
  CHECK(st.dropped_slow == 0);
  CHECK(st.subscribers == 1);
}

TEST_CASE(
    "Feed hub: its memory bound is max_subscribers times a subscriber's unsent bytes "
    "and session",
    "[web][feed]") {
  testing::FakeClock clock;
  const FeedHub hub(10, "secret", Options(), clock.Now());
  CHECK(hub.MemoryBoundBytes() == 10 * (64 * 1024 + 48 * 1024));
  CHECK_FALSE(hub.require_auth());
  const FeedHub strict(10, "secret", Options(), clock.Now(), /*require_auth=*/true);
  CHECK(strict.require_auth());
}

TEST_CASE("Feed hub: CloseAll ends every stream as the server's", "[web][feed]") {
  testing::FakeClock clock;
  FeedHub hub(4, "secret", Options(), clock.Now());
  auto a = hub.Subscribe(false);
  hub.CloseAll();
  CHECK(a->reason() == http::EventStream::CloseReason::kServer);
  CHECK(hub.stats().subscribers == 0);
  CHECK(hub.stats().dropped_slow == 0);
}

TEST_CASE("EventStream: unsent bytes never pass the bound; the one that would closes it",
          "[web][feed][http]") {
  http::EventStream s(10);
  int wakes = 0;
  s.SetWake([&] { ++wakes; });
  CHECK(s.Send("12345"));
  std::string block;
  REQUIRE(s.TakeFront(&block));
  CHECK(s.unsent_bytes() == 5);  // in flight still counts
  CHECK(s.Send("12345"));
  CHECK(s.unsent_bytes() == 10);
  CHECK_FALSE(s.Send("1"));
  CHECK(s.reason() == http::EventStream::CloseReason::kSlow);
  CHECK(s.unsent_bytes() == 0);
  CHECK(wakes == 3);  // two sends and the close
  CHECK_FALSE(s.Send("1"));
}

TEST_CASE("Feed: every event type has one name that parses back", "[web][feed]") {
  ::hotkey::testing::CheckEnumTable(
      kFeedEventTypeNames, +[](Type t) {
        switch (t) {
          case Type::kAdd:
          case Type::kChange:
          case Type::kRemove:
            return true;
        }
        return false;
      });
}

TEST_CASE("Feed hold: a node that became a replica keeps its advised entries for the hold",
          "[web][feed][hold]") {
  testing::FakeClock clock;
  FeedState state("secret");
  config::ReloadableOptions o = Options();
  o.feed.hold = absl::Seconds(10);
  o.feed.pins = {{{config::FeedPattern::kPrefix, "flash:"}, Strategy::kCache}};
  state.Update(With({Hot("a", Strategy::kCache)}), o, clock.Now());
  REQUIRE(state.entries().contains("a"));
  CHECK(state.Holds("a"));
  CHECK(state.Holds("flash:sale"));
  CHECK_FALSE(state.Holds("b"));
  // A failover: the node is a replica, its clients gone, the key out of its Snapshot.
  Snapshot replica = With({});
  replica.model.shard_role = "replica";
  for (int tick = 1; tick < 40; ++tick) {  // 9.75 s
    clock.Advance(absl::Milliseconds(250));
    CHECK(state.Update(replica, o, clock.Now()).empty());
  }
  CHECK(state.entries().at("a").mode == Strategy::kCache);
  // The kits report what they absorb of it: the hold starts again while they do.
  replica.absorbed_keys = {"a"};
  clock.Advance(absl::Milliseconds(250));
  CHECK(state.Update(replica, o, clock.Now()).empty());
  replica.absorbed_keys.clear();
  for (int tick = 1; tick < 40; ++tick) {
    clock.Advance(absl::Milliseconds(250));
    CHECK(state.Update(replica, o, clock.Now()).empty());
  }
  clock.Advance(absl::Milliseconds(250));  // 10 s after the last report
  std::vector<FeedEvent> ev = state.Update(replica, o, clock.Now());
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].type == Type::kRemove);
}

}  // namespace
}  // namespace hotkey::web
