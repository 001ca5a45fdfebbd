// Slots and tags through the aggregator: sources that count them (source/slot_counts.h), the
// aggregator's SlotTracker (slots.h), on a fake clock. A hot tag of many lukewarm keys is a hot
// slot advised `tag` (never moved) while no key is hot; one hot key makes its slot's advice
// `key`; a node hot through many warm slots gets one plan to several nodes, stable between
// reads and gone once the cluster is balanced; exports stay bounded with every
// slot in use; the memory is what MemoryBound says.

#include "hotkey/aggregate/slots.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "hotkey/aggregate/aggregator.h"

namespace hotkey::aggregate {
namespace {

using sketch::Op;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

sketch::HeavyHittersOptions TrackerOptions() {
  sketch::HeavyHittersOptions o;
  o.candidates = 64;
  o.sketch_bytes = 32 << 10;
  o.max_key_bytes = 64;
  o.half_life = absl::Milliseconds(500);
  return o;
}

// One source counting keys, slots and tags, as a receiver with --track.slots does.
class Source {
 public:
  Source()
      : tracker_(*sketch::HeavyHitters::Create(TrackerOptions(), kT0)),
        slots_(*source::SlotCounts::Create(TrackerOptions(), kT0)) {}

  void Feed(std::string_view key, Op op = Op::kRead) {
    tracker_.Update(key, op);
    slots_.Update(key, op);
    ++counters_.events;
  }
  void AdvanceTo(absl::Time now) {
    tracker_.Advance(now);
    slots_.Advance(now);
  }
  std::shared_ptr<const source::SourceReport> Report(absl::Time now) {
    tracker_.Advance(now);
    slots_.Advance(now);
    return std::make_shared<const source::SourceReport>(
        source::SourceReport{now, tracker_, counters_, slots_});
  }
  const source::SlotCounts& slots() const { return slots_; }

