// Tests for HeavyHitters' lobby: the keyless tier between the count-min sketch and the
// keyed table. Promotion into the table, write-back to the sketch when a way is replaced,
// demotion of evicted entries, and LowerBound <= true <= UpperBound checked exactly on
// adversarial streams: a lobby of one or two buckets (every key collides in its bucket),
// keys that share a whole 64-bit hash (they share a way), decay with a rescale, Merge(),
// and serialisation (version 4, and version 2 buffers read as trackers with no lobby).

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "hotkey/sketch/hash.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "test_util.h"

namespace hotkey::sketch {
namespace {

using testing::KeyFor;
using testing::LowerBoundOf;
using testing::Patch;
using testing::Peek;
using testing::Rechecksum;
using testing::ScopedAllocationLimit;
using testing::UpperBoundOf;

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

HeavyHittersOptions Options(uint32_t candidates, uint32_t lobby,
                            absl::Duration half_life = absl::InfiniteDuration()) {
  HeavyHittersOptions o;
  o.candidates = candidates;
  o.lobby = lobby;
  o.half_life = half_life;
  return o;
}

HeavyHitters MustCreate(const HeavyHittersOptions& o) {
  absl::StatusOr<HeavyHitters> hh = HeavyHitters::Create(o, kT0);
  REQUIRE(hh.ok());
  return *std::move(hh);
}

TEST_CASE("Lobby: 100 candidates and 860 lobby entries keep top-100 precision and recall on Zipf",
          "[sketch][lobby]") {
  // The 64 KiB configuration of the README: fewer keyed candidates than the 200 of
  // heavy_hitters_test.cc's Zipf test, the rest of the memory in the lobby.
  for (double s : {0.9, 1.0, 1.2}) {
    INFO("s = " << s);
    HeavyHitters hh = MustCreate(Options(100, 860));
    testing::ExactStream exact;
    testing::FeedZipf(1000000, s, 2000000, 10 + static_cast<uint64_t>(s * 10), &hh, &exact);
    const std::vector<HeavyHitter> top = hh.TopK(100);
    REQUIRE(top.size() == 100);
    const double precision = testing::CorrectInTopK(top, exact, 100) / 100.0;
    const double recall = testing::FoundOfTopK(top, exact, 100) / 100.0;
    INFO("precision " << precision << " recall " << recall);
    CHECK(precision >= 0.99);
    CHECK(recall >= 0.99);
    CHECK_THAT(hh.Total(), UpperBoundOf(exact.total, hh));
  }
}

TEST_CASE("Lobby: a key counted in the lobby is promoted once its bound passes the weakest entry",
          "[sketch][lobby]") {
  HeavyHitters hh = MustCreate(Options(2, 4));
  for (int i = 0; i < 10; ++i) {
    hh.Update("a", Op::kRead);
    hh.Update("b", Op::kRead);
  }
  REQUIRE(hh.size() == 2);
  hh.Update("c", Op::kRead);
  // Its sketch estimate (1) beats the free way (0), not the weakest entry (10).
  CHECK(hh.InLobby("c"));
  CHECK_THAT(hh.UpperBound("c"), UpperBoundOf(1, hh));
  CHECK(hh.LowerBound("c") == 0);  // a keyless way proves no weight
  for (int i = 0; i < 9; ++i) hh.Update("c", Op::kRead);
  CHECK(hh.InLobby("c"));  // 10 does not beat 10
  CHECK_THAT(hh.UpperBound("c"), UpperBoundOf(10, hh));
  hh.Update("c", Op::kWrite, 1);
  CHECK_FALSE(hh.InLobby("c"));
  CHECK_THAT(hh.UpperBound("c"), UpperBoundOf(11, hh));
  // Like a fresh admission: the lower bound is the promoting event's weight.
  CHECK_THAT(hh.LowerBound("c"), LowerBoundOf(1, hh));
  const std::vector<HeavyHitter> top = hh.TopK(2);
  REQUIRE(top.size() == 2);
  CHECK(top[0].key == "c");
  CHECK_THAT(top[0].weight[static_cast<int>(Op::kWrite)], LowerBoundOf(1, hh));
  // The evicted entry was demoted into the lobby with its bound, not lost.
  const std::string evicted = top[1].key == "a" ? "b" : "a";
  CHECK(hh.InLobby(evicted));
  CHECK_THAT(hh.UpperBound(evicted), UpperBoundOf(10, hh));
  CHECK(hh.LowerBound(evicted) == 0);
  CHECK_THAT(hh.LowerBound(top[1].key), LowerBoundOf(10, hh));
}

TEST_CASE("Lobby: a replaced way's bound is written back to the sketch", "[sketch][lobby]") {
  HeavyHitters hh = MustCreate(Options(1, 4));
  for (int i = 0; i < 100; ++i) hh.Update("h", Op::kRead);
  const std::string x[4] = {"x0", "x1", "x2", "x3"};
  for (const std::string& k : x) hh.Update(k, Op::kRead);
  for (const std::string& k : x) CHECK(hh.InLobby(k));
  for (int i = 0; i < 3; ++i) hh.Update(x[i], Op::kRead);
  // "y" enters only when its sketch estimate (2) beats the weakest way (x3's 1).
  hh.Update("y", Op::kRead);
  CHECK_FALSE(hh.InLobby("y"));
  CHECK(hh.InLobby("x3"));
  hh.Update("y", Op::kRead);
  CHECK(hh.InLobby("y"));
  CHECK(hh.UpperBound("y") >= 2);
  CHECK_FALSE(hh.InLobby("x3"));
  CHECK(hh.UpperBound("x3") >= 1);  // the sketch bounds it again
  for (int i = 0; i < 3; ++i) {
    CHECK(hh.InLobby(x[i]));
    CHECK_THAT(hh.UpperBound(x[i]), UpperBoundOf(2, hh));
  }
  CHECK_THAT(hh.Total(), UpperBoundOf(100 + 4 + 3 + 2, hh));
}

TEST_CASE("Lobby: keys sharing a 64-bit hash share a way, and no lower bound comes from it",
          "[sketch][lobby]") {
  HeavyHitters hh = MustCreate(Options(1, 4));
  for (int i = 0; i < 100; ++i) hh.Update("h", Op::kRead);
  const uint64_t shared = HashKey("p", hh.options().seed);
  for (int i = 0; i < 3; ++i) hh.UpdateHashed(shared, "p", Op::kRead, 1);
  for (int i = 0; i < 2; ++i) hh.UpdateHashed(shared, "q", Op::kRead, 1);
  // One way counts both: an upper bound for each, a lower bound for neither.
  CHECK_THAT(hh.UpperBoundHashed(shared, "p"), UpperBoundOf(5, hh));
  CHECK_THAT(hh.UpperBoundHashed(shared, "q"), UpperBoundOf(5, hh));
  CHECK(hh.LowerBoundHashed(shared, "p") == 0);
  CHECK(hh.LowerBoundHashed(shared, "q") == 0);
  // q's way passes h: q is promoted with p's weight inside its upper bound, and its lower
  // bound is only the promoting event's 100. p falls back to the sketch, raised to the way.
  hh.UpdateHashed(shared, "q", Op::kRead, 100);
  CHECK_THAT(hh.UpperBoundHashed(shared, "q"), UpperBoundOf(105, hh));
  CHECK_THAT(hh.LowerBoundHashed(shared, "q"), LowerBoundOf(100, hh));
  CHECK(hh.UpperBoundHashed(shared, "p") >= 3);
  CHECK(hh.LowerBoundHashed(shared, "p") == 0);
  CHECK(hh.InLobby("h"));  // demoted
  CHECK_THAT(hh.UpperBound("h"), UpperBoundOf(100, hh));
  // p comes back: admitted from the sketch, evicting q, which is demoted to a way that
  // also covers every other key of the hash.
  hh.UpdateHashed(shared, "p", Op::kRead, 1);
  CHECK_THAT(hh.LowerBoundHashed(shared, "p"), LowerBoundOf(1, hh));
  CHECK(hh.UpperBoundHashed(shared, "p") >= 4);
  CHECK(hh.UpperBoundHashed(shared, "q") >= 102);
  CHECK(hh.LowerBoundHashed(shared, "q") == 0);
  CHECK_THAT(hh.UpperBound("h"), UpperBoundOf(100, hh));
  CHECK_THAT(hh.Total(), UpperBoundOf(100 + 3 + 2 + 100 + 1, hh));
}

TEST_CASE("Lobby: a key whose hash is 0 is not confused with the free ways", "[sketch][lobby]") {
  // Free ways hold hash 0 with an upper of 0: a key of hash 0 must match only its own used
  // way, or its events would land in a second way while queries read the first.
  HeavyHitters hh = MustCreate(Options(1, 4));
  for (int i = 0; i < 100; ++i) hh.Update("h", Op::kRead);
  for (int i = 1; i <= 5; ++i) {
    hh.UpdateHashed(0, "z", Op::kRead, 1);
    INFO("after " << i << " events");
    CHECK_THAT(hh.UpperBoundHashed(0, "z"), UpperBoundOf(i, hh));  // one way, from 1
  }
  // A round trip keeps it (free ways serialise as hash 0, upper 0).
  absl::StatusOr<HeavyHitters> back = HeavyHitters::Deserialize(hh.Serialize());
  REQUIRE(back.ok());
  CHECK(back->UpperBoundHashed(0, "z") == hh.UpperBoundHashed(0, "z"));
}

// An exact truth for streams whose decay factors are exact powers of two (events at whole
// half-lives, integer weights): a key's weight times 2^hour, as a 128-bit integer.
struct Truth {
  uint64_t hash;
  unsigned __int128 weight = 0;
};
using Exact = absl::flat_hash_map<std::string, Truth>;

// LowerBound <= truth <= UpperBound for every key, and the total, exactly: the tracker's
// figures times 2^now_hours are exact doubles, compared as integers.
void CheckExact(const HeavyHitters& hh, const Exact& exact, int now_hours) {
  const double scale = std::ldexp(1.0, now_hours);
  unsigned __int128 total = 0;
  for (const auto& [key, truth] : exact) {
    total += truth.weight;
    const double up = hh.UpperBoundHashed(truth.hash, key) * scale;
    const double low = hh.LowerBoundHashed(truth.hash, key) * scale;
    INFO("key " << key << " truth " << static_cast<double>(truth.weight) << " upper " << up
                << " lower " << low);
    REQUIRE(static_cast<unsigned __int128>(up) >= truth.weight);
    REQUIRE(static_cast<unsigned __int128>(std::ceil(low)) <= truth.weight);
  }
  CHECK(static_cast<unsigned __int128>(hh.Total() * scale) >= total);
}

TEST_CASE("Lobby: randomized mixed weights through a tiny lobby never cross the exact truth",
          "[sketch][lobby][decay]") {
  // 300 keys through 16 slots, a lobby of 1 or 2 buckets and a 32-column sketch (constant
  // promotion, demotion and replacement), weights mixing 1..10 with up to 1e6, at whole
  // hours for 60 hours with decay (a rescale at hour 41) or without. With `shared`, the 300
  // keys have only 40 hashes, so ways, sketch cells and index tags are shared by unrelated
  // keys. Half the events also go to one of two trackers that are merged at the end.
  for (const bool decay : {true, false}) {
    for (const uint32_t lobby : {4u, 8u}) {
      for (const bool shared : {false, true}) {
        INFO("decay " << decay << " lobby " << lobby << " shared hashes " << shared);
        HeavyHittersOptions o =
            Options(16, lobby, decay ? absl::Hours(1) : absl::InfiniteDuration());
        o.sketch_bytes = 1024;
        HeavyHitters all = MustCreate(o);
        HeavyHitters part[2] = {MustCreate(o), MustCreate(o)};
        std::mt19937_64 gen(20261201 + lobby + 2 * shared + 4 * decay);
        std::uniform_int_distribution<int> key(0, 299);
        std::uniform_int_distribution<int> small(1, 10);
        std::uniform_real_distribution<double> log_weight(0, std::log(1e6));
        std::bernoulli_distribution heavy(0.3);
        Exact exact;
        constexpr int kHours = 60;
        for (int hour = 0; hour <= kHours; ++hour) {
          const absl::Time t = kT0 + absl::Hours(hour);
          all.Advance(t);
          for (HeavyHitters& p : part) p.Advance(t);
          for (int i = 0; i < 2000; ++i) {
            const int id = key(gen);
            const std::string k = KeyFor(id);
            const uint64_t h = HashKey(shared ? KeyFor(id % 40) : k, o.seed);
            const uint64_t w = heavy(gen) ? static_cast<uint64_t>(std::exp(log_weight(gen)))
                                          : static_cast<uint64_t>(small(gen));
            const Op op = i % 3 ? Op::kRead : Op::kWrite;
            all.UpdateHashed(h, k, op, static_cast<double>(w));
            part[i % 2].UpdateHashed(h, k, op, static_cast<double>(w));
            Truth& tr = exact[k];
            tr.hash = h;
            tr.weight += static_cast<unsigned __int128>(w) << (decay ? hour : 0);
          }
        }
        const int now = decay ? kHours : 0;
        CheckExact(all, exact, now);
        REQUIRE(part[0].Merge(part[1]).ok());
        CheckExact(part[0], exact, now);
        if (!shared) {  // Deserialize checks each key's hash
          absl::StatusOr<HeavyHitters> back = HeavyHitters::Deserialize(all.Serialize());
          REQUIRE(back.ok());
          CheckExact(*back, exact, now);
        }
      }
    }
  }
}

TEST_CASE("Lobby: a rescale scales the lobby's bounds with everything else", "[sketch][lobby]") {
  HeavyHitters hh = MustCreate(Options(1, 4, absl::Seconds(1)));
  for (int i = 0; i < 100; ++i) hh.Update("h", Op::kRead);
  hh.Update("x", Op::kRead, 8);
  REQUIRE(hh.InLobby("x"));
  hh.Advance(kT0 + absl::Seconds(50));  // past 2^40: a rescale
  CHECK(hh.InLobby("x"));
  // The rescale's factor is a power of two, so it scales the stored bounds exactly.
  CHECK_THAT(hh.UpperBound("x"), UpperBoundOf(std::ldexp(8.0, -50), hh));
  hh.Update("x", Op::kRead, 8);
  CHECK_THAT(hh.UpperBound("x"), UpperBoundOf(8 + std::ldexp(8.0, -50), hh));
  CHECK_THAT(hh.UpperBound("h"), UpperBoundOf(std::ldexp(100.0, -50), hh));
}

TEST_CASE("Lobby: merge keeps the heavier keys and every bound of both lobbies",
          "[sketch][lobby][merge]") {
  HeavyHitters a = MustCreate(Options(2, 8)), b = MustCreate(Options(2, 8));
  for (int i = 0; i < 50; ++i) {
    a.Update("a1", Op::kRead);
    a.Update("a2", Op::kRead);
    b.Update("b1", Op::kRead);
    b.Update("b2", Op::kRead);
  }
  for (int i = 0; i < 30; ++i) {
    a.Update("l", Op::kRead);  // in a's lobby
    b.Update("l", Op::kRead);  // and in b's
  }
  REQUIRE(a.InLobby("l"));
  REQUIRE(b.InLobby("l"));
  const size_t bytes = a.MemoryBytes();
  REQUIRE(a.Merge(b).ok());
  CHECK(a.MemoryBytes() == bytes);
  CHECK(a.UpperBound("l") >= 60);
  CHECK(a.LowerBound("l") == 0);
  for (const char* k : {"a1", "a2", "b1", "b2"}) {
    INFO(k);
    CHECK(a.UpperBound(k) >= 50);
  }
  // Two of the four 50s stay in the table (lower bound 50); the others are demoted.
  int kept = 0;
  for (const char* k : {"a1", "a2", "b1", "b2"}) kept += LowerBoundOf(50, a).match(a.LowerBound(k));
  CHECK(kept == 2);
  CHECK_THAT(a.Total(), UpperBoundOf(260, a));
  CHECK_FALSE(a.Merge(MustCreate(Options(2, 12))).ok());  // another lobby size
}

// A tracker with a full lobby of 8 ways, for the serialisation tests.
HeavyHitters LobbyTracker() {
  HeavyHittersOptions o = Options(4, 8, absl::Seconds(5));
  o.sketch_bytes = 256;
  HeavyHitters hh = MustCreate(o);
  hh.Advance(kT0 + absl::Seconds(2));
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 40; ++j) hh.Update(KeyFor(1000 + i), Op::kRead);
  }
  for (int r = 0; r < 5; ++r) {
    for (int i = 0; i < 40; ++i) hh.Update(KeyFor(i), r % 2 ? Op::kWrite : Op::kRead);
  }
  hh.Advance(kT0 + absl::Seconds(3));
  return hh;
}

