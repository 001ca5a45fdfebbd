// The measured-loads file; see measured_loads.h. Boost.JSON parses it (with an error code:
// it throws only std::bad_alloc, which the file's size cap keeps out of reach).

#include "hotkey/config/measured_loads.h"

#include <cmath>
#include <utility>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "absl/strings/str_cat.h"
#include "absl_compat.h"
#include "yaml_util.h"

namespace hotkey::config {
namespace {

namespace json = boost::json;
using internal::Av;

absl::Status Bad(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("measured loads: ", Av(what)));
}

// The number `v` holds, or nullopt when it holds something else (or one out of a double's
// range).
std::optional<double> Number(const json::value& v) {
  if (!v.is_number()) return std::nullopt;
  boost::system::error_code ec;
  const double d = v.to_number<double>(ec);
  if (ec) return std::nullopt;
  return d;
}

// The optional string member `name` of `o`, at most `max_bytes` long, into `out`.
absl::Status OptionalString(const json::object& o, std::string_view name, size_t max_bytes,
                            std::string* out) {
  const json::value* v = o.if_contains(name);
  if (v == nullptr) return absl::OkStatus();
  const json::string* s = v->if_string();
  if (s == nullptr) return Bad(absl::StrCat("\"", Av(name), "\" must be a string"));
  if (s->size() > max_bytes) {
    return Bad(
        absl::StrCat("\"", Av(name), "\" is longer than ", max_bytes, " bytes (", s->size(), ")"));
  }
  out->assign(s->data(), s->size());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MeasuredLoads> ParseMeasuredLoads(std::string_view text) {
  boost::system::error_code ec;
  const json::value doc = json::parse(text, ec);
  if (ec) return Bad(absl::StrCat("not JSON: ", ec.message()));
  const json::object* o = doc.if_object();
  if (o == nullptr) return Bad("not a JSON object");
  MeasuredLoads m;

  const json::value* ts = o->if_contains("timestamp");
  if (ts == nullptr) return Bad("no \"timestamp\" (Unix seconds of the measurement)");
  const std::optional<double> seconds = Number(*ts);
  // Up to the year 5138: far enough for any clock, close enough that absl::Seconds is exact
  // to well under a millisecond.
  if (!seconds || !std::isfinite(*seconds) || *seconds <= 0 || *seconds > 1e11) {
    return Bad("\"timestamp\" must be Unix seconds, a number in (0, 1e11]");
  }
  m.time = absl::UnixEpoch() + absl::Seconds(*seconds);

  if (const json::value* iv = o->if_contains("interval_seconds"); iv != nullptr) {
    const std::optional<double> v = Number(*iv);
    if (!v || !(*v >= 0 && *v <= 3600)) {
      return Bad("\"interval_seconds\" must be a number in [0, 3600]");
    }
    m.interval = absl::Seconds(*v);
  }

  const json::value* loads = o->if_contains("ops_per_second");
  if (loads == nullptr) return Bad("no \"ops_per_second\" (each shard's measured ops/s)");
  const json::array* a = loads->if_array();
  if (a == nullptr) return Bad("\"ops_per_second\" must be an array of numbers, shard 0 first");
  if (a->empty() || a->size() > static_cast<size_t>(model::Cluster::kMaxShards)) {
    return Bad(absl::StrCat("\"ops_per_second\" must hold 1 to ", model::Cluster::kMaxShards,
                            " shards; it holds ", a->size()));
  }
  m.ops_per_second.reserve(a->size());
  for (size_t i = 0; i < a->size(); ++i) {
    const std::optional<double> v = Number((*a)[i]);
    if (!v || !std::isfinite(*v) || *v < 0) {
      return Bad(
          absl::StrCat("\"ops_per_second\"[", i, "] must be a rate, a finite number >= 0 (ops/s)"));
    }
    m.ops_per_second.push_back(*v);
  }

  if (const json::value* s = o->if_contains("strategy"); s != nullptr) {
    const json::string* name = s->if_string();
    absl::StatusOr<model::Strategy> strategy =
        name ? model::ParseStrategy(std::string_view(name->data(), name->size()))
             : absl::InvalidArgumentError("not a string");
    if (!strategy.ok()) {
      return Bad("\"strategy\" must be one of none, cache, replicate, split, split_cache, isolate");
    }
    m.strategy = *strategy;
  }
  if (absl::Status s = OptionalString(*o, "key", MeasuredLoads::kMaxKeyBytes, &m.key); !s.ok()) {
    return s;
  }
  if (absl::Status s = OptionalString(*o, "source", MeasuredLoads::kMaxSourceBytes, &m.source);
      !s.ok()) {
    return s;
  }
  return m;
}

absl::StatusOr<MeasuredLoads> LoadMeasuredLoadsFile(const std::string& path) {
  absl::StatusOr<std::string> text =
      internal::ReadConfigFile(path, "measured loads file", MeasuredLoads::kMaxFileBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<MeasuredLoads> m = ParseMeasuredLoads(*text);
  if (!m.ok()) {
    return absl::Status(m.status().code(),
                        absl::StrCat("measured loads file \"", path, "\": ", m.status().message()));
  }
  return m;
}

absl::StatusOr<std::optional<MeasuredLoads>> MeasuredLoadsWatcher::Poll() {
  absl::StatusOr<std::string> text =
      internal::ReadConfigFile(path_, "measured loads file", MeasuredLoads::kMaxFileBytes);
  // The bytes, or the problem: the same problem twice is no change either.
  std::string fingerprint =
      text.ok() ? absl::StrCat("=", *text) : absl::StrCat("!", text.status().message());
  if (polled_ && fingerprint == fingerprint_) return std::optional<MeasuredLoads>();
  polled_ = true;
  fingerprint_ = std::move(fingerprint);
  if (!text.ok()) return text.status();
  absl::StatusOr<MeasuredLoads> m = ParseMeasuredLoads(*text);
  if (!m.ok()) {
    return absl::Status(m.status().code(), absl::StrCat("measured loads file \"", path_,
                                                        "\": ", m.status().message()));
  }
  return std::optional<MeasuredLoads>(*std::move(m));
}

}  // namespace hotkey::config
