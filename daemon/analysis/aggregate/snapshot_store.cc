#include "hotkey/aggregate/snapshot_store.h"

#include <utility>

namespace hotkey::aggregate {

std::shared_ptr<const Snapshot> SnapshotStore::snapshot() const {
  std::lock_guard<std::mutex> l(mu_);
  return snapshot_;
}

void SnapshotStore::Publish(std::shared_ptr<const Snapshot> snap) {
  std::lock_guard<std::mutex> l(mu_);
  snapshot_ = std::move(snap);
}

model::Cluster SnapshotStore::cluster() const {
  std::lock_guard<std::mutex> l(mu_);
  return cluster_;
}

model::Cluster SnapshotStore::advice_cluster() const {
  std::lock_guard<std::mutex> l(mu_);
  return snapshot_ ? snapshot_->model.cluster : cluster_;
}

ReloadStatus SnapshotStore::reload_status() const {
  std::lock_guard<std::mutex> l(mu_);
  return reload_;
}

StorageStatus SnapshotStore::storage_status() const {
  std::lock_guard<std::mutex> l(mu_);
  return storage_;
}

void SnapshotStore::NoteReload(const absl::Status& status, const model::Cluster& cluster,
                               absl::Time wall) {
  std::lock_guard<std::mutex> l(mu_);
  reload_.last_successful = status.ok();
  if (!status.ok()) return;
  reload_.last_success = wall;
  cluster_ = cluster;
}

void SnapshotStore::WatchWebConfig(absl::Time wall) {
  std::lock_guard<std::mutex> l(mu_);
  reload_.web_config_watched = true;
  reload_.web_config_last_success = wall;
}

void SnapshotStore::NoteWebConfig(const absl::Status& status, absl::Time wall) {
  std::lock_guard<std::mutex> l(mu_);
  reload_.web_config_last_successful = status.ok();
  if (status.ok()) reload_.web_config_last_success = wall;
}

void SnapshotStore::EnableStorage() {
  std::lock_guard<std::mutex> l(mu_);
  storage_.enabled = true;
}

void SnapshotStore::NoteSave(const absl::Status& status, absl::Time wall) {
  std::lock_guard<std::mutex> l(mu_);
  if (status.ok()) {
    storage_.last_success = wall;
  } else {
    ++storage_.failures;
  }
}

}  // namespace hotkey::aggregate
