// Key label modes by name, and ExportOptions::Validate; see export_options.h.

#include "hotkey/config/export_options.h"

#include "absl/strings/str_cat.h"
#include "hotkey/config/values.h"
#include "range.h"

namespace hotkey::config {

using internal::InRange;
using internal::IsHysteresis;
using internal::IsShare;
using internal::OutOfRange;

absl::StatusOr<KeyLabelMode> ParseKeyLabelMode(std::string_view text) {
  return text::ParseName(kKeyLabelModeNames, text, "key label mode");
}

absl::Status ExportOptions::Validate() const {
  if (!InRange<uint32_t>(top_k, 1, 1000)) return OutOfRange("export top-k", "[1, 1000]", top_k);
  if (!IsShare(min_share)) return OutOfRange("export min share", "(0, 1]", min_share);
  if (!IsHysteresis(hysteresis)) return OutOfRange("export hysteresis", "[0, 1)", hysteresis);
  if (!(min_key_ops_per_second >= 0) || min_key_ops_per_second > 1e12) {
    return OutOfRange("export min key ops", "[0, 1e12]", min_key_ops_per_second);
  }
  switch (label) {
    case KeyLabelMode::kRaw:
    case KeyLabelMode::kHash:
    case KeyLabelMode::kPrefix:
      break;
    default:
      return absl::InvalidArgumentError("key label mode is not raw, hash or prefix");
  }
  if (!InRange<size_t>(label_max_bytes, 16, 16384)) {
    return OutOfRange("key label max bytes", "[16, 16384]", label_max_bytes);
  }
  return absl::OkStatus();
}

}  // namespace hotkey::config