TEST_CASE("Lobby: a clock jump that decays every weight to 0 frees the lobby's ways",
          "[sketch][lobby]") {
  // Found by fuzz_deserialize (fuzz/regressions/fuzz_deserialize/lobby-way-freed-by-advance):
  // after more than about 1075 half-lives the rescale's scale is 0, and a way left with a
  // bound of 0 but its hash no longer serialised as a valid tracker.
  HeavyHitters hh = MustCreate(Options(1, 4, absl::Seconds(1)));
  for (int i = 0; i < 100; ++i) hh.Update("h", Op::kRead);
  hh.Update("x", Op::kRead, 8);
  REQUIRE(hh.InLobby("x"));
  hh.Advance(kT0 + absl::Seconds(5000));
  CHECK_FALSE(hh.InLobby("x"));
  CHECK(hh.UpperBound("x") == 0);
  const std::string bytes = hh.Serialize();
  absl::StatusOr<HeavyHitters> back = HeavyHitters::Deserialize(bytes);
  REQUIRE(back.ok());
  CHECK(back->Serialize() == bytes);
  // The way is free for the next key.
  hh.Update("x", Op::kRead, 8);
  CHECK(hh.UpperBound("x") >= 8);
}

TEST_CASE("Lobby: serialize round trip restores the lobby", "[sketch][lobby][serialize]") {
  const HeavyHitters hh = LobbyTracker();
  size_t in_lobby = 0;
  for (int i = 0; i < 40; ++i) in_lobby += hh.InLobby(KeyFor(i));
  REQUIRE(in_lobby >= 4);
  const std::string bytes = hh.Serialize();
  absl::StatusOr<HeavyHitters> back = HeavyHitters::Deserialize(bytes);
  REQUIRE(back.ok());
  CHECK(back->Serialize() == bytes);
  CHECK(back->MemoryBytes() == hh.MemoryBytes());
  CHECK(back->options().lobby == 8);
  for (int i = 0; i < 1050; ++i) {
    const std::string k = KeyFor(i);
    REQUIRE(back->InLobby(k) == hh.InLobby(k));
    REQUIRE(back->UpperBound(k) == hh.UpperBound(k));
    REQUIRE(back->LowerBound(k) == hh.LowerBound(k));
  }
}

