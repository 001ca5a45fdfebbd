// The hot-key feed's set, its JSON and its hub; see feed.h and docs/feed.md.

#include "hotkey/web/feed.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>
#include <boost/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "hotkey/aggregate/key_label.h"
#include "hotkey/text/json.h"
#include "hotkey/text/utf8.h"

namespace hotkey::web {

using aggregate::KeyLabeler;
using aggregate::KeySnapshot;
using aggregate::Snapshot;
namespace {

using model::Strategy;

bool HasRefresh(Strategy s) { return s == Strategy::kCache || s == Strategy::kSplitCache; }
bool HasSplit(Strategy s) { return s == Strategy::kSplit || s == Strategy::kSplitCache; }

// The fix's parameters for `mode` under `options`.
void SetParameters(const config::ReloadableOptions& options, FeedEntry* e) {
  const config::FeedOptions& feed = options.feed;
  e->refresh_seconds = !HasRefresh(e->mode) ? 0
                       : feed.refresh       ? absl::ToDoubleSeconds(*feed.refresh)
                                            : options.cluster.refresh_seconds;
  e->split_factor = !HasSplit(e->mode)  ? 0
                    : feed.split_factor ? *feed.split_factor
                                        : std::max(2, options.cluster.split);
}

boost::json::object EntryObject(const FeedEntry& e, bool raw_keys) {
  boost::json::object o;
  if (raw_keys) {
    o["key_b64"] = absl::Base64Escape(e.key);
    if (text::IsValidUtf8(e.key)) o["key"] = e.key;
  }
  o["label"] = e.label;
  o["mode"] = std::string(model::StrategyName(e.mode));
  if (HasRefresh(e.mode)) o["refresh_seconds"] = e.refresh_seconds;
  if (HasSplit(e.mode)) o["split_factor"] = e.split_factor;
  o["share"] = e.share;
  o["write_ratio"] = e.write_ratio;
  o["origin"] = e.pinned ? "pinned" : "advice";
  o["match"] = e.prefix ? "prefix" : "key";
  return o;
}

}  // namespace

bool FeedEntry::SameFix(const FeedEntry& other) const {
  return mode == other.mode && refresh_seconds == other.refresh_seconds &&
         split_factor == other.split_factor && pinned == other.pinned && prefix == other.prefix;
}

namespace {

// What a fix does for the key's reads and for its writes.
enum class ReadFix { kNone, kReplicate, kCache };  // weaker to stronger
struct Axes {
  ReadFix reads = ReadFix::kNone;
  bool split_writes = false;
};

Axes AxesOf(Strategy s) {
  switch (s) {
    case Strategy::kCache:
      return {ReadFix::kCache, false};
    case Strategy::kReplicate:
      return {ReadFix::kReplicate, false};
    case Strategy::kSplit:
      return {ReadFix::kNone, true};
    case Strategy::kSplitCache:
      return {ReadFix::kCache, true};
    default:
      return {};
  }
}

}  // namespace

double FeedState::ShardLoad(const KeySnapshot& k) {
  for (const auto& [strategy, load] : k.projected_load) {
    if (strategy == Strategy::kNone) return load;
  }
  return 0;
}

Strategy FeedState::NextFix(Strategy in_force, Strategy advice, bool over_target) {
  if (advice == in_force || !over_target) return in_force;
  if (in_force == Strategy::kIsolate) return advice;
  if (advice == Strategy::kIsolate) return Strategy::kSplitCache;
  const Axes a = AxesOf(in_force);
  const Axes b = AxesOf(advice);
  const ReadFix reads = std::max(a.reads, b.reads);
  if (a.split_writes || b.split_writes) {
    return reads == ReadFix::kNone ? Strategy::kSplit : Strategy::kSplitCache;
  }
  return reads == ReadFix::kCache ? Strategy::kCache : Strategy::kReplicate;
}

std::vector<FeedEvent> FeedState::Update(const Snapshot& snap,
                                         const config::ReloadableOptions& options, absl::Time now) {
  const auto blocked = [&](const std::string& key) {
    return std::any_of(options.feed.blocks.begin(), options.feed.blocks.end(),
                       [&](const config::FeedPattern& b) { return b.Matches(key); });
  };
  std::map<std::string, FeedEntry> next;
  // Pins first: a key both pinned and advised is the pin's (the operator's word wins).
  const KeyLabeler labeler(options.exporter.label, options.exporter.label_max_bytes, label_secret_);
  for (const config::FeedPin& pin : options.feed.pins) {
    if (next.contains(pin.match.pattern)) continue;  // the first pin of a key wins
    FeedEntry e;
    e.key = pin.match.pattern;
    e.label = labeler.Label(e.key, /*truncated=*/false, /*hash=*/0);
    e.mode = pin.mode;
    e.pinned = true;
    e.prefix = pin.match.kind == config::FeedPattern::kPrefix;
    SetParameters(options, &e);
    next.emplace(e.key, std::move(e));
  }
  // Rebuilt from the Snapshot's keys only: a key it no longer has is forgotten at once.
  std::map<std::string, Advised> advised;
  for (const KeySnapshot& k : snap.keys) {
    // A truncated key's bytes are only a prefix of the real key, which no client could match
    // exactly.
    if (k.truncated || blocked(k.key)) continue;
    // Advice is meaningful once the key has projected loads.
    const bool fix = k.hot && !k.projected_load.empty() && k.advice != Strategy::kNone;
    const auto held = advised_.find(k.key);
    Advised a;
    if (fix) {
      a = {held == advised_.end()
               ? k.advice
               : NextFix(held->second.mode, k.advice, ShardLoad(k) > options.cluster.target),
           now};
    } else if (held == advised_.end()) {
      continue;  // entering takes a fix
    } else if (k.hot) {
      a = {held->second.mode, now};  // the fix in force is why the advice may say none
    } else if (now - held->second.last_hot < options.feed.hold) {
      a = held->second;
    } else {
      continue;
    }
    if (!advised.try_emplace(k.key, a).second) continue;
    auto [it, inserted] = next.try_emplace(k.key);
    FeedEntry& e = it->second;
    if (inserted) {
      e.key = k.key;
      e.label = k.label;
      e.mode = a.mode;
      SetParameters(options, &e);
    }
    // A pinned key still shows what is measured of it.
    e.share = k.share;
    e.write_ratio = k.write_ratio;
  }
  // An advised key that left the Snapshot keeps its entry for the hold after it was last
  // hot, as a key still in it does. A fix that hides nearly all of a key's traffic takes the
  // key out of the tracker, and then out of the Snapshot as soon as a report of the kits is
  // late; a node that became a replica no longer sees its keys at all (its clients moved to
  // the promoted primary, whose hotkeyd takes over). While the kits report the demand they
  // absorb of a key, its hold starts again. No key enters this way, and at most top_k are
  // held so (the most recently hot), so the set stays within the pins and twice top_k.
  std::vector<std::pair<absl::Time, std::string>> gone;
  for (const auto& [key, held] : advised_) {
    if (advised.contains(key) || blocked(key)) continue;
    const auto old = entries_.find(key);
    if (old == entries_.end() || old->second.pinned) continue;
    absl::Time last_hot = held.last_hot;
    if (std::binary_search(snap.absorbed_keys.begin(), snap.absorbed_keys.end(), key)) {
      last_hot = now;
    }
    if (now - last_hot < options.feed.hold) gone.emplace_back(last_hot, key);
  }
  if (gone.size() > options.exporter.top_k) {
    std::partial_sort(gone.begin(), gone.begin() + options.exporter.top_k, gone.end(),
                      [](const auto& x, const auto& y) {
                        return x.first != y.first ? x.first > y.first : x.second < y.second;
                      });
    gone.resize(options.exporter.top_k);
  }
  for (auto& [last_hot, key] : gone) {
    advised.emplace(key, Advised{advised_.at(key).mode, last_hot});
    next.try_emplace(key, entries_.at(key));
  }
  std::erase_if(next, [&](const auto& kv) { return blocked(kv.first); });
  advised_ = std::move(advised);

  std::vector<FeedEvent> events;
  for (const auto& [key, old] : entries_) {
    if (!next.contains(key)) events.push_back({FeedEvent::Type::kRemove, 0, old});
  }
  for (const auto& [key, e] : next) {
    const auto it = entries_.find(key);
    if (it != entries_.end() && !it->second.SameFix(e)) {
      events.push_back({FeedEvent::Type::kChange, 0, e});
    }
  }
  for (const auto& [key, e] : next) {
    if (!entries_.contains(key)) events.push_back({FeedEvent::Type::kAdd, 0, e});
  }
  for (FeedEvent& ev : events) ev.version = ++version_;
  entries_ = std::move(next);
  return events;
}

bool FeedState::Holds(std::string_view key) const {
  // The set holds pins and exported keys only, so the scan of its prefix entries is short.
  const auto exact = entries_.find(std::string(key));
  if (exact != entries_.end()) return true;
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const auto& kv) { return kv.second.prefix && key.starts_with(kv.first); });
}

