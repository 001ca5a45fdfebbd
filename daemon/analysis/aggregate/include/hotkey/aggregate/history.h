// History: what was hot over the last hour and day, in fixed memory, for /api/v1/history and
// the landing page's timeline and heatmap.
//
// Two rings of windows: fine windows of `fine_step` (10 s; 360 of them hold an hour) and
// coarse windows of `coarse_step` (1 min; 1440 hold a day), the coarse ones built from the
// fine ones as these close. 10 s is the default rate window, so a fine window's figures are
// of the same grain as /api/v1/top's; a minute for a day is Spanner Key Visualizer's finest
// grain, and both rings together stay a few MB (MemoryBound(), pinned by history_test.cc).
//
// Each window holds its wall start, its measured span, the shard's ops/s over it, and the
// top `keys` keys, `slots` slots and `slots` tags of the window, each with its ops/s (reads and
// writes), share of the shard's ops in the window, write ratio and peak share (the highest
// exported share, /api/v1/top's "share", seen at a tick within the window). Per tick
// (Record()) each exported key's rate-window ops/s times the tick's span is added to it: a
// window's figures are those rates integrated over the window, not exact counts. A window
// closes at the first tick at least `fine_step` after its start and spans up to that tick: a
// late tick (a stalled daemon) makes one longer window with its real span, never a lost one.
// The ticks are monotonic readings; the wall stamps are only for output.
//
// Fixed memory whatever the key cardinality: every window, entry and label byte is allocated
// at construction; a label longer than `label_bytes` is cut there (at a UTF-8 boundary is not
// promised: JSON output repairs it). Keys met within one window are kept in an accumulator
// of kAccumulatorFactor * keys entries; when full, the key with the fewest ops so far gives
// way to a new one (a window with more distinct keys than that may under-count a late one).
// Record() allocates nothing (pinned by history_test.cc).
//
// Thread-safe: one mutex; Record() runs on the aggregator's thread, readers (JSON,
// Serialize) on any; none on the event path.

#ifndef HOTKEY_AGGREGATE_HISTORY_H_
#define HOTKEY_AGGREGATE_HISTORY_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/aggregate/snapshot.h"
#include "hotkey/text/enum_names.h"

namespace hotkey::aggregate {

struct HistoryOptions {
  absl::Duration fine_step = absl::Seconds(10);
  size_t fine_windows = 360;  // an hour
  absl::Duration coarse_step = absl::Minutes(1);
  size_t coarse_windows = 1440;  // a day
  size_t keys = 10;              // per window; the export top-k, at most kMaxKeys
  size_t slots = 5;              // slots and tags per window
  size_t label_bytes = 128;      // the export label cap, at most kMaxLabelBytes

  static constexpr size_t kMaxKeys = 50;
  static constexpr size_t kMaxLabelBytes = 256;
  // Options for the export settings: keys = top_k and label_bytes = label_max_bytes, each
  // capped as above (fixed at start: a reload does not resize the history).
  static HistoryOptions ForExport(size_t top_k, size_t label_max_bytes);
};

class History {
 public:
  // A key's accumulator holds this many times `keys` entries.
  static constexpr size_t kAccumulatorFactor = 4;

  explicit History(HistoryOptions options);

  // One tick: `snap` built at monotonic `now` (its wall stamp is snap.time).
  void Record(const Snapshot& snap, absl::Time now);

  // Which ring a query reads.
  enum class Resolution { kFine, kCoarse };
  // The API's "resolution" and the hotkey_history_windows label.
  static constexpr text::EnumName<Resolution> kResolutionNames[] = {
      {Resolution::kFine, "fine"}, {Resolution::kCoarse, "coarse"}};
  struct Query {
    absl::Time from = absl::InfinitePast();
    absl::Time to = absl::InfiniteFuture();
    Resolution resolution = Resolution::kFine;
    bool rows = false;  // format=rows: one row per key and window (Grafana's table form)
  };
  // A query is parsed by serving, which owns the HTTP grammar (web::ParseHistoryQuery).
  // The JSON of /api/v1/history for `q` (see docs/history.md): the closed windows whose
  // start lies in [from, to], oldest first.
  std::string Json(const Query& q) const;

  // Windows held now, per ring.
  size_t fine_count() const;
  size_t coarse_count() const;
  // Bytes allocated (fixed at construction) and the most that can be: equal by design,
  // both exported (hotkey_history_memory_bytes, hotkey_history_memory_bound_bytes).
  size_t MemoryBytes() const;
  static size_t MemoryBound(const HistoryOptions& o);

  // The closed windows of both rings, in a form independent of the options (a history saved
  // with other options loads, cut to these). Deserialize() replaces the rings' contents;
  // the open windows start afresh.
  std::string Serialize() const;
  absl::Status Deserialize(std::string_view data);
  // The most Serialize() can write for any options.
  static size_t MaxSerializedBytes();

  const HistoryOptions& options() const { return options_; }

  // One key, slot or tag in a window.
  struct Item {
    uint64_t id = 0;         // key hash, slot number, tag hash
    double ops[2] = {0, 0};  // in the window: reads, writes (slots and tags: all in [0])
    double peak_share = 0;
    bool hot = false;  // hot at some tick of the window
    uint16_t label_len = 0;
  };
  struct Window {
    int64_t start_ns = 0;  // wall, Unix ns
    double span_seconds = 0;
    double ops[2] = {0, 0};  // the shard's ops in the window
    uint32_t ticks = 0;
    uint16_t keys = 0, slots = 0, tags = 0;
  };

 private:
  // A ring of windows; each window's items are [keys | slots | tags] at fixed offsets.
  struct Ring {
    absl::Duration step;
    size_t capacity = 0;
    size_t per_window = 0;  // items
    std::vector<Window> windows;
    std::vector<Item> items;
    std::vector<char> labels;  // label_bytes per item
    size_t head = 0;           // next to write
    size_t count = 0;
  };
  // An open window being summed.
  struct Accumulator {
    bool open = false;
    absl::Time start_mono;
    Window window;
    std::vector<Item> keys, slots, tags;  // capacity fixed; size() = in use
    std::vector<char> key_labels, slot_labels, tag_labels;
  };

  void InitRing(Ring* r, absl::Duration step, size_t capacity);
  void InitAccumulator(Accumulator* a, size_t keys, size_t others);
  void Add(std::vector<Item>* items, std::vector<char>* labels, uint64_t id, std::string_view label,
           double reads, double writes, double share, bool hot);
  // Closes `a` into `r` (top items by ops), stamped over `span_seconds`.
  void Close(Accumulator* a, Ring* r);
  // Folds a closed fine window into the coarse accumulator.
  void Fold(const Ring& r, size_t index, Accumulator* a);
  std::string_view Label(const Ring& r, size_t item) const;
  size_t Index(const Ring& r, size_t age) const;  // age 0: newest

  const HistoryOptions options_;
  mutable std::mutex mu_;
  Ring fine_, coarse_;                           // guarded by mu_
  Accumulator fine_acc_, coarse_acc_;            // guarded by mu_
  absl::Time last_tick_ = absl::InfinitePast();  // guarded by mu_
  std::vector<size_t> order_;                    // guarded by mu_: scratch of Close()
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_HISTORY_H_