TEST_CASE("Lobby: a version-2 buffer is read as a tracker with no lobby",
          "[sketch][lobby][serialize]") {
  // Version 3 is version 4 without the count of roundings (a u64 after the raw totals), and
  // version 2 is version 3 without the trailing lobby (u32 count, then the ways). Every sum
  // of this stream is a double (integer weights, no time passes), so the values it saves
  // rounded to nearest are those that version 2, which rounded outward, would have saved.
  HeavyHittersOptions o = Options(4, 0, absl::Seconds(5));
  o.sketch_bytes = 256;
  HeavyHitters hh = MustCreate(o);
  for (int r = 0; r < 5; ++r) {
    for (int i = 0; i < 40; ++i) hh.Update(KeyFor(i), Op::kRead, 1 + i % 3);
  }
  const std::string v4 = hh.Serialize();
  REQUIRE(Peek<uint16_t>(v4, 4) == 4);
  REQUIRE(Peek<uint64_t>(v4, testing::kRoundingsAt) == hh.roundings());
  REQUIRE(Peek<uint32_t>(v4, v4.size() - 12) == 0);  // the lobby count
  std::string v2 = v4;
  v2.erase(v2.size() - 12, 4);
  v2.erase(testing::kRoundingsAt, 8);
  Patch<uint16_t>(&v2, 4, 2);
  Rechecksum(&v2);
  absl::StatusOr<HeavyHitters> back = HeavyHitters::Deserialize(v2);
  REQUIRE(back.ok());
  CHECK(back->options().lobby == 0);
  // The same tracker, but for the roundings: a version-2 buffer counts none.
  CHECK(back->roundings() == 0);
  std::string v4_without_roundings = v4;
  Patch<uint64_t>(&v4_without_roundings, testing::kRoundingsAt, 0);
  Rechecksum(&v4_without_roundings);
  CHECK(back->Serialize() == v4_without_roundings);
  // So hh reads the same stored values as `back`, widened by its roundings.
  std::vector<double> upper;
  for (int i = 0; i < 60; ++i) {
    INFO(KeyFor(i));
    REQUIRE_THAT(hh.UpperBound(KeyFor(i)), UpperBoundOf(back->UpperBound(KeyFor(i)), hh));
    REQUIRE_THAT(hh.LowerBound(KeyFor(i)), LowerBoundOf(back->LowerBound(KeyFor(i)), hh));
    upper.push_back(back->UpperBound(KeyFor(i)));
  }
  // A daemon upgraded in place then gives the restored tracker its lobby.
  REQUIRE(back->ResizeLobby(8).ok());
  CHECK(back->options().lobby == 8);
  CHECK(back->MemoryBytes() == hh.MemoryBytes() + 2 * 64);
  for (int i = 0; i < 60; ++i) REQUIRE(back->UpperBound(KeyFor(i)) == upper[i]);
  CHECK_FALSE(back->ResizeLobby(HeavyHitters::kMaxLobby + 1).ok());
}

