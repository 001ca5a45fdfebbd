// StorageOptions: the state file (--storage.*) that carries the trackers, the history and the
// episodes across restarts.
//
// Defaults, Validate() and thread safety as options.h says for every options struct.

#ifndef HOTKEY_CONFIG_STORAGE_OPTIONS_H_
#define HOTKEY_CONFIG_STORAGE_OPTIONS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace hotkey::config {

// Restarts lose nothing: the trackers' state is written here periodically and on shutdown,
// and read back on start.
struct StorageOptions {
  // A file path; empty = no persistence.
  std::string path;
  // How often the state is written while running; in [1s, 24h].
  absl::Duration interval = absl::Minutes(1);

  absl::Status Validate() const;
  friend bool operator==(const StorageOptions&, const StorageOptions&) = default;
};

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_STORAGE_OPTIONS_H_
