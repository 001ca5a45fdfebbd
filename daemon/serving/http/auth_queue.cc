// The fair queue of password checks; see auth_queue.h.

#include "auth_queue.h"

#include <algorithm>
#include <cassert>

namespace hotkey::http {

std::string AuthQueue::AddressKey(const boost::asio::ip::address& address) {
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

AuthQueue::Admission AuthQueue::Enqueue(std::string_view address) {
  Admission a;
  const std::string key(address);
  const auto own = addresses_.find(key);
  const size_t own_weight = own == addresses_.end() ? 0 : Weight(key, own->second.fifo.size());
  if (queued_ >= max_queued_) {
    // Pushing out a ticket of an address weighing at least two more than the newcomer's
    // keeps it at or above the newcomer's afterwards, so two addresses never push each
    // other out in turn.
    const std::optional<Ticket> victim = Victim(own_weight + 2);
    if (!victim.has_value()) {
      if (own != addresses_.end()) Strike(key);
      return a;
    }
    a.displaced = victim;
    Cancel(*victim);
  }
  const Ticket t = next_ticket_++;
  auto [it, inserted] = addresses_.try_emplace(key);
  if (it->second.fifo.empty()) turn_.push_back(key);
  it->second.fifo.push_back(t);
  owner_.emplace(t, key);
  ++queued_;
  a.queued = true;
  a.ticket = t;
  return a;
}

std::optional<AuthQueue::Ticket> AuthQueue::Next() {
  if (turn_.empty()) return std::nullopt;
  std::string key = std::move(turn_.front());
  turn_.pop_front();
  auto it = addresses_.find(key);
  assert(it != addresses_.end() && !it->second.fifo.empty());
  const Ticket t = it->second.fifo.front();
  it->second.fifo.pop_front();
  owner_.erase(t);
  --queued_;
  if (it->second.fifo.empty()) {
    addresses_.erase(it);
  } else {
    turn_.push_back(std::move(key));  // its next ticket waits for the others' turns
  }
  return t;
}

bool AuthQueue::Cancel(Ticket ticket) {
  const auto it = owner_.find(ticket);
  if (it == owner_.end()) return false;
  const std::string key = std::move(it->second);
  owner_.erase(it);
  Remove(key, ticket);
  --queued_;
  return true;
}

void AuthQueue::Remove(const std::string& address, Ticket ticket) {
  const auto it = addresses_.find(address);
  assert(it != addresses_.end());
  std::deque<Ticket>& fifo = it->second.fifo;
  fifo.erase(std::find(fifo.begin(), fifo.end(), ticket));
  if (fifo.empty()) {
    addresses_.erase(it);
    turn_.erase(std::find(turn_.begin(), turn_.end(), address));
  }
}

std::optional<AuthQueue::Ticket> AuthQueue::Victim(size_t min_weight) const {
  const Address* best = nullptr;
  size_t best_weight = 0;
  for (const auto& [key, a] : addresses_) {
    const size_t weight = Weight(key, a.fifo.size());
    if (weight < std::max<size_t>(min_weight, 1)) continue;
    if (best == nullptr || weight > best_weight ||
        (weight == best_weight && a.fifo.back() > best->fifo.back())) {
      best = &a;
      best_weight = weight;
    }
  }
  if (best == nullptr) return std::nullopt;
  return best->fifo.back();
}

void AuthQueue::Checked(std::string_view address, bool right) {
  const std::string key(address);
  if (right) {
    strikes_.erase(key);
  } else {
    Strike(key);
  }
}

size_t AuthQueue::Weight(const std::string& address, size_t waiting) const {
  const auto it = strikes_.find(address);
  return waiting + (it == strikes_.end() ? 0 : it->second);
}

void AuthQueue::Strike(const std::string& address) {
  if (const auto it = strikes_.find(address); it != strikes_.end()) {
    ++it->second;
    return;
  }
  if (strikes_.size() >= kMaxRemembered) {
    auto fewest = strikes_.begin();
    for (auto it = strikes_.begin(); it != strikes_.end(); ++it) {
      if (it->second < fewest->second) fewest = it;
    }
    strikes_.erase(fewest);
  }
  strikes_.emplace(address, 1);
}

}  // namespace hotkey::http
