// Per-address limits on bcrypt checks; see auth_limiter.h.

#include "auth_limiter.h"

#include <algorithm>
#include <cassert>

namespace hotkey::http {

std::string AuthLimiter::AddressKey(const boost::asio::ip::address& address) {
  if (address.is_v4()) {
    const auto b = address.to_v4().to_bytes();
    return std::string(b.begin(), b.end());
  }
  const boost::asio::ip::address_v6 v6 = address.to_v6();
  if (v6.is_v4_mapped()) {
    const auto b = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6).to_bytes();
    return std::string(b.begin(), b.end());
  }
  const auto b = v6.to_bytes();
  return std::string(b.begin(), b.begin() + 8);  // the /64: 8 bytes, never 4, so no clash
}

AuthLimiter::Verdict AuthLimiter::Admit(std::string_view address, absl::Time now) {
  auto it = entries_.find(absl::string_view(address.data(), address.size()));
  if (it != entries_.end() && (it->second.pending || now < it->second.retry_after)) {
    return Verdict::kThrottled;
  }
  if (queued_ >= options_.max_queued) return Verdict::kBusy;
  if (it == entries_.end()) {
    if (entries_.size() >= options_.max_addresses) Sweep(now);
    if (entries_.size() >= options_.max_addresses) return Verdict::kBusy;
    it = entries_.emplace(std::string(address), Entry{}).first;
  }
  it->second.pending = true;
  ++queued_;
  return Verdict::kCheck;
}

void AuthLimiter::Done(std::string_view address, Outcome outcome, absl::Time now) {
  const auto it = entries_.find(absl::string_view(address.data(), address.size()));
  assert(it != entries_.end() && it->second.pending);
  if (it == entries_.end() || !it->second.pending) return;
  it->second.pending = false;
  --queued_;
  switch (outcome) {
    case Outcome::kSucceeded:
      entries_.erase(it);
      break;
    case Outcome::kFailed: {
      Entry& e = it->second;
      e.failures = std::min<uint32_t>(e.failures + 1, 32);
      // base * 2^(failures-1), capped; doubling at most 31 times keeps the product finite.
      absl::Duration wait = options_.base_backoff;
      for (uint32_t i = 1; i < e.failures && wait < options_.max_backoff; ++i) wait *= 2;
      e.retry_after = now + std::min(wait, options_.max_backoff);
      break;
    }
    case Outcome::kAbandoned:
      break;
  }
}

void AuthLimiter::Sweep(absl::Time now) {
  absl::erase_if(entries_, [now](const auto& kv) {
    return !kv.second.pending && kv.second.retry_after <= now;
  });
}

}  // namespace hotkey::http
