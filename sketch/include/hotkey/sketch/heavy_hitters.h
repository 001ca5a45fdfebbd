// HeavyHitters: the top keys by share of recent traffic, in fixed memory.
//
// Two tiers, filter first: the Augmented Sketch (Roy, Khan & Alonso, SIGMOD 2016):
//   * a table of `candidates` keys (about 2K for a top-K) holding each key's bytes, an upper
//     bound on its weight, and the weight seen since it was admitted (a lower bound), split
//     by op (read/write); an open-addressing index by hash (8-byte buckets holding 32 bits of
//     the hash, load at most 1/4) finds a key, and a min-heap by upper bound finds the
//     weakest entry;
//   * a count-min sketch (count_min.h) for every other key.
// A table hit adds to its entry and stops: the heap node lags (see HeapNode). A miss adds to
// the sketch and compares the new estimate with the weakest entry's node; only an estimate
// that passes it leaves the common path. A key is admitted when its sketch estimate beats
// the weakest entry's upper bound; the evicted entry's bound goes back to the sketch
// (RaiseTo), so every bound holds across the move.
//
// (A keyless "lobby" tier, after the Cuckoo Heavy Keeper's, sat between the two until format
// version 5: it halved the update rate and lifted precision on one real trace out of two
// (docs/benchmarks/tracker.md). A saved tracker with a lobby loads with its ways handed to
// the sketch.)
//
// Guarantees. For every key k and any stream of weights in [kMinWeight, kMaxWeight], with
// decay on or off, where true(k) is the exact (real-number) sum of k's decayed event weights
// (each event's weight times the tracker's decay factor, below):
//   LowerBound(k) <= true(k) <= UpperBound(k) = Estimate(k),
//   sum over k of true(k) <= Total(),
// exactly, whatever the rounding (tests/sketch/heavy_hitters_rounding_test.cc,
// saturation_test.cc). For a key outside the table, with probability >= 1 - delta (the
// count-min bound, epsilon = e / width; heavy_hitters_test.cc):
//   UpperBound(k) - true(k) <= epsilon * Total() + the sketch's rounding to whole units,
// which is less than two SketchUnit()s for each add to k's cells (floor(w / unit + 1) units
// for a weight w, count_min_inline.h) and one for each division of the cells to make room
// (count_min.h); the sketch's unit is at most 2^-30 of its largest cell.
//
// Rounding: every stored weight is an upper value (an entry's bound, the totals, the
// sketch's cells) or a lower one (an entry's weights since admission), and every sum,
// product and quotient that makes one rounds toward its side (rounding.h), so that with U and
// L what exact arithmetic would hold, the stored S and L' have S >= U and L' <= L; a read
// rounds outward again. Merges, rescales, loads and reads find the sign of each error and
// step only when it is not zero. The per-event path does not look: the decayed weight
// w = weight * factor is rounded to nearest, each sum with it is rounded to nearest and
// stepped two ulps outward (AddUpStep2/AddDownStep2: one ulp for the sum's rounding, one
// for w's), and an admitted key's bound and weight start one ulp outward of w. Each event
// thus moves a value it adds to by at most a relative 2^-50 beyond the exact sum, and a value
// that n events added to from 0, with no merge, rescale or load in between, holds
//   U <= S < U * (1 + 2^-50)^n,   L * (1 - 2^-50)^n < L' <= L,
// about n * 2^-50 relative (2^-10 after 2^40 events); an entry's bound starts from the
// sketch's estimate instead of 0 and the same factor applies to that estimate plus what the
// n events added. The raw sums (RawTotal(), raw_weight) are counts, not bounds: no
// guarantee above rests on them, their readers take differences of them (rates), and they
// are rounded to nearest, so sums of integer weights are exact up to 2^53
// (heavy_hitters_rounding_test.cc pins all of these).
//
// Time decay: exponential, with half-life h, by forward decay (Cormode, Shkapenyuk,
// Srivastava & Xu, "Forward Decay", ICDE 2009). An event at time t adds w * 2^((t - L)/h)
// against a landmark L, so old weight is never touched; every reported figure is divided by
// 2^((now - L)/h). These factors, as computed (exp2 of the elapsed half-lives), define an
// event's decayed weight in the bounds above. When the factor passes 2^kRescaleExponent every
// value is scaled down (rounding outward) and L moves to now: O(memory) once per
// kRescaleExponent half-lives, O(1) per update otherwise. The sketch's unit follows the
// factor: between rescales, forward-decayed values grow with it, and the unit doubles
// whenever a cell would pass 2^32 - 1 units (about once a half-life under steady traffic,
// O(sketch cells) each time); a rescale writes every cell anew in the smallest unit that
// holds the largest, rounding up. Time only moves through Advance():
// the caller's clock (a monotonic one: a reading earlier than the last is ignored), never a
// global. A tracker loaded from another process's state is placed on the caller's clock by
// Deserialize(bytes, now).
//
// Cost: Update() takes no allocation, lock or exception (heavy_hitters_test.cc counts the
// allocations). Memory is fixed at Create(), whatever the number of distinct keys:
// MemoryBytes() (heavy_hitters_test.cc). Figures (instructions an update, updates per
// CPU-second, precision at a memory budget) are in docs/benchmarks/tracker.md.
//
// Keys are arbitrary bytes. A key longer than `max_key_bytes` is stored as its first
// max_key_bytes bytes plus its 64-bit hash (HeavyHitter::truncated), not rejected.
//
// Thread-compatible, not thread-safe: one writer. Give each thread its own instance and
// Merge() them (same options and seed) to combine.

