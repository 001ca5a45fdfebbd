#include "hotkey/aggregate/history.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "byte_codec.h"
#include "hotkey/text/json.h"

namespace hotkey::aggregate {

namespace {

namespace json = boost::json;

std::string Stamp(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

constexpr uint8_t kFormatVersion = 1;
// Serialize()'s fixed bytes: per ring, its step and count; per window, start, span, two
// ops, ticks, three counts; per item, id, two ops, peak, hot, label length.
constexpr size_t kRingBytes = 8 + 4;
constexpr size_t kWindowBytes = 8 + 8 + 16 + 4 + 3 * 2;
constexpr size_t kItemBytes = 8 + 16 + 8 + 1 + 2;

}  // namespace

HistoryOptions HistoryOptions::ForExport(size_t top_k, size_t label_max_bytes) {
  HistoryOptions o;
  o.keys = std::clamp<size_t>(top_k, 1, kMaxKeys);
  o.label_bytes = std::clamp<size_t>(label_max_bytes, 1, kMaxLabelBytes);
  return o;
}

History::History(HistoryOptions options) : options_(options) {
  InitRing(&fine_, options_.fine_step, options_.fine_windows);
  InitRing(&coarse_, options_.coarse_step, options_.coarse_windows);
  InitAccumulator(&fine_acc_, kAccumulatorFactor * options_.keys,
                  kAccumulatorFactor * options_.slots);
  // A coarse window folds fine windows of at most `keys` keys each; it keeps as many as a
  // fine accumulator.
  InitAccumulator(&coarse_acc_, kAccumulatorFactor * options_.keys,
                  kAccumulatorFactor * options_.slots);
  order_.reserve(kAccumulatorFactor * std::max(options_.keys, options_.slots));
}

void History::InitRing(Ring* r, absl::Duration step, size_t capacity) {
  r->step = step;
  r->capacity = capacity;
  r->per_window = options_.keys + 2 * options_.slots;
  r->windows.resize(capacity);
  r->items.resize(capacity * r->per_window);
  r->labels.resize(r->items.size() * options_.label_bytes);
}

void History::InitAccumulator(Accumulator* a, size_t keys, size_t others) {
  a->keys.reserve(keys);
  a->slots.reserve(others);
  a->tags.reserve(others);
  a->key_labels.resize(keys * options_.label_bytes);
  a->slot_labels.resize(others * options_.label_bytes);
  a->tag_labels.resize(others * options_.label_bytes);
}

void History::Add(std::vector<Item>* items, std::vector<char>* labels, uint64_t id,
                  std::string_view label, double reads, double writes, double share, bool hot) {
  auto it = std::find_if(items->begin(), items->end(), [id](const Item& i) { return i.id == id; });
  if (it == items->end()) {
    if (items->size() < items->capacity()) {
      items->emplace_back();
      it = items->end() - 1;
    } else {
      // Full: the key with the fewest ops so far gives way.
      it = std::min_element(items->begin(), items->end(), [](const Item& a, const Item& b) {
        return a.ops[0] + a.ops[1] < b.ops[0] + b.ops[1];
      });
    }
    *it = Item{};
    it->id = id;
    const size_t n = std::min(label.size(), options_.label_bytes);
    std::memcpy(labels->data() + (it - items->begin()) * options_.label_bytes, label.data(), n);
    it->label_len = static_cast<uint16_t>(n);
  }
  it->ops[0] += reads;
  it->ops[1] += writes;
  it->peak_share = std::max(it->peak_share, share);
  it->hot = it->hot || hot;
}

void History::Record(const Snapshot& snap, absl::Time now) {
  std::lock_guard<std::mutex> l(mu_);
  Accumulator& a = fine_acc_;
  if (!a.open) {
    a.open = true;
    a.start_mono = now;
    a.window = Window{};
    a.window.start_ns = absl::ToUnixNanos(snap.time);
    last_tick_ = now;
  }
  const double dt = std::max(0.0, absl::ToDoubleSeconds(now - last_tick_));
  last_tick_ = now;
  ++a.window.ticks;
  for (int o = 0; o < 2; ++o) a.window.ops[o] += snap.ops_per_second[o] * dt;
  for (const KeySnapshot& k : snap.keys) {
    Add(&a.keys, &a.key_labels, k.hash, k.label, k.ops_per_second[0] * dt, k.ops_per_second[1] * dt,
        k.share, k.hot);
  }
  for (const SlotSnapshot& s : snap.slots.slots) {
    char buf[8];
    const char* end = std::to_chars(buf, buf + sizeof buf, s.slot).ptr;
    Add(&a.slots, &a.slot_labels, s.slot, std::string_view(buf, end - buf), s.ops_per_second * dt,
        0, s.share, s.hot);
  }
  for (const TagSnapshot& t : snap.slots.tags) {
    Add(&a.tags, &a.tag_labels, t.hash, t.label, t.ops_per_second * dt, 0, t.share, t.hot);
  }
  if (now - a.start_mono < options_.fine_step) return;
  a.window.span_seconds = absl::ToDoubleSeconds(now - a.start_mono);
  Close(&a, &fine_);
  Fold(fine_, Index(fine_, 0), &coarse_acc_);
  if (coarse_acc_.window.span_seconds >= absl::ToDoubleSeconds(options_.coarse_step)) {
    Close(&coarse_acc_, &coarse_);
  }
  // The next window starts where this one ended: no time between them is lost.
  a.open = true;
  a.start_mono = now;
  a.window = Window{};
  a.window.start_ns = absl::ToUnixNanos(snap.time);
}

void History::Fold(const Ring& r, size_t index, Accumulator* a) {
  const Window& w = r.windows[index];
  if (!a->open) {
    a->open = true;
    a->window = Window{};
    a->window.start_ns = w.start_ns;
  }
  a->window.span_seconds += w.span_seconds;
  a->window.ticks += w.ticks;
  for (int o = 0; o < 2; ++o) a->window.ops[o] += w.ops[o];
  const size_t base = index * r.per_window;
  auto fold = [&](size_t offset, size_t n, std::vector<Item>* items, std::vector<char>* labels) {
    for (size_t i = 0; i < n; ++i) {
      const Item& it = r.items[base + offset + i];
      Add(items, labels, it.id, Label(r, base + offset + i), it.ops[0], it.ops[1], it.peak_share,
          it.hot);
    }
  };
  fold(0, w.keys, &a->keys, &a->key_labels);
  fold(options_.keys, w.slots, &a->slots, &a->slot_labels);
  fold(options_.keys + options_.slots, w.tags, &a->tags, &a->tag_labels);
}

void History::Close(Accumulator* a, Ring* r) {
  const size_t index = r->head;
  r->head = (r->head + 1) % r->capacity;
  r->count = std::min(r->count + 1, r->capacity);
  Window& w = r->windows[index];
  w = a->window;
  const size_t base = index * r->per_window;
  auto take = [&](size_t offset, size_t limit, std::vector<Item>& items,
                  const std::vector<char>& labels) -> uint16_t {
    order_.clear();
    for (size_t i = 0; i < items.size(); ++i) order_.push_back(i);
    const size_t n = std::min(limit, items.size());
    std::partial_sort(order_.begin(), order_.begin() + n, order_.end(), [&](size_t x, size_t y) {
      const double ox = items[x].ops[0] + items[x].ops[1], oy = items[y].ops[0] + items[y].ops[1];
      if (ox != oy) return ox > oy;
      if (items[x].peak_share != items[y].peak_share) {
        return items[x].peak_share > items[y].peak_share;
      }
      return items[x].id < items[y].id;
    });
    for (size_t i = 0; i < n; ++i) {
      const size_t dst = base + offset + i;
      r->items[dst] = items[order_[i]];
      std::memcpy(r->labels.data() + dst * options_.label_bytes,
                  labels.data() + order_[i] * options_.label_bytes, items[order_[i]].label_len);
    }
    items.clear();
    return static_cast<uint16_t>(n);
  };
  w.keys = take(0, options_.keys, a->keys, a->key_labels);
  w.slots = take(options_.keys, options_.slots, a->slots, a->slot_labels);
  w.tags = take(options_.keys + options_.slots, options_.slots, a->tags, a->tag_labels);
  a->open = false;
}

std::string_view History::Label(const Ring& r, size_t item) const {
  return std::string_view(r.labels.data() + item * options_.label_bytes, r.items[item].label_len);
}

size_t History::Index(const Ring& r, size_t age) const {
  return (r.head + r.capacity - 1 - age) % r.capacity;
}

size_t History::fine_count() const {
  std::lock_guard<std::mutex> l(mu_);
  return fine_.count;
}

size_t History::coarse_count() const {
  std::lock_guard<std::mutex> l(mu_);
  return coarse_.count;
}

size_t History::MemoryBytes() const {
  std::lock_guard<std::mutex> l(mu_);
  size_t n = sizeof(History);
  for (const Ring* r : {&fine_, &coarse_}) {
    n += r->windows.capacity() * sizeof(Window) + r->items.capacity() * sizeof(Item) +
         r->labels.capacity();
  }
  for (const Accumulator* a : {&fine_acc_, &coarse_acc_}) {
    n += (a->keys.capacity() + a->slots.capacity() + a->tags.capacity()) * sizeof(Item) +
         a->key_labels.capacity() + a->slot_labels.capacity() + a->tag_labels.capacity();
  }
  return n + order_.capacity() * sizeof(size_t);
}

size_t History::MemoryBound(const HistoryOptions& o) {
  const size_t item = sizeof(Item) + o.label_bytes;
  const size_t per_window = sizeof(Window) + (o.keys + 2 * o.slots) * item;
  const size_t acc = kAccumulatorFactor * (o.keys + 2 * o.slots) * item;
  return sizeof(History) + (o.fine_windows + o.coarse_windows) * per_window + 2 * acc +
         kAccumulatorFactor * std::max(o.keys, o.slots) * sizeof(size_t);
}

std::string History::Json(const Query& q) const {
  std::lock_guard<std::mutex> l(mu_);
  const Ring& r = q.resolution == Resolution::kCoarse ? coarse_ : fine_;
  json::object out;
  out["resolution"] = text::NameOf(kResolutionNames, q.resolution);
  out["step_seconds"] = absl::ToDoubleSeconds(r.step);
  out["capacity"] = r.capacity;
  out["held"] = r.count;
  out["from"] = q.from == absl::InfinitePast() ? json::value(nullptr) : json::value(Stamp(q.from));
  out["to"] = q.to == absl::InfiniteFuture() ? json::value(nullptr) : json::value(Stamp(q.to));
  json::array windows, rows;
  for (size_t age = r.count; age-- > 0;) {
    const size_t index = Index(r, age);
    const Window& w = r.windows[index];
    const absl::Time start = absl::FromUnixNanos(w.start_ns);
    if (start < q.from || start > q.to) continue;
    const double span = w.span_seconds;
    const double total = w.ops[0] + w.ops[1];
    const auto rate = [span](double ops) { return span > 0 ? ops / span : 0.0; };
    json::array keys, slots, tags;
    const size_t base = index * r.per_window;
    for (size_t i = 0; i < w.keys; ++i) {
      const Item& it = r.items[base + i];
      const double ops = it.ops[0] + it.ops[1];
      json::object k{
          {"key", Label(r, base + i)},
          {"share", total > 0 ? std::min(1.0, ops / total) : 0.0},
          {"peak_share", it.peak_share},
          {"write_ratio", ops > 0 ? it.ops[1] / ops : 0.0},
          {"ops_per_second", json::object{{"read", rate(it.ops[0])}, {"write", rate(it.ops[1])}}},
          {"hot", it.hot}};
      if (q.rows) {
        k["time"] = Stamp(start);
        k["time_unix"] = absl::ToDoubleSeconds(start - absl::UnixEpoch());
        rows.push_back(std::move(k));
      } else {
        keys.push_back(std::move(k));
      }
    }
    if (q.rows) continue;
    auto other = [&](size_t offset, size_t n, const char* name, json::array* out_items) {
      for (size_t i = 0; i < n; ++i) {
        const Item& it = r.items[base + offset + i];
        json::object o;
        if (std::string_view(name) == "slot") {
          o[name] = it.id;
        } else {
          o[name] = Label(r, base + offset + i);
        }
        o["share"] = total > 0 ? std::min(1.0, it.ops[0] / total) : 0.0;
        o["peak_share"] = it.peak_share;
        o["ops_per_second"] = rate(it.ops[0]);
        o["hot"] = it.hot;
        out_items->push_back(std::move(o));
      }
    };
    other(options_.keys, w.slots, "slot", &slots);
    other(options_.keys + options_.slots, w.tags, "tag", &tags);
    windows.push_back(json::object{
        {"start", Stamp(start)},
        {"start_unix", absl::ToDoubleSeconds(start - absl::UnixEpoch())},
        {"span_seconds", span},
        {"ticks", w.ticks},
        {"ops_per_second", json::object{{"read", rate(w.ops[0])}, {"write", rate(w.ops[1])}}},
        {"keys", std::move(keys)},
        {"slots", std::move(slots)},
        {"tags", std::move(tags)}});
  }
  if (q.rows) {
    out["rows"] = std::move(rows);
  } else {
    out["windows"] = std::move(windows);
  }
  return text::JsonText(std::move(out));
}

std::string History::Serialize() const {
  std::lock_guard<std::mutex> l(mu_);
  std::string out;
  internal::ByteWriter bw(&out);
  bw.Put<uint8_t>(kFormatVersion);
  for (const Ring* r : {&fine_, &coarse_}) {
    bw.Put<int64_t>(absl::ToInt64Nanoseconds(r->step));
    bw.Put<uint32_t>(static_cast<uint32_t>(r->count));
    for (size_t age = r->count; age-- > 0;) {
      const size_t index = Index(*r, age);
      const Window& w = r->windows[index];
      bw.Put(w.start_ns);
      bw.Put(w.span_seconds);
      bw.Put(w.ops[0]);
      bw.Put(w.ops[1]);
      bw.Put(w.ticks);
      bw.Put(w.keys);
      bw.Put(w.slots);
      bw.Put(w.tags);
      const size_t base = index * r->per_window;
      auto items = [&](size_t offset, size_t n) {
        for (size_t i = 0; i < n; ++i) {
          const Item& it = r->items[base + offset + i];
          bw.Put(it.id);
          bw.Put(it.ops[0]);
          bw.Put(it.ops[1]);
          bw.Put(it.peak_share);
          bw.Put<uint8_t>(it.hot);
          bw.Put(it.label_len);
          const std::string_view label = Label(*r, base + offset + i);
          bw.Bytes(label);
        }
      };
      items(0, w.keys);
      items(options_.keys, w.slots);
      items(options_.keys + options_.slots, w.tags);
    }
  }
  return out;
}

size_t History::MaxSerializedBytes() {
  const HistoryOptions o;  // the rings' sizes are not options of the daemon
  const size_t items = HistoryOptions::kMaxKeys + 2 * o.slots;
  return 1 + 2 * kRingBytes +
         (o.fine_windows + o.coarse_windows) *
             (kWindowBytes + items * (kItemBytes + HistoryOptions::kMaxLabelBytes));
}

absl::Status History::Deserialize(std::string_view data) {
  internal::ByteReader in(data);
  if (in.Get<uint8_t>() != kFormatVersion || !in.ok()) {
    return absl::DataLossError("history: unknown format version");
  }
  const auto bad = [] { return absl::DataLossError("history: truncated or corrupt"); };
  // Parsed into fresh rings, swapped in only once the whole section reads.
  History fresh(options_);
  for (Ring* r : {&fresh.fine_, &fresh.coarse_}) {
    (void)in.Get<int64_t>();  // the step it was saved with: its windows keep their own spans
    const uint32_t count = in.Get<uint32_t>();
    if (!in.ok() || count > in.remaining() / kWindowBytes) return bad();
    for (uint32_t n = 0; n < count; ++n) {
      Window w;
      w.start_ns = in.Get<int64_t>();
      w.span_seconds = in.Get<double>();
      w.ops[0] = in.Get<double>();
      w.ops[1] = in.Get<double>();
      w.ticks = in.Get<uint32_t>();
      const uint16_t counts[3] = {in.Get<uint16_t>(), in.Get<uint16_t>(), in.Get<uint16_t>()};
      if (!in.ok() || !std::isfinite(w.span_seconds) || w.span_seconds < 0 ||
          !std::isfinite(w.ops[0]) || !std::isfinite(w.ops[1]) || w.ops[0] < 0 || w.ops[1] < 0) {
        return bad();
      }
      // Kept in the ring's next slot (the oldest give way when the file holds more).
      const size_t index = r->head;
      r->head = (r->head + 1) % r->capacity;
      r->count = std::min(r->count + 1, r->capacity);
      const size_t base = index * r->per_window;
      const size_t offsets[3] = {0, options_.keys, options_.keys + options_.slots};
      const size_t limits[3] = {options_.keys, options_.slots, options_.slots};
      uint16_t kept[3] = {0, 0, 0};
      for (int c = 0; c < 3; ++c) {
        for (uint16_t i = 0; i < counts[c]; ++i) {
          Item it;
          it.id = in.Get<uint64_t>();
          it.ops[0] = in.Get<double>();
          it.ops[1] = in.Get<double>();
          it.peak_share = in.Get<double>();
          it.hot = in.Get<uint8_t>() != 0;
          const uint16_t len = in.Get<uint16_t>();
          const std::string_view label = in.Bytes(len);
          if (!in.ok() || !std::isfinite(it.ops[0]) || !std::isfinite(it.ops[1]) ||
              !std::isfinite(it.peak_share)) {
            return bad();
          }
          if (i >= limits[c]) continue;  // saved with more per window than kept now
          const size_t dst = base + offsets[c] + i;
          it.label_len = static_cast<uint16_t>(std::min<size_t>(len, options_.label_bytes));
          std::memcpy(r->labels.data() + dst * options_.label_bytes, label.data(), it.label_len);
          r->items[dst] = it;
          ++kept[c];
        }
      }
      w.keys = kept[0];
      w.slots = kept[1];
      w.tags = kept[2];
      r->windows[index] = w;
    }
  }
  if (!in.ok() || in.remaining() != 0) return bad();
  std::lock_guard<std::mutex> l(mu_);
  fine_ = std::move(fresh.fine_);
  coarse_ = std::move(fresh.coarse_);
  fine_acc_.open = false;
  coarse_acc_.open = false;
  fine_acc_.keys.clear();
  fine_acc_.slots.clear();
  fine_acc_.tags.clear();
  coarse_acc_.keys.clear();
  coarse_acc_.slots.clear();
  coarse_acc_.tags.clear();
  return absl::OkStatus();
}

}  // namespace hotkey::aggregate
