// libFuzzer target: the YAML rules file, config::ApplyRulesFile (config/rules_file.h), over
// arbitrary text. It must never throw (yaml-cpp's exceptions are caught inside) nor crash.
//
// Checked beyond that: an accepted file gives options that pass Validate(); applying the
// same file again on top of its own result changes nothing (the file overrides, lists
// replace); and every accepted rule's pattern can be matched against keys built from it
// (globs are bounded, O(|pattern| * |key|)) giving a threshold in (0, 1] or +inf.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "hotkey/config/options.h"
#include "hotkey/config/rules_file.h"

namespace hotkey::fuzz {

namespace {
void CheckThreshold(double t) { FUZZ_CHECK((t > 0 && t <= 1) || t == INFINITY); }
}  // namespace

int FuzzRulesFile(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const config::ReloadableOptions base;
  absl::StatusOr<config::ReloadableOptions> got = config::ApplyRulesFile(text, base);
  if (!got.ok()) {
    FUZZ_CHECK(!got.status().message().empty());
    return 0;
  }
  FUZZ_CHECK_OK(got->Validate());

  absl::StatusOr<config::ReloadableOptions> again = config::ApplyRulesFile(text, *got);
  FUZZ_CHECK_OK(again);
  FUZZ_CHECK(again->alert == got->alert);
  FUZZ_CHECK(again->exporter == got->exporter);

  const std::string long_key(300, 'a');
  for (const config::ThresholdRule& rule : got->alert.rules) {
    for (const std::string& key :
         {rule.pattern, rule.pattern + "x", std::string(), long_key, rule.pattern + long_key}) {
      CheckThreshold(got->alert.ThresholdFor(key));
      (void)rule.Matches(key);
    }
  }
  CheckThreshold(got->alert.ThresholdFor("user:42"));
  return 0;
}

}  // namespace hotkey::fuzz

#ifndef HOTKEY_FUZZ_NO_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hotkey::fuzz::FuzzRulesFile(data, size);
}
#endif