#ifndef HOTKEY_SKETCH_HEAVY_HITTERS_H_
#define HOTKEY_SKETCH_HEAVY_HITTERS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/sketch/count_min.h"
#include "hotkey/sketch/hash.h"
#include "hotkey/sketch/op.h"

namespace hotkey::sketch {

struct HeavyHittersOptions {
  // The defaults are the daemon's (config::TrackOptions reads them from here). The shape
  // (candidates, sketch bytes, depth) is the one a sweep of shapes within the daemon's
  // tracker budget, at its key bytes and half-life, found most accurate on the worst of
  // skewed and flat streams (docs/benchmarks/tracker.md, `hotkey-bench-sketch --shapes`): on
  // flat traffic the top keys' rank is decided by the count-min's width, which a row fewer
  // widens within the same bytes, while a table of a few keys more than the top 100 holds it.
  // Table slots: how many keys are tracked exactly. A top-K needs more than K; the default
  // is measured on a top 100 (docs/benchmarks/tracker.md).
  uint32_t candidates = 104;
  // Count-min budget in bytes, and its rows (delta = e^-depth). The width is the most columns
  // of 4-byte cells that fit; a width that is not a power of two maps by a multiply-shift.
  size_t sketch_bytes = 52 * 1024;
  uint32_t sketch_depth = 2;
  // Bytes of a key kept in the table; longer keys are kept truncated, plus their hash.
  uint32_t max_key_bytes = 128;
  // Exponential decay half-life; absl::InfiniteDuration() turns decay off.
  absl::Duration half_life = absl::Milliseconds(500);
  // Hash seed: sketches merge only with the same seed.
  uint64_t seed = kDefaultSeed;

  absl::Status Validate() const;
  friend bool operator==(const HeavyHittersOptions&, const HeavyHittersOptions&) = default;
};

// One tracked key, as reported by TopK() and ForEach(). Weights are decayed to the time of the last
// Advance() unless named raw.
struct HeavyHitter {
  std::string key;         // the stored bytes: the whole key, or its prefix if truncated
  bool truncated = false;  // the key was longer than max_key_bytes
  uint64_t hash = 0;
  double estimate = 0;                  // upper bound on the key's decayed weight
  double lower_bound = 0;               // decayed weight seen since admission
  double weight[kNumOps] = {0, 0};      // decayed weight since admission, by op
  double raw_weight[kNumOps] = {0, 0};  // undecayed weight since admission, by op
  absl::Time admitted;                  // when the key entered the table
};

class HeavyHitters {
 public:
  // Bound on a serialised tracker's table: protects Deserialize from absurd sizes.
  static constexpr uint32_t kMaxCandidates = 1u << 20;
  static constexpr uint32_t kMaxKeyBytes = 1u << 16;
  // Bound on candidates * max_key_bytes, the key table's size: each factor alone is
  // bounded, but their product would otherwise reach 64 GiB.
  static constexpr uint64_t kMaxTableBytes = uint64_t{256} << 20;
  // Largest weight of one event; larger ones count as this. 1e15 is the daemon's largest
  // (a weight of 1e6 at a sampling rate of 1e-9). With the decay factor's 2^40 on top an
  // event adds at most kMaxWeight * 2^40 < 1.2e27, so a double (max 1.8e308) cannot overflow.
  static constexpr double kMaxWeight = 1e15;
  // Smallest weight of one event; smaller ones are ignored. It keeps every event's decayed
  // weight (weight times a decay factor >= 1) a normal double, whose rounding errs by a
  // relative 2^-53 at most (a subnormal's may err by all of it). Any weight of at least
  // 2^-1022 would do; 2^-900 is a margin, far below any weight that counts traffic.
  static constexpr double kMinWeight = 0x1p-900;
  // Rescale when the decay factor passes 2^40: far below double's 2^1023 limit, and rare
  // (once per 40 half-lives).
  static constexpr double kRescaleExponent = 40;

