// StorageOptions::Validate; see storage_options.h.

#include "hotkey/config/storage_options.h"

#include "absl/strings/str_cat.h"

namespace hotkey::config {

absl::Status StorageOptions::Validate() const {
  if (interval < absl::Seconds(1) || interval > absl::Hours(24)) {
    return absl::InvalidArgumentError(absl::StrCat("storage interval must be in [1s, 24h], got ",
                                                   absl::FormatDuration(interval)));
  }
  return absl::OkStatus();
}

}  // namespace hotkey::config
