// DemandLedger: the demand of a key that client kits absorb, as they report it
// (POST /api/v1/hotkeys/demand, docs/feed.md "Demand a kit absorbs").
//
// A fix that works hides its key from the shard: a cached key's reads are served from the
// kits' local copies, a split key's writes go to sub-keys on other shards. hotkeyd measures
// the shard, so without the kits' word the key would look cool, its entry would leave the
// feed, the kits would undo the fix and the shard would overload again. The kits report
// what they kept off the shard; the aggregator adds it to what the shard saw of the key
// (the key's demand: whether it is hot, how long its entry lives) and to the shard's
// measured load at the measured cost per operation (the load with no fix).
//
// Each report names a key, the reads and writes the kit absorbed, and the interval they
// cover (ending when the report arrives). The ledger sums the reports of all kits in
// buckets of one second of arrival per key, kept over `window`; Over() turns the reports
// that arrived since a time into ops per second over the span they cover: from the
// earliest covered instant to the last arrival, or to a second before now once the last
// report is older (a kit reports every second, so the time since its last report is the
// next report's to cover; after that the figure decays as the reports stop). One kit's
// steady rate comes out exact; kits reporting at different phases cover that span but for
// less than one interval each, so the figure is low by less than one interval over the
// span (demand_test.cc pins the bound).
//
// Bounded: at most `max_keys` keys (a report of one more is refused, and the caller counts
// it) with ceil(window) + 1 buckets each; keys with no report in the window are forgotten by
// Expire().
//
// Thread-compatible: the daemon adds to it and the aggregator reads it on one thread (the
// main io_context).

#ifndef HOTKEY_AGGREGATE_DEMAND_H_
#define HOTKEY_AGGREGATE_DEMAND_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace hotkey::aggregate {

class DemandLedger {
 public:
  // The longest interval a report may cover (docs/feed.md): a kit adds the counts of a
  // report it could not send to the next one, or drops them after this long.
  static constexpr absl::Duration kMaxInterval = absl::Seconds(60);

  // `window`: how long reports are kept (at least the longest span asked of Over()).
  DemandLedger(absl::Duration window, size_t max_keys);

  // A report of `key` arrived at `now` (monotonic, not before the previous call's): `reads`
  // and `writes` absorbed over the `interval` that ended now (in (0, kMaxInterval]). False
  // (nothing added) when the ledger holds max_keys other keys.
  bool Add(absl::Time now, std::string_view key, double reads, double writes,
           absl::Duration interval);

  // The ops/s absorbed of `key` (by op) over the reports that arrived in (since, now], on
  // the span they cover (above); nullopt when none did.
  struct Absorbed {
    double ops_per_second[sketch::kNumOps] = {0, 0};
    double total() const { return ops_per_second[0] + ops_per_second[1]; }
  };
  std::optional<Absorbed> Over(std::string_view key, absl::Time since, absl::Time now) const;

  // Forgets the buckets older than the window, and the keys left with none.
  void Expire(absl::Time now);

  // Every key held, in no particular order.
  void ForEachKey(const std::function<void(const std::string& key)>& fn) const;
  size_t size() const { return keys_.size(); }
  size_t max_keys() const { return max_keys_; }
  // The most the ledger holds when no key it is given is longer than `max_key_bytes`:
  // max_keys keys with their buckets (the caller refuses longer keys).
  size_t MemoryBound(size_t max_key_bytes) const;

 private:
  struct Bucket {
    int64_t second = -1;       // arrivals' whole second on the clock of `now`; -1: empty
    absl::Time first_arrival;  // the earliest arrival in it
    absl::Time last_arrival;   // the latest
    absl::Time first_covered;  // the earliest instant a report in it covers
    double counts[sketch::kNumOps] = {0, 0};
  };
  struct Entry {
    std::vector<Bucket> buckets;  // a ring indexed by second
  };

  const absl::Duration window_;
  const size_t max_keys_;
  const size_t buckets_;
  absl::flat_hash_map<std::string, Entry> keys_;
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_DEMAND_H_