  // A tracker whose clock starts at `now`.
  static absl::StatusOr<HeavyHitters> Create(const HeavyHittersOptions& options, absl::Time now);

  HeavyHitters(HeavyHitters&&) = default;
  HeavyHitters& operator=(HeavyHitters&&) = default;
  HeavyHitters(const HeavyHitters&) = default;
  HeavyHitters& operator=(const HeavyHitters&) = default;

  // Moves the clock to `now`: later updates count as happening then. A `now` earlier than
  // the clock is ignored (time never runs backwards inside the tracker).
  void Advance(absl::Time now);

  // Counts one event of `weight` for `key`: weights above kMaxWeight count as kMaxWeight,
  // and a weight below kMinWeight (2^-900: not positive, or nearly so) or NaN is ignored.
  // No allocation, no exceptions (heavy_hitters_test.cc). A key of up to 16 bytes is hashed
  // inline; a longer one takes a call.
  void Update(std::string_view key, Op op, double weight = 1.0);
  // The same with the key's hash already computed (HashKey(key, options().seed)).
  void UpdateHashed(uint64_t hash, std::string_view key, Op op, double weight);

  // Decayed weight of `key`: Estimate = UpperBound >= true >= LowerBound (see above).
  double Estimate(std::string_view key) const { return UpperBound(key); }
  double UpperBound(std::string_view key) const {
    return UpperBoundHashed(HashKey(key, options_.seed), key);
  }
  double LowerBound(std::string_view key) const {
    return LowerBoundHashed(HashKey(key, options_.seed), key);
  }
  // The same for a key whose events were given to UpdateHashed() with `hash`.
  double UpperBoundHashed(uint64_t hash, std::string_view key) const;
  double LowerBoundHashed(uint64_t hash, std::string_view key) const;

  // The count-min sketch's unit (count_min.h) in decayed units, rounded up: an add to the
  // sketch raises a key outside the table by less than two units beyond its weight, a
  // division of its cells to make room by less than one, and an admitted key's bound starts
  // there. For tests.
  double SketchUnit() const;

  // Decayed weight of all events, and by op: upper bounds on the true totals (see above).
  double Total() const;
  double Total(Op op) const;
  // Undecayed weight of all events ever counted, by op: a count rounded to nearest, exact
  // while the sum of the weights is a double (integer weights, up to 2^53).
  double RawTotal(Op op) const { return raw_total_[static_cast<int>(op)]; }

  // The additive error bound for keys outside the table: epsilon * Total(), which holds
  // with probability >= 1 - delta, the sketch's rounding to whole units aside (see above).
  double ErrorBound() const { return cms_.epsilon() * Total(); }

  // How many seconds of steady traffic the decayed weights represent now: a key at a steady
  // r events/s has weight r * DecayedWindowSeconds(). The integral of 2^-(now - t)/h from
  // the first event to now, so it is right from the first second of traffic, not only
  // after many half-lives, and idle time before the first event does not dilute it.
  double DecayedWindowSeconds() const;

  // The `n` heaviest tracked keys by Estimate(), heaviest first. Allocates; not for the
  // per-event path.
  std::vector<HeavyHitter> TopK(size_t n) const;
  // Calls `fn` once for every tracked key, in no particular order, with what TopK() would
  // report for it: for a reader that needs every key but not their order (TopK sorts).
  // One HeavyHitter is reused for every call, its key's buffer too (max_key_bytes at most),
  // so the visit allocates once, not per key: copy what outlives the call.
  void ForEach(absl::FunctionRef<void(const HeavyHitter&)> fn) const;
  size_t size() const { return size_; }