TEST_CASE("Lobby: resizing a full lobby hands its bounds to the sketch", "[sketch][lobby]") {
  HeavyHitters hh = LobbyTracker();
  std::vector<double> upper;
  for (int i = 0; i < 1050; ++i) upper.push_back(hh.UpperBound(KeyFor(i)));
  REQUIRE(hh.ResizeLobby(0).ok());
  for (int i = 0; i < 1050; ++i) {
    INFO(KeyFor(i));
    REQUIRE_FALSE(hh.InLobby(KeyFor(i)));
    REQUIRE(hh.UpperBound(KeyFor(i)) >= upper[i]);
  }
}

// Deserialize(b) under a per-allocation limit: "rejected", "accepted", or what it tried to
// allocate beyond the limit.
std::string DeserializeWithinLimit(const std::string& b, size_t limit_bytes) {
  ScopedAllocationLimit limit(limit_bytes);
  try {
    return HeavyHitters::Deserialize(b).ok() ? "accepted" : "rejected";
  } catch (const std::bad_alloc&) {
    return "tried to allocate " + std::to_string(limit.largest_refused()) + " bytes";
  }
}

TEST_CASE("Lobby: checksummed buffers with a corrupt lobby are rejected",
          "[sketch][lobby][serialize]") {
  const std::string good = LobbyTracker().Serialize();
  constexpr size_t kWays = 8;
  const size_t count_at = good.size() - 8 - kWays * 16 - 4;
  REQUIRE(Peek<uint32_t>(good, count_at) == kWays);
  const size_t w0 = count_at + 4;
  // A used way and a way of another bucket (the lobby has two).
  size_t used = 0, other = 0;
  for (size_t i = 0; i < kWays; ++i) {
    if (Peek<double>(good, w0 + 16 * i + 8) > 0) {
      if (used == 0 && i < 4) used = w0 + 16 * i;
      if (i >= 4) other = w0 + 16 * i;
    }
  }
  REQUIRE(used != 0);
  REQUIRE(other != 0);
  const double kNaN = std::nan("");
  const struct {
    const char* name;
    std::function<void(std::string*)> edit;
  } cases[] = {
      {"lobby count above the bound",
       [&](std::string* b) { Patch<uint32_t>(b, count_at, HeavyHitters::kMaxLobby + 1); }},
      {"lobby count of another length", [&](std::string* b) { Patch<uint32_t>(b, count_at, 4); }},
      {"way bound NaN", [&](std::string* b) { Patch<double>(b, used + 8, kNaN); }},
      {"way bound negative", [&](std::string* b) { Patch<double>(b, used + 8, -1.0); }},
      {"way bound -0", [&](std::string* b) { Patch<double>(b, used + 8, -0.0); }},
      {"way bound infinite", [&](std::string* b) { Patch<double>(b, used + 8, INFINITY); }},
      {"free way with a hash", [&](std::string* b) { Patch<double>(b, used + 8, 0.0); }},
      {"way in another bucket",
       [&](std::string* b) { Patch<uint64_t>(b, used, Peek<uint64_t>(good, other)); }},
      {"duplicate way",
       [&](std::string* b) {
         for (size_t i = 0; i < 4; ++i) {
           const size_t at = w0 + 16 * i;
           if (at != used) {
             Patch<uint64_t>(b, at, Peek<uint64_t>(good, used));
             Patch<double>(b, at + 8, 1.0);
             return;
           }
         }
       }},
  };
  for (const auto& c : cases) {
    std::string b = good;
    c.edit(&b);
    Rechecksum(&b);
    INFO(c.name);
    CHECK_FALSE(HeavyHitters::Deserialize(b).ok());
  }
  // A count of 2^22 ways in a short buffer is refused before 64 MiB is asked for.
  std::string b = good;
  Patch<uint32_t>(&b, count_at, HeavyHitters::kMaxLobby);
  Rechecksum(&b);
  CHECK(DeserializeWithinLimit(b, 1 << 20) == "rejected");
  CHECK(DeserializeWithinLimit(good, 1 << 20) == "accepted");
}

