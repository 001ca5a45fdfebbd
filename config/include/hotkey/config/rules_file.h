// The YAML rules file (--config.file): the policy, i.e. when a key is hot (alert,
// per-pattern thresholds), which keys reach /metrics and how they are labelled (export), and
// what the hot-key feed tells clients (feed).
// This file is the one home of these settings (no flag repeats them), and a reload re-reads
// it. Process settings, the cluster model among them, are flags (flags.h).
//
// Format (example with every key: config/example-rules.yml):
//
//   alert:
//     share_threshold: 0.10      # default threshold, (0, 1]
//     min_dwell: 250ms
//     hysteresis: 0.2
//     min_ops: 100               # idle guard: no key is hot on a shard below this ops/s
//   thresholds:                  # first match wins
//     - prefix: "session:"
//       share: 0.25
//     - glob: "user:*:profile"   # * any bytes, ? one byte, [a-z] [!a-z] classes, \c literal
//       share: 0.05
//     - glob: "healthcheck*"
//       ignore: true
//   export:
//     top_k: 10
//     min_share: 0.01
//     hysteresis: 0.2
//     min_key_ops: 2             # ops/s a key needs to be exported (hot keys excepted)
//     key_label: raw             # raw | hash | prefix
//     label_max_bytes: 128
//   feed:                        # the hot-key feed (GET /api/v1/hotkeys and its stream)
//     lease: 10s                 # an entry not renewed this long is void; heartbeat lease/5
//     refresh: 1s                # refresh_seconds for cache entries (default --cluster.refresh)
//     split_factor: 8            # sub-keys for split entries (default --cluster.split, >= 2)
//     hold: 60s                  # an advised entry stays while its key is hot, then this long
//     pin:                       # always in the feed: key: or prefix:, with a mode
//       - key: "tenant:acme"
//         mode: isolate
//     block:                     # never in the feed (pins included): key:, prefix: or glob:
//       - prefix: "healthcheck"
//
// Every section and key is optional; what the file leaves out keeps its default
// (options.h), and a thresholds list given replaces the base's. Pass
// ReloadableFrom(options from the flags) as `base` on every load, not the previous load's
// result, so that deleting a line from the file brings back the default.
//
// A `cluster:` section is refused: the cluster model is set by the --cluster.* flags, and
// the error lists the flags that carry the section's values. ReloadableOptions::cluster is
// `base`'s, unchanged.
//
// Strictness: unknown keys are errors (a typo must not pass silently), as are wrong types,
// missing values and out-of-range values; messages carry the file's line number. Patterns
// are bytes as YAML decodes them: a "\xff" escape in YAML is the UTF-8 of U+00FF, so match
// non-UTF-8 bytes with '?' or a class.
//
// yaml-cpp exceptions are caught inside; these functions never throw. Thread-safe.

#ifndef HOTKEY_CONFIG_RULES_FILE_H_
#define HOTKEY_CONFIG_RULES_FILE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "hotkey/config/options.h"

namespace hotkey::config {

// `base` overlaid with `yaml_text`, validated. Empty text (or only comments) gives `base`.
absl::StatusOr<ReloadableOptions> ApplyRulesFile(std::string_view yaml_text,
                                                 const ReloadableOptions& base);

// Reads `path` and applies it; errors name the path.
absl::StatusOr<ReloadableOptions> LoadRulesFile(const std::string& path,
                                                const ReloadableOptions& base);

// What a (re)load gives: ReloadableFrom(options), overlaid with options.config_file when
// one is set (read now, with LoadRulesFile's errors). Without a rules file this reads
// nothing and cannot fail on a valid `options`. main wraps it in the loader the daemon
// calls at start and on every reload.
absl::StatusOr<ReloadableOptions> LoadReloadable(const DaemonOptions& options);

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_RULES_FILE_H_
