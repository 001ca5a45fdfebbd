#include "hotkey/sketch/heavy_hitters.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "byte_io.h"
#include "count_min_inline.h"
#include "hash_inline.h"
#include "rounding.h"

namespace hotkey::sketch {

namespace {

constexpr char kMagic[] = "HKHH";
// Version 2: f64 sketch counters (version 1 had f32 ones, which saturate). Version 3: a
// keyless lobby, after the entries. Version 4: the count of roundings not yet settled, after
// the raw totals. Version 5: no lobby. Versions 2 to 4 are still read: 2 and 3 rounded their
// values outward, so they load with no roundings to count, and the ways of a version-3 or -4
// lobby are raised into the sketch (each way bounds the keys of its hash outside the table,
// so the sketch then does). Version 6: the sketch as a f64 scale and u32 cells; the f64
// counters of versions 2 to 5 load rounded up to cells, into a sketch of the width the
// budget now holds. Since every stored weight rounds outward (heavy_hitters.h), the count of
// roundings is written 0, so a build that still counts them reads the file right (it widens by
// nothing); a nonzero count, saved by such a build, is applied once when loaded. Version 7: the
// same layout, with a sketch as wide as the budget holds, no longer rounded down to a power of
// two (count_min.h); a sketch of version 6 or older whose width the budget now exceeds loads
// each row's largest cell into every cell of the row (its keys' columns under the new width are
// not those they had), which keeps every bound and is forgotten within a few half-lives.
constexpr uint16_t kVersion = 7;
constexpr uint16_t kFirstWithCells = 6;
constexpr uint16_t kFirstWithAnyWidth = 7;
constexpr uint16_t kOldestVersion = 2;
constexpr uint16_t kFirstWithLobby = 3;
constexpr uint16_t kLastWithLobby = 4;
// The largest lobby versions 3 and 4 accepted, and its ways per bucket.
constexpr uint32_t kMaxLoadedLobby = 1u << 22;
constexpr uint32_t kLobbyWays = 4;
// The largest count of roundings versions 4 to 6 hold: the builds that wrote one settled it
// into the stored values every 2^31 events, two roundings each.
constexpr uint64_t kMaxLoadedRoundings = uint64_t{1} << 32;

// The index's home bucket: the hash's middle bits, which neither the count-min columns
// (low bits plus multiples of the high half) nor the truncation marker lean on alone.
inline uint64_t Home(uint64_t hash, uint64_t mask) { return (hash ^ (hash >> 29)) & mask; }
// The bucket's tag: the bits Home() leans on least.
inline uint32_t Tag(uint64_t hash) { return static_cast<uint32_t>(hash >> 32); }

// a[0, n) == b[0, n). Keys of 4 to 16 bytes (most keys) compare as two overlapping loads
// from each side, never past either end, 8 to 16 bytes tested first (one comparison);
// longer ones go to memcmp. An empty key's data() may be null, so n == 0 reads nothing.
inline bool SameBytes(const char* a, const char* b, size_t n) {
  if (n - 8 <= 8) {  // 8 <= n <= 16, unsigned
    uint64_t a0, a1, b0, b1;
    std::memcpy(&a0, a, 8);
    std::memcpy(&b0, b, 8);
    std::memcpy(&a1, a + n - 8, 8);
    std::memcpy(&b1, b + n - 8, 8);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
  }
  if (n > 16) return std::memcmp(a, b, n) == 0;
  if (n >= 4) {
    uint32_t a0, a1, b0, b1;
    std::memcpy(&a0, a, 4);
    std::memcpy(&b0, b, 4);
    std::memcpy(&a1, a + n - 4, 4);
    std::memcpy(&b1, b + n - 4, 4);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
  }
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

int64_t ToNanos(absl::Time t) { return absl::ToUnixNanos(t); }

// Largest value a loaded tracker may hold. A real one never comes near it: an event adds at
// most kMaxWeight * 2^kRescaleExponent (about 1.1e27), so 1e250 is some 1e223 events away,
// and the per-event path's outward steps (a relative 2^-50 an event at most) take more than
// 2^57 events to multiply a value by 1e58.
// Refusing more keeps what follows a load finite, where a hostile value near DBL_MAX would
// become +inf: a read widens a value by a little, Total() adds two, and Merge() scales the
// other tracker's values by up to 2^kRescaleExponent and adds them.
constexpr double kMaxLoaded = 1e250;

// In [+0, kMaxLoaded] (-0 is refused: the rounding helpers take +0 only).
bool Loadable(double v) { return v >= 0 && v <= kMaxLoaded && !std::signbit(v); }

}  // namespace

absl::Status HeavyHittersOptions::Validate() const {
  if (candidates < 1 || candidates > HeavyHitters::kMaxCandidates) {
    return absl::InvalidArgumentError(absl::StrCat(
        "candidates must be in [1, ", HeavyHitters::kMaxCandidates, "], got ", candidates));
  }
  if (max_key_bytes < 1 || max_key_bytes > HeavyHitters::kMaxKeyBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_key_bytes must be in [1, ", HeavyHitters::kMaxKeyBytes, "], got ", max_key_bytes));
  }
  if (uint64_t{candidates} * max_key_bytes > HeavyHitters::kMaxTableBytes) {
    return absl::InvalidArgumentError(absl::StrCat("candidates * max_key_bytes must be at most ",
                                                   HeavyHitters::kMaxTableBytes, " bytes, got ",
                                                   uint64_t{candidates} * max_key_bytes));
  }
  if (half_life <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("half_life must be positive, got ", absl::FormatDuration(half_life)));
  }
  return CountMinSketch::FromBytes(sketch_bytes, sketch_depth).status();
}

absl::StatusOr<HeavyHitters> HeavyHitters::Create(const HeavyHittersOptions& options,
                                                  absl::Time now) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  absl::StatusOr<CountMinSketch> cms =
      CountMinSketch::FromBytes(options.sketch_bytes, options.sketch_depth);
  if (!cms.ok()) return cms.status();
  return HeavyHitters(options, *std::move(cms), now);
}

