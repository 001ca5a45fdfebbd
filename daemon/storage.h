// StateStore: the trackers' state on disk, so a restart or an upgrade does not forget a
// key that is still hot.
//
// The file is one serialised sketch::HeavyHitters (versioned and checksummed by the sketch
// library): the merge of every receiver's tracker. Writes are atomic: a temporary file in
// the same directory, fsync, rename over the old file, fsync of the directory; a crash or
// SIGKILL at any moment leaves the previous file or the new one, never a torn one. On load,
// a file that is corrupt, of another version, or of another tracker shape (other
// --track.* options) is reported, moved aside (`<path>.bad-<unix seconds>`), and the
// daemon starts empty rather than refusing to run.
//
// Thread-compatible; the daemon calls it from its main thread.

#ifndef HOTKEY_DAEMON_STORAGE_H_
#define HOTKEY_DAEMON_STORAGE_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace hotkey::daemon {

class StateStore {
 public:
  explicit StateStore(std::string path) : path_(std::move(path)) {}

  // Writes `tracker` atomically. On error the previous file is untouched.
  absl::Status Save(const sketch::HeavyHitters& tracker) const;

  // What Load() found.
  struct Loaded {
    std::optional<sketch::HeavyHitters> tracker;  // empty: no usable state
    std::string problem;   // why the file was not used (empty if it was, or was absent)
    std::string moved_to;  // where an unusable file was moved
  };
  // Reads the file; a tracker is returned only if its options equal `expected`. A missing
  // file is not a problem (first start).
  Loaded Load(const sketch::HeavyHittersOptions& expected, absl::Time now) const;

  const std::string& path() const { return path_; }

 private:
  const std::string path_;
};

}  // namespace hotkey::daemon

#endif  // HOTKEY_DAEMON_STORAGE_H_