bool RawKeysFor(config::KeyLabelMode mode, bool authenticated) {
  return mode == config::KeyLabelMode::kRaw || authenticated;
}

std::string FeedEntryJson(const FeedEntry& e, bool raw_keys) {
  return text::JsonText(EntryObject(e, raw_keys));
}

std::string FeedSetJson(const FeedState& state, absl::Duration lease, bool raw_keys) {
  boost::json::object o;
  o["version"] = state.version();
  o["lease_seconds"] = absl::ToDoubleSeconds(lease);
  o["heartbeat_seconds"] = absl::ToDoubleSeconds(lease / config::FeedOptions::kHeartbeatsPerLease);
  boost::json::array entries;
  entries.reserve(state.entries().size());
  for (const auto& [key, e] : state.entries()) entries.push_back(EntryObject(e, raw_keys));
  o["entries"] = std::move(entries);
  return text::JsonText(std::move(o));
}

std::string FeedEventJson(const FeedEvent& e, bool raw_keys) {
  boost::json::object o;
  o["version"] = e.version;
  if (e.type == FeedEvent::Type::kRemove) {
    if (raw_keys) o["key_b64"] = absl::Base64Escape(e.entry.key);
    o["label"] = e.entry.label;
  } else {
    o["entry"] = EntryObject(e.entry, raw_keys);
  }
  return text::JsonText(std::move(o));
}