HeavyHitters::HeavyHitters(const HeavyHittersOptions& options, CountMinSketch cms, absl::Time now)
    : options_(options),
      cms_(std::move(cms)),
      half_life_s_(options.half_life == absl::InfiniteDuration()
                       ? std::numeric_limits<double>::infinity()
                       : absl::ToDoubleSeconds(options.half_life)),
      start_(now),
      landmark_(now),
      now_(now),
      entries_(options.candidates),
      keys_(static_cast<size_t>(options.candidates) * options.max_key_bytes),
      heap_(options.candidates) {
  // Load factor at most 1/4: a miss (most events) ends at an empty bucket after about 1.4
  // probes on average (2.5 at load 1/2), and a hit needs about 1.2; 8-byte buckets keep the
  // index the size a load of 1/2 had with 16-byte ones.
  const uint64_t buckets = std::bit_ceil(uint64_t{4} * options.candidates);
  index_.assign(buckets, Bucket{0, kEmpty});
  index_mask_ = buckets - 1;
}

void HeavyHitters::Advance(absl::Time now) {
  if (now <= now_) return;
  now_ = now;
  // Until the first event the window starts now (DecayedWindowSeconds), so idle time
  // before it does not dilute the window; the per-event path need not check.
  if (!counted()) start_ = now_;
  if (std::isinf(half_life_s_)) return;
  const double exponent = absl::ToDoubleSeconds(now_ - landmark_) / half_life_s_;
  if (exponent > kRescaleExponent) {
    Rescale();
  } else {
    factor_ = std::exp2(exponent);
  }
}

template <typename Up, typename Down>
void HeavyHitters::ScaleStored(Up up, Down down) {
  cms_.Revalue([&](size_t i) { return up(cms_.value(i)); });
  for (double& t : total_) t = up(t);
  for (uint32_t i = 0; i < size_; ++i) {
    Entry& e = entries_[heap_[i].slot];
    e.upper = up(e.upper);
    for (double& w : e.weight) w = down(w);
    heap_[i].upper = up(heap_[i].upper);
  }
  SyncFloor();
}

void HeavyHitters::Rescale() {
  // Move the landmark to now: every stored value is divided by 2^((now - L)/h). Values that
  // underflow to zero are weights that have decayed below 2^-1000 of a fresh event.
  const double exponent = absl::ToDoubleSeconds(now_ - landmark_) / half_life_s_;
  const double scale = std::exp2(-exponent);
  assert(scale >= 0 && scale <= 1);
  // Upper bounds round up and lower bounds down, so both stay on their side of the truth.
  // A positive upper stays positive (MulUp) unless the scale itself is 0: after a clock
  // jump of more than about 1075 half-lives every weight decays to nothing.
  ScaleStored([scale](double s) { return internal::MulUp(s, scale); },
              [scale](double s) { return internal::MulDown(s, scale); });
  landmark_ = now_;
  factor_ = 1.0;
}

void HeavyHitters::SyncFloor() {
  admit_floor_ = size_ < options_.candidates ? -1.0 : heap_[0].upper;
}

double HeavyHitters::DecayedWindowSeconds() const {
  const double age = absl::ToDoubleSeconds(now_ - start_);
  if (std::isinf(half_life_s_)) return age;
  // Integral over [start, now] of 2^-((now - t)/h) dt = (h / ln 2) * (1 - 2^-(age/h)).
  return half_life_s_ / std::numbers::ln2 * -std::expm1(-age / half_life_s_ * std::numbers::ln2);
}

inline bool HeavyHitters::Holds(const Entry& e, int32_t slot, uint64_t hash, const char* key,
                                uint32_t code) const {
  return e.hash == hash && e.key_code == code &&
         SameBytes(&keys_[static_cast<size_t>(slot) * options_.max_key_bytes], key,
                   std::min(code, options_.max_key_bytes));
}

inline int32_t HeavyHitters::FindCode(uint64_t hash, const char* key, uint32_t code,
                                      uint64_t first) const {
  const uint32_t tag = Tag(hash);
  for (uint64_t b = first;; b = (b + 1) & index_mask_) {
    const Bucket& bucket = index_[b];
    if (bucket.slot == kEmpty) return kEmpty;
    if (bucket.tag == tag && Holds(entries_[bucket.slot], bucket.slot, hash, key, code)) {
      return bucket.slot;
    }
  }
}

int32_t HeavyHitters::Find(uint64_t hash, std::string_view stored, bool truncated) const {
  return FindCode(hash, stored.data(),
                  truncated ? options_.max_key_bytes + 1 : static_cast<uint32_t>(stored.size()),
                  Home(hash, index_mask_));
}

