// AuthQueue: the order in which password checks (bcrypt) run, fair between client
// addresses, so that a client sending wrong passwords delays another's first login by a
// bounded number of checks and never gets it refused unchecked.
//
// Credentials the cache of BasicAuth cannot answer cost one bcrypt (costly on purpose), run
// by a bounded pool of workers. Each request that needs one takes a
// ticket and waits:
//   - tickets wait in one FIFO per address (an IPv4 address, or the /64 of an IPv6 one: one
//     host can own a whole /64), and Next() takes the addresses in turn (round robin), the
//     oldest ticket of each;
//   - at most `max_queued` tickets wait, all addresses together. An address weighs its
//     tickets waiting plus its strikes: its requests refused while it had a ticket waiting
//     (it asks more than it is given) and its passwords checked and found wrong. Strikes
//     outlive the address's tickets, for at most kMaxRemembered addresses (a new one
//     pushes out the one with the fewest), and a right password clears them. When max_queued wait,
//     a new ticket takes the place of the newest ticket of the heaviest address, if that
//     one weighs at least two more than the newcomer's; otherwise the newcomer is refused.
//     So an address weighing one (one ticket, no strike: a scraper's first login) is never
//     pushed out, and a newcomer from an address with none waiting and no strike is refused
//     only when every address waiting weighs one: at most max_queued clients that each
//     wait their turn and never sent a wrong password;
//   - a refused or pushed-out request is answered 429 with Retry-After, never 401: its
//     credentials were not checked.
// Bound: a ticket that is its address's only one is taken by Next() after at most one
// ticket of each other address waiting, at most max_queued - 1 (addresses that start
// waiting later queue behind it in the turn). So a first login from an address with nothing
// queued starts its check within (max_queued - 1) / workers + 1 check durations of joining,
// whatever the other addresses send.
// The limit: requests from one address are served in the order they came, and nothing but
// the address tells a client sending wrong passwords from one sending right ones; a first
// login that shares its address with such a client waits behind it, or is refused 429 while
// the queue holds max_queued of that address's tickets.
//
// Cost: Next is O(1); Victim, and Enqueue when max_queued wait, are O(addresses waiting),
// at most max_queued; Cancel is O(tickets of its address + addresses waiting); a strike for
// an address not remembered yet, once kMaxRemembered are, is O(kMaxRemembered).
//
// Thread-compatible: the server calls it from its io_context's thread only.

#ifndef HOTKEY_HTTP_AUTH_QUEUE_H_
#define HOTKEY_HTTP_AUTH_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/ip/address.hpp>

#include "absl/container/flat_hash_map.h"

namespace hotkey::http {

class AuthQueue {
 public:
  using Ticket = uint64_t;

  struct Admission {
    // Whether the request waits for its check (with `ticket`), or is refused (429).
    bool queued = false;
    Ticket ticket = 0;
    // A ticket pushed out to make the place: its request is answered 429.
    std::optional<Ticket> displaced;
  };

  explicit AuthQueue(size_t max_queued) : max_queued_(max_queued) {}

  // The key that groups `address` with the addresses one client can easily own: the
  // address for IPv4 (and IPv4-mapped IPv6), its /64 prefix for IPv6.
  static std::string AddressKey(const boost::asio::ip::address& address);

  // A ticket for a request from `address` (an AddressKey), or a refusal (see above).
  Admission Enqueue(std::string_view address);

  // The ticket whose check runs next, taken out of the queue; nullopt when none waits.
  std::optional<Ticket> Next();

  // Takes out a waiting ticket (its request was closed, or its deadline passed); false
  // when it is not waiting.
  bool Cancel(Ticket ticket);

  // The password of a request from `address` was checked: a wrong one is a strike, a right
  // one clears the address's strikes.
  void Checked(std::string_view address, bool right);

  // The ticket to close when a connection must make room: the newest ticket of the
  // heaviest address (of those, the address whose newest ticket is newest), if it weighs
  // at least `min_weight`; nullopt otherwise.
  std::optional<Ticket> Victim(size_t min_weight) const;

  // Tickets waiting, all addresses together; addresses with at least one waiting.
  size_t queued() const { return queued_; }
  size_t addresses() const { return addresses_.size(); }
  // Addresses whose strikes are remembered, at most kMaxRemembered.
  size_t remembered() const { return strikes_.size(); }

  static constexpr size_t kMaxRemembered = 256;

 private:
  // Takes `ticket` out of its address's FIFO; forgets the address once empty.
  void Remove(const std::string& address, Ticket ticket);
  size_t Weight(const std::string& address, size_t waiting) const;
  void Strike(const std::string& address);

  const size_t max_queued_;
  Ticket next_ticket_ = 1;
  size_t queued_ = 0;
  struct Address {
    std::deque<Ticket> fifo;  // oldest first (tickets are numbered in order of arrival)
  };
  // The addresses with a ticket waiting.
  absl::flat_hash_map<std::string, Address> addresses_;
  // The strikes of the last kMaxRemembered addresses struck, waiting or not.
  absl::flat_hash_map<std::string, size_t> strikes_;
  // The addresses with a ticket waiting, in the order Next() takes them.
  std::deque<std::string> turn_;
  absl::flat_hash_map<Ticket, std::string> owner_;  // a waiting ticket's address
};

}  // namespace hotkey::http

#endif  // HOTKEY_HTTP_AUTH_QUEUE_H_
