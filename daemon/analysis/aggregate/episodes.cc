#include "hotkey/aggregate/episodes.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "byte_codec.h"
#include "hotkey/text/json.h"

namespace hotkey::aggregate {

namespace {

namespace json = boost::json;

json::value Stamp(int64_t ns) {
  if (ns == 0) return nullptr;
  return json::value(
      absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixNanos(ns), absl::UTCTimeZone()));
}

// Version 2 added who says the fix is in force (a byte after its strategy); version 1's
// came from the measured loads file.
constexpr uint8_t kFormatVersion = 2;
// Serialize()'s bytes per episode besides its label and changes: seq, kind, id, start, end,
// interrupted, peak share, peak ops, threshold, change count, dropped, in-force strategy,
// by (version 2), since, last, label length.
constexpr size_t kEpisodeBytesV1 =
    8 + 1 + 8 + 8 + 8 + 1 + 3 * 8 + 1 + 4 + (EpisodeLog::kStrategyBytes + 1) + 8 + 8 + 2;
constexpr size_t kEpisodeBytes = kEpisodeBytesV1 + 1;
constexpr size_t kChangeBytes = 8 + EpisodeLog::kStrategyBytes + 1;
// Labels are cut to the history's cap (HistoryOptions::kMaxLabelBytes) or less.
constexpr size_t kMaxLabelBytes = 256;

}  // namespace

EpisodeLog::EpisodeLog(size_t capacity, size_t label_bytes)
    : capacity_(std::max<size_t>(capacity, 1)),
      label_bytes_(std::min(label_bytes, kMaxLabelBytes)),
      ring_(capacity_) {
  for (Episode& e : ring_) e.label.reserve(label_bytes_);
  // Every open episode is in the ring: the index never holds more than the ring, and,
  // reserved for that, never grows.
  open_.reserve(capacity_);
}

size_t EpisodeLog::OpenIndexBytes(size_t capacity) {
  OpenIndex index;
  index.reserve(capacity);
  return index.capacity() * (sizeof(OpenIndex::slot_type) + 1);
}

void EpisodeLog::SetStrategy(char* dst, std::string_view s) {
  const size_t n = std::min(s.size(), kStrategyBytes);
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

EpisodeLog::Episode& EpisodeLog::Push() {
  const size_t index = head_;
  head_ = (head_ + 1) % capacity_;
  count_ = std::min(count_ + 1, capacity_);
  // An episode still open when the ring comes round to it is forgotten with it.
  for (auto it = open_.begin(); it != open_.end(); ++it) {
    if (it->second.index == index) {
      open_.erase(it);
      break;
    }
  }
  Episode& e = ring_[index];
  std::string label = std::move(e.label);
  label.clear();
  e = Episode{};
  e.label = std::move(label);  // keeps its reserved capacity
  return e;
}

void EpisodeLog::Begin(absl::Time wall) {
  std::lock_guard<std::mutex> l(mu_);
  now_ns_ = absl::ToUnixNanos(wall);
  ++tick_;
}

void EpisodeLog::NoteInForce(Episode& e, InForceBy by, std::string_view strategy, int64_t t) {
  if (e.in_force_since_ns == 0 || by != e.in_force_by ||
      strategy.substr(0, kStrategyBytes) != e.in_force) {
    SetStrategy(e.in_force, strategy);
    e.in_force_by = by;
    e.in_force_since_ns = t;
  }
  e.in_force_last_ns = std::max(e.in_force_last_ns, t);
}

void EpisodeLog::Hot(Kind kind, uint64_t id, std::string_view label, double share, double ops,
                     double threshold, std::string_view strategy, std::string_view in_force) {
  std::lock_guard<std::mutex> l(mu_);
  const std::pair<uint8_t, uint64_t> k{static_cast<uint8_t>(kind), id};
  auto it = open_.find(k);
  if (it == open_.end()) {
    Episode& e = Push();
    e.seq = next_seq_++;
    e.kind = kind;
    e.id = id;
    e.label.assign(label.substr(0, label_bytes_));
    e.start_ns = now_ns_;
    it = open_.emplace(k, Open{static_cast<size_t>(&e - ring_.data()), tick_}).first;
  }
  it->second.seen = tick_;
  Episode& e = ring_[it->second.index];
  e.peak_share = std::max(e.peak_share, share);
  e.peak_ops = std::max(e.peak_ops, ops);
  e.threshold = threshold;
  if (!in_force.empty()) NoteInForce(e, InForceBy::kFeed, in_force, now_ns_);
  if (strategy.empty()) return;
  const std::string_view last =
      e.change_count > 0 ? std::string_view(e.changes[e.change_count - 1].strategy) : "";
  if (strategy.substr(0, kStrategyBytes) == last) return;
  if (e.change_count == kMaxChanges) {
    ++e.changes_dropped;
    return;
  }
  Change& c = e.changes[e.change_count++];
  c.time_ns = now_ns_;
  SetStrategy(c.strategy, strategy);
}

void EpisodeLog::Finish() {
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = open_.begin(); it != open_.end();) {
    auto cur = it++;
    if (cur->second.seen == tick_) continue;
    ring_[cur->second.index].end_ns = now_ns_;
    open_.erase(cur);
  }
}

