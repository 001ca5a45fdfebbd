// POST /api/v1/hotkeys/demand; see demand.h and docs/feed.md.

#include "hotkey/web/demand.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>
#include <boost/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "hotkey/text/json.h"

namespace hotkey::web {

namespace json = boost::json;

namespace {

// Debian 12's Abseil has its own string_view (config/absl_compat.h).
absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }
std::string_view Sv(absl::string_view s) { return std::string_view(s.data(), s.size()); }

// A count: a JSON integer >= 0.
absl::StatusOr<uint64_t> Count(const json::object& o, std::string_view name, size_t index) {
  const json::value* v = o.if_contains(name);
  if (v == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("keys[", index, "]: no ", Av(name)));
  if (v->is_uint64()) return v->get_uint64();
  if (v->is_int64() && v->get_int64() >= 0) return static_cast<uint64_t>(v->get_int64());
  return absl::InvalidArgumentError(
      absl::StrCat("keys[", index, "].", Av(name), " must be an integer >= 0"));
}

http::HttpResponse Answer(int status, std::string_view error) {
  http::HttpResponse r{status, "application/json", "", {{"Cache-Control", "no-store"}}};
  if (!error.empty()) r.body = text::JsonText(json::object{{"error", error}});
  return r;
}

}  // namespace

absl::StatusOr<DemandReport> ParseDemandReport(std::string_view body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("not JSON: ", ec.message()));
  const json::object* o = v.if_object();
  if (o == nullptr) return absl::InvalidArgumentError("the body must be a JSON object");
  DemandReport r;
  const json::value* interval = o->if_contains("interval_seconds");
  const double seconds = interval == nullptr     ? std::numeric_limits<double>::quiet_NaN()
                         : interval->is_double() ? interval->get_double()
                         : interval->is_int64()  ? static_cast<double>(interval->get_int64())
                         : interval->is_uint64() ? static_cast<double>(interval->get_uint64())
                                                 : std::numeric_limits<double>::quiet_NaN();
  const double most = absl::ToDoubleSeconds(aggregate::DemandLedger::kMaxInterval);
  if (!(seconds > 0 && seconds <= most)) {
    return absl::InvalidArgumentError(
        absl::StrCat("interval_seconds must be a number in (0, ", most, "]"));
  }
  r.interval = absl::Seconds(seconds);
  const json::value* keys = o->if_contains("keys");
  if (keys == nullptr || !keys->is_array()) {
    return absl::InvalidArgumentError("keys must be an array");
  }
  const json::array& a = keys->get_array();
  if (a.size() > kDemandMaxKeys) {
    return absl::ResourceExhaustedError(
        absl::StrCat(a.size(), " keys in one report; at most ", kDemandMaxKeys));
  }
  r.keys.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const json::object* k = a[i].if_object();
    if (k == nullptr)
      return absl::InvalidArgumentError(absl::StrCat("keys[", i, "]: not an object"));
    const json::value* b64 = k->if_contains("key_b64");
    DemandReport::Key key;
    if (b64 == nullptr || !b64->is_string() ||
        !absl::Base64Unescape(Av(b64->get_string()), &key.key) ||
        absl::Base64Escape(key.key) != Av(b64->get_string())) {
      return absl::InvalidArgumentError(
          absl::StrCat("keys[", i, "].key_b64 must be padded standard base64"));
    }
    absl::StatusOr<uint64_t> reads = Count(*k, "reads", i);
    if (!reads.ok()) return reads.status();
    absl::StatusOr<uint64_t> writes = Count(*k, "writes", i);
    if (!writes.ok()) return writes.status();
    key.reads = *reads;
    key.writes = *writes;
    r.keys.push_back(std::move(key));
  }
  return r;
}

DemandIntake::DemandIntake(aggregate::DemandLedger& ledger, const FeedHub& feed,
                           const clock::Clock& mono, size_t max_key_bytes,
                           double reports_per_second)
    : ledger_(ledger),
      feed_(feed),
      mono_(mono),
      max_key_bytes_(max_key_bytes),
      rate_(reports_per_second),
      tokens_(reports_per_second),
      refilled_(mono.Now()) {}

http::HttpResponse DemandIntake::Count(Result r, http::HttpResponse response) {
  reports_[static_cast<int>(r)].fetch_add(1, std::memory_order_relaxed);
  return response;
}

