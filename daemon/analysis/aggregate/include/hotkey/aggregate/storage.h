// StateStore: the trackers' state on disk, with the history and the episode log, so a
// restart or an upgrade does not forget a key that is still hot, nor what was hot before.
//
// The file (format 2) is a stamp and length-prefixed sections: the serialised
// sketch::HeavyHitters (versioned and checksummed by the sketch library), the merge of every
// receiver's tracker; the history (history.h); the episode log (episodes.h):
//
//   +------------+------------------------+-----------------------------------------+
//   | "HKSTATE2" | wall time of the save: | sections, each: tag (4 bytes: "TRKR",    |
//   | 8 bytes    | int64 Unix ns, LE      | "HIST", "EPIS"), uint64 LE length, bytes |
//   +------------+------------------------+-----------------------------------------+
//
// "TRKR" is required; an unknown tag is skipped (a later daemon's section). Format 1 files
// ("HKSTATE1", the stamp, then the tracker's bytes) and files without a stamp (the tracker's
// bytes alone) still load, with an empty history.
//
// The tracker's times are readings of the saving process's monotonic clock, meaningless to
// another process; the wall stamp says how long ago the save was. On load the tracker is
// placed so that its clock reads (this process's monotonic now - downtime), downtime being
// wall now - the stamp (0 if the wall clock stepped back past it), then advanced to now:
// the downtime decays its weights like any other time. A file without the stamp (written
// before it existed) is restored with no downtime. Writes are atomic: a temporary file in
// the same directory, fsync, rename over the old file, fsync of the directory; a crash or
// SIGKILL at any moment leaves the previous file or the new one, never a torn one. On load,
// a file that is corrupt, of another version, or of another tracker shape (other
// --track.* options), whose history or episodes section does not read, larger than such a
// state can be (MaxFileBytes(), checked before anything is read), or not a regular file (a FIFO, a
// device, a directory: opened without blocking, never read) is reported, moved aside
// (`<path>.bad-<unix seconds>`), and the daemon starts empty rather than refusing to run or
// waiting.
//
// StateStore is thread-compatible (it holds only its path). StateWriter does its writes
// on a thread of its own, so that the fsyncs never stall the daemon's io thread, which
// answers scrapes.

#ifndef HOTKEY_AGGREGATE_STORAGE_H_
#define HOTKEY_AGGREGATE_STORAGE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace hotkey::aggregate {

class StateStore {
 public:
  explicit StateStore(std::string path) : path_(std::move(path)) {}

  // Writes `tracker`, saved at wall time `wall`, atomically. On error the previous file is
  // untouched.
  absl::Status Save(const sketch::HeavyHitters& tracker, absl::Time wall) const {
    return SaveBytes(Stamped(tracker.Serialize(), wall));
  }
  // The file's bytes (format 2): `tracker` (HeavyHitters::Serialize()), `history`
  // (History::Serialize()) and `episodes` (EpisodeLog::Serialize()) stamped with `wall`;
  // an empty history or episodes is left out.
  static std::string Stamped(std::string_view tracker, absl::Time wall,
                             std::string_view history = {}, std::string_view episodes = {});
  // Writes a file's bytes (Stamped()) atomically.
  absl::Status SaveBytes(const std::string& data) const;

  // What Load() found.
  struct Loaded {
    std::optional<sketch::HeavyHitters> tracker;  // empty: no usable state
    std::string problem;   // why the file was not used (empty if it was, or was absent)
    std::string moved_to;  // where an unusable file was moved
  };
  // The largest file Load() reads for a tracker of options `o`: the most such a tracker
  // serialises to, with room for older formats (storage.cc), plus the most a history and an
  // episode log serialise to (History::MaxSerializedBytes(),
  // EpisodeLog::MaxSerializedBytes()). Pinned by storage_test.cc.
  static uint64_t MaxFileBytes(const sketch::HeavyHittersOptions& o);

  // Takes the sections besides the tracker: their bytes (empty when the file has none: an
  // older format, or nothing recorded) and the save's wall stamp (InfinitePast without
  // one). An error makes the whole file unusable: moved aside, as a corrupt tracker.
  using RestoreSections = std::function<absl::Status(std::string_view history,
                                                     std::string_view episodes, absl::Time saved)>;

  // Reads the file; a tracker is returned only if its options equal `expected` (a state
  // saved with a lobby, format versions 3 and 4, loads with it handed to the sketch). A
  // missing file is not a problem (first start). `mono` and `wall` are the daemon's
  // monotonic and wall now: the tracker is placed at mono - downtime and advanced to mono
  // (see above); `wall` also names a file moved aside.
  // `restore` (may be null) is called once the tracker is known good.
  Loaded Load(const sketch::HeavyHittersOptions& expected, absl::Time mono, absl::Time wall,
              const RestoreSections& restore = nullptr) const;

  const std::string& path() const { return path_; }

 private:
  const std::string path_;
};

// Writes a StateStore's file on one thread of its own. The caller serialises the tracker
// (cheap, in memory) and hands over the bytes; the write and its fsyncs run on the writer
// thread. At most one write waits: a Submit() while one waits replaces it, since the newest
// state holds everything the older one did. Finish() writes what waits and joins the
// thread, so a final Submit() followed by Finish() loses nothing.
//
// Thread-safe: Submit() and Finish() may be called from any thread; `done` and the test
// hook run on the writer thread.
class StateWriter {
 public:
  // The outcome of each write.
  using Done = std::function<void(const absl::Status&)>;

  // `before_write` (tests only) runs on the writer thread before each write.
  StateWriter(const StateStore& store, Done done, std::function<void()> before_write = nullptr);
  ~StateWriter();  // Finish()
  StateWriter(const StateWriter&) = delete;
  StateWriter& operator=(const StateWriter&) = delete;

  // Queues `data` (a file's bytes, StateStore::Stamped()), replacing a write not yet started.
  // Ignored after Finish().
  void Submit(std::string data);
  // Writes what waits, then stops the writer thread. Idempotent.
  void Finish();

  // Writes done, and Submit()s replaced before they were written.
  uint64_t writes() const;
  uint64_t replaced() const;

 private:
  void Loop();

  const StateStore& store_;
  const Done done_;
  const std::function<void()> before_write_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::string> pending_;  // guarded by mu_
  bool finishing_ = false;              // guarded by mu_
  uint64_t writes_ = 0;                 // guarded by mu_
  uint64_t replaced_ = 0;               // guarded by mu_
  std::thread thread_;                  // last: starts once the rest is built
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_STORAGE_H_