void EpisodeLog::NoteMeasured(std::string_view strategy, std::string_view key, absl::Time time) {
  std::lock_guard<std::mutex> l(mu_);
  const int64_t t = absl::ToUnixNanos(time);
  for (const auto& [k, open] : open_) {
    Episode& e = ring_[open.index];
    if (e.kind != Kind::kKey || (!key.empty() && key != e.label)) continue;
    if (e.in_force_since_ns != 0 && e.in_force_by == InForceBy::kFeed) continue;
    NoteInForce(e, InForceBy::kMeasuredLoads, strategy, t);
  }
}

std::string EpisodeLog::Json(size_t limit) const {
  std::lock_guard<std::mutex> l(mu_);
  json::array episodes;
  size_t open = 0;
  for (size_t age = 0; age < count_; ++age) {
    const Episode& e = ring_[(head_ + capacity_ - 1 - age) % capacity_];
    if (e.end_ns == 0) ++open;
    if (age >= limit) continue;
    json::array changes;
    for (size_t i = 0; i < e.change_count; ++i) {
      changes.push_back(json::object{{"time", Stamp(e.changes[i].time_ns)},
                                     {"strategy", std::string_view(e.changes[i].strategy)}});
    }
    json::object o{
        {"id", e.seq},
        {"kind", KindName(e.kind)},
        {KindName(e.kind), e.kind == Kind::kSlot ? json::value(e.id) : json::value(e.label)},
        {"start", Stamp(e.start_ns)},
        {"start_unix", static_cast<double>(e.start_ns) / 1e9},
        {"end", Stamp(e.end_ns)},
        {"end_unix",
         e.end_ns == 0 ? json::value(nullptr) : json::value(static_cast<double>(e.end_ns) / 1e9)},
        {"open", e.end_ns == 0},
        {"interrupted", e.interrupted},
        {"duration_seconds", e.end_ns == 0
                                 ? json::value(nullptr)
                                 : json::value(static_cast<double>(e.end_ns - e.start_ns) / 1e9)},
        {"peak_share", e.peak_share},
        {"peak_ops_per_second", e.peak_ops},
        {"threshold", e.threshold},
        {"strategy", e.change_count
                         ? json::value(std::string_view(e.changes[e.change_count - 1].strategy))
                         : json::value(nullptr)},
        {"changes", std::move(changes)},
        {"changes_dropped", e.changes_dropped},
        {"in_force",
         e.in_force_since_ns == 0
             ? json::value(nullptr)
             : json::value(json::object{{"strategy", std::string_view(e.in_force)},
                                        {"by", text::NameOf(kInForceByNames, e.in_force_by)},
                                        {"since", Stamp(e.in_force_since_ns)},
                                        {"last", Stamp(e.in_force_last_ns)}})}};
    episodes.push_back(std::move(o));
  }
  return text::JsonText(json::object{{"capacity", capacity_},
                                     {"held", count_},
                                     {"open", open},
                                     {"episodes", std::move(episodes)}});
}

size_t EpisodeLog::count() const {
  std::lock_guard<std::mutex> l(mu_);
  return count_;
}

size_t EpisodeLog::open_count() const {
  std::lock_guard<std::mutex> l(mu_);
  return open_.size();
}

size_t EpisodeLog::MemoryBytes() const {
  std::lock_guard<std::mutex> l(mu_);
  size_t n = ring_.capacity() * sizeof(Episode);
  for (const Episode& e : ring_) {
    // A string's own buffer beyond its inline (small-string) storage.
    if (e.label.capacity() > std::string().capacity()) n += e.label.capacity() + 1;
  }
  return n + open_.capacity() * (sizeof(OpenIndex::slot_type) + 1);
}

size_t EpisodeLog::MemoryBound(size_t capacity, size_t label_bytes) {
  return capacity * (sizeof(Episode) + label_bytes + 1) + OpenIndexBytes(capacity);
}

