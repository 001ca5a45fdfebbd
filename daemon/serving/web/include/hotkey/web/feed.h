// The hot-key feed: the keys client kits should treat specially (GET /api/v1/hotkeys), and
// the push stream of its changes (GET /api/v1/hotkeys/stream, Server-Sent Events). The
// protocol is docs/feed.md.
//
// FeedState is the set and its versions, pure (time is passed in): each tick it takes the
// advised keys (below), adds the rules file's pins, takes out its blocks, and diffs the
// result against the previous set into add / change / remove events, each one version
// further. A "change" is a change of what a client does with the key: its
// mode, refresh_seconds, split_factor, origin or match. A key's share and write ratio move at
// every tick; they are refreshed in the set (so GET and a new stream's snapshot carry them)
// but sent on no event of their own, so the stream carries one event per change of the fix,
// not one per key per tick.
//
// Advised keys. A key enters when it is hot and its held advice (advice_hold.h) names a fix.
// It then stays while the key stays hot, even when the advice has turned to none since; a
// different fix advised changes it only as NextFix() says (over the shard's target). Why: the kits
// apply the fix, so the shard (what hotkeyd measures) sees less of the key (a cached key's reads
// vanish, a split key's writes go to sub-keys on other shards), and the advice follows what the
// shard sees. Were the entry to follow the advice, it would leave, the kits would undo the fix, the
// shard would overload again, and the set would flap with a period of a few seconds. The
// entry leaves once its key has not been hot for FeedOptions::hold (0: at the first tick it
// is not hot), whether or not the key is still among the Snapshot's keys (the exported
// keys): a fix that hides nearly all of a key's traffic takes the key out of the tracker, and
// out of the Snapshot whenever a report of the kits is late, and a node that became a replica
// (Snapshot::model.shard_role) no longer sees its keys at all (its clients moved to the
// promoted primary, whose hotkeyd takes over within detection time). While the kits report
// the demand they absorb of a key gone from the Snapshot (demand.h), its hold starts again.
// At most ExportOptions::top_k entries are held for keys gone from the Snapshot (the most
// recently hot), so what the set remembers is bounded by the pins plus twice top_k,
// whatever the churn. A block takes an entry out, and forgets it. `hold` is how long a fix
// outlives its key's last sign; a key whose load returns after that is added again within
// detection time.
//
// FeedHub serves the set: GET's JSON, and the streams. Each stream is an http::EventStream
// bounded at kMaxUnsentBytes unsent (a slower reader is dropped and counted, never waited
// for); at most max_subscribers at once (the next is refused and counted); a heartbeat every
// FeedOptions::heartbeat() renews the client's leases. The HTTP server may close a stream to
// make room for another connection (counted as evicted). What the streams hold is bounded
// by MemoryBoundBytes().
//
// Key exposure: the raw key bytes (key_b64, key) go out when keys are labelled raw, or to a
// request that passed basic auth; otherwise an entry carries only its label (RawKeysFor()).
// With require_auth (--feed.require-auth) the feed answers only requests that passed basic
// auth.
//
// Thread-compatible: the daemon calls both from its io_context thread; stats() (the
// metrics) may be read from any thread.

#ifndef HOTKEY_WEB_FEED_H_
#define HOTKEY_WEB_FEED_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/collectable.h>

#include "absl/time/time.h"
#include "hotkey/aggregate/snapshot.h"
#include "hotkey/config/options.h"
#include "hotkey/http/event_stream.h"
#include "hotkey/text/enum_names.h"

namespace hotkey::web {

// One key (or prefix) of the feed.
struct FeedEntry {
  std::string key;    // the bytes: the exact key, or the prefix when `prefix`
  std::string label;  // as exported in /metrics (key_label.h)
  model::Strategy mode = model::Strategy::kNone;
  double refresh_seconds = 0;  // cache and split_cache; 0 otherwise
  int split_factor = 0;        // split and split_cache; 0 otherwise
  double share = 0;            // informative: refreshed every tick, sent on no event
  double write_ratio = 0;
  bool pinned = false;  // origin: pinned (rules file) or advice
  bool prefix = false;  // match: prefix (pins only) or key