void HeavyHitters::IndexInsert(uint64_t hash, uint32_t slot) {
  uint64_t b = Home(hash, index_mask_);
  while (index_[b].slot != kEmpty) b = (b + 1) & index_mask_;
  index_[b] = Bucket{Tag(hash), static_cast<int32_t>(slot)};
}

void HeavyHitters::IndexErase(uint64_t hash, uint32_t slot) {
  uint64_t i = Home(hash, index_mask_);
  while (index_[i].slot != static_cast<int32_t>(slot)) i = (i + 1) & index_mask_;
  // Backward-shift deletion: pull later members of the probe run into the hole, so lookups
  // never need tombstones.
  for (uint64_t j = (i + 1) & index_mask_; index_[j].slot != kEmpty; j = (j + 1) & index_mask_) {
    const uint64_t home = Home(entries_[index_[j].slot].hash, index_mask_);
    // Bucket j may move to i only if its home is not cyclically inside (i, j].
    const bool home_in_range = (i <= j) ? (i < home && home <= j) : (i < home || home <= j);
    if (home_in_range) continue;
    index_[i] = index_[j];
    i = j;
  }
  index_[i].slot = kEmpty;
}

void HeavyHitters::SiftDown(uint32_t pos) {
  HeapNode node = heap_[pos];
  for (;;) {
    uint32_t child = 2 * pos + 1;
    if (child >= size_) break;
    if (child + 1 < size_ && heap_[child + 1].upper < heap_[child].upper) ++child;
    if (heap_[child].upper >= node.upper) break;
    heap_[pos] = heap_[child];
    pos = child;
  }
  heap_[pos] = node;
}

void HeavyHitters::SiftUp(uint32_t pos) {
  HeapNode node = heap_[pos];
  while (pos > 0) {
    const uint32_t parent = (pos - 1) / 2;
    if (heap_[parent].upper <= node.upper) break;
    heap_[pos] = heap_[parent];
    pos = parent;
  }
  heap_[pos] = node;
}

void HeavyHitters::RefreshRoot() {
  // Each pass makes one node current; a node goes stale only through hits, so the work is
  // bounded by the hits since the last refresh (and is usually none: the weakest entries
  // are the ones that get no hits).
  for (;;) {
    const double upper = entries_[heap_[0].slot].upper;
    if (heap_[0].upper == upper) break;
    heap_[0].upper = upper;
    SiftDown(0);
  }
  SyncFloor();
}

void HeavyHitters::SetKey(uint32_t slot, std::string_view stored, bool truncated) {
  if (!stored.empty()) {  // an empty key's data() may be null: not for memcpy
    std::memcpy(&keys_[static_cast<size_t>(slot) * options_.max_key_bytes], stored.data(),
                stored.size());
  }
  entries_[slot].key_code =
      truncated ? options_.max_key_bytes + 1 : static_cast<uint32_t>(stored.size());
}

inline void HeavyHitters::UpdateHashedInline(uint64_t hash, std::string_view key, Op op,
                                             double weight) {
  // The common paths only: a hit in the key's home index bucket, and a miss whose home
  // bucket is empty. The others (the rest of a probe run, an admission) are
  // out-of-line calls, so the common paths keep a small frame.
  if (!(weight >= kMinWeight)) return;  // also NaN: such an event carries no weight
  weight = std::min(kMaxWeight, weight);
  const int o = static_cast<int>(op);
  // The decayed weight rounded to nearest, normal (factor_ >= 1, weight >= kMinWeight). The
  // decayed sums step two ulps outward, which covers the rounding of w and of the sum; the
  // raw sums, counts rather than bounds, round to nearest (see "Rounding" in heavy_hitters.h).
  const double w = weight * factor_;
  total_[o] = internal::AddUpStep2(total_[o], w);
  raw_total_[o] += weight;

  // The key's length, or max_key_bytes + 1 for a key too long to store whole (whose
  // max_key_bytes first bytes are compared, and its hash): one comparison with an entry's.
  const uint32_t code =
      static_cast<uint32_t>(std::min<size_t>(key.size(), size_t{options_.max_key_bytes} + 1));
  // The home bucket only (load <= 1/4: most keys sit there); UpdateProbe() walks the rest
  // of the probe run.
  const Bucket& bucket = index_[Home(hash, index_mask_)];
  if (bucket.slot == kEmpty) {
    UpdateMiss(hash, key.data(), code, op, w, weight);
    return;
  }
  if (bucket.tag == Tag(hash)) {
    Entry& e = entries_[bucket.slot];
    if (Holds(e, bucket.slot, hash, key.data(), code)) [[likely]] {
      AddHit(e, o, w, weight);
      return;
    }
  }
  UpdateProbe(hash, key.data(), code, op, w, weight);
}

inline void HeavyHitters::AddHit(Entry& e, int o, double w, double weight) {
  e.upper = internal::AddUpStep2(e.upper, w);
  e.weight[o] = internal::AddDownStep2(e.weight[o], w);
  e.raw[o] += weight;
  // The heap node lags; see HeapNode.
}

inline void HeavyHitters::UpdateMiss(uint64_t hash, const char* key, uint32_t code, Op op, double w,
                                     double weight) {
  // Depths 2 to CountMinSketch::kMaxUnrolledDepth inline; any other through a call, so that
  // its loop does not weigh on this path's frame. The sketch adds floor(x + 1) units for
  // x = w / unit: an integer above x, so at least the double after x, which is at or above the
  // exact product / unit (w is that rounded to nearest). The call adds ceil(x) units of w
  // stepped up.
  const double estimate = cms_.UpdateAnyInline<false>(hash, w);
  // admit_floor_ is the root's node value (<= the weakest entry's upper bound), or -1 while
  // the table has room: an estimate at or below it cannot be admitted, and the common miss
  // stops there.
  if (estimate > admit_floor_) [[unlikely]] {
    MaybeAdmit(hash, key, code, op, w, weight, estimate);
  }
}

