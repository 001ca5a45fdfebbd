// MeasuredLoadsOptions::Validate; see measured_loads_options.h.

#include "hotkey/config/measured_loads_options.h"

#include "range.h"

namespace hotkey::config {

using internal::InRange;
using internal::OutOfRange;

absl::Status MeasuredLoadsOptions::Validate() const {
  if (!InRange(max_age, absl::Seconds(1), absl::Hours(24))) {
    return OutOfRange("measured loads max age", "[1s, 24h]", absl::FormatDuration(max_age));
  }
  return absl::OkStatus();
}

}  // namespace hotkey::config
