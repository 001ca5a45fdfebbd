// hotkey-bench-sketch-peers: the tracker beside its peers, in one process, on the same streams,
// at the same memory budgets, against the exact top 100.
//
// The peers are written here from their papers, in our own code (none of theirs is copied):
//   * HeavyKeeper (Yang, Zhou, Jin, Liu, Li, Uhlig, "HeavyKeeper: An Accurate Algorithm for
//     Finding Top-k Elephant Flows", USENIX ATC 2018): `depth` rows of buckets holding a
//     fingerprint and a count; a key's bucket grows when it owns it, and a key that does not
//     decays the owner's count by one with probability b^-count, taking the bucket over at 0.
//     A min-heap keeps the names of the k keys of largest estimate (the largest count among
//     the rows the key owns). RedisBloom's TOPK is this structure.
//   * The Cuckoo Heavy Keeper (Ngo & Papatriantafilou, "Cuckoo Heavy Keeper and the balancing
//     act of maintaining heavy hitters in stream processing", VLDB 2025), as Redis's hot-key
//     tracker (src/chk.c) builds it: two tables of buckets, each with two heavy entries
//     (fingerprint, count) and one lobby entry (fingerprint, small count); a key in neither
//     decays a lobby entry as HeavyKeeper does; a lobby entry that reaches 16 is promoted to a
//     heavy entry (over the bucket's lightest with a probability that grows with its count),
//     and a displaced heavy entry is kicked to its other table while it stays above 0.8% of the
//     total. A min-heap keeps the names, as for HeavyKeeper.
//   * hotkeyd's own table with fingerprinted cells (`hotkeyd-fp`): the tracker's candidate
//     table in front of a sketch whose cells have an owner, as HeavyKeeper's do, instead of the
//     count-min: the idea issue 36 lists. A colliding key wears the owner's count down, so an
//     estimate may fall short of the truth (`under_top100` counts the reported keys whose
//     estimate does).
//   * hotkeyd: hotkey::sketch::HeavyHitters at the shape given for each budget, decay off.
//
// Memory: hotkeyd's is MemoryBytes(). A peer's is its cells, packed (a 16-bit fingerprint
// and a 32-bit count: 6 bytes a HeavyKeeper bucket; 2 x 6 + 3 bytes a Cuckoo Heavy Keeper
// bucket, its lobby count 8 bits), plus k names of `--key-bytes` with a 64-bit count and a
// 64-bit hash each; the rows take every byte left in the budget (widths are not rounded to a
// power of two). Both layouts are as small as the papers allow: the peers are given the most
// cells the budget holds. Decay is off everywhere (the peers have none), and the truth is the
// exact count over the whole stream. The peers' random draws come from a fixed seed, so a run
// is repeatable.
//
//   hotkey-bench-sketch-peers --stream=flat-0.6 --updates=8000000
//   hotkey-bench-sketch-peers --trace=../shared/traces/arc_oltp.txt.gz
//
// Prints one JSON object per structure and budget. Accuracy only: these implementations are
// written for clarity, not speed, so no rate is printed.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "hotkey/config/flag_parser.h"
#include "hotkey/sketch/hash.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "streams.h"

namespace {

using hotkey::bench::FindStream;
using hotkey::bench::LoadTrace;
using hotkey::bench::MakeZipf;
using hotkey::bench::Stream;
using hotkey::sketch::HashKey;
using hotkey::sketch::HeavyHitters;
using hotkey::sketch::HeavyHittersOptions;

constexpr size_t kTop = 100;
// The peers' hash seed: any fixed one, apart from the tracker's.
constexpr uint64_t kPeerSeed = 0x70656572;

// Debian's Abseil has its own string_view: the maps below are looked up through it.
inline absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// xorshift64*: the peers' coin flips, from a fixed seed.
class Coin {
 public:
  explicit Coin(uint64_t seed) : s_(seed | 1) {}
  // Uniform in [0, 1).
  double Next() {
    s_ ^= s_ >> 12;
    s_ ^= s_ << 25;
    s_ ^= s_ >> 27;
    return static_cast<double>((s_ * 0x2545F4914F6CDD1DULL) >> 11) * 0x1p-53;
  }