std::string SseEvent(std::string_view type, uint64_t version, std::string_view data) {
  // JsonText writes one line (no raw newline can appear in JSON text), as SSE needs.
  std::string out;
  out.reserve(type.size() + data.size() + 40);
  out.append("event: ").append(type).append("\nid: ").append(std::to_string(version));
  out.append("\ndata: ").append(data).append("\n\n");
  return out;
}

FeedHub::FeedHub(size_t max_subscribers, std::string label_secret,
                 const config::ReloadableOptions& options, absl::Time now, bool require_auth)
    : max_subscribers_(max_subscribers),
      require_auth_(require_auth),
      options_(options),
      state_(std::move(label_secret)),
      last_heartbeat_(now) {}

FeedHub::~FeedHub() { CloseAll(); }

void FeedHub::Update(const Snapshot& snap, absl::Time now) {
  Sweep();
  const std::vector<FeedEvent> events = state_.Update(snap, options_, now);
  for (const FeedEvent& ev : events) {
    events_[static_cast<int>(ev.type)].fetch_add(1, std::memory_order_relaxed);
    Broadcast([&](bool raw_keys) {
      return SseEvent(FeedEventTypeName(ev.type), ev.version, FeedEventJson(ev, raw_keys));
    });
  }
  if (now - last_heartbeat_ >= options_.feed.heartbeat()) {
    last_heartbeat_ = now;
    heartbeats_.fetch_add(1, std::memory_order_relaxed);
    const uint64_t v = state_.version();
    Broadcast(
        [&](bool) { return SseEvent("heartbeat", v, absl::StrCat("{\"version\":", v, "}")); });
  }
  Sweep();
  version_.store(state_.version(), std::memory_order_relaxed);
  entries_.store(state_.entries().size(), std::memory_order_relaxed);
}

std::string FeedHub::SetJson(bool raw_keys) const {
  return FeedSetJson(state_, options_.feed.lease, raw_keys);
}

