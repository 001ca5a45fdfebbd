// The demand kits absorb, received: POST /api/v1/hotkeys/demand (docs/feed.md, "Demand a kit
// absorbs").
//
// A kit that applies a fix reports, about once a second, the reads it served from its local
// copy and the writes it sent to sub-keys elsewhere, per key. DemandIntake checks each
// report (ParseDemandReport), keeps the keys the feed holds (an advised entry, a pinned key,
// a key under a pinned prefix) in the aggregator's aggregate::DemandLedger, and counts the
// rest: a key the feed does not hold is ignored (a kit a little behind the feed is no
// error), a key past the ledger's bound is refused. Reports are bounded like every other
// input: at most kMaxKeys keys in at most kMaxBodyBytes (413 past either; the HTTP server
// reads this path's body up to kMaxBodyBytes), and at most `reports_per_second` a second on
// average, `reports_per_second` at once (429 with Retry-After past it), so a flood of
// reports costs the io_context thread a bounded share.
//
// Thread-compatible: Handle() runs on the io_context thread, as the ledger's other user
// (the aggregator) and the feed do; Collect() may run on any thread.

#ifndef HOTKEY_WEB_DEMAND_H_
#define HOTKEY_WEB_DEMAND_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <prometheus/collectable.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/aggregate/demand.h"
#include "hotkey/clock/clock.h"
#include "hotkey/http/server.h"
#include "hotkey/web/feed.h"

namespace hotkey::web {

inline constexpr std::string_view kDemandPath = "/api/v1/hotkeys/demand";

struct DemandReport {
  struct Key {
    std::string key;  // the bytes (key_b64 decoded)
    uint64_t reads = 0;
    uint64_t writes = 0;
  };
  absl::Duration interval;
  std::vector<Key> keys;
};

// The limits of one report (docs/feed.md).
inline constexpr size_t kDemandMaxKeys = 1024;
inline constexpr size_t kDemandMaxBodyBytes = 256 * 1024;

// A report's JSON body. InvalidArgument, with a one-line reason, for what is not one: not a
// JSON object, interval_seconds not a number in (0, 60], keys not an array of objects each
// with a key_b64 string of padded standard base64 and integer reads and writes >= 0 (other
// fields are ignored); ResourceExhausted for more than kDemandMaxKeys keys.
absl::StatusOr<DemandReport> ParseDemandReport(std::string_view body);

class DemandIntake : public prometheus::Collectable {
 public:
  // Reports land in `ledger` when `feed` holds their key and it is at most `max_key_bytes`
  // long (the tracker holds no longer one whole), stamped on `mono` (the ledger's and the
  // aggregator's monotonic clock). All must outlive the intake. The rate limit's bucket
  // starts full.
  DemandIntake(aggregate::DemandLedger& ledger, const FeedHub& feed, const clock::Clock& mono,
               size_t max_key_bytes, double reports_per_second);

  // POST /api/v1/hotkeys/demand: 204, 400, 403 (--feed.require-auth without credentials),
  // 413 or 429.
  http::HttpResponse Handle(const http::HttpRequest& request);

  // Results of reports, and of the keys in accepted reports.
  enum class Result { kAccepted, kMalformed, kTooLarge, kLimited, kUnauthorized };
  enum class KeyResult { kAccepted, kIgnored, kFull };
  uint64_t reports(Result r) const {
    return reports_[static_cast<int>(r)].load(std::memory_order_relaxed);
  }
  uint64_t keys(KeyResult r) const {
    return keys_[static_cast<int>(r)].load(std::memory_order_relaxed);
  }

  // hotkey_demand_* (docs/metrics.md).
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  http::HttpResponse Count(Result r, http::HttpResponse response);

  aggregate::DemandLedger& ledger_;
  const FeedHub& feed_;
  const clock::Clock& mono_;
  const size_t max_key_bytes_;
  const double rate_;
  double tokens_;
  absl::Time refilled_;
  std::atomic<uint64_t> reports_[5] = {};
  std::atomic<uint64_t> keys_[3] = {};
  std::atomic<uint64_t> absorbed_[2] = {};
};

}  // namespace hotkey::web

#endif  // HOTKEY_WEB_DEMAND_H_
