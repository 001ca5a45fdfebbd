// The YAML rules file reader; see rules_file.h for the format.
//
// yaml-cpp builds a node tree and throws on malformed input; every call into it happens
// inside ApplyRulesFile's try block, so nothing escapes. Scalars are read as text and
// parsed with values.h, so "250ms" or "16MiB" mean the same as on the command line and
// every message has the same shape: "line N: section.key: problem".

#include "hotkey/config/rules_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl_compat.h"
#include "hotkey/config/values.h"
#include "yaml-cpp/yaml.h"

namespace hotkey::config {
namespace {

using internal::Av;

// A rules file is a few KiB; the cap stops a wrong path (/dev/zero, a log) from eating
// memory.
constexpr size_t kMaxFileBytes = size_t{4} << 20;

std::string Line(const YAML::Mark& mark) {
  return mark.line >= 0 ? absl::StrCat("line ", mark.line + 1, ": ") : std::string();
}

// `message` is an absl::string_view so that Status::message() passes straight through.
absl::Status Error(const YAML::Node& node, std::string_view path, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(Line(node.Mark()), Av(path), ": ", message));
}

// Prefixes a Validate() message with the section's line.
absl::Status InSection(const YAML::Node& node, absl::Status s) {
  if (s.ok()) return s;
  return absl::InvalidArgumentError(absl::StrCat(Line(node.Mark()), s.message()));
}

absl::StatusOr<std::string> Scalar(const YAML::Node& node, std::string_view path) {
  if (node.IsNull()) return Error(node, path, "needs a value");
  if (!node.IsScalar()) return Error(node, path, "must be a single value, not a list or map");
  return node.Scalar();
}

// Reads the scalar at `node` with `parse` (a values.h parser) into *out.
template <class T, class Parse>
absl::Status Read(const YAML::Node& node, std::string_view path, Parse parse, T* out) {
  absl::StatusOr<std::string> text = Scalar(node, path);
  if (!text.ok()) return text.status();
  auto value = parse(*text);
  if (!value.ok()) return Error(node, path, value.status().message());
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
    return Error(node, path, absl::StrCat(v, " is out of range"));
  }
  *out = static_cast<T>(v);
  return absl::OkStatus();
}