 private:
  uint64_t s_;
};

// Probability b^-count of a decay step, tabulated for small counts.
class DecayTable {
 public:
  explicit DecayTable(double b) : b_(b) {
    for (int i = 0; i < kSize; ++i) p_[i] = std::pow(b, -i);
  }
  double operator()(uint64_t count) const {
    return count < kSize ? p_[count] : std::pow(b_, -static_cast<double>(count));
  }

 private:
  static constexpr int kSize = 256;
  double b_;
  double p_[kSize];
};

// Column of row r for a 64-bit hash, in [0, width): Kirsch-Mitzenmacher double hashing, reduced
// by a multiply-shift so that any width works.
inline uint32_t RowColumn(uint64_t hash, uint32_t r, uint32_t width) {
  const uint32_t g = static_cast<uint32_t>(hash) + r * (static_cast<uint32_t>(hash >> 32) | 1u);
  return static_cast<uint32_t>((uint64_t{g} * width) >> 32);
}

// The names of the k keys of largest count, as HeavyKeeper's and the Cuckoo Heavy Keeper's
// min-heap keeps them.
class NamedTopK {
 public:
  explicit NamedTopK(size_t k) : k_(k) {}
  static size_t Bytes(size_t k, size_t key_bytes) { return k * (key_bytes + 16); }

  uint64_t Min() const { return heap_.size() < k_ ? 0 : heap_[0].count; }
  // Raises the key's count to `count` if it is named, else names it if there is room or
  // `count` beats the lightest name.
  void Offer(std::string_view key, uint64_t count) {
    auto it = pos_.find(Av(key));
    if (it != pos_.end()) {
      Node& n = heap_[it->second];
      if (count > n.count) {
        n.count = count;
        Down(it->second);
      }
      return;
    }
    if (heap_.size() < k_) {
      heap_.push_back({count, std::string(key)});
      pos_[heap_.back().key] = heap_.size() - 1;
      Up(heap_.size() - 1);
      return;
    }
    if (count <= heap_[0].count) return;
    pos_.erase(heap_[0].key);
    heap_[0] = {count, std::string(key)};
    pos_[heap_[0].key] = 0;
    Down(0);
  }
  std::vector<std::pair<std::string, double>> List() const {
    std::vector<std::pair<std::string, double>> out;
    for (const Node& n : heap_) out.emplace_back(n.key, static_cast<double>(n.count));
    return out;
  }

 private:
  struct Node {
    uint64_t count;
    std::string key;
  };
  void Swap(size_t a, size_t b) {
    std::swap(heap_[a], heap_[b]);
    pos_[heap_[a].key] = a;
    pos_[heap_[b].key] = b;
  }
  void Up(size_t i) {
    while (i > 0 && heap_[(i - 1) / 2].count > heap_[i].count) {
      Swap(i, (i - 1) / 2);
      i = (i - 1) / 2;
    }
  }
  void Down(size_t i) {
    for (;;) {
      size_t m = i;
      for (size_t c = 2 * i + 1; c <= 2 * i + 2 && c < heap_.size(); ++c) {
        if (heap_[c].count < heap_[m].count) m = c;
      }
      if (m == i) return;
      Swap(i, m);
      i = m;
    }
  }
  size_t k_;
  std::vector<Node> heap_;
  absl::flat_hash_map<std::string, size_t> pos_;
};

// Rows of buckets with an owner (a 16-bit fingerprint) and a count, HeavyKeeper's update: the
// sketch of HeavyKeeper and of hotkeyd-fp.
class OwnedRows {
 public:
  OwnedRows(uint32_t width, uint32_t depth, double b)
      : width_(width),
        depth_(depth),
        fp_(size_t{width} * depth, 0),
        count_(size_t{width} * depth, 0),
        decay_(b) {}
  static constexpr size_t kBucketBytes = sizeof(uint16_t) + sizeof(uint32_t);

