#include "hotkey/exporter/model_inputs.h"

namespace hotkey::exporter {

std::string_view InputOriginName(InputOrigin origin) {
  return origin == InputOrigin::kMeasured ? "measured" : "configured";
}

}  // namespace hotkey::exporter