  // Whether a client would act differently: mode, parameters, origin, match.
  bool SameFix(const FeedEntry& other) const;
};

struct FeedEvent {
  enum class Type { kAdd, kChange, kRemove };
  Type type = Type::kAdd;
  uint64_t version = 0;
  FeedEntry entry;  // kRemove: the entry as it was
};

// The SSE event names and the `type` label.
inline constexpr text::EnumName<FeedEvent::Type> kFeedEventTypeNames[] = {
    {FeedEvent::Type::kAdd, "add"},
    {FeedEvent::Type::kChange, "change"},
    {FeedEvent::Type::kRemove, "remove"}};
constexpr std::string_view FeedEventTypeName(FeedEvent::Type type) {
  return text::NameOf(kFeedEventTypeNames, type);
}

class FeedState {
 public:
  explicit FeedState(std::string label_secret) : label_secret_(std::move(label_secret)) {}

  // One tick at `now` (monotonic; not before the previous tick's): the new set from `snap`
  // under the reloadable options' feed (hold, pins, blocks, parameters), export (labels of
  // pins) and cluster (default refresh and split factor); the events that lead from the
  // previous set to it, in order (removes, changes, adds), versions consecutive.
  std::vector<FeedEvent> Update(const aggregate::Snapshot& snap,
                                const config::ReloadableOptions& options, absl::Time now);

  // The fix an entry moves to from `in_force` when the held advice names `advice`. A fix in
  // force changes what the shard sees of its key (a cache hides its reads, a split its
  // writes), and the advice follows what the shard sees, so it would name the other fix,
  // then this one again. So: while the shard is at or under its target (`over_target`
  // false) the fix in force stays, whatever is advised. Over it, the fix in force is not
  // enough, and the entry takes the advice on top of it: each of reads (replicate, then
  // cache) and writes (split) keeps the stronger of the two, so cache and split make
  // split_cache. Isolate is taken only as a first answer, and left for any other advice
  // (a kit without a dedicated pool cannot apply it); advised over a fix in force, it
  // means no fix fits, and the entry takes the strongest a kit applies alone, split_cache.
  static model::Strategy NextFix(model::Strategy in_force, model::Strategy advice,
                                 bool over_target);
  // The shard's load as the key's figures give it: its projected busiest load with no fix
  // (what the shard carries now, fix in force included); 0 without figures.
  static double ShardLoad(const aggregate::KeySnapshot& k);

  // +1 per event since construction; 0 before any.
  uint64_t version() const { return version_; }
  // By key bytes; keys are unique.
  const std::map<std::string, FeedEntry>& entries() const { return entries_; }
  // Whether the set names `key`: an entry of that key, or a prefix entry it starts with.
  bool Holds(std::string_view key) const;

 private:
  // An advised key's fix, and the last tick its key was hot (the hold counts from it).
  struct Advised {
    model::Strategy mode = model::Strategy::kNone;
    absl::Time last_hot;
  };