  static uint16_t Fingerprint(uint64_t hash) { return static_cast<uint16_t>(hash >> 48); }

  // One event of the key: returns its estimate afterwards, the largest count among the rows it
  // owns (0 if none).
  uint64_t Update(uint64_t hash, Coin& coin) {
    const uint16_t f = Fingerprint(hash);
    uint64_t est = 0;
    for (uint32_t r = 0; r < depth_; ++r) {
      const size_t i = size_t{r} * width_ + RowColumn(hash, r, width_);
      if (count_[i] == 0) {
        fp_[i] = f;
        count_[i] = 1;
      } else if (fp_[i] == f) {
        ++count_[i];
      } else if (coin.Next() < decay_(count_[i]) && --count_[i] == 0) {
        fp_[i] = f;
        count_[i] = 1;
      }
      if (fp_[i] == f) est = std::max<uint64_t>(est, count_[i]);
    }
    return est;
  }
  // Gives the key at least `count` in each row: raises a bucket it owns, takes over one whose
  // count is lower.
  void RaiseTo(uint64_t hash, uint64_t count) {
    const uint16_t f = Fingerprint(hash);
    const uint32_t c = static_cast<uint32_t>(std::min<uint64_t>(count, UINT32_MAX));
    for (uint32_t r = 0; r < depth_; ++r) {
      const size_t i = size_t{r} * width_ + RowColumn(hash, r, width_);
      if (fp_[i] == f || count_[i] < c) {
        fp_[i] = f;
        count_[i] = std::max(count_[i], c);
      }
    }
  }
  size_t Bytes() const { return fp_.size() * kBucketBytes; }

 private:
  uint32_t width_, depth_;
  std::vector<uint16_t> fp_;
  std::vector<uint32_t> count_;
  DecayTable decay_;
};

// HeavyKeeper: owned rows and the names of the top k.
class HeavyKeeper {
 public:
  HeavyKeeper(size_t bytes, uint32_t depth, size_t key_bytes, double b)
      : rows_(Width(bytes, depth, key_bytes), depth, b),
        top_(kTop),
        coin_(1),
        key_bytes_(key_bytes) {}
  static uint32_t Width(size_t bytes, uint32_t depth, size_t key_bytes) {
    return static_cast<uint32_t>((bytes - NamedTopK::Bytes(kTop, key_bytes)) /
                                 (depth * OwnedRows::kBucketBytes));
  }
  void Update(std::string_view key) {
    const uint64_t est = rows_.Update(HashKey(key, kPeerSeed), coin_);
    if (est >= top_.Min()) top_.Offer(key, est);
  }
  std::vector<std::pair<std::string, double>> List() const { return top_.List(); }
  size_t Bytes() const { return rows_.Bytes() + NamedTopK::Bytes(kTop, key_bytes_); }

 private:
  OwnedRows rows_;
  NamedTopK top_;
  Coin coin_;
  size_t key_bytes_;
};

// The Cuckoo Heavy Keeper, as src/chk.c of Redis lays it out (see the file's opening comment).
class CuckooHeavyKeeper {
 public:
  CuckooHeavyKeeper(size_t bytes, size_t key_bytes, double b)
      : buckets_(static_cast<uint32_t>((bytes - NamedTopK::Bytes(kTop, key_bytes)) /
                                       (2 * kBucketBytes))),
        top_(kTop),
        coin_(2),
        decay_(b),
        key_bytes_(key_bytes) {
    for (auto& t : tables_) t.assign(buckets_, Bucket{});
  }
  // Two heavy entries of a 16-bit fingerprint and a 32-bit count, a lobby entry of a 16-bit
  // fingerprint and an 8-bit count.
  static constexpr size_t kBucketBytes = 2 * 6 + 3;
  // A lobby count that reaches it asks for promotion (Redis's LOBBY_PROMOTION_THRESHOLD).
  static constexpr uint32_t kPromote = 16;
  // A kicked heavy entry moves on only while it is at least this share of the total.
  static constexpr double kHeavyRatio = 0.008;
  static constexpr int kMaxKicks = 16;

