// SnapshotStore: what analysis publishes for serving to read. It holds the current
// snapshot, the configured cluster (the model's defaults before the first snapshot), and the
// reload and storage status the program reports into it; and it points at what analysis
// keeps beyond a tick: the history, the episode log and, with --model.measured-loads-file,
// the model against measured loads (each thread-safe on its own). Serving (hotkey::web)
// reads only this, so it calls nothing back up into the program that owns the threads.
//
// Thread-safe: one mutex over the snapshot pointer and the status, held for a copy;
// publishing swaps a shared_ptr, so a reader keeps the snapshot it took while the next one
// is built.

#ifndef HOTKEY_AGGREGATE_SNAPSHOT_STORE_H_
#define HOTKEY_AGGREGATE_SNAPSHOT_STORE_H_

#include <cstdint>
#include <memory>
#include <mutex>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hotkey/aggregate/episodes.h"
#include "hotkey/aggregate/history.h"
#include "hotkey/aggregate/load_comparison.h"
#include "hotkey/aggregate/snapshot.h"
#include "hotkey/model/shard_model.h"

namespace hotkey::aggregate {

// How reloading the configuration goes (hotkey_config_last_reload_*).
struct ReloadStatus {
  bool last_successful = true;
  absl::Time last_success;
  // The --web.config.file, re-read when it changes; exported only when there is one.
  bool web_config_watched = false;
  bool web_config_last_successful = true;
  absl::Time web_config_last_success = absl::UnixEpoch();
};

// --storage.path: how saving the trackers' state goes.
struct StorageStatus {
  bool enabled = false;
  absl::Time last_success = absl::UnixEpoch();
  uint64_t failures = 0;
};

class SnapshotStore {
 public:
  // `history` and `episodes` (the aggregator's) must outlive the store; `measured` too, or
  // null without a measured-loads file.
  SnapshotStore(model::Cluster cluster, const History* history, const EpisodeLog* episodes,
                const LoadComparison* measured)
      : history_(history), episodes_(episodes), measured_(measured), cluster_(cluster) {}

  // The latest snapshot; null before the first Publish().
  std::shared_ptr<const Snapshot> snapshot() const;
  void Publish(std::shared_ptr<const Snapshot> snap);

  // The cluster of the configuration in force (the reloadable options').
  model::Cluster cluster() const;
  // The cluster the advice used at the last snapshot (measured where it could be), or the
  // configured one before there is a snapshot.
  model::Cluster advice_cluster() const;

  ReloadStatus reload_status() const;
  StorageStatus storage_status() const;

  // A reload of the rules at wall time `wall`: on success `cluster` is the new configured
  // cluster; on failure the old configuration stays.
  void NoteReload(const absl::Status& status, const model::Cluster& cluster, absl::Time wall);
  // The web config file is watched from now on (initially fine at `wall`), and a re-read of
  // it at `wall`.
  void WatchWebConfig(absl::Time wall);
  void NoteWebConfig(const absl::Status& status, absl::Time wall);
  // Saving state is on (--storage.path), and the outcome of one save at `wall`.
  void EnableStorage();
  void NoteSave(const absl::Status& status, absl::Time wall);

  const History* history() const { return history_; }
  const EpisodeLog* episodes() const { return episodes_; }
  const LoadComparison* measured() const { return measured_; }

 private:
  const History* const history_;
  const EpisodeLog* const episodes_;
  const LoadComparison* const measured_;
  mutable std::mutex mu_;
  std::shared_ptr<const Snapshot> snapshot_;  // guarded by mu_
  model::Cluster cluster_;                    // guarded by mu_
  ReloadStatus reload_;                       // guarded by mu_
  StorageStatus storage_;                     // guarded by mu_
};

}  // namespace hotkey::aggregate

#endif  // HOTKEY_AGGREGATE_SNAPSHOT_STORE_H_
