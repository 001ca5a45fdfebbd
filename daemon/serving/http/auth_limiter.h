// AuthLimiter: who may queue a bcrypt check, so that wrong passwords cannot fill the
// server's single bcrypt worker.
//
// Credentials the cache of BasicAuth cannot answer cost one bcrypt (tens of milliseconds
// of CPU, on purpose). Without a limit, one client pipelining wrong passwords keeps the
// worker busy and every other first-time login waits behind it. The limits:
//   - at most `max_queued` checks are queued or running at once, all addresses together,
//     so a check waits behind at most max_queued - 1 others;
//   - an address (an IPv4 address, or the /64 of an IPv6 one: one host can own a whole
//     /64) has at most one check queued or running;
//   - after the n-th failure in a row, an address may not queue a check for
//     min(base_backoff * 2^(n-1), max_backoff); a success forgets its failures;
//   - the table of addresses holds at most `max_addresses`; when full, entries with no
//     check queued and no backoff running are dropped, and a new address that still finds
//     no room is refused (its credentials are not checked) until one frees.
// A refused request is never checked: its answer is 401, as for wrong credentials.
// Credentials already verified are answered from the cache and never reach the limiter.
//
// Cost: Admit and Done are O(1) but for the sweep of a full table, O(max_addresses).
//
// Thread-compatible: the server calls it from its io_context's thread only.

#ifndef HOTKEY_HTTP_AUTH_LIMITER_H_
#define HOTKEY_HTTP_AUTH_LIMITER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/asio/ip/address.hpp>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hotkey::http {

class AuthLimiter {
 public:
  struct Options {
    size_t max_queued = 8;
    size_t max_addresses = 4096;
    absl::Duration base_backoff = absl::Seconds(1);
    absl::Duration max_backoff = absl::Seconds(30);
  };

  enum class Verdict {
    kCheck,      // queue the check; call Done once it has run or been abandoned
    kThrottled,  // the address has a check queued, or is backing off after failures
    kBusy,       // max_queued checks are queued, or the address table is full
  };
  enum class Outcome { kSucceeded, kFailed, kAbandoned };

  explicit AuthLimiter(const Options& options) : options_(options) {}

  // The key that groups `address` with the addresses one client can easily own: the
  // address for IPv4 (and IPv4-mapped IPv6), its /64 prefix for IPv6.
  static std::string AddressKey(const boost::asio::ip::address& address);

  // Whether a request from `address` (an AddressKey) may queue a bcrypt check at `now`.
  Verdict Admit(std::string_view address, absl::Time now);

  // Ends a check that Admit allowed. A failure starts or lengthens the address's backoff
  // from `now`; a success forgets the address; an abandoned check (its connection went
  // before the check ran) only frees its places.
  void Done(std::string_view address, Outcome outcome, absl::Time now);

  size_t queued() const { return queued_; }
  size_t addresses() const { return entries_.size(); }

 private:
  struct Entry {
    uint32_t failures = 0;  // in a row
    absl::Time retry_after = absl::InfinitePast();
    bool pending = false;  // a check queued or running
  };
  // Drops entries with nothing pending and no backoff running at `now`.
  void Sweep(absl::Time now);

  const Options options_;
  absl::flat_hash_map<std::string, Entry> entries_;
  size_t queued_ = 0;
};

}  // namespace hotkey::http

#endif  // HOTKEY_HTTP_AUTH_LIMITER_H_