  void Update(std::string_view key) {
    ++total_;
    const uint64_t h = HashKey(key, kPeerSeed);
    const uint16_t f = static_cast<uint16_t>(h);
    const uint32_t first =
        static_cast<uint32_t>((uint64_t{static_cast<uint32_t>(h >> 32)} * buckets_) >> 32);
    const uint32_t both[2] = {first, Alt(f, first, 0)};
    // A heavy entry of the key: count it. Else an empty heavy entry takes it.
    int empty_t = -1, empty_j = -1;
    for (int t = 0; t < 2; ++t) {
      Bucket& bk = tables_[t][both[t]];
      for (int j = 0; j < 2; ++j) {
        Heavy& e = bk.heavy[j];
        if (e.count > 0 && e.fp == f) {
          ++e.count;
          return Name(key, e.count);
        }
        if (e.count == 0 && empty_t < 0) empty_t = t, empty_j = j;
      }
    }
    if (empty_t >= 0) {
      Heavy& e = tables_[empty_t][both[empty_t]].heavy[empty_j];
      e = {f, 1};
      return Name(key, 1);
    }
    // A lobby entry of the key: count it, promote it at the threshold.
    for (int t = 0; t < 2; ++t) {
      Lobby& l = tables_[t][both[t]].lobby;
      if (l.count == 0 || l.fp != f) continue;
      if (l.count + 1u < kPromote) {
        ++l.count;
        return;
      }
      return Promote(key, t, both[t], f, l.count + 1u);
    }
    // An empty lobby entry takes it.
    for (int t = 0; t < 2; ++t) {
      Lobby& l = tables_[t][both[t]].lobby;
      if (l.count == 0) {
        l = {f, 1};
        return;
      }
    }
    // Else the key decays one table's lobby entry, and takes it over at 0.
    const int t = f & 1;
    Lobby& l = tables_[t][both[t]].lobby;
    if (coin_.Next() < decay_(l.count) && --l.count == 0) l = {f, 1};
  }
  std::vector<std::pair<std::string, double>> List() const { return top_.List(); }
  size_t Bytes() const {
    return 2 * size_t{buckets_} * kBucketBytes + NamedTopK::Bytes(kTop, key_bytes_);
  }

 private:
  struct Heavy {
    uint16_t fp = 0;
    uint32_t count = 0;
  };
  struct Lobby {
    uint16_t fp = 0;
    uint32_t count = 0;  // 8 bits in the layout counted: it never passes kPromote
  };
  struct Bucket {
    Heavy heavy[2];
    Lobby lobby;
  };