void HeavyHitters::UpdateProbe(uint64_t hash, const char* key, uint32_t code, Op op, double w,
                               double weight) {
  // The home bucket holds another key (UpdateHashedInline()): the probe goes on from the
  // next one.
  const int32_t slot = FindCode(hash, key, code, (Home(hash, index_mask_) + 1) & index_mask_);
  if (slot != kEmpty) {
    AddHit(entries_[slot], static_cast<int>(op), w, weight);
    return;
  }
  UpdateMiss(hash, key, code, op, w, weight);
}

void HeavyHitters::Update(std::string_view key, Op op, double weight) {
  // Keys of up to 16 bytes hash inline (XXH3's short-key code); longer ones take a call
  // and the out-of-line body, so that this one keeps its lean frame.
  if (key.size() > 16) [[unlikely]] {
    UpdateLongKey(key, op, weight);
    return;
  }
  UpdateHashedInline(internal::HashKeyInline(key, options_.seed), key, op, weight);
}

void HeavyHitters::UpdateLongKey(std::string_view key, Op op, double weight) {
  UpdateHashed(internal::HashKeyLong(key, options_.seed), key, op, weight);
}

void HeavyHitters::UpdateHashed(uint64_t hash, std::string_view key, Op op, double weight) {
  UpdateHashedInline(hash, key, op, weight);
}

void HeavyHitters::MaybeAdmit(uint64_t hash, const char* key, uint32_t code, Op op, double weight,
                              double raw, double estimate) {
  if (size_ == options_.candidates) {
    RefreshRoot();
    // Both sides of the comparison are stored upper values, which a read widens alike: a
    // key whose estimate passes the weakest entry's is admitted, however large both are.
    if (!(estimate > heap_[0].upper)) return;
  }
  Admit(hash, StoredOf(key, code), code > options_.max_key_bytes, op, weight, raw, estimate);
}

void HeavyHitters::Admit(uint64_t hash, std::string_view stored, bool truncated, Op op,
                         double weight, double raw, double estimate) {
  uint32_t slot;
  uint32_t pos;
  if (size_ < options_.candidates) {
    slot = size_;
    pos = size_++;
  } else {
    // Evict the weakest entry; its upper bound goes to the sketch, so that the key's bound
    // outside the table stays >= its true weight.
    slot = heap_[0].slot;
    pos = 0;
    const Entry& old = entries_[slot];
    cms_.RaiseTo(old.hash, old.upper);
    IndexErase(old.hash, slot);
  }
  Entry& e = entries_[slot];
  e.hash = hash;
  // The sketch's estimate already includes this event; never report less than was seen.
  e.upper = std::max(estimate, internal::NextUp(weight));  // weight: rounded to nearest
  e.weight[0] = e.weight[1] = 0;
  e.raw[0] = e.raw[1] = 0;
  e.weight[static_cast<int>(op)] = internal::NextDown(weight);
  e.raw[static_cast<int>(op)] = raw;
  e.admitted_ns = ToNanos(now_);
  SetKey(slot, stored, truncated);
  IndexInsert(hash, slot);
  heap_[pos] = HeapNode{e.upper, slot};
  // A new leaf may be lighter than its parent; a replaced root heavier than its children.
  if (pos == 0) {
    SiftDown(0);
  } else {
    SiftUp(pos);
  }
  SyncFloor();
}

double HeavyHitters::UpperStored(uint64_t hash, std::string_view key, int32_t* slot) const {
  const bool truncated = key.size() > options_.max_key_bytes;
  *slot = Find(hash, truncated ? key.substr(0, options_.max_key_bytes) : key, truncated);
  if (*slot != kEmpty) return entries_[*slot].upper;
  return cms_.Estimate(hash);
}

double HeavyHitters::UpperBoundHashed(uint64_t hash, std::string_view key) const {
  int32_t slot;
  return internal::DivUp(UpperStored(hash, key, &slot), factor_);
}

double HeavyHitters::LowerBoundHashed(uint64_t hash, std::string_view key) const {
  // A key outside the table has no lower bound but 0.
  int32_t slot;
  UpperStored(hash, key, &slot);
  if (slot == kEmpty) return 0;
  const Entry& e = entries_[slot];
  return LowerRead(internal::AddDown(e.weight[0], e.weight[1]));
}

double HeavyHitters::Total() const {
  return internal::DivUp(internal::AddUp(total_[0], total_[1]), factor_);
}

double HeavyHitters::Total(Op op) const {
  return internal::DivUp(total_[static_cast<int>(op)], factor_);
}

double HeavyHitters::SketchUnit() const { return internal::DivUp(cms_.scale(), factor_); }

double HeavyHitters::LowerRead(double stored) const { return internal::DivDown(stored, factor_); }

HeavyHitter HeavyHitters::Report(uint32_t slot) const {
  HeavyHitter h;
  Report(slot, &h);
  return h;
}