  // Adds `other` (same options, else an error) into this tracker. The result tracks the
  // union of both tables' keys, keeping the heaviest, and its bounds still hold: the keys
  // left out go back to the sketch (RaiseTo). Allocates a list of both tables' keys.
  absl::Status Merge(const HeavyHitters& other);

  // A versioned, checksummed byte string; Deserialize() returns an error for any buffer
  // that is truncated, corrupt, or of another version, never undefined behaviour. Versions
  // 2 to 6 still load (a lobby they hold is handed to the sketch, and their counters are
  // rounded up into the 4-byte cells of a sketch as wide as the budget now holds, keeping
  // every bound; serialize_test.cc).
  std::string Serialize() const;
  // The saved tracker, its clock placed at `now`: its whole time line (clock, decay
  // landmark, start and admission times) moves by `now` minus the saved clock, so that the
  // saved clock readings (another process's) become readings of the caller's clock.
  // Weights and bounds are those saved; decay goes on from `now` as it would have gone on
  // from the saved clock (Advance() the result over any downtime). An error also when
  // `now` is infinite or the moved time line leaves the range of int64 Unix nanoseconds.
  static absl::StatusOr<HeavyHitters> Deserialize(std::string_view bytes, absl::Time now);

  // Bytes of memory held, fixed at Create().
  size_t MemoryBytes() const;
  const HeavyHittersOptions& options() const { return options_; }
  absl::Time now() const { return now_; }

 private:
  struct Entry {
    uint64_t hash;
    double upper;            // upper bound, forward-decayed units (an upper value)
    double weight[kNumOps];  // since admission, forward-decayed units (a lower value)
    double raw[kNumOps];     // since admission, undecayed (a count, rounded to nearest)
    int64_t admitted_ns;
    // The stored key's length, or max_key_bytes + 1 if the key was longer (then its first
    // max_key_bytes bytes are stored): length and truncation compare as one value.
    uint32_t key_code;
  };
  // A node of the min-heap over the table. `upper` is the entry's upper bound when the node
  // was last placed: hits raise only the entry (so a hit costs no heap work), never the
  // node, and every upper bound only grows, so  node.upper <= entries_[slot].upper  always.
  // The heap is ordered by node values; RefreshRoot() makes the root's value current, and
  // a current root is the true weakest entry (it is <= every node value, each of which is
  // <= its entry's upper bound).
  struct HeapNode {
    double upper;
    uint32_t slot;
  };
  static constexpr int32_t kEmpty = -1;

  HeavyHitters(const HeavyHittersOptions& options, CountMinSketch cms, absl::Time now);