  const std::string label_secret_;
  uint64_t version_ = 0;
  std::map<std::string, FeedEntry> entries_;
  // The advised keys, pinned ones included (an unpinned key falls back to its advice); keys
  // of the last Snapshot only.
  std::map<std::string, Advised> advised_;
};

// Whether a request may see raw key bytes (docs/feed.md "Key exposure").
bool RawKeysFor(config::KeyLabelMode mode, bool authenticated);

// JSON (one line) of an entry; of the whole set (GET /api/v1/hotkeys, the stream's first
// event); of an event's data.
std::string FeedEntryJson(const FeedEntry& e, bool raw_keys);
std::string FeedSetJson(const FeedState& state, absl::Duration lease, bool raw_keys);
std::string FeedEventJson(const FeedEvent& e, bool raw_keys);
// A Server-Sent Event: "event: <type>\nid: <version>\ndata: <data>\n\n".
std::string SseEvent(std::string_view type, uint64_t version, std::string_view data);

struct FeedStats {
  uint64_t subscribers = 0;
  uint64_t version = 0;
  uint64_t entries = 0;
  uint64_t events[3] = {};  // by FeedEvent::Type
  uint64_t heartbeats = 0;
  uint64_t dropped_slow = 0;     // unsent output passed kMaxUnsentBytes, or a write timed out
  uint64_t dropped_limit = 0;    // refused: max_subscribers were streaming
  uint64_t dropped_evicted = 0;  // closed by the HTTP server to make room for a connection
};

class FeedHub : public prometheus::Collectable {
 public:
  // A subscriber's unsent output is bounded by this (feed_test.cc pins it): a reader that
  // falls this far behind is dropped, and reconnects to a fresh snapshot. One tick's events
  // over it drop every subscriber (docs/feed.md, "Bounds").
  static constexpr size_t kMaxUnsentBytes = 64 * 1024;

  // `now` (monotonic) starts the heartbeat period. `require_auth`: see above.
  FeedHub(size_t max_subscribers, std::string label_secret,
          const config::ReloadableOptions& options, absl::Time now, bool require_auth = false);
  ~FeedHub() override;

  // Takes effect at the next Update().
  void SetReloadable(const config::ReloadableOptions& options) { options_ = options; }

  // One tick at `now` (monotonic): the set updated from `snap` and its events sent; a
  // heartbeat to every subscriber when one is due; closed subscribers forgotten and counted.
  void Update(const aggregate::Snapshot& snap, absl::Time now);

  // GET /api/v1/hotkeys.
  std::string SetJson(bool raw_keys) const;
  // A new stream, already holding its snapshot event; null when max_subscribers stream
  // (counted).
  std::shared_ptr<http::EventStream> Subscribe(bool raw_keys);
  // Ends every stream (shutdown).
  void CloseAll();

  config::KeyLabelMode label_mode() const { return options_.exporter.label; }
  bool require_auth() const { return require_auth_; }
  // The most the streams can hold in the process: max_subscribers times a subscriber's
  // unsent bytes (kMaxUnsentBytes) and its session (http::EventStream::kSessionBytes). Part
  // of hotkey_memory_budget_bytes.
  size_t MemoryBoundBytes() const {
    return max_subscribers_ * (kMaxUnsentBytes + http::EventStream::kSessionBytes);
  }
  const FeedState& state() const { return state_; }
  FeedStats stats() const;
  // hotkey_feed_* (docs/metrics.md).
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  struct Subscriber {
    std::shared_ptr<http::EventStream> stream;
    bool raw_keys;
  };
  // Sends to every subscriber the text for its key exposure; `render` is called at most
  // once per exposure.
  void Broadcast(const std::function<std::string(bool raw_keys)>& render);
  // Forgets closed subscribers, counting the slow ones.
  void Sweep();

  const size_t max_subscribers_;
  const bool require_auth_;
  config::ReloadableOptions options_;
  FeedState state_;
  absl::Time last_heartbeat_;
  std::vector<Subscriber> subscribers_;

  std::atomic<uint64_t> subscribers_now_{0};
  std::atomic<uint64_t> version_{0};
  std::atomic<uint64_t> entries_{0};
  std::atomic<uint64_t> events_[3] = {};
  std::atomic<uint64_t> heartbeats_{0};
  std::atomic<uint64_t> dropped_slow_{0};
  std::atomic<uint64_t> dropped_limit_{0};
  std::atomic<uint64_t> dropped_evicted_{0};
};

}  // namespace hotkey::web

#endif  // HOTKEY_WEB_FEED_H_