void HeavyHitters::Report(uint32_t slot, HeavyHitter* out) const {
  const Entry& e = entries_[slot];
  HeavyHitter& h = *out;
  h.key.assign(StoredKey(slot));
  h.truncated = e.key_code > options_.max_key_bytes;
  h.hash = e.hash;
  h.estimate = internal::DivUp(e.upper, factor_);
  for (int o = 0; o < kNumOps; ++o) {
    h.weight[o] = LowerRead(e.weight[o]);
    h.raw_weight[o] = e.raw[o];
  }
  h.lower_bound = internal::AddDown(h.weight[0], h.weight[1]);
  h.admitted = absl::FromUnixNanos(e.admitted_ns);
}

void HeavyHitters::ForEach(absl::FunctionRef<void(const HeavyHitter&)> fn) const {
  HeavyHitter h;
  h.key.reserve(options_.max_key_bytes);
  for (uint32_t slot = 0; slot < size_; ++slot) {
    Report(slot, &h);
    fn(h);
  }
}

std::vector<HeavyHitter> HeavyHitters::TopK(size_t n) const {
  // Slots in use are 0..size_-1; heap nodes may lag, so read the entries' upper bounds.
  std::vector<HeapNode> nodes(size_);
  for (uint32_t slot = 0; slot < size_; ++slot) nodes[slot] = HeapNode{entries_[slot].upper, slot};
  n = std::min<size_t>(n, nodes.size());
  // Ties break by hash, not slot: slots are renumbered by Merge() and Deserialize(), and the
  // order of equal keys must not change when the tracker's content does not.
  auto heavier = [this](const HeapNode& a, const HeapNode& b) {
    if (a.upper != b.upper) return a.upper > b.upper;
    const uint64_t ha = entries_[a.slot].hash, hb = entries_[b.slot].hash;
    return ha != hb ? ha < hb : a.slot < b.slot;
  };
  std::partial_sort(nodes.begin(), nodes.begin() + n, nodes.end(), heavier);
  std::vector<HeavyHitter> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(Report(nodes[i].slot));
  return out;
}

size_t HeavyHitters::MemoryBytes() const {
  return sizeof(*this) + cms_.bytes() + entries_.capacity() * sizeof(Entry) + keys_.capacity() +
         heap_.capacity() * sizeof(HeapNode) + index_.capacity() * sizeof(Bucket);
}

absl::Status HeavyHitters::Merge(const HeavyHitters& other) {
  const HeavyHittersOptions& a = options_;
  const HeavyHittersOptions& b = other.options_;
  if (a.candidates != b.candidates || a.max_key_bytes != b.max_key_bytes ||
      a.half_life != b.half_life || a.seed != b.seed || cms_.width() != other.cms_.width() ||
      cms_.depth() != other.cms_.depth()) {
    return absl::InvalidArgumentError(
        "cannot merge heavy-hitter trackers of different options or seeds");
  }
  // Bring both to the later clock, then express the other's values against our landmark:
  // a stored value S at landmark L' is S * 2^((L' - L)/h) at landmark L.
  Advance(other.now_);
  double scale = 1.0;
  if (!std::isinf(half_life_s_)) {
    scale = std::exp2(absl::ToDoubleSeconds(other.landmark_ - landmark_) / half_life_s_);
  }

  // Candidates from both tables, with both sides' bounds read before the sketches merge.
  struct Merged {
    uint64_t hash;
    std::string key;
    bool truncated;
    double upper;
    double weight[kNumOps];
    double raw[kNumOps];
    int64_t admitted_ns;
  };
  std::vector<Merged> merged;
  merged.reserve(size_ + other.size_);
  for (uint32_t i = 0; i < size_; ++i) {
    const uint32_t slot = heap_[i].slot;
    const Entry& e = entries_[slot];
    Merged m{e.hash, std::string(StoredKey(slot)), Truncated(slot), e.upper, {}, {}, e.admitted_ns};
    int32_t other_slot =
        other.FindCode(e.hash, m.key.data(), e.key_code, Home(e.hash, other.index_mask_));
    if (other_slot != kEmpty) {
      const Entry& o = other.entries_[other_slot];
      m.upper = internal::AddUp(m.upper, internal::MulUp(o.upper, scale));
      for (int k = 0; k < kNumOps; ++k) {
        m.weight[k] = internal::AddDown(e.weight[k], internal::MulDown(o.weight[k], scale));
        m.raw[k] = e.raw[k] + o.raw[k];
      }
      m.admitted_ns = std::min(e.admitted_ns, o.admitted_ns);
    } else {
      m.upper = internal::AddUp(m.upper, internal::MulUp(other.cms_.Estimate(e.hash), scale));
      for (int k = 0; k < kNumOps; ++k) {
        m.weight[k] = e.weight[k];
        m.raw[k] = e.raw[k];
      }
    }
    merged.push_back(std::move(m));
  }
  for (uint32_t i = 0; i < other.size_; ++i) {
    const uint32_t slot = other.heap_[i].slot;
    const Entry& o = other.entries_[slot];
    const std::string_view key = other.StoredKey(slot);
    if (FindCode(o.hash, key.data(), o.key_code, Home(o.hash, index_mask_)) != kEmpty) {
      continue;  // merged above
    }
    const double upper = internal::AddUp(internal::MulUp(o.upper, scale), cms_.Estimate(o.hash));
    Merged m{o.hash, std::string(key), other.Truncated(slot), upper, {}, {}, o.admitted_ns};
    for (int k = 0; k < kNumOps; ++k) {
      m.weight[k] = internal::MulDown(o.weight[k], scale);
      m.raw[k] = o.raw[k];
    }
    merged.push_back(std::move(m));
  }

  if (absl::Status s = cms_.Merge(other.cms_, scale); !s.ok()) return s;
  if (other.counted()) start_ = counted() ? std::min(start_, other.start_) : other.start_;
  for (int k = 0; k < kNumOps; ++k) {
    total_[k] = internal::AddUp(total_[k], internal::MulUp(other.total_[k], scale));
    raw_total_[k] += other.raw_total_[k];
  }

  // Keep the heaviest; hand the rest back to the sketch as upper bounds.
  std::sort(merged.begin(), merged.end(),
            [](const Merged& x, const Merged& y) { return x.upper > y.upper; });
  const size_t keep = std::min<size_t>(merged.size(), options_.candidates);
  for (size_t i = keep; i < merged.size(); ++i) cms_.RaiseTo(merged[i].hash, merged[i].upper);
  std::fill(index_.begin(), index_.end(), Bucket{0, kEmpty});
  size_ = 0;
  for (size_t i = 0; i < keep; ++i) {
    const Merged& m = merged[i];
    const uint32_t slot = size_++;
    Entry& e = entries_[slot];
    e.hash = m.hash;
    e.upper = m.upper;
    for (int k = 0; k < kNumOps; ++k) {
      e.weight[k] = m.weight[k];
      e.raw[k] = m.raw[k];
    }
    e.admitted_ns = m.admitted_ns;
    SetKey(slot, m.key, m.truncated);
    IndexInsert(m.hash, slot);
    heap_[slot] = HeapNode{m.upper, slot};
  }
  for (uint32_t i = size_ / 2; i-- > 0;) SiftDown(i);
  SyncFloor();
  return absl::OkStatus();
}