  // The key's bucket in the other table: an offset drawn from the fingerprint, added going from
  // table 0 to 1 and taken away coming back, so that any number of buckets works.
  uint32_t Alt(uint16_t f, uint32_t i, int from) const {
    const uint32_t off = static_cast<uint32_t>((uint64_t{f * 0x5bd1e995u} * buckets_) >> 32);
    return from == 0 ? (i + off) % buckets_ : (i + buckets_ - off) % buckets_;
  }
  void Name(std::string_view key, uint64_t count) {
    if (count >= top_.Min()) top_.Offer(key, count);
  }
  void Promote(std::string_view key, int t, uint32_t i, uint16_t f, uint32_t count) {
    Bucket& bk = tables_[t][i];
    int m = 0;
    for (int j = 0; j < 2; ++j) {
      if (bk.heavy[j].count == 0) {
        bk.heavy[j] = {f, count};
        bk.lobby = {};
        return Name(key, count);
      }
      if (bk.heavy[j].count < bk.heavy[m].count) m = j;
    }
    const uint32_t min = bk.heavy[m].count;
    if (min > count && coin_.Next() >= static_cast<double>(count - kPromote) / (min - kPromote)) {
      bk.lobby.count = kPromote;
      return;
    }
    // The promoted key takes the heavy entry's place and count (as the paper does), and the
    // entry it displaces is kicked to its other bucket.
    Heavy kicked = bk.heavy[m];
    bk.heavy[m].fp = f;
    bk.lobby = {};
    Name(key, bk.heavy[m].count);
    for (int k = 0; k < kMaxKicks; ++k) {
      if (kicked.count < kHeavyRatio * static_cast<double>(total_)) return;
      i = Alt(kicked.fp, i, t);
      t = 1 - t;
      Bucket& other = tables_[t][i];
      int lightest = 0;
      for (int j = 0; j < 2; ++j) {
        if (other.heavy[j].count == 0) {
          other.heavy[j] = kicked;
          return;
        }
        if (other.heavy[j].count < other.heavy[lightest].count) lightest = j;
      }
      std::swap(kicked, other.heavy[lightest]);
    }
  }

  uint32_t buckets_;
  std::vector<Bucket> tables_[2];
  NamedTopK top_;
  Coin coin_;
  DecayTable decay_;
  size_t key_bytes_;
  uint64_t total_ = 0;
};

// hotkeyd's candidate table in front of owned rows instead of the count-min: admission when
// the rows' estimate beats the weakest entry's bound, the evicted entry's bound handed back to
// the rows (RaiseTo). The table's bytes are counted as HeavyHitters counts its own.
class TableOverOwnedRows {
 public:
  TableOverOwnedRows(size_t bytes, uint32_t candidates, uint32_t depth, uint32_t key_bytes,
                     double b)
      : candidates_(candidates),
        table_bytes_(TableBytes(candidates, key_bytes)),
        rows_(static_cast<uint32_t>((bytes - table_bytes_) / (depth * OwnedRows::kBucketBytes)),
              depth, b),
        coin_(3) {}
  // HeavyHitters' bytes without its sketch: one of the smallest sketch (4 bytes) taken away.
  static size_t TableBytes(uint32_t candidates, uint32_t key_bytes) {
    HeavyHittersOptions o;
    o.candidates = candidates;
    o.max_key_bytes = key_bytes;
    o.sketch_bytes = 4;
    o.sketch_depth = 1;
    return HeavyHitters::Create(o, absl::UnixEpoch())->MemoryBytes() - 4;
  }
  void Update(std::string_view key) {
    auto it = table_.find(Av(key));
    if (it != table_.end()) {
      ++it->second;
      return;
    }
    const uint64_t hash = HashKey(key, kPeerSeed);
    const uint64_t est = std::max<uint64_t>(1, rows_.Update(hash, coin_));
    if (table_.size() < candidates_) {
      table_.emplace(std::string(key), est);
      return;
    }
    if (est <= floor_) return;
    // The floor is the lightest bound when last looked for, and bounds only grow: find the
    // lightest now.
    auto weakest = table_.begin();
    for (auto i = table_.begin(); i != table_.end(); ++i) {
      if (i->second < weakest->second) weakest = i;
    }
    floor_ = weakest->second;
    if (est <= floor_) return;
    rows_.RaiseTo(HashKey(weakest->first, kPeerSeed), weakest->second);
    table_.erase(weakest);
    table_.emplace(std::string(key), est);
  }
  std::vector<std::pair<std::string, double>> List() const {
    std::vector<std::pair<std::string, double>> out;
    for (const auto& [k, v] : table_) out.emplace_back(k, static_cast<double>(v));
    return out;
  }
  size_t Bytes() const { return table_bytes_ + rows_.Bytes(); }