std::shared_ptr<http::EventStream> FeedHub::Subscribe(bool raw_keys) {
  Sweep();
  if (subscribers_.size() >= max_subscribers_) {
    dropped_limit_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  auto stream = std::make_shared<http::EventStream>(kMaxUnsentBytes);
  // A snapshot over the bound (thousands of pins with long labels) closes the stream at
  // once as slow: counted, not sent in part.
  stream->Send(SseEvent("snapshot", state_.version(), SetJson(raw_keys)));
  subscribers_.push_back({stream, raw_keys});
  subscribers_now_.store(subscribers_.size(), std::memory_order_relaxed);
  return stream;
}

void FeedHub::CloseAll() {
  for (Subscriber& s : subscribers_) s.stream->Close();
  subscribers_.clear();
  subscribers_now_.store(0, std::memory_order_relaxed);
}

void FeedHub::Broadcast(const std::function<std::string(bool raw_keys)>& render) {
  std::optional<std::string> text[2];
  for (Subscriber& s : subscribers_) {
    std::optional<std::string>& t = text[s.raw_keys ? 1 : 0];
    if (!t) t = render(s.raw_keys);
    s.stream->Send(*t);
  }
}

void FeedHub::Sweep() {
  std::erase_if(subscribers_, [&](const Subscriber& s) {
    if (!s.stream->closed()) return false;
    if (s.stream->reason() == http::EventStream::CloseReason::kSlow) {
      dropped_slow_.fetch_add(1, std::memory_order_relaxed);
    } else if (s.stream->reason() == http::EventStream::CloseReason::kEvicted) {
      dropped_evicted_.fetch_add(1, std::memory_order_relaxed);
    }
    return true;
  });
  subscribers_now_.store(subscribers_.size(), std::memory_order_relaxed);
}

FeedStats FeedHub::stats() const {
  FeedStats s;
  s.subscribers = subscribers_now_.load(std::memory_order_relaxed);
  s.version = version_.load(std::memory_order_relaxed);
  s.entries = entries_.load(std::memory_order_relaxed);
  for (int i = 0; i < 3; ++i) s.events[i] = events_[i].load(std::memory_order_relaxed);
  s.heartbeats = heartbeats_.load(std::memory_order_relaxed);
  s.dropped_slow = dropped_slow_.load(std::memory_order_relaxed);
  s.dropped_limit = dropped_limit_.load(std::memory_order_relaxed);
  s.dropped_evicted = dropped_evicted_.load(std::memory_order_relaxed);
  return s;
}

std::vector<prometheus::MetricFamily> FeedHub::Collect() const {
  using prometheus::ClientMetric;
  using prometheus::MetricFamily;
  using prometheus::MetricType;
  const FeedStats s = stats();
  auto gauge = [](std::string name, std::string help, double v) {
    MetricFamily f{std::move(name), std::move(help), MetricType::Gauge, {}};
    ClientMetric m;
    m.gauge.value = v;
    f.metric.push_back(std::move(m));
    return f;
  };
  auto counter = [](MetricFamily& f, std::string label, std::string value, double v) {
    ClientMetric m;
    m.label = {{std::move(label), std::move(value)}};
    m.counter.value = v;
    f.metric.push_back(std::move(m));
  };
  std::vector<MetricFamily> out;
  out.push_back(gauge("hotkey_feed_subscribers",
                      "Hot-key feed streams (GET /api/v1/hotkeys/stream) open now.",
                      static_cast<double>(s.subscribers)));
  out.push_back(gauge("hotkey_feed_version",
                      "The hot-key feed's version: +1 per add, change or remove event.",
                      static_cast<double>(s.version)));
  out.push_back(gauge("hotkey_feed_memory_bound_bytes",
                      "Most memory the hot-key feed streams can hold: --feed.max-subscribers "
                      "times a subscriber's unsent bytes and its session. Part of "
                      "hotkey_memory_budget_bytes.",
                      static_cast<double>(MemoryBoundBytes())));
  out.push_back(gauge("hotkey_feed_entries",
                      "Keys and prefixes in the hot-key feed now (advised and pinned, minus "
                      "blocked).",
                      static_cast<double>(s.entries)));
  MetricFamily events{"hotkey_feed_events_total",
                      "Hot-key feed events by type (each sent to every subscriber).",
                      MetricType::Counter,
                      {}};
  for (FeedEvent::Type t :
       {FeedEvent::Type::kAdd, FeedEvent::Type::kChange, FeedEvent::Type::kRemove}) {
    counter(events, "type", std::string(FeedEventTypeName(t)),
            static_cast<double>(s.events[static_cast<int>(t)]));
  }
  counter(events, "type", "heartbeat", static_cast<double>(s.heartbeats));
  out.push_back(std::move(events));
  MetricFamily dropped{"hotkey_feed_subscribers_dropped_total",
                       "Hot-key feed streams dropped: slow (unsent output over 64 KiB, or a "
                       "write not taken within the request timeout), refused at "
                       "--feed.max-subscribers (limit), or closed by the HTTP server to make "
                       "room for another connection (evicted).",
                       MetricType::Counter,
                       {}};
  counter(dropped, "reason", "slow", static_cast<double>(s.dropped_slow));
  counter(dropped, "reason", "limit", static_cast<double>(s.dropped_limit));
  counter(dropped, "reason", "evicted", static_cast<double>(s.dropped_evicted));
  out.push_back(std::move(dropped));
  return out;
}

}  // namespace hotkey::web