// Layout (after the common magic/version header, all little-endian):
//   u32 candidates | u32 max_key_bytes | u32 sketch_depth | u64 sketch_bytes | i64 half_life_ns
//     (-1: no decay) | u64 seed | i64 start_ns | i64 landmark_ns | i64 now_ns
//   f64 total[2] | f64 raw_total[2] | versions 4 on: u64 roundings (written 0, see kVersion)
//   u32 cms_width | versions 6 on: f64 cms_scale | u32 cells[width * depth]
//                 | versions 2 to 5: f64 counters[width * depth]
//   u32 entries, then per entry:
//     u64 hash | f64 upper | f64 weight[2] | f64 raw[2] | i64 admitted_ns | u8 truncated
//     | u32 key_len | key bytes
//   versions 3 and 4 only: u32 lobby, then for each way of the ceil(lobby / 4) buckets in
//     order: u64 hash | f64 upper  (a free way: both 0)
//   u64 checksum
std::string HeavyHitters::Serialize() const {
  internal::ByteWriter w(kMagic, kVersion);
  w.U32(options_.candidates);
  w.U32(options_.max_key_bytes);
  w.U32(options_.sketch_depth);
  w.U64(options_.sketch_bytes);
  w.I64(options_.half_life == absl::InfiniteDuration()
            ? -1
            : absl::ToInt64Nanoseconds(options_.half_life));
  w.U64(options_.seed);
  w.I64(ToNanos(start_));
  w.I64(ToNanos(landmark_));
  w.I64(ToNanos(now_));
  for (double t : total_) w.F64(t);
  for (double t : raw_total_) w.F64(t);
  w.U64(0);  // no roundings to count (kVersion)
  w.U32(cms_.width());
  w.F64(cms_.scale());
  for (CountMinSketch::Counter c : cms_.counters()) w.U32(c);
  w.U32(size_);
  // In slot order (slots in use are 0..size_-1), which Deserialize() restores, so a
  // restored tracker serialises to the same bytes.
  for (uint32_t slot = 0; slot < size_; ++slot) {
    const Entry& e = entries_[slot];
    w.U64(e.hash);
    w.F64(e.upper);
    for (double v : e.weight) w.F64(v);
    for (double v : e.raw) w.F64(v);
    w.I64(e.admitted_ns);
    w.U8(Truncated(slot) ? 1 : 0);
    w.U32(static_cast<uint32_t>(StoredKey(slot).size()));
    w.Bytes(StoredKey(slot));
  }
  return std::move(w).Finish();
}

