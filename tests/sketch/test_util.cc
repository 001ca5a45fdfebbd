// Helpers shared by the sketch tests (see test_util.h).

#include "test_util.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

#include "alloc_count.h"
#include "hotkey/sketch/hash.h"

namespace hotkey::sketch::testing {

absl::Time SavedClock(std::string_view hkhh) {
  if (hkhh.size() < kClockAt + sizeof(int64_t)) return absl::UnixEpoch();
  int64_t ns;
  std::memcpy(&ns, hkhh.data() + kClockAt, sizeof ns);
  return absl::FromUnixNanos(ns);
}

absl::StatusOr<HeavyHitters> Reload(std::string_view bytes) {
  return HeavyHitters::Deserialize(bytes, SavedClock(bytes));
}

std::string_view KeyInto(uint64_t id, char* buf) {
  buf[0] = 'k';
  buf[1] = ':';
  const auto res = std::to_chars(buf + 2, buf + 24, id);
  return std::string_view(buf, static_cast<size_t>(res.ptr - buf));
}

std::string KeyFor(uint64_t id) {
  char buf[24];
  return std::string(KeyInto(id, buf));
}

std::vector<uint64_t> ByCountDescending(const absl::flat_hash_map<uint64_t, double>& counts) {
  std::vector<uint64_t> ids;
  ids.reserve(counts.size());
  for (const auto& [id, c] : counts) ids.push_back(id);
  std::sort(ids.begin(), ids.end(), [&](uint64_t a, uint64_t b) {
    const double ca = counts.at(a), cb = counts.at(b);
    return ca != cb ? ca > cb : a < b;
  });
  return ids;
}

bool IdOf(std::string_view key, uint64_t* id) {
  if (key.size() < 3 || key.substr(0, 2) != "k:") return false;
  const auto res = std::from_chars(key.data() + 2, key.data() + key.size(), *id);
  return res.ec == std::errc() && res.ptr == key.data() + key.size();
}

void FeedZipf(uint64_t n, double s, size_t events, uint64_t seed, HeavyHitters* tracker,
              ExactStream* exact) {
  char buf[24];
  ForEachZipf(n, s, events, seed, [&](uint64_t rank) {
    if (tracker != nullptr) tracker->Update(KeyInto(rank, buf), Op::kRead);
    exact->counts[rank] += 1;
    exact->total += 1;
  });
}

size_t CorrectInTopK(const std::vector<HeavyHitter>& top, const ExactStream& exact, size_t k) {
  const std::vector<uint64_t> order = ByCountDescending(exact.counts);
  if (order.empty()) return 0;
  const double kth = exact.counts.at(order[std::min(k, order.size()) - 1]);
  size_t correct = 0;
  for (const HeavyHitter& h : top) {
    uint64_t id;
    if (!IdOf(h.key, &id)) continue;
    auto it = exact.counts.find(id);
    if (it != exact.counts.end() && it->second >= kth) ++correct;
  }
  return correct;
}

size_t FoundOfTopK(const std::vector<HeavyHitter>& top, const ExactStream& exact, size_t k) {
  const std::vector<uint64_t> order = ByCountDescending(exact.counts);
  absl::flat_hash_map<uint64_t, bool> want;
  for (size_t i = 0; i < std::min(k, order.size()); ++i) want[order[i]] = true;
  size_t found = 0;
  for (const HeavyHitter& h : top) {
    uint64_t id;
    if (IdOf(h.key, &id) && want.contains(id)) ++found;
  }
  return found;
}

static_assert(std::numeric_limits<long double>::digits >= 64,
              "BoundOfTruth compares in a type wider than double");

namespace {

constexpr long double kStep = 0x1p-50L;       // one event's relative drift (test_util.h)
constexpr long double kReadSlack = 0x1p-50L;  // the read's own roundings (test_util.h)

long double Drift(uint64_t events, long double step) {
  return std::pow(1 + step, static_cast<long double>(events));
}

}  // namespace

bool BoundOfTruth::match(const double& bound) const {
  const long double b = bound, t = truth_;
  if (upper_) return t <= b && b <= (t + units_) * Drift(events_, kStep) * (1 + kReadSlack);
  return b <= t && b >= t * Drift(events_, -kStep) * (1 - kReadSlack);
}

std::string BoundOfTruth::describe() const {
  std::ostringstream os;
  os << std::setprecision(21) << "is " << (upper_ ? "an upper" : "a lower") << " bound of "
     << truth_ << " within " << events_ << " events' steps"
     << " plus " << units_ << " for the sketch's units (";
  if (upper_) {
    os << "in [" << truth_ << ", "
       << static_cast<double>((truth_ + units_) * Drift(events_, kStep) * (1 + kReadSlack)) << "])";
  } else {
    os << "in [" << static_cast<double>(truth_ * Drift(events_, -kStep) * (1 - kReadSlack)) << ", "
       << truth_ << "])";
  }
  return os.str();
}

BoundOfTruth UpperBoundOf(long double truth, const HeavyHitters& hh, uint64_t events, int adds) {
  return BoundOfTruth(true, truth, events, 2 * static_cast<long double>(adds) * hh.SketchUnit());
}

BoundOfTruth LowerBoundOf(long double truth, uint64_t events) {
  return BoundOfTruth(false, truth, events, 0);
}

size_t EntryCountAt(const std::string& hkhh) {
  // @106 u32 width, @110 f64 scale, @118 u32 cells[width * depth].
  return 118 + size_t{Peek<uint32_t>(hkhh, 106)} * Peek<uint32_t>(hkhh, 14) * sizeof(uint32_t);
}

void Rechecksum(std::string* buf) {
  const size_t body = buf->size() - sizeof(uint64_t);
  Patch<uint64_t>(buf, body, HashKey(std::string_view(buf->data(), body), kChecksumSeed));
}

ScopedAllocationLimit::ScopedAllocationLimit(size_t max_bytes) {
  hotkey::testing::SetAllocationLimitOnThisThread(max_bytes);
}
ScopedAllocationLimit::~ScopedAllocationLimit() {
  hotkey::testing::SetAllocationLimitOnThisThread(0);
}
size_t ScopedAllocationLimit::largest_refused() const {
  return hotkey::testing::LargestRefusedOnThisThread();
}

}  // namespace hotkey::sketch::testing
