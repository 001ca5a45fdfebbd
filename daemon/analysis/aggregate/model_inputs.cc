#include "hotkey/aggregate/model_inputs.h"

namespace hotkey::aggregate {

std::string_view InputOriginName(InputOrigin origin) {
  return origin == InputOrigin::kMeasured ? "measured" : "configured";
}

}  // namespace hotkey::aggregate