absl::StatusOr<HeavyHitters> HeavyHitters::Deserialize(std::string_view bytes, absl::Time now) {
  internal::ByteReader r;
  uint16_t version;
  if (absl::Status s =
          internal::ByteReader::Open(bytes, kMagic, kOldestVersion, kVersion, &r, &version);
      !s.ok()) {
    return s;
  }
  auto corrupt = [](absl::string_view what) {
    return absl::DataLossError(absl::StrCat("heavy hitters: ", what));
  };
  HeavyHittersOptions o;
  uint64_t sketch_bytes;
  int64_t half_life_ns, start_ns, landmark_ns, now_ns;
  if (!r.U32(&o.candidates) || !r.U32(&o.max_key_bytes) || !r.U32(&o.sketch_depth) ||
      !r.U64(&sketch_bytes) || !r.I64(&half_life_ns) || !r.U64(&o.seed) || !r.I64(&start_ns) ||
      !r.I64(&landmark_ns) || !r.I64(&now_ns)) {
    return corrupt("short header");
  }
  o.sketch_bytes = sketch_bytes;
  o.half_life = half_life_ns == -1 ? absl::InfiniteDuration() : absl::Nanoseconds(half_life_ns);
  if (sketch_bytes > (uint64_t{1} << 32)) return corrupt("sketch budget out of range");
  // The sketch's counters are in the buffer: make sure they all are before anything is
  // allocated for them (a hostile header could otherwise ask for 8 GiB).
  // Versions 2 to 5 saved f64 counters, as many as the budget held at 8 bytes each; 6 saves
  // a f64 scale and u32 cells.
  const size_t saved_cell = version >= kFirstWithCells ? sizeof(uint32_t) : sizeof(double);
  uint64_t saved_width = 0;
  if (o.sketch_depth >= 1 && o.sketch_depth <= CountMinSketch::kMaxDepth) {
    saved_width =
        std::min<uint64_t>(sketch_bytes / o.sketch_depth / saved_cell, CountMinSketch::kMaxWidth);
    if (version < kFirstWithAnyWidth) saved_width = std::bit_floor(saved_width);
    // Totals, the rounding count (versions 4 on), the width, the scale (6 on), the cells,
    // the entry count.
    const uint64_t needed = 4 * sizeof(double) + (version >= 4 ? sizeof(uint64_t) : 0) +
                            sizeof(uint32_t) + (version >= kFirstWithCells ? sizeof(double) : 0) +
                            saved_width * o.sketch_depth * saved_cell + sizeof(uint32_t);
    if (r.remaining() < needed) return corrupt("buffer too short for its sketch");
  }
  if (absl::Status s = o.Validate(); !s.ok()) return corrupt(s.message());
  absl::StatusOr<HeavyHitters> hh = Create(o, absl::FromUnixNanos(start_ns));
  if (!hh.ok()) return corrupt(hh.status().message());
  if (!(start_ns <= now_ns && landmark_ns <= now_ns)) return corrupt("clock out of order");
  hh->landmark_ = absl::FromUnixNanos(landmark_ns);
  hh->now_ = hh->landmark_;
  for (double& t : hh->total_) {
    if (!r.F64(&t) || !Loadable(t)) return corrupt("bad total");
  }
  for (double& t : hh->raw_total_) {
    if (!r.F64(&t) || !Loadable(t)) return corrupt("bad raw total");
  }
  // A build that rounded its sums to nearest saved R, the roundings it made since it last
  // widened its values: each stored upper value S then bounds its exact value U by
  // S >= U * keep, and each lower value L its exact L' by L <= L' / keep, with
  // keep = 1 - R * 2^-53 (exact: R <= 2^32), by Bernoulli's inequality and
  // e^x <= 1 / (1 - x). Dividing the upper values by keep (rounding up) and multiplying the
  // lower ones by it (rounding down), once, below, makes them bounds as this build keeps
  // them. (The raw sums are counts, not bounds, in both builds: they load as saved.)
  uint64_t roundings = 0;
  if (version >= 4) {
    if (!r.U64(&roundings) || roundings > kMaxLoadedRoundings) {
      return corrupt("rounding count out of range");
    }
  }
  const double keep = 1.0 - static_cast<double>(roundings) * 0x1p-53;
  uint32_t width;
  if (!r.U32(&width) || width != saved_width || width == 0) {
    return corrupt("sketch width mismatch");
  }
  CountMinSketch& cms = hh->cms_;
  if (version >= kFirstWithCells) {
    double scale;
    if (!r.F64(&scale) || !Loadable(scale * CountMinSketch::kCellMax) ||
        !(scale >= CountMinSketch::kMinScale && scale <= CountMinSketch::kMaxScale) ||
        std::bit_cast<uint64_t>(scale) % (uint64_t{1} << 52) != 0) {
      return corrupt("sketch scale out of range");
    }
    cms.SetScale(scale);
    if (saved_width == cms.width()) {
      for (CountMinSketch::Counter& c : cms.counters_) r.U32(&c);  // the length was checked
    } else {
      // A version-6 sketch of a power-of-two width, narrower than the budget now holds: every
      // cell of a row takes the row's largest (see kVersion).
      std::vector<CountMinSketch::Counter> row_max(o.sketch_depth, 0);
      for (uint64_t i = 0; i < saved_width * o.sketch_depth; ++i) {
        CountMinSketch::Counter c = 0;
        r.U32(&c);
        row_max[i / saved_width] = std::max(row_max[i / saved_width], c);
      }
      for (size_t i = 0; i < cms.counters_.size(); ++i) {
        cms.counters_[i] = row_max[i / cms.width()];
      }
    }
  } else {
    // Double counters, rounded up to cells. A saved sketch of half the width (its counters
    // were twice the size of a cell) fills the new one's columns j and j + saved width: both
    // map to the saved column j under the saved mask (Column()), so every key reads at least
    // what it read before.
    std::vector<double> saved(saved_width * o.sketch_depth);
    for (double& c : saved) {
      if (!r.F64(&c) || !Loadable(c)) return corrupt("bad sketch counter");
    }
    // A new width that is not a power of two maps keys by a multiply-shift, unrelated to the
    // saved mask: each cell then takes its row's largest saved counter.
    const uint64_t new_width = cms.width();
    std::vector<double> row_max(o.sketch_depth, 0);
    for (size_t i = 0; i < saved.size(); ++i) {
      row_max[i / saved_width] = std::max(row_max[i / saved_width], saved[i]);
    }
    const bool masked = std::has_single_bit(new_width) && new_width % saved_width == 0;
    cms.Revalue([&](size_t i) {
      const uint64_t row = i / new_width, column = i % new_width;
      return masked ? saved[row * saved_width + (column & (saved_width - 1))] : row_max[row];
    });
  }
  uint32_t n;
  if (!r.U32(&n) || n > o.candidates) return corrupt("bad entry count");
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t hash;
    double upper, weight[kNumOps], raw[kNumOps];
    int64_t admitted_ns;
    uint8_t truncated;
    uint32_t key_len;
    std::string_view key;
    if (!r.U64(&hash) || !r.F64(&upper) || !r.F64(&weight[0]) || !r.F64(&weight[1]) ||
        !r.F64(&raw[0]) || !r.F64(&raw[1]) || !r.I64(&admitted_ns) || !r.U8(&truncated) ||
        !r.U32(&key_len) || key_len > o.max_key_bytes || !r.Bytes(key_len, &key)) {
      return corrupt("short or malformed entry");
    }
    // The key's upper bound is at least its lower bound in every tracker, both widened by
    // the saved roundings (as the saving build read them), so no other slack is allowed.
    if (!Loadable(upper) || !Loadable(weight[0]) || !Loadable(weight[1]) || !Loadable(raw[0]) ||
        !Loadable(raw[1]) || truncated > 1 ||
        internal::DivUp(upper, keep) <
            internal::MulDown(internal::AddDown(weight[0], weight[1]), keep)) {
      return corrupt("entry values out of range");
    }
    if (!truncated && HashKey(key, o.seed) != hash) return corrupt("entry hash mismatch");
    if (truncated && key_len != o.max_key_bytes) return corrupt("truncated key of wrong size");
    if (hh->Find(hash, key, truncated) != kEmpty) return corrupt("duplicate entry");
    const uint32_t slot = hh->size_++;
    Entry& e = hh->entries_[slot];
    e.hash = hash;
    e.upper = upper;
    for (int k = 0; k < kNumOps; ++k) {
      e.weight[k] = weight[k];
      e.raw[k] = raw[k];
    }
    e.admitted_ns = admitted_ns;
    hh->SetKey(slot, key, truncated != 0);
    hh->IndexInsert(hash, slot);
    hh->heap_[slot] = HeapNode{upper, slot};
  }
  if (version >= kFirstWithLobby && version <= kLastWithLobby) {
    uint32_t lobby;
    if (!r.U32(&lobby)) return corrupt("short lobby");
    if (lobby > kMaxLoadedLobby) return corrupt("lobby out of range");
    const uint64_t ways = (uint64_t{lobby} + kLobbyWays - 1) / kLobbyWays * kLobbyWays;
    if (r.remaining() != ways * (sizeof(uint64_t) + sizeof(double))) {
      return corrupt("lobby of the wrong length");
    }
    // Each used way bounds the keys of its hash outside the table: the sketch takes it over.
    for (uint64_t i = 0; i < ways; ++i) {
      uint64_t hash = 0;
      double upper = 0;
      r.U64(&hash);  // cannot fail: the length was checked
      r.F64(&upper);
      if (!Loadable(upper)) return corrupt("lobby bound out of range");
      if (upper == 0) {
        if (hash != 0) return corrupt("free lobby way with a hash");
        continue;
      }
      hh->cms_.RaiseTo(hash, upper);
    }
  }
  if (r.remaining() != 0) return corrupt("trailing bytes");
  for (uint32_t i = hh->size_ / 2; i-- > 0;) hh->SiftDown(i);
  hh->SyncFloor();
  if (roundings > 0) {
    // The saved count's widening, once (above); ScaleStored() keeps the heap's order.
    hh->ScaleStored([keep](double s) { return internal::DivUp(s, keep); },
                    [keep](double s) { return internal::MulDown(s, keep); });
  }
  // Only now that every value is loaded against the saved landmark may the clock move
  // (a move of more than kRescaleExponent half-lives rescales them).
  hh->Advance(absl::FromUnixNanos(now_ns));
  // Then the whole time line moves to `now`: now_ - landmark_ is kept, so the decay factor
  // and every stored value stay as they are. Start and landmark are at or before the saved
  // clock, so checking the moved ones and `now` checks them all; admission times (reports
  // only) saturate.
  if (now == absl::InfinitePast() || now == absl::InfiniteFuture()) {
    return absl::InvalidArgumentError("heavy hitters: cannot place a tracker at an infinite time");
  }
  const absl::Duration shift = now - hh->now_;
  const absl::Time lowest = absl::FromUnixNanos(std::numeric_limits<int64_t>::min());
  const absl::Time highest = absl::FromUnixNanos(std::numeric_limits<int64_t>::max());
  if (now > highest || hh->start_ + shift < lowest || hh->landmark_ + shift < lowest) {
    return absl::InvalidArgumentError(absl::StrCat("heavy hitters: placing the saved clock at ",
                                                   absl::FormatTime(now),
                                                   " moves its time line out of range"));
  }
  hh->now_ = now;
  hh->landmark_ += shift;
  hh->start_ += shift;
  for (uint32_t slot = 0; slot < hh->size_; ++slot) {
    int64_t& ns = hh->entries_[slot].admitted_ns;
    ns = ToNanos(absl::FromUnixNanos(ns) + shift);  // saturates, never wraps
  }
  return hh;
}

}  // namespace hotkey::sketch