TEST_CASE("Lobby: MemoryBytes counts 64 bytes per 4-way bucket, and 100 + 860 fit in 64 KiB",
          "[sketch][lobby]") {
  const size_t none = MustCreate(Options(100, 0)).MemoryBytes();
  CHECK(MustCreate(Options(100, 1)).MemoryBytes() == none + 64);
  CHECK(MustCreate(Options(100, 4)).MemoryBytes() == none + 64);
  CHECK(MustCreate(Options(100, 5)).MemoryBytes() == none + 128);
  CHECK(MustCreate(Options(100, 860)).MemoryBytes() == none + 215 * 64);
  // The configuration the README measures on the real traces: 32 KiB sketch, depth 4.
  CHECK(MustCreate(Options(100, 860)).MemoryBytes() <= 64 * 1024);
  HeavyHittersOptions o = Options(100, HeavyHitters::kMaxLobby + 1);
  CHECK_FALSE(o.Validate().ok());
  CHECK_FALSE(HeavyHitters::Create(o, kT0).ok());
  o.lobby = HeavyHitters::kMaxLobby;
  CHECK(o.Validate().ok());
}

TEST_CASE("Lobby: updates through the lobby never allocate", "[sketch][lobby]") {
  // Promotions, demotions and replacements on a Zipf stream through 16 slots and 64 ways.
  HeavyHitters hh = MustCreate(Options(16, 64, absl::Seconds(1)));
  std::vector<std::string> keys;
  for (int i = 0; i < 5000; ++i) keys.push_back(KeyFor(i));
  std::mt19937_64 gen(7);
  ZipfDistribution zipf(keys.size(), 0.9);
  std::vector<uint32_t> ids(200000);
  for (uint32_t& id : ids) id = static_cast<uint32_t>(zipf(gen) - 1) % keys.size();
  size_t refused;
  {
    ScopedAllocationLimit limit(1);  // any allocation of more than one byte throws
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i % 1000 == 0) hh.Advance(kT0 + absl::Milliseconds(i / 100));
      hh.Update(keys[ids[i]], i % 7 ? Op::kRead : Op::kWrite, 1 + (i % 3));
    }
    refused = limit.largest_refused();
  }
  CHECK(refused == 0);
  size_t in_lobby = 0;
  for (const std::string& k : keys) in_lobby += hh.InLobby(k);
  CHECK(in_lobby > 32);
}

}  // namespace
}  // namespace hotkey::sketch