template <class T>
absl::Status ReadSize(const YAML::Node& node, std::string_view path, T* out) {
  uint64_t v = 0;
  if (absl::Status s = Read(node, path, ParseByteSize, &v); !s.ok()) return s;
  if (v > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
    return Error(node, path, absl::StrCat(v, " is out of range"));
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
    return Error(node, path.empty() ? "rules file" : path,
                 absl::StrCat("must be a map of keys (", JoinNames(known), ")"));
  }
  std::set<std::string> seen;
  for (const auto& entry : node) {
    const YAML::Node& key_node = entry.first;
    if (!key_node.IsScalar()) return Error(key_node, path, "keys must be plain names");
    const std::string& key = key_node.Scalar();
    std::string key_path = path.empty() ? key : absl::StrCat(Av(path), ".", key);
    bool is_known = false;
    for (std::string_view k : known) is_known |= (k == key);
    if (!is_known) {
      return Error(key_node, key_path,
                   absl::StrCat("unknown key (known here: ", JoinNames(known), ")"));
    }
    if (!seen.insert(key).second) return Error(key_node, key_path, "given twice");
    if (absl::Status s = handle(key, entry.second, key_path); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status ReadAlert(const YAML::Node& node, AlertOptions* alert) {
  AlertOptions& a = *alert;
  absl::Status s =
      ForEachKey(node, "alert", {"share_threshold", "min_dwell", "hysteresis", "min_ops"},
                 [&](const std::string& key, const YAML::Node& v, const std::string& path) {
                   if (key == "share_threshold")
                     return Read(v, path, ParseNumber, &a.default_threshold);
                   if (key == "min_dwell") return Read(v, path, ParseDurationText, &a.min_dwell);
                   if (key == "hysteresis") return Read(v, path, ParseNumber, &a.hysteresis);
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
    return Error(node, path, "must be a map such as {prefix: \"a:\", share: 0.2}");
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
  if (patterns != 1) return Error(node, path, "needs exactly one of prefix or glob");
  if (rule->ignore && has_share) {
    return Error(node, path, "give share or ignore: true, not both");
  }
  if (!rule->ignore && !has_share) return Error(node, path, "needs share (or ignore: true)");
  if (absl::Status v = rule->Validate(); !v.ok()) return Error(node, path, v.message());
  return absl::OkStatus();
}

absl::Status ReadThresholds(const YAML::Node& node, std::vector<ThresholdRule>* rules) {
  rules->clear();
  if (node.IsNull()) return absl::OkStatus();
  if (!node.IsSequence()) {
    return Error(node, "thresholds", "must be a list of rules (- prefix: ... / - glob: ...)");
  }
  if (node.size() > AlertOptions::kMaxRules) {
    return Error(node, "thresholds",
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
      node, "export", {"top_k", "min_share", "hysteresis", "key_label", "label_max_bytes"},
      [&](const std::string& key, const YAML::Node& v, const std::string& path) {
        if (key == "top_k") return ReadInteger(v, path, &exporter->top_k);
        if (key == "min_share") return Read(v, path, ParseNumber, &exporter->min_share);
        if (key == "hysteresis") return Read(v, path, ParseNumber, &exporter->hysteresis);
        if (key == "key_label") return Read(v, path, ParseKeyLabelMode, &exporter->label);
        return ReadSize(v, path, &exporter->label_max_bytes);
      });
  if (!s.ok()) return s;
  return InSection(node, exporter->Validate());
}

absl::Status ReadOrder(const YAML::Node& node, const std::string& path,
                       std::vector<hotkey::model::Strategy>* order) {
  std::vector<std::pair<std::string, YAML::Node>> names;
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) {
      absl::StatusOr<std::string> name = Scalar(item, path);
      if (!name.ok()) return name.status();
      names.emplace_back(*name, item);
    }
  } else {
    // Also accept the flag's form, "none, cache, replicate".
    absl::StatusOr<std::string> text = Scalar(node, path);
    if (!text.ok()) return text.status();
    for (std::string& name : SplitList(*text)) names.emplace_back(std::move(name), node);
  }
  order->clear();
  for (const auto& [name, item] : names) {
    absl::StatusOr<hotkey::model::Strategy> s = hotkey::model::ParseStrategy(name);
    if (!s.ok()) return Error(item, path, s.status().message());
    order->push_back(*s);
  }
  return absl::OkStatus();
}

absl::Status ReadCluster(const YAML::Node& node, hotkey::model::Cluster* cluster) {
  absl::Status s = ForEachKey(
      node, "cluster",
      {"shards", "capacity", "app_servers", "refresh", "replicas", "split", "target", "order"},
      [&](const std::string& key, const YAML::Node& v, const std::string& path) {
        if (key == "shards") return ReadInteger(v, path, &cluster->shards);
        if (key == "capacity") return Read(v, path, ParseNumber, &cluster->capacity);
        if (key == "app_servers") return ReadInteger(v, path, &cluster->app_servers);
        if (key == "refresh") {
          absl::Duration d;
          if (absl::Status r = Read(v, path, ParseDurationText, &d); !r.ok()) return r;
          cluster->refresh_seconds = absl::ToDoubleSeconds(d);
          return absl::OkStatus();
        }
        if (key == "replicas") return ReadInteger(v, path, &cluster->replicas);
        if (key == "split") return ReadInteger(v, path, &cluster->split);
        if (key == "target") return Read(v, path, ParseNumber, &cluster->target);
        return ReadOrder(v, path, &cluster->order);
      });
  if (!s.ok()) return s;
  absl::Status v = cluster->Validate();
  if (v.ok()) return v;
  return InSection(node, absl::InvalidArgumentError(absl::StrCat("cluster: ", v.message())));
}

absl::StatusOr<ReloadableOptions> Apply(const std::string& text, const ReloadableOptions& base) {
  ReloadableOptions out = base;
  YAML::Node root = YAML::Load(text);
  absl::Status s = ForEachKey(root, "", {"alert", "thresholds", "export", "cluster"},
                              [&](const std::string& key, const YAML::Node& v, const std::string&) {
                                if (key == "alert") return ReadAlert(v, &out.alert);
                                if (key == "thresholds") return ReadThresholds(v, &out.alert.rules);
                                if (key == "export") return ReadExport(v, &out.exporter);
                                return ReadCluster(v, &out.cluster);
                              });
  if (!s.ok()) return s;
  // Sections were checked as read; this catches a bad `base`.
  if (absl::Status v = out.Validate(); !v.ok()) return v;
  return out;
}

}  // namespace

absl::StatusOr<ReloadableOptions> ApplyRulesFile(std::string_view yaml_text,
                                                 const ReloadableOptions& base) {
  try {
    return Apply(std::string(yaml_text), base);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(Line(e.mark), "malformed YAML: ", e.msg));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("reading YAML: ", e.what()));
  }
}

absl::StatusOr<ReloadableOptions> LoadRulesFile(const std::string& path,
                                                const ReloadableOptions& base) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (file == nullptr) {
    int err = errno;
    std::string message = absl::StrCat("cannot open rules file \"", path, "\": ", strerror(err));
    return err == ENOENT ? absl::NotFoundError(message) : absl::InvalidArgumentError(message);
  }
  std::string text;
  char buffer[8192];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), file.get())) {
    text.append(buffer, n);
    if (text.size() > kMaxFileBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("rules file \"", path, "\" is larger than ", FormatByteSize(kMaxFileBytes)));
    }
  }
  if (std::ferror(file.get())) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read rules file \"", path, "\": ", strerror(errno)));
  }
  absl::StatusOr<ReloadableOptions> out = ApplyRulesFile(text, base);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrCat("rules file \"", path, "\": ", out.status().message()));
  }
  return out;
}

}  // namespace hotkey::config
