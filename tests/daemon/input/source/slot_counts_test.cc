// SlotCounts: each key's weight lands in the slot Redis gives it (cluster::KeySlot, itself checked
// against CLUSTER KEYSLOT in slot_test.cc), tagged keys add up under their tag, and neither
// an update nor a copy into a report of the same shape allocates.

#include "hotkey/source/slot_counts.h"

#include <atomic>
#include <string>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "alloc_count.h"

namespace hotkey::source {
namespace {

SlotCounts Make() {
  absl::StatusOr<SlotCounts> c =
      SlotCounts::Create(sketch::HeavyHittersOptions{}, absl::UnixEpoch());
  REQUIRE(c.ok());
  return *std::move(c);
}

TEST_CASE("SlotCounts: a key's weight goes to its slot, a tagged key's also to its tag",
          "[cluster]") {
  SlotCounts c = Make();
  double total = 0;
  for (int i = 0; i < 1000; ++i) {
    c.Update(absl::StrCat("profile:{42}:", i), sketch::Op::kRead);
    c.Update(absl::StrCat("plain:", i), sketch::Op::kWrite, 2.5);
    total += 3.5;
  }
  CHECK(c.count(cluster::KeySlot("42")) >= 1000);
  double sum = 0;
  for (double v : c.counts()) sum += v;
  CHECK(sum == Approx(total));
  // Every plain key's weight sits in its own slot.
  double plain_in_42 = 0;
  for (int i = 0; i < 1000; ++i) {
    if (cluster::KeySlot(absl::StrCat("plain:", i)) == cluster::KeySlot("42")) plain_in_42 += 2.5;
  }
  CHECK(c.count(cluster::KeySlot("42")) == Approx(1000 + plain_in_42));
  // One tag, a thousand keys: the tag is the tags' top with all their weight; untagged keys
  // add no tag.
  std::vector<sketch::HeavyHitter> top = c.tags().TopK(3);
  REQUIRE(top.size() == 1);
  CHECK(top[0].key == "42");
  CHECK(c.tags().RawTotal(sketch::Op::kRead) == Approx(1000));
  CHECK(c.tags().RawTotal(sketch::Op::kWrite) == 0);
}

TEST_CASE("SlotCounts: a switch off counts nothing; on, counting resumes", "[cluster]") {
  std::atomic<bool> on{false};
  absl::StatusOr<SlotCounts> c =
      SlotCounts::Create(sketch::HeavyHittersOptions{}, absl::UnixEpoch(), &on);
  REQUIRE(c.ok());
  const uint16_t slot = cluster::KeySlot("{7}:a");
  c->Update("{7}:a", sketch::Op::kRead, 2);
  CHECK_FALSE(c->counting());
  CHECK(c->count(slot) == 0);
  CHECK(c->tags().Total() == 0);
  on = true;
  CHECK(c->counting());
  c->Update("{7}:a", sketch::Op::kRead, 2);
  CHECK(c->count(slot) == 2);
  CHECK(c->tags().Total() > 0);
  // A copy (a report's) reads the same switch.
  const SlotCounts copy = *c;
  on = false;
  CHECK_FALSE(copy.counting());
  // No switch: always counting.
  CHECK(Make().counting());
}

TEST_CASE("SlotCounts: exact under a million events a second, sampled without bias above",
          "[cluster]") {
  const absl::Time t0 = absl::UnixEpoch();
  absl::StatusOr<SlotCounts> c = SlotCounts::Create(sketch::HeavyHittersOptions{}, t0);
  REQUIRE(c.ok());
  // 50,000 events in 100 ms (500,000/s): every one counted.
  for (int i = 0; i < 50'000; ++i) c->Update(absl::StrCat("k", i % 4), sketch::Op::kRead);
  c->Advance(t0 + absl::Milliseconds(100));
  CHECK(c->stride() == 1);
  double total = 0;
  for (int s = 0; s < cluster::kSlots; ++s) total += c->count(static_cast<uint16_t>(s));
  CHECK(total == 50'000);
  // 800,000 in the next 100 ms (8M/s): one in 8 counted, weight 8. Four keys in turn, so a
  // fixed stride would count one key only: each gets its quarter within 3%.
  for (int i = 0; i < 800'000; ++i) c->Update(absl::StrCat("k", i % 4), sketch::Op::kRead);
  c->Advance(t0 + absl::Milliseconds(200));
  CHECK(c->stride() == 8);
  std::vector<double> before(4);
  for (int k = 0; k < 4; ++k) before[k] = c->count(cluster::KeySlot(absl::StrCat("k", k)));
  for (int i = 0; i < 800'000; ++i) c->Update(absl::StrCat("k", i % 4), sketch::Op::kRead);
  for (int k = 0; k < 4; ++k) {
    INFO(k);
    CHECK(c->count(cluster::KeySlot(absl::StrCat("k", k))) - before[k] ==
          Approx(200'000).epsilon(0.03));
  }
  // The rate falls back: exact again.
  c->Advance(t0 + absl::Seconds(10));
  CHECK(c->stride() == 1);
}

TEST_CASE("SlotCounts: binary keys and empty tags", "[cluster]") {
  SlotCounts c = Make();
  const std::string binary("\0{\xff\0}x", 6);
  c.Update(binary, sketch::Op::kRead);
  c.Update("{}x", sketch::Op::kRead);  // empty tag: the whole key is hashed, no tag
  CHECK(c.count(cluster::KeySlot(std::string_view("\xff\0", 2))) == 1);
  CHECK(c.count(cluster::KeySlot("{}x")) == 1);
  std::vector<sketch::HeavyHitter> top = c.tags().TopK(3);
  REQUIRE(top.size() == 1);
  CHECK(top[0].key == std::string_view("\xff\0", 2));
}

TEST_CASE("SlotCounts: updates and copies of the same shape do not allocate", "[cluster]") {
  SlotCounts c = Make();
  SlotCounts copy = Make();
  for (int i = 0; i < 300; ++i) c.Update(absl::StrCat("k{", i % 50, "}:", i), sketch::Op::kRead);
  copy = c;  // warm: the tag table's key storage grows to what c holds
  std::vector<std::string> keys;
  for (int i = 0; i < 5000; ++i) keys.push_back(absl::StrCat("user:{", i % 300, "}:", i));
  const uint64_t before = testing::AllocationsOnThisThread();
  for (const std::string& k : keys) c.Update(k, sketch::Op::kWrite);
  c.Advance(absl::UnixEpoch() + absl::Seconds(1));
  copy = c;
  CHECK(testing::AllocationsOnThisThread() == before);
  CHECK(copy.counts() == c.counts());
  CHECK(c.MemoryBytes() == SlotCounts::MemoryBytesFor(sketch::HeavyHittersOptions{}));
}

}  // namespace
}  // namespace hotkey::source
