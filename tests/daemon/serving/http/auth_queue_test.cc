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

TEST_CASE("AuthQueue: at the bound, the heaviest address yields its newest ticket",
          "[http][auth_queue]") {
  AuthQueue q(4);
  std::vector<Ticket> flood;
  for (int i = 0; i < 4; ++i) flood.push_back(q.Enqueue("f").ticket);
  // The flooder itself is refused: it weighs the most. The refusal adds to its weight.
  const AuthQueue::Admission refused = q.Enqueue("f");
  CHECK_FALSE(refused.queued);
  CHECK_FALSE(refused.displaced.has_value());
  // f weighs 4 + 1. A newcomer with nothing queued takes the place of f's newest.
  const AuthQueue::Admission first = q.Enqueue("s");
  REQUIRE(first.queued);
  REQUIRE(first.displaced.has_value());
  CHECK(*first.displaced == flood[3]);
  CHECK(q.queued() == 4);
  // f weighs 3 + 1, then 2 + 1, then 1 + 1: two more than a newcomer's none each time.
  CHECK(*q.Enqueue("t").displaced == flood[2]);
  CHECK(*q.Enqueue("u").displaced == flood[1]);
  CHECK(*q.Enqueue("v").displaced == flood[0]);
  // s, t, u and v weigh one each: an address's only ticket, with nothing refused, stays.
  const AuthQueue::Admission last = q.Enqueue("w");
  CHECK_FALSE(last.queued);
  CHECK_FALSE(last.displaced.has_value());
  CHECK(q.queued() == 4);
  std::set<Ticket> left;
  while (std::optional<Ticket> t = q.Next()) left.insert(*t);
  CHECK(left.size() == 4);
  CHECK(left.count(first.ticket) == 1);
}

TEST_CASE("AuthQueue: an address refused while its one ticket waits yields it to a newcomer",
          "[http][auth_queue]") {
  // Many flooding addresses, one ticket each: the queue is full of addresses weighing one,
  // until their next requests are refused. Without the refusals in the weight, a first
  // login would find no place while max_queued flooding addresses wait.
  AuthQueue q(3);
  for (const char* a : {"f1", "f2", "f3"}) REQUIRE(q.Enqueue(a).queued);
  CHECK_FALSE(q.Enqueue("s").queued);   // all weigh one
  CHECK_FALSE(q.Enqueue("f2").queued);  // f2 asks again: refused, it weighs 2
  const AuthQueue::Admission login = q.Enqueue("s");
  REQUIRE(login.queued);
  CHECK(login.displaced.has_value());
  // f2's retries now find s weighing one, f1 and f3 one: none two above theirs.
  CHECK_FALSE(q.Enqueue("f2").queued);
  CHECK(q.Cancel(login.ticket));  // s kept its place
}

TEST_CASE("AuthQueue: wrong passwords are strikes that outlive the address's tickets",
          "[http][auth_queue]") {
  // More flooding addresses than places, each sending one guess at a time: each waits with
  // one ticket, and no request of theirs is refused while it waits. Their wrong passwords,
  // checked before, make them weigh two; without the strikes a first login finds no place.
  AuthQueue q(3);
  for (const char* a : {"f1", "f2", "f3"}) q.Checked(a, /*right=*/false);
  CHECK(q.remembered() == 3);
  for (const char* a : {"f1", "f2", "f3"}) REQUIRE(q.Enqueue(a).queued);
  const AuthQueue::Admission login = q.Enqueue("s");
  REQUIRE(login.queued);
  REQUIRE(login.displaced.has_value());
  // s weighs one, no strike: the connection cap's victim is a flooder's ticket.
  CHECK(q.Victim(1) != login.ticket);
  CHECK(q.Victim(2).has_value());
  // A right password clears an address's strikes: f1 and f2 then weigh what s does.
  q.Checked("f1", /*right=*/true);
  CHECK(q.remembered() == 2);
}

TEST_CASE("AuthQueue: strikes are remembered for a bounded number of addresses",
          "[http][auth_queue]") {
  AuthQueue q(4);
  for (int i = 0; i < 5; ++i) q.Checked("heavy", /*right=*/false);
  for (int i = 0; i < 10 * static_cast<int>(AuthQueue::kMaxRemembered); ++i) {
    q.Checked(std::to_string(i), /*right=*/false);
    CHECK(q.remembered() <= AuthQueue::kMaxRemembered);
  }
  CHECK(q.remembered() == AuthQueue::kMaxRemembered);
  // The one with the fewest strikes goes first: "heavy" (5) is still remembered, so its
  // one ticket weighs six and yields to a newcomer's.
  const Ticket heavy = q.Enqueue("heavy").ticket;
  for (const char* a : {"a", "b", "c"}) REQUIRE(q.Enqueue(a).queued);
  const AuthQueue::Admission login = q.Enqueue("s");
  REQUIRE(login.queued);
  REQUIRE(login.displaced.has_value());
  CHECK(*login.displaced == heavy);
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