std::string EpisodeLog::Serialize() const {
  std::lock_guard<std::mutex> l(mu_);
  std::string out;
  internal::ByteWriter bw(&out);
  bw.Put<uint8_t>(kFormatVersion);
  bw.Put<uint64_t>(next_seq_);
  bw.Put<uint32_t>(static_cast<uint32_t>(count_));
  for (size_t age = count_; age-- > 0;) {
    const Episode& e = ring_[(head_ + capacity_ - 1 - age) % capacity_];
    bw.Put(e.seq);
    bw.Put(static_cast<uint8_t>(e.kind));
    bw.Put(e.id);
    bw.Put(e.start_ns);
    bw.Put(e.end_ns);
    bw.Put<uint8_t>(e.interrupted);
    bw.Put(e.peak_share);
    bw.Put(e.peak_ops);
    bw.Put(e.threshold);
    bw.Put(e.change_count);
    bw.Put(e.changes_dropped);
    bw.Bytes(std::string_view(e.in_force, kStrategyBytes + 1));
    bw.Put(static_cast<uint8_t>(e.in_force_by));
    bw.Put(e.in_force_since_ns);
    bw.Put(e.in_force_last_ns);
    bw.Put(static_cast<uint16_t>(e.label.size()));
    bw.Bytes(e.label);
    for (size_t i = 0; i < e.change_count; ++i) {
      bw.Put(e.changes[i].time_ns);
      bw.Bytes(std::string_view(e.changes[i].strategy, kStrategyBytes + 1));
    }
  }
  return out;
}

size_t EpisodeLog::MaxSerializedBytes(size_t capacity) {
  return 1 + 8 + 4 + capacity * (kEpisodeBytes + kMaxLabelBytes + kMaxChanges * kChangeBytes);
}

absl::Status EpisodeLog::Deserialize(std::string_view data, absl::Time saved) {
  const auto bad = [] { return absl::DataLossError("episodes: truncated or corrupt"); };
  internal::ByteReader in(data);
  const uint8_t version = in.Get<uint8_t>();
  if ((version != 1 && version != kFormatVersion) || !in.ok()) {
    return absl::DataLossError("episodes: unknown format version");
  }
  const uint64_t next_seq = in.Get<uint64_t>();
  const uint32_t count = in.Get<uint32_t>();
  if (!in.ok() || count > in.remaining() / kEpisodeBytesV1) return bad();
  // Parsed first, swapped in only once the whole section reads.
  std::vector<Episode> parsed(std::min<size_t>(count, capacity_));
  const size_t skip = count - parsed.size();  // the oldest, beyond this log's capacity
  const auto strategy = [&](char* dst) {
    const std::string_view s = in.Bytes(kStrategyBytes + 1);
    if (!in.ok()) return;
    SetStrategy(dst, s.substr(0, std::min(s.find('\0'), kStrategyBytes)));
  };
  for (uint32_t n = 0; n < count; ++n) {
    Episode e;
    e.seq = in.Get<uint64_t>();
    const uint8_t kind = in.Get<uint8_t>();
    e.id = in.Get<uint64_t>();
    e.start_ns = in.Get<int64_t>();
    e.end_ns = in.Get<int64_t>();
    e.interrupted = in.Get<uint8_t>() != 0;
    e.peak_share = in.Get<double>();
    e.peak_ops = in.Get<double>();
    e.threshold = in.Get<double>();
    e.change_count = in.Get<uint8_t>();
    e.changes_dropped = in.Get<uint32_t>();
    strategy(e.in_force);
    const uint8_t by = version == 1 ? 0 : in.Get<uint8_t>();
    e.in_force_by = static_cast<InForceBy>(by);
    e.in_force_since_ns = in.Get<int64_t>();
    e.in_force_last_ns = in.Get<int64_t>();
    const uint16_t label_len = in.Get<uint16_t>();
    const std::string_view label = in.Bytes(label_len);
    if (!in.ok() || label_len > kMaxLabelBytes || kind > static_cast<uint8_t>(Kind::kTag) ||
        e.change_count > kMaxChanges || by > static_cast<uint8_t>(InForceBy::kFeed) ||
        !std::isfinite(e.peak_share) || !std::isfinite(e.peak_ops)) {
      return bad();
    }
    e.kind = static_cast<Kind>(kind);
    e.label.reserve(label_bytes_);
    e.label.assign(label.substr(0, label_bytes_));
    for (size_t i = 0; i < e.change_count; ++i) {
      e.changes[i].time_ns = in.Get<int64_t>();
      strategy(e.changes[i].strategy);
    }
    if (!in.ok()) return bad();
    if (e.end_ns == 0) {
      e.end_ns = std::max(absl::ToUnixNanos(saved), e.start_ns);
      e.interrupted = true;
    }
    if (n >= skip) parsed[n - skip] = std::move(e);
  }
  if (in.remaining() != 0) return bad();
  std::lock_guard<std::mutex> l(mu_);
  for (size_t i = 0; i < capacity_; ++i) {
    if (i < parsed.size()) {
      ring_[i] = std::move(parsed[i]);
    } else {
      std::string label = std::move(ring_[i].label);
      label.clear();
      ring_[i] = Episode{};
      ring_[i].label = std::move(label);
    }
  }
  count_ = parsed.size();
  head_ = count_ % capacity_;
  next_seq_ = std::max<uint64_t>(next_seq, count_ + 1);
  open_.clear();
  return absl::OkStatus();
}

}  // namespace hotkey::aggregate