 private:
  sketch::HeavyHitters tracker_;
  source::SlotCounts slots_;
  source::SourceCounters counters_;
};

config::TrackOptions Track() {
  config::TrackOptions t;
  t.publish_interval = absl::Milliseconds(100);
  t.rate_window = absl::Seconds(2);
  t.half_life = absl::Milliseconds(500);
  return t;
}

config::ReloadableOptions Reloadable() {
  config::ReloadableOptions r;
  r.exporter.top_k = 10;
  r.exporter.min_share = 0.01;
  r.alert.default_threshold = 0.1;
  r.alert.min_dwell = absl::Milliseconds(200);
  r.alert.min_ops_per_second = 1;
  return r;
}

// Ticks every 100 ms for `seconds`, feeding `per_tick` events a tick from `next(i)`.
template <class Next>
std::shared_ptr<const Snapshot> Run(Aggregator& agg, Source& src, absl::Time& now, double seconds,
                                    int per_tick, Next next) {
  std::shared_ptr<const Snapshot> snap;
  static int n = 0;
  for (int t = 0; t < seconds * 10; ++t) {
    // As a source does: the clock read once per batch, then the batch's events.
    now += absl::Milliseconds(100);
    src.AdvanceTo(now);
    for (int i = 0; i < per_tick; ++i) {
      const auto [key, op] = next(n++);
      src.Feed(key, op);
    }
    std::vector<std::shared_ptr<const source::SourceReport>> reports = {src.Report(now)};
    snap = agg.Build(reports, now, 0);
  }
  return snap;
}

const SlotSnapshot* FindSlot(const Snapshot& s, uint16_t slot) {
  for (const SlotSnapshot& v : s.slots.slots) {
    if (v.slot == slot) return &v;
  }
  return nullptr;
}

const TagSnapshot* FindTag(const Snapshot& s, std::string_view tag) {
  for (const TagSnapshot& t : s.slots.tags) {
    if (t.tag == tag) return &t;
  }
  return nullptr;
}

// A third of the traffic over 1,000 keys of one tag, each under 0.1%; the rest over 3,000
// untagged keys.
std::pair<std::string, Op> TagMix(int i) {
  if (i % 3 == 0) return {absl::StrCat("profile:{42}:", (i / 3) % 1000), Op::kRead};
  return {absl::StrCat("bg:", i % 3000), i % 10 == 1 ? Op::kWrite : Op::kRead};
}

TEST_CASE("Slots: a tag of many lukewarm keys is a hot slot and a hot tag, no key hot",
          "[aggregate][slots]") {
  std::vector<std::string> logs;
  Aggregator agg(Track(), Reloadable(), "", kT0, [&](std::string_view l) { logs.emplace_back(l); });
  Source src;
  absl::Time now = kT0;
  const std::shared_ptr<const Snapshot> snap = Run(agg, src, now, 6, 300, TagMix);
  REQUIRE(snap->slots.enabled);
  CHECK(snap->hot_keys == 0);
  const uint16_t slot = cluster::KeySlot("42");
  const SlotSnapshot* s = FindSlot(*snap, slot);
  REQUIRE(s);
  CHECK(s->hot);
  // One tag carries the slot: re-key it, never move it.
  CHECK(s->advice == SlotAdvice::kTag);
  CHECK(s->top_tag == "42");
  CHECK(s->top_tag_share >= SlotTracker::kKeyDominates);
  // The slot holds the tag's third plus the background keys that hash there.
  double bg_in_slot = 0;
  for (int i = 0; i < 3000; ++i) bg_in_slot += cluster::KeySlot(absl::StrCat("bg:", i)) == slot;
  const double truth = 1.0 / 3 + (2.0 / 3) * bg_in_slot / 3000;
  CHECK(s->share == Approx(truth).margin(0.01));
  CHECK(s->decayed_share == Approx(truth).margin(0.03));
  CHECK(s->ops_per_second == Approx(truth * 3000).epsilon(0.05));  // 300 events per 100 ms
  CHECK(s->top_key_share < 0.05);
  CHECK(s->top_key.rfind("profile:{42}:", 0) == 0);
  const TagSnapshot* t = FindTag(*snap, "42");
  REQUIRE(t);
  CHECK(t->hot);
  CHECK(t->slot == slot);
  CHECK(t->decayed_share == Approx(1.0 / 3).margin(0.03));
  // One rate basis: the tag's share and ops/s are over the rate window, as its slot's, and
  // never more than its slot's.
  CHECK(t->share == Approx(1.0 / 3).margin(0.02));
  CHECK(t->ops_per_second == Approx(1000).epsilon(0.05));
  CHECK(t->ops_per_second <= s->ops_per_second);
  // Split so that no piece of the tag is hot: each under the threshold's cooling line.
  const config::AlertOptions alert = Reloadable().alert;
  CHECK(s->tag_split >= 2);
  CHECK(t->decayed_share / s->tag_split <= alert.default_threshold * (1 - alert.hysteresis));
  CHECK(t->decayed_share / (s->tag_split - 1) > alert.default_threshold * (1 - alert.hysteresis));
  CHECK(snap->slots.hot_slots == 1);
  CHECK(snap->slots.hot_tags == 1);
  // No cluster handed in: no plan.
  CHECK_FALSE(snap->slots.move);
  // Episode log lines name the slot and the tag.
  CHECK(std::count_if(logs.begin(), logs.end(), [&](const std::string& l) {
          return l.find("hot slot episode started") != std::string::npos &&
                 l.find(absl::StrCat("slot=\"", slot, "\"")) != std::string::npos;
        }) == 1);
  CHECK(std::count_if(logs.begin(), logs.end(), [](const std::string& l) {
          return l.find("hot tag episode started") != std::string::npos &&
                 l.find("tag=\"42\"") != std::string::npos;
        }) == 1);
  // The tracker holds what its bound says.
  // The tracker holds what its header says: 3 arrays of kSlots doubles and kBuckets + 1 of
  // kSlots floats, and each bucket's start and total (one source: no merged tag copy).
  const size_t arrays = 3 * cluster::kSlots * sizeof(double) +
                        (SlotTracker::kBuckets + 1) * cluster::kSlots * sizeof(float) +
                        (SlotTracker::kBuckets + 1) * (sizeof(absl::Time) + sizeof(double));
  CHECK(snap->slots.memory_bytes == arrays);
  CHECK(SlotTracker::MemoryBound(1000) == arrays + 1000);
}

TEST_CASE("Slots: a slot made hot by one key is advised the key's fix", "[aggregate][slots]") {
  Aggregator agg(Track(), Reloadable(), "", kT0, nullptr);
  Source src;
  absl::Time now = kT0;
  const std::shared_ptr<const Snapshot> snap =
      Run(agg, src, now, 6, 300, [](int i) -> std::pair<std::string, Op> {
        if (i % 10 < 3) return {"item:flash:stock", Op::kWrite};
        return {absl::StrCat("bg:", i % 3000), Op::kRead};
      });
  const SlotSnapshot* s = FindSlot(*snap, cluster::KeySlot("item:flash:stock"));
  REQUIRE(s);
  CHECK(s->hot);
  CHECK(s->top_key == "item:flash:stock");
  CHECK(s->top_key_share >= SlotTracker::kKeyDominates);
  CHECK(s->advice == SlotAdvice::kKey);
  CHECK(snap->hot_keys == 1);
  CHECK(snap->slots.tags.empty());  // no key has a tag
}

TEST_CASE("Slots: a shard that says it is not in a cluster gets no slots and no slot episodes",
          "[aggregate][slots]") {
  std::vector<std::string> logs;
  Aggregator agg(Track(), Reloadable(), "", kT0, [&](std::string_view l) { logs.emplace_back(l); });
  ModelInputs standalone;
  standalone.cluster = Reloadable().cluster;
  standalone.shard_asked = true;
  standalone.shard_up = true;
  standalone.shard_standalone = true;  // Redis said cluster_enabled:0
  agg.SetModelInputs(standalone);
  Source src;
  absl::Time now = kT0;
  const std::shared_ptr<const Snapshot> snap =
      Run(agg, src, now, 4, 300, [](int i) -> std::pair<std::string, Op> {
        if (i % 10 < 3) return {"item:flash:stock", Op::kWrite};
        return {absl::StrCat("bg:", i % 3000), Op::kRead};
      });
  CHECK(snap->hot_keys == 1);
  CHECK_FALSE(snap->slots.enabled);
  CHECK(snap->slots.slots.empty());
  for (const std::string& l : logs) CHECK(l.find("hot slot") == std::string::npos);
  CHECK(agg.episodes().Json(10).find("\"slot\"") == std::string::npos);
}

ClusterNode Node(std::string id, bool myself, double ops, std::optional<double> capacity) {
  ClusterNode n;
  n.id = id;
  n.address = absl::StrCat("10.0.0.", id.size(), ":7000");
  n.myself = myself;
  n.slots = 5461;
  n.asked = true;
  n.up = true;
  n.ops_per_second = ops;
  if (capacity) n.busy = ops / *capacity;
  n.capacity_ops = capacity;
  return n;
}

TEST_CASE("Slots: a hot tag is advised `tag` and never moved, even on a node over its target",
          "[aggregate][slots]") {
  Aggregator agg(Track(), Reloadable(), "", kT0, nullptr);
  ClusterInputs c;
  c.nodes = {Node("self-id", true, 900, 1000), Node("busy-id", false, 800, 1000),
             Node("calm-id", false, 200, 1000)};
  agg.SetClusterInputs(c);
  Source src;
  absl::Time now = kT0;
  const std::shared_ptr<const Snapshot> snap = Run(agg, src, now, 6, 300, TagMix);
  const SlotSnapshot* s = FindSlot(*snap, cluster::KeySlot("42"));
  REQUIRE(s);
  CHECK(s->hot);
  CHECK(s->advice == SlotAdvice::kTag);
  CHECK_FALSE(snap->slots.move);
  // The node against its peers is still compared: 900 against (800 + 200) / 2.
  REQUIRE(snap->slots.peers.ratio);
  CHECK(*snap->slots.peers.ratio == Approx(1.8));
  CHECK(snap->slots.peers.peers == 2);
  CHECK(snap->slots.peers.peers_up == 2);
}

// 40% of the traffic over 200 tags of 5 keys each (200 slots, each 0.2%: none hot), the rest
// over 3,000 untagged keys.
std::pair<std::string, Op> WarmMix(int i) {
  if (i % 5 < 2) return {absl::StrCat("t{", (i / 5) % 200, "}:", i % 5), Op::kRead};
  return {absl::StrCat("bg:", i % 3000), Op::kRead};
}

TEST_CASE("Slots: a node hot through many warm slots gets one plan to several nodes",
          "[aggregate][slots]") {
  Aggregator agg(Track(), Reloadable(), "", kT0, nullptr);
  ClusterInputs c;
  // The cluster: 1793 commands/s against 607 and 601, no capacity known.
  c.nodes = {Node("self-id", true, 1793, std::nullopt), Node("a-id", false, 607, std::nullopt),
             Node("b-id", false, 601, std::nullopt)};
  agg.SetClusterInputs(c);
  Source src;
  absl::Time now = kT0;
  std::shared_ptr<const Snapshot> snap = Run(agg, src, now, 6, 300, WarmMix);
  CHECK(snap->slots.hot_slots == 0);
  CHECK(snap->hot_keys == 0);
  REQUIRE(snap->slots.move);
  const cluster::MovePlan& m = *snap->slots.move;
  CHECK(m.reason == cluster::MoveReason::kOverPeers);
  CHECK(m.from.id == "self-id");
  REQUIRE(m.to.size() == 2);
  // Every node ends at or under the goal (1.1 x the mean of the three), in the plan's
  // measure (load, with the aggregator's configured capacity for every node), within the
  // hysteresis of a plan kept from an earlier tick (MoveOptions::keep).
  const double keep = 1 + cluster::MoveOptions{}.keep_projection;
  const auto after = [&](const cluster::MoveSide& side) {
    return m.in_load ? *side.load_after : side.ops_after;
  };
  CHECK(after(m.from) <= m.goal * keep);
  for (const cluster::Transfer& t : m.to) CHECK(after(t.to) <= m.goal * keep);
  CHECK(m.from.ops_after < keep * 1.1 * (1793 + 607 + 601) / 3);
  CHECK(m.from.ops_after < m.to[0].to.ops_after * 1.5);
  // The slots moved are the tags' (the largest), each once.
  std::vector<uint16_t> moved;
  for (const cluster::Transfer& t : m.to) moved.insert(moved.end(), t.slots.begin(), t.slots.end());
  for (uint16_t slot : moved) {
    bool tagged = false;
    for (int tag = 0; tag < 200 && !tagged; ++tag) {
      tagged = cluster::KeySlot(absl::StrCat(tag)) == slot;
    }
    CHECK(tagged);
  }
  std::sort(moved.begin(), moved.end());
  CHECK(std::adjacent_find(moved.begin(), moved.end()) == moved.end());
  CHECK(snap->slots.peers.ratio);
  // Stable between reads: the next ticks keep the same plan.
  const std::vector<uint16_t> first = m.to[0].slots;
  snap = Run(agg, src, now, 3, 300, WarmMix);
  REQUIRE(snap->slots.move);
  CHECK(snap->slots.move->to[0].slots == first);

  // Once balanced (the plan ran), no advice: the alert resolves.
  c.nodes = {Node("self-id", true, 1080, std::nullopt), Node("a-id", false, 1087, std::nullopt),
             Node("b-id", false, 833, std::nullopt)};
  agg.SetClusterInputs(c);
  snap = Run(agg, src, now, 1, 300, WarmMix);
  CHECK_FALSE(snap->slots.move);
}

TEST_CASE("Slots: with every slot in use, exports stay bounded", "[aggregate][slots]") {
  Aggregator agg(Track(), Reloadable(), "", kT0, nullptr);
  Source src;
  absl::Time now = kT0;
  // Every slot the same: none over min_share.
  std::shared_ptr<const Snapshot> snap =
      Run(agg, src, now, 4, 2000, [](int i) -> std::pair<std::string, Op> {
        return {absl::StrCat("{", i % 50000, "}"), Op::kRead};
      });
  CHECK(snap->slots.slots.empty());
  CHECK(snap->slots.tags.empty());
  // Thirty slots each over min_share: top_k of them.
  snap = Run(agg, src, now, 4, 2000, [](int i) -> std::pair<std::string, Op> {
    return {absl::StrCat("{", i % 30, "}:x"), Op::kRead};
  });
  CHECK(snap->slots.slots.size() == 10);
  CHECK(snap->slots.tags.size() == 10);
}

TEST_CASE("Slots: a silent shard ends hot slots and exports none", "[aggregate][slots]") {
  Aggregator agg(Track(), Reloadable(), "", kT0, nullptr);
  Source src;
  absl::Time now = kT0;
  std::shared_ptr<const Snapshot> snap = Run(agg, src, now, 4, 300, TagMix);
  REQUIRE(snap->slots.hot_slots == 1);
  snap = Run(agg, src, now, 4, 0, TagMix);  // past the 2 s window with no traffic
  CHECK(snap->slots.hot_slots == 0);
  CHECK(snap->slots.hot_tags == 0);
  CHECK(snap->slots.slots.empty());
  CHECK(snap->slots.tags.empty());
}

TEST_CASE("Slots: sources without slot counts give no slots", "[aggregate][slots]") {
  Aggregator agg(Track(), Reloadable(), "", kT0, nullptr);
  sketch::HeavyHitters t = *sketch::HeavyHitters::Create(TrackerOptions(), kT0);
  t.Update("{42}:a", Op::kRead);
  std::vector<std::shared_ptr<const source::SourceReport>> reports = {
      std::make_shared<const source::SourceReport>(source::SourceReport{kT0, t, {}, {}})};
  const std::shared_ptr<const Snapshot> snap = agg.Build(reports, kT0 + absl::Seconds(1), 0);
  CHECK_FALSE(snap->slots.enabled);
  CHECK(snap->slots.slots.empty());
}

}  // namespace
}  // namespace hotkey::aggregate