http::HttpResponse DemandIntake::Handle(const http::HttpRequest& req) {
  const absl::Time now = mono_.Now();
  if (feed_.require_auth() && !req.authenticated) {
    return Count(Result::kUnauthorized,
                 Answer(403, "the feed requires credentials (--feed.require-auth)"));
  }
  // A token bucket of rate_ reports a second, holding at most rate_.
  tokens_ = std::min(rate_, tokens_ + rate_ * absl::ToDoubleSeconds(now - refilled_));
  refilled_ = now;
  if (tokens_ < 1) {
    http::HttpResponse r = Answer(429, "too many demand reports; retry later");
    r.headers.emplace_back("Retry-After", "1");
    return Count(Result::kLimited, std::move(r));
  }
  tokens_ -= 1;
  if (req.body.size() > kDemandMaxBodyBytes) {
    return Count(Result::kTooLarge, Answer(413, "the body is over 256 KiB"));
  }
  absl::StatusOr<DemandReport> report = ParseDemandReport(req.body);
  if (!report.ok()) {
    const bool large = absl::IsResourceExhausted(report.status());
    return Count(large ? Result::kTooLarge : Result::kMalformed,
                 Answer(large ? 413 : 400, Sv(report.status().message())));
  }
  for (const DemandReport::Key& k : report->keys) {
    if (k.reads == 0 && k.writes == 0) continue;
    KeyResult result = KeyResult::kIgnored;
    if (k.key.size() <= max_key_bytes_ && feed_.state().Holds(k.key)) {
      result = ledger_.Add(now, k.key, static_cast<double>(k.reads), static_cast<double>(k.writes),
                           report->interval)
                   ? KeyResult::kAccepted
                   : KeyResult::kFull;
    }
    keys_[static_cast<int>(result)].fetch_add(1, std::memory_order_relaxed);
    if (result == KeyResult::kAccepted) {
      absorbed_[0].fetch_add(k.reads, std::memory_order_relaxed);
      absorbed_[1].fetch_add(k.writes, std::memory_order_relaxed);
    }
  }
  return Count(Result::kAccepted, Answer(204, ""));
}

std::vector<prometheus::MetricFamily> DemandIntake::Collect() const {
  using prometheus::ClientMetric;
  using prometheus::MetricFamily;
  using prometheus::MetricType;
  auto add = [](MetricFamily& f, std::string label, std::string value, double v) {
    ClientMetric m;
    m.label = {{std::move(label), std::move(value)}};
    m.counter.value = v;
    f.metric.push_back(std::move(m));
  };
  std::vector<MetricFamily> out;
  MetricFamily reports{"hotkey_demand_reports_total",
                       "Demand reports of client kits (POST /api/v1/hotkeys/demand) by result: "
                       "accepted (204), malformed (400), too_large (413), limited (429), "
                       "unauthorized (403, --feed.require-auth).",
                       MetricType::Counter,
                       {}};
  static constexpr const char* kResults[] = {"accepted", "malformed", "too_large", "limited",
                                             "unauthorized"};
  for (int i = 0; i < 5; ++i) {
    add(reports, "result", kResults[i], static_cast<double>(reports_[i].load()));
  }
  out.push_back(std::move(reports));
  MetricFamily keys{"hotkey_demand_keys_total",
                    "Keys with a non-zero count in accepted demand reports, by result: accepted "
                    "(added to the key's demand), ignored (not in the feed's set, or longer "
                    "than --key.max-bytes), full (the ledger held its most keys).",
                    MetricType::Counter,
                    {}};
  static constexpr const char* kKeyResults[] = {"accepted", "ignored", "full"};
  for (int i = 0; i < 3; ++i)
    add(keys, "result", kKeyResults[i], static_cast<double>(keys_[i].load()));
  out.push_back(std::move(keys));
  MetricFamily absorbed{"hotkey_demand_absorbed_ops_total",
                        "Operations client kits reported they kept off the shard, of accepted "
                        "keys, by op: reads served from a local copy, writes sent to sub-keys.",
                        MetricType::Counter,
                        {}};
  add(absorbed, "op", "read", static_cast<double>(absorbed_[0].load()));
  add(absorbed, "op", "write", static_cast<double>(absorbed_[1].load()));
  out.push_back(std::move(absorbed));
  return out;
}

}  // namespace hotkey::web
