// Tests of AuthQueue (daemon/serving/http/auth_queue.h): addresses take turns, a newcomer
// from an address with nothing queued gets a place and keeps it, its check comes after at
// most one ticket of every other address, and the queue stays bounded.

#include "auth_queue.h"

#include <set>
#include <string>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <catch2/catch.hpp>

namespace hotkey::http {
namespace {

using Ticket = AuthQueue::Ticket;

TEST_CASE("AuthQueue: addresses take turns, each address's tickets in order",
          "[http][auth_queue]") {
  AuthQueue q(16);
  const Ticket a1 = q.Enqueue("a").ticket;
  const Ticket a2 = q.Enqueue("a").ticket;
  const Ticket a3 = q.Enqueue("a").ticket;
  const Ticket b1 = q.Enqueue("b").ticket;
  const Ticket c1 = q.Enqueue("c").ticket;
  const Ticket b2 = q.Enqueue("b").ticket;
  std::vector<Ticket> order;
  while (std::optional<Ticket> t = q.Next()) order.push_back(*t);
  CHECK(order == std::vector<Ticket>{a1, b1, c1, a2, b2, a3});
  CHECK(q.queued() == 0);
  CHECK(q.addresses() == 0);
}

TEST_CASE("AuthQueue: a first login is checked after at most one ticket of each other address",
          "[http][auth_queue]") {
  // A flood: 15 places held by 5 addresses, 3 tickets each; then the scraper's address.
  // Revert to one FIFO for all and the scraper would wait for all 15.
  AuthQueue q(16);
  for (int round = 0; round < 3; ++round) {
    for (const char* a : {"f1", "f2", "f3", "f4", "f5"}) REQUIRE(q.Enqueue(a).queued);
  }
  const Ticket scraper = q.Enqueue("scraper").ticket;
  // The flood goes on while the checks run: every check taken is replaced at once.
  int before = 0;
  for (;;) {
    const std::optional<Ticket> t = q.Next();
    REQUIRE(t.has_value());
    if (*t == scraper) break;
    ++before;
    q.Enqueue("f1");
    q.Enqueue("f2");
  }
  CHECK(before == 5);  // one per flooding address, whatever they sent since
}

TEST_CASE("AuthQueue: at the bound, the address with the most waiting yields its newest ticket",
          "[http][auth_queue]") {
  AuthQueue q(4);
  std::vector<Ticket> flood;
  for (int i = 0; i < 4; ++i) flood.push_back(q.Enqueue("f").ticket);
  // The flooder itself is refused: it holds the most.
  const AuthQueue::Admission refused = q.Enqueue("f");
  CHECK_FALSE(refused.queued);
  CHECK_FALSE(refused.displaced.has_value());
  // A newcomer with nothing queued takes the place of the flooder's newest.
  const AuthQueue::Admission first = q.Enqueue("s");
  REQUIRE(first.queued);
  REQUIRE(first.displaced.has_value());
  CHECK(*first.displaced == flood.back());
  CHECK(q.queued() == 4);
  // f 3, s 1; a second newcomer still finds f at two more than itself.
  const AuthQueue::Admission second = q.Enqueue("t");
  REQUIRE(second.queued);
  CHECK(*second.displaced == flood[2]);
  // f 2, s 1, t 1: f still holds two more than a third newcomer's none.
  const AuthQueue::Admission third = q.Enqueue("u");
  REQUIRE(third.queued);
  CHECK(*third.displaced == flood[1]);
  // f 1, s 1, t 1, u 1: an address's only ticket is never pushed out.
  const AuthQueue::Admission fourth = q.Enqueue("v");
  CHECK_FALSE(fourth.queued);
  CHECK(q.queued() == 4);
  std::set<Ticket> left;
  while (std::optional<Ticket> t = q.Next()) left.insert(*t);
  CHECK(left == std::set<Ticket>{flood[0], first.ticket, second.ticket, third.ticket});
}

TEST_CASE("AuthQueue: an address's only ticket survives any flood of newcomers",
          "[http][auth_queue]") {
  AuthQueue q(8);
  const Ticket scraper = q.Enqueue("s").ticket;
  for (int i = 0; i < 1000; ++i) {
    q.Enqueue(i % 2 == 0 ? "f" : std::to_string(i));  // one address and many
    CHECK(q.queued() <= 8);
  }
  CHECK(q.Cancel(scraper));  // still waiting
}

TEST_CASE("AuthQueue: a cancelled ticket leaves, and its address's turn with it",
          "[http][auth_queue]") {
  AuthQueue q(8);
  const Ticket a = q.Enqueue("a").ticket;
  const Ticket b = q.Enqueue("b").ticket;
  CHECK(q.Cancel(a));
  CHECK_FALSE(q.Cancel(a));
  CHECK(q.addresses() == 1);
  CHECK(q.Next() == b);
  CHECK_FALSE(q.Next().has_value());
  CHECK_FALSE(q.Cancel(b));  // taken by Next: no longer waiting
}

TEST_CASE("AuthQueue: the victim to make room is the newest of the fattest address",
          "[http][auth_queue]") {
  AuthQueue q(8);
  q.Enqueue("a");
  const Ticket b1 = q.Enqueue("b").ticket;
  const Ticket c1 = q.Enqueue("c").ticket;
  CHECK(q.Victim(1) == c1);  // all hold one: the newest
  CHECK_FALSE(q.Victim(2).has_value());
  const Ticket b2 = q.Enqueue("b").ticket;
  CHECK(q.Victim(2) == b2);
  CHECK(q.Victim(1) == b2);
  CHECK(q.Cancel(b2));
  CHECK(q.Victim(1) == c1);
  (void)b1;
}

TEST_CASE("AuthQueue: IPv4 and IPv4-mapped share a key; IPv6 is keyed by its /64",
          "[http][auth_queue]") {
  namespace ip = boost::asio::ip;
  const auto key = [](const char* a) { return AuthQueue::AddressKey(ip::make_address(a)); };
  CHECK(key("192.0.2.7") == key("::ffff:192.0.2.7"));
  CHECK(key("192.0.2.7") != key("192.0.2.8"));
  CHECK(key("2001:db8:1:2::1") == key("2001:db8:1:2:ffff::9"));
  CHECK(key("2001:db8:1:2::1") != key("2001:db8:1:3::1"));
  CHECK(key("192.0.2.7").size() == 4);
  CHECK(key("2001:db8::1").size() == 8);
}

}  // namespace
}  // namespace hotkey::http