 private:
  uint32_t candidates_;
  size_t table_bytes_;
  OwnedRows rows_;
  Coin coin_;
  absl::flat_hash_map<std::string, uint64_t> table_;
  uint64_t floor_ = 0;
};

struct Config {
  std::string stream = "flat-0.6";
  std::string trace;
  uint64_t updates = 8'000'000;
  uint64_t keys = 1'000'000;
  uint64_t seed = 42;
  uint32_t key_bytes = 16;
  uint32_t hk_depth = 2;
  double decay = 1.08;
  // BUDGET:CANDIDATES/SKETCH_BYTES/DEPTH of hotkeyd at each budget; hotkeyd-fp takes the same
  // candidates and its rows the rest of the budget.
  std::string shapes = "32768:110/16384/2,65536:124/49152/3";
  uint32_t fp_depth = 2;
};

using Exact = absl::flat_hash_map<std::string, double>;

struct Score {
  double precision, recall;
  size_t under;
};

Score Compare(std::vector<std::pair<std::string, double>> list, const Exact& exact,
              double threshold) {
  std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (list.size() > kTop) list.resize(kTop);
  size_t hits = 0, under = 0;
  for (const auto& [k, est] : list) {
    auto it = exact.find(Av(k));
    const double truth = it == exact.end() ? 0 : it->second;
    hits += truth >= threshold;
    under += est < truth;
  }
  return {list.empty() ? 0 : static_cast<double>(hits) / list.size(),
          static_cast<double>(hits) / kTop, under};
}

void Print(const Stream& st, size_t budget, const char* structure, size_t bytes, const Score& s,
           const std::string& config) {
  absl::PrintF(
      "{\"stream\":\"%s\",\"budget\":%zu,\"structure\":\"%s\",\"bytes\":%zu,"
      "\"precision_at_100\":%.4f,\"recall_at_100\":%.4f,\"under_top100\":%zu,\"config\":\"%s\"}\n",
      st.name, budget, structure, bytes, s.precision, s.recall, s.under, config);
  std::fflush(stdout);
}

int Run(const Stream& st, const Config& c) {
  Exact exact;
  for (size_t i = 0; i < st.size(); ++i) exact[Av(st.key(i))] += 1;
  std::vector<double> counts;
  counts.reserve(exact.size());
  for (const auto& [k, v] : exact) counts.push_back(v);
  const size_t n = std::min(kTop, counts.size());
  std::nth_element(counts.begin(), counts.begin() + (n - 1), counts.end(), std::greater<>());
  const double threshold = counts[n - 1];  // a key tied with the 100th counts as correct

  for (absl::string_view item : absl::StrSplit(c.shapes, ',')) {
    size_t budget;
    unsigned long long candidates, sketch_bytes;
    unsigned depth;
    if (std::sscanf(std::string(item).c_str(), "%zu:%llu/%llu/%u", &budget, &candidates,
                    &sketch_bytes, &depth) != 4) {
      std::fprintf(stderr, "--shapes: each is BUDGET:CANDIDATES/SKETCH_BYTES/DEPTH\n");
      return 2;
    }
    HeavyHittersOptions o;
    o.candidates = static_cast<uint32_t>(candidates);
    o.sketch_bytes = sketch_bytes;
    o.sketch_depth = depth;
    o.max_key_bytes = c.key_bytes;
    o.half_life = absl::InfiniteDuration();
    absl::StatusOr<HeavyHitters> hh = HeavyHitters::Create(o, absl::UnixEpoch());
    if (!hh.ok()) {
      std::fprintf(stderr, "%s\n", std::string(hh.status().message()).c_str());
      return 2;
    }
    HeavyKeeper hk(budget, c.hk_depth, c.key_bytes, c.decay);
    CuckooHeavyKeeper chk(budget, c.key_bytes, c.decay);
    TableOverOwnedRows fp(budget, o.candidates, c.fp_depth, c.key_bytes, c.decay);
    for (size_t i = 0; i < st.size(); ++i) {
      const std::string_view key = st.key(i);
      hh->Update(key, st.op(i));
      hk.Update(key);
      chk.Update(key);
      fp.Update(key);
    }
    std::vector<std::pair<std::string, double>> ours;
    for (const auto& h : hh->TopK(kTop)) ours.emplace_back(h.key, h.estimate);
    Print(st, budget, "hotkeyd", hh->MemoryBytes(), Compare(ours, exact, threshold),
          std::string(item.substr(item.find(':') + 1)));
    Print(st, budget, "heavykeeper", hk.Bytes(), Compare(hk.List(), exact, threshold),
          absl::StrFormat("depth %u, b %g", c.hk_depth, c.decay));
    Print(st, budget, "cuckoo_heavy_keeper", chk.Bytes(), Compare(chk.List(), exact, threshold),
          absl::StrFormat("b %g", c.decay));
    Print(st, budget, "hotkeyd-fp", fp.Bytes(), Compare(fp.List(), exact, threshold),
          absl::StrFormat("%llu candidates, depth %u, b %g", candidates, c.fp_depth, c.decay));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  hotkey::config::FlagParser p("hotkey-bench-sketch-peers");
  p.AddString("stream", "a generated stream (as hotkey-bench-sketch's --stream)", &c.stream)
      .Shown("NAME");
  p.AddString("trace", "a trace of `<op> <key>` lines (plain or gzip) instead", &c.trace)
      .Shown("FILE");
  p.AddInteger("updates", "updates of the generated stream", &c.updates);
  p.AddInteger("keys", "distinct keys of the generated stream", &c.keys);
  p.AddInteger("seed", "random seed of the generated stream", &c.seed);
  p.AddInteger("key-bytes", "key bytes stored per name or candidate", &c.key_bytes);
  p.AddInteger("hk-depth", "HeavyKeeper's rows", &c.hk_depth);
  p.AddInteger("fp-depth", "hotkeyd-fp's rows", &c.fp_depth);
  p.AddNumber("decay",
              "HeavyKeeper's and the Cuckoo Heavy Keeper's base b (a decay step has "
              "probability b^-count)",
              &c.decay);
  p.AddString("shapes",
              "BUDGET:CANDIDATES/SKETCH_BYTES/DEPTH of hotkeyd at each budget, comma "
              "separated; the peers take the whole budget",
              &c.shapes)
      .Shown("LIST");
  absl::StatusOr<hotkey::config::FlagParser::Parsed> parsed = p.Parse(argc, argv);
  absl::Status bad = parsed.status();
  if (bad.ok() && c.trace.empty() && FindStream(c.stream) == nullptr) {
    bad = absl::InvalidArgumentError("unknown --stream");
  }
  if (bad.ok() && !(c.decay > 1 && c.hk_depth >= 1 && c.fp_depth >= 1 && c.key_bytes >= 1)) {
    bad =
        absl::InvalidArgumentError("--decay must be above 1, the depths and --key-bytes positive");
  }
  if (!bad.ok() || parsed->help) {
    std::fprintf(bad.ok() ? stdout : stderr, "%s%susage: hotkey-bench-sketch-peers [flags]\n\n%s",
                 std::string(bad.message()).c_str(), bad.ok() ? "" : "\n", p.Help().c_str());
    return bad.ok() ? 0 : 2;
  }
  Stream st;
  if (!c.trace.empty()) {
    st.name = c.trace.substr(c.trace.find_last_of('/') + 1);
    if (!LoadTrace(c.trace, &st)) {
      std::fprintf(stderr, "cannot read trace %s\n", c.trace.c_str());
      return 1;
    }
  } else {
    st = MakeZipf(*FindStream(c.stream), c.updates, c.keys, c.seed, 1);
  }
  return Run(st, c);
}
