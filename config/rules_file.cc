// The YAML rules file reader; see rules_file.h for the format.
//
// yaml-cpp builds a node tree and throws on malformed input; every call into it happens
// under ApplyRulesFile's CatchYamlErrors (yaml_util.h), so nothing escapes. Scalars are read as
// text and parsed with values.h, so "250ms" or "16MiB" mean the same as on the command line and
// every message has the same shape: "line N: section.key: problem".

#include "hotkey/config/rules_file.h"

#include <cerrno>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl_compat.h"
#include "hotkey/config/values.h"
#include "yaml_util.h"

namespace hotkey::config {
namespace {

using internal::Av;

// A rules file is a few KiB; the cap stops a wrong path (/dev/zero, a log) from eating
// memory.
constexpr size_t kMaxFileBytes = size_t{4} << 20;

using internal::YamlError;
using internal::YamlLine;

// Prefixes a Validate() message with the section's line.
absl::Status InSection(const YAML::Node& node, absl::Status s) {
  if (s.ok()) return s;
  return absl::InvalidArgumentError(absl::StrCat(YamlLine(node.Mark()), s.message()));
}

absl::StatusOr<std::string> Scalar(const YAML::Node& node, std::string_view path) {
  if (node.IsNull()) return YamlError(node, path, "needs a value");
  if (!node.IsScalar()) return YamlError(node, path, "must be a single value, not a list or map");
  return node.Scalar();
}

// Reads the scalar at `node` with `parse` (a values.h parser) into *out.
template <class T, class Parse>
absl::Status Read(const YAML::Node& node, std::string_view path, Parse parse, T* out) {
  absl::StatusOr<std::string> text = Scalar(node, path);
  if (!text.ok()) return text.status();
  auto value = parse(*text);
  if (!value.ok()) return YamlError(node, path, value.status().message());
  *out = static_cast<T>(*value);
  return absl::OkStatus();
}

// An integer that must fit T; range checks proper are Validate()'s.
template <class T>
absl::Status ReadInteger(const YAML::Node& node, std::string_view path, T* out) {
  int64_t v = 0;
  if (absl::Status s = Read(node, path, ParseInteger, &v); !s.ok()) return s;
  if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
      static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
    return YamlError(node, path, absl::StrCat(v, " is out of range"));
  }
  *out = static_cast<T>(v);
  return absl::OkStatus();
}

template <class T>
absl::Status ReadSize(const YAML::Node& node, std::string_view path, T* out) {
  uint64_t v = 0;
  if (absl::Status s = Read(node, path, ParseByteSize, &v); !s.ok()) return s;
  if (v > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
    return YamlError(node, path, absl::StrCat(v, " is out of range"));
  }
  *out = static_cast<T>(v);
  return absl::OkStatus();
}

std::string JoinNames(std::initializer_list<std::string_view> names) {
  return absl::StrJoin(names, ", ", [](std::string* out, std::string_view n) { out->append(n); });
}

using KeyHandler = std::function<absl::Status(const std::string& key, const YAML::Node& value,
                                              const std::string& path)>;

// Calls `handle` for each key of the map `node`, rejecting keys outside `known`, repeated
// keys (yaml-cpp keeps them silently) and non-map values. A null node (a section with
// nothing under it) is an empty map.
absl::Status ForEachKey(const YAML::Node& node, std::string_view path,
                        std::initializer_list<std::string_view> known, const KeyHandler& handle) {
  if (node.IsNull()) return absl::OkStatus();
  if (!node.IsMap()) {
    return YamlError(node, path.empty() ? "rules file" : path,
                     absl::StrCat("must be a map of keys (", JoinNames(known), ")"));
  }
  static constexpr internal::MapWords kWords = {"keys must be plain names", "given twice"};
  return internal::ForEachEntry(
      node, path, kWords,
      [&](const YAML::Node& key_node, const std::string& key_path, const YAML::Node& value) {
        const std::string& key = key_node.Scalar();
        bool is_known = false;
        for (std::string_view k : known) is_known |= (k == key);
        if (!is_known) {
          return YamlError(key_node, key_path,
                           absl::StrCat("unknown key (known here: ", JoinNames(known), ")"));
        }
        return handle(key, value, key_path);
      });
}

absl::Status ReadAlert(const YAML::Node& node, AlertOptions* alert) {
  AlertOptions& a = *alert;
  // A key of older hotkeyds, named so that such a file says what replaced it.
  if (node.IsMap()) {
    if (const YAML::Node old = node["advice_dwell"]; old) {
      return YamlError(old, "alert.advice_dwell",
                       "gone: the advised fix now changes when its projected load passes the "
                       "target by alert.advice_margin (no fixed wait)");
    }
  }
  absl::Status s = ForEachKey(
      node, "alert", {"share_threshold", "min_dwell", "hysteresis", "min_ops", "advice_margin"},
      [&](const std::string& key, const YAML::Node& v, const std::string& path) {
        if (key == "share_threshold") return Read(v, path, ParseNumber, &a.default_threshold);
        if (key == "min_dwell") return Read(v, path, ParseDurationText, &a.min_dwell);
        if (key == "hysteresis") return Read(v, path, ParseNumber, &a.hysteresis);
        if (key == "advice_margin") return Read(v, path, ParseNumber, &a.advice_margin);
        return Read(v, path, ParseNumber, &a.min_ops_per_second);
      });
  if (!s.ok()) return s;
  // Rules are checked one by one, with their own lines, in ReadThresholds.
  AlertOptions without_rules = *alert;
  without_rules.rules.clear();
  return InSection(node, without_rules.Validate());
}

absl::Status ReadRule(const YAML::Node& node, const std::string& path, ThresholdRule* rule) {
  if (!node.IsMap()) {
    return YamlError(node, path, "must be a map such as {prefix: \"a:\", share: 0.2}");
  }
  int patterns = 0;
  bool has_share = false;
  absl::Status s =
      ForEachKey(node, path, {"prefix", "glob", "share", "ignore"},
                 [&](const std::string& key, const YAML::Node& v, const std::string& key_path) {
                   if (key == "prefix" || key == "glob") {
                     ++patterns;
                     rule->kind = key == "prefix" ? ThresholdRule::kPrefix : ThresholdRule::kGlob;
                     absl::StatusOr<std::string> text = Scalar(v, key_path);
                     if (!text.ok()) return text.status();
                     rule->pattern = *std::move(text);
                     return absl::OkStatus();
                   }
                   if (key == "share") {
                     has_share = true;
                     return Read(v, key_path, ParseNumber, &rule->share);
                   }
                   return Read(v, key_path, ParseBool, &rule->ignore);
                 });
  if (!s.ok()) return s;
  if (patterns != 1) return YamlError(node, path, "needs exactly one of prefix or glob");
  if (rule->ignore && has_share) {
    return YamlError(node, path, "give share or ignore: true, not both");
  }
  if (!rule->ignore && !has_share) return YamlError(node, path, "needs share (or ignore: true)");
  if (absl::Status v = rule->Validate(); !v.ok()) return YamlError(node, path, v.message());
  return absl::OkStatus();
}

absl::Status ReadThresholds(const YAML::Node& node, std::vector<ThresholdRule>* rules) {
  rules->clear();
  if (node.IsNull()) return absl::OkStatus();
  if (!node.IsSequence()) {
    return YamlError(node, "thresholds", "must be a list of rules (- prefix: ... / - glob: ...)");
  }
  if (node.size() > AlertOptions::kMaxRules) {
    return YamlError(
        node, "thresholds",
        absl::StrCat("has ", node.size(), " rules; at most ", AlertOptions::kMaxRules));
  }
  for (size_t i = 0; i < node.size(); ++i) {
    ThresholdRule rule;
    if (absl::Status s = ReadRule(node[i], absl::StrCat("thresholds[", i, "]"), &rule); !s.ok()) {
      return s;
    }
    rules->push_back(std::move(rule));
  }
  return absl::OkStatus();
}

absl::Status ReadExport(const YAML::Node& node, ExportOptions* exporter) {
  absl::Status s = ForEachKey(
      node, "export",
      {"top_k", "min_share", "hysteresis", "min_key_ops", "key_label", "label_max_bytes"},
      [&](const std::string& key, const YAML::Node& v, const std::string& path) {
        if (key == "top_k") return ReadInteger(v, path, &exporter->top_k);
        if (key == "min_share") return Read(v, path, ParseNumber, &exporter->min_share);
        if (key == "hysteresis") return Read(v, path, ParseNumber, &exporter->hysteresis);
        if (key == "min_key_ops") {
          return Read(v, path, ParseNumber, &exporter->min_key_ops_per_second);
        }
        if (key == "key_label") return Read(v, path, ParseKeyLabelMode, &exporter->label);
        return ReadSize(v, path, &exporter->label_max_bytes);
      });
  if (!s.ok()) return s;
  return InSection(node, exporter->Validate());
}

// One pattern map of feed.pin or feed.block: exactly one of `kinds` (key, prefix, glob), and
// `mode` for a pin.
absl::Status ReadFeedPattern(const YAML::Node& node, const std::string& path, bool pin,
                             FeedPattern* pattern, model::Strategy* mode) {
  if (!node.IsMap()) {
    return YamlError(node, path,
                     pin ? "must be a map such as {key: \"tenant:acme\", mode: isolate}"
                         : "must be a map such as {prefix: \"healthcheck\"}");
  }
  int patterns = 0;
  bool has_mode = false;
  const std::initializer_list<std::string_view> pin_keys = {"key", "prefix", "mode"};
  const std::initializer_list<std::string_view> block_keys = {"key", "prefix", "glob"};
  absl::Status s =
      ForEachKey(node, path, pin ? pin_keys : block_keys,
                 [&](const std::string& key, const YAML::Node& v, const std::string& key_path) {
                   if (key == "mode") {
                     has_mode = true;
                     return Read(v, key_path, model::ParseStrategy, mode);
                   }
                   ++patterns;
                   pattern->kind = key == "key"      ? FeedPattern::kKey
                                   : key == "prefix" ? FeedPattern::kPrefix
                                                     : FeedPattern::kGlob;
                   absl::StatusOr<std::string> text = Scalar(v, key_path);
                   if (!text.ok()) return text.status();
                   pattern->pattern = *std::move(text);
                   return absl::OkStatus();
                 });
  if (!s.ok()) return s;
  if (patterns != 1) {
    return YamlError(
        node, path,
        pin ? "needs exactly one of key or prefix" : "needs exactly one of key, prefix or glob");
  }
  if (pin && !has_mode) return YamlError(node, path, "needs mode");
  absl::Status v = pin ? FeedPin{*pattern, *mode}.Validate() : pattern->Validate();
  if (!v.ok()) return YamlError(node, path, v.message());
  return absl::OkStatus();
}

absl::Status ReadFeed(const YAML::Node& node, FeedOptions* feed) {
  absl::Status s = ForEachKey(
      node, "feed", {"lease", "refresh", "split_factor", "hold", "pin", "block"},
      [&](const std::string& key, const YAML::Node& v, const std::string& path) {
        if (key == "lease") return Read(v, path, ParseDurationText, &feed->lease);
        if (key == "hold") return Read(v, path, ParseDurationText, &feed->hold);
        if (key == "refresh") {
          absl::Duration d;
          absl::Status r = Read(v, path, ParseDurationText, &d);
          feed->refresh = d;
          return r;
        }
        if (key == "split_factor") {
          int f = 0;
          absl::Status r = ReadInteger(v, path, &f);
          feed->split_factor = f;
          return r;
        }
        const bool pin = key == "pin";
        if (pin) {
          feed->pins.clear();
        } else {
          feed->blocks.clear();
        }
        if (v.IsNull()) return absl::OkStatus();
        if (!v.IsSequence()) {
          return YamlError(v, path,
                           pin ? "must be a list (- key: ... / - prefix: ...)"
                               : "must be a list (- key: / - prefix: / - glob: ...)");
        }
        if (v.size() > FeedOptions::kMaxRules) {
          return YamlError(
              v, path,
              absl::StrCat("has ", v.size(), " entries; at most ", FeedOptions::kMaxRules));
        }
        for (size_t i = 0; i < v.size(); ++i) {
          FeedPattern pattern;
          model::Strategy mode = model::Strategy::kNone;
          if (absl::Status r =
                  ReadFeedPattern(v[i], absl::StrCat(path, "[", i, "]"), pin, &pattern, &mode);
              !r.ok()) {
            return r;
          }
          if (pin) {
            feed->pins.push_back(FeedPin{std::move(pattern), mode});
          } else {
            feed->blocks.push_back(std::move(pattern));
          }
        }
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  return InSection(node, feed->Validate());
}

// The cluster model is set by the --cluster.* flags only (one home for each setting). A
// file that still has the section is refused with the flags that replace it, built from
// the values it gives, so that moving them is a copy and paste.
absl::Status RejectCluster(const YAML::Node& node) {
  static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {
      {"shards", "cluster.shards"},           {"capacity", "cluster.capacity"},
      {"app_servers", "cluster.app-servers"}, {"refresh", "cluster.refresh"},
      {"replicas", "cluster.replicas"},       {"split", "cluster.split"},
      {"target", "cluster.target"},           {"order", "cluster.order"},
  };
  std::vector<std::string> flags;
  if (node.IsMap()) {
    for (const auto& entry : node) {
      if (!entry.first.IsScalar()) continue;
      for (const auto& [key, flag] : kFlags) {
        if (entry.first.Scalar() != key) continue;
        std::string value;
        if (entry.second.IsScalar()) {
          value = entry.second.Scalar();
        } else if (entry.second.IsSequence()) {
          std::vector<std::string> items;
          for (const YAML::Node& item : entry.second) {
            items.push_back(item.IsScalar() ? item.Scalar() : "?");
          }
          value = absl::StrJoin(items, ",");
        }
        flags.push_back(absl::StrCat("--", Av(flag), "=", value));
      }
    }
  }
  std::string use = flags.empty() ? std::string("the --cluster.* flags (see hotkeyd --help)")
                                  : absl::StrJoin(flags, " ");
  return YamlError(node, "cluster",
                   absl::StrCat("the cluster model moved to flags; remove this section and "
                                "pass ",
                                use));
}

absl::StatusOr<ReloadableOptions> Apply(const std::string& text, const ReloadableOptions& base) {
  ReloadableOptions out = base;
  YAML::Node root = YAML::Load(text);
  // "cluster" is known only to be refused with its replacement flags (RejectCluster).
  absl::Status s = ForEachKey(root, "", {"alert", "thresholds", "export", "feed", "cluster"},
                              [&](const std::string& key, const YAML::Node& v, const std::string&) {
                                if (key == "alert") return ReadAlert(v, &out.alert);
                                if (key == "thresholds") return ReadThresholds(v, &out.alert.rules);
                                if (key == "export") return ReadExport(v, &out.exporter);
                                if (key == "feed") return ReadFeed(v, &out.feed);
                                return RejectCluster(v);
                              });
  if (!s.ok()) return s;
  // Sections were checked as read; this catches a bad `base`.
  if (absl::Status v = out.Validate(); !v.ok()) return v;
  return out;
}

}  // namespace

absl::StatusOr<ReloadableOptions> ApplyRulesFile(std::string_view yaml_text,
                                                 const ReloadableOptions& base) {
  return internal::CatchYamlErrors<ReloadableOptions>(
      [&] { return Apply(std::string(yaml_text), base); });
}

absl::StatusOr<ReloadableOptions> LoadRulesFile(const std::string& path,
                                                const ReloadableOptions& base) {
  absl::StatusOr<std::string> text = internal::ReadConfigFile(path, "rules file", kMaxFileBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<ReloadableOptions> out = ApplyRulesFile(*text, base);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrCat("rules file \"", path, "\": ", out.status().message()));
  }
  return out;
}

absl::StatusOr<ReloadableOptions> LoadReloadable(const DaemonOptions& options) {
  ReloadableOptions reloadable = ReloadableFrom(options);
  if (options.config_file.empty()) return reloadable;
  return LoadRulesFile(options.config_file, reloadable);
}

}  // namespace hotkey::config