  // Index of the slot holding the key, or kEmpty. `stored` is the key cut to max_key_bytes.
  int32_t Find(uint64_t hash, std::string_view stored, bool truncated) const;
  // The same for a key whose first min(code, max_key_bytes) bytes are at `key`, `code`
  // being its Entry::key_code, probing from bucket `first` (Home(hash, index_mask_), or a
  // later bucket of its probe run when the ones before it are known to hold other keys).
  [[gnu::always_inline]] inline int32_t FindCode(uint64_t hash, const char* key, uint32_t code,
                                                 uint64_t first) const;
  // Whether `e`, the entry in `slot`, is the key of `hash` whose bytes are at `key` and
  // whose key_code is `code`: its hash, its key code and its stored bytes.
  [[gnu::always_inline]] inline bool Holds(const Entry& e, int32_t slot, uint64_t hash,
                                           const char* key, uint32_t code) const;
  void IndexInsert(uint64_t hash, uint32_t slot);
  void IndexErase(uint64_t hash, uint32_t slot);
  void SiftDown(uint32_t pos);
  void SiftUp(uint32_t pos);
  // Brings the root's node value up to its entry's upper bound until the root is current:
  // then heap_[0] is the weakest entry.
  void RefreshRoot();
  // The body of UpdateHashed(), and of Update() for keys of up to 16 bytes (longer keys go
  // through UpdateLongKey()). It holds the common paths only; the others are the
  // out-of-line functions below.
  [[gnu::always_inline]] inline void UpdateHashedInline(uint64_t hash, std::string_view key, Op op,
                                                        double weight);
  // A table hit: the entry's three sums.
  [[gnu::always_inline]] inline void AddHit(Entry& e, int o, double w, double weight);
  // Update() of a key longer than 16 bytes: the out-of-line hash, then UpdateHashed().
  [[gnu::noinline]] void UpdateLongKey(std::string_view key, Op op, double weight);
  // The rest of the event's path when the key's home index bucket holds another key: the
  // probe from the next bucket on, then the hit or the miss. Arguments as for MaybeAdmit().
  [[gnu::noinline]] void UpdateProbe(uint64_t hash, const char* key, uint32_t code, Op op,
                                     double weight, double raw);
  // A table miss: the sketch, then the table if the estimate passes admit_floor_.
  // Arguments as for MaybeAdmit().
  [[gnu::always_inline]] inline void UpdateMiss(uint64_t hash, const char* key, uint32_t code,
                                                Op op, double weight, double raw);
  // The miss path past the sketch: admits the key if the table has room or `estimate`
  // beats the weakest entry. Out of line, so the common miss stays short. `key` and `code` as for
  // FindCode() (the stored bytes and truncation are worked out here, off the common path); `weight`
  // is the event's decayed weight rounded to nearest (stepped outward where it is stored), `raw`
  // its weight.
  void MaybeAdmit(uint64_t hash, const char* key, uint32_t code, Op op, double weight, double raw,
                  double estimate);
  void SetKey(uint32_t slot, std::string_view stored, bool truncated);
  std::string_view StoredKey(uint32_t slot) const {
    return {&keys_[static_cast<size_t>(slot) * options_.max_key_bytes],
            std::min(entries_[slot].key_code, options_.max_key_bytes)};
  }
  bool Truncated(uint32_t slot) const { return entries_[slot].key_code > options_.max_key_bytes; }
  // The stored bytes of a key at `key` whose key_code is `code`.
  std::string_view StoredOf(const char* key, uint32_t code) const {
    return {key, std::min(code, options_.max_key_bytes)};
  }
  // Admits a new key into a free slot, or evicts the weakest entry, writing it back.
  void Admit(uint64_t hash, std::string_view stored, bool truncated, Op op, double weight,
             double raw, double estimate);
  void Rescale();
  // A stored lower value as a lower bound in decayed units.
  double LowerRead(double stored) const;
  // Replaces every stored upper value S (sketch counters, totals, entries and heap nodes)
  // with up(S) and every stored lower value with down(S). Both must be monotone (the heap's
  // order and node <= entry then hold) and map 0 to 0. Calls SyncFloor().
  template <typename Up, typename Down>
  void ScaleStored(Up up, Down down);
  // admit_floor_ = the heap root's node value, or -1 while the table has room. Called
  // wherever the root or size_ changes.
  void SyncFloor();
  bool counted() const { return raw_total_[0] > 0 || raw_total_[1] > 0; }
  HeavyHitter Report(uint32_t slot) const;
  void Report(uint32_t slot, HeavyHitter* out) const;  // reuses out's key buffer
  // The stored weight of `key` in forward-decayed units, and whether it is in the table.
  double UpperStored(uint64_t hash, std::string_view key, int32_t* slot) const;

  HeavyHittersOptions options_;
  CountMinSketch cms_;
  double half_life_s_;                  // +inf when decay is off
  absl::Time start_;                    // the first event's time (the clock before any event)
  absl::Time landmark_;                 // L
  absl::Time now_;                      // the clock
  double factor_ = 1.0;                 // 2^((now - L)/h): the weight of an event now
  double admit_floor_ = -1.0;           // see SyncFloor()
  double total_[kNumOps] = {0, 0};      // forward-decayed units, an upper value
  double raw_total_[kNumOps] = {0, 0};  // undecayed (a count, rounded to nearest)

  uint32_t size_ = 0;           // slots in use: 0..candidates
  std::vector<Entry> entries_;  // `candidates` slots
  std::vector<char> keys_;      // candidates * max_key_bytes key bytes
  std::vector<HeapNode> heap_;  // size_ nodes, min-heap by upper
  // An index bucket: the hash's top 32 bits (a mismatch there skips the entry without
  // touching it) and the slot, or kEmpty.
  struct Bucket {
    uint32_t tag;
    int32_t slot;
  };
  std::vector<Bucket> index_;  // open addressing, linear probing, load <= 1/4
  uint64_t index_mask_;
};

}  // namespace hotkey::sketch

#endif  // HOTKEY_SKETCH_HEAVY_HITTERS_H_
