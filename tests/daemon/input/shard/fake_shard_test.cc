// The prober against a fake shard speaking RESP on a loopback socket, which reports what no
// real server can (a real redis-server cannot be made to): busy far above one core, CPU time
// growing 1e300 s a second, slots past the last or listed twice, and then no answer at all.
// Each impossible answer is refused whole (Measurement::rejected, a failed status), and the
// next possible one is used again.

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "fake_clock.h"
#include "hotkey/shard/prober.h"
#include "probing.h"

namespace hotkey::shard {
namespace {

namespace asio = boost::asio;

// A RESP server on a loopback port: each request (INFO, CLUSTER NODES) is answered with the
// bulk string `answer(request)`, on one connection at a time, until the test ends.
class FakeShard {
 public:
  using Answer = std::function<std::string(std::string_view request)>;
  explicit FakeShard(Answer answer)
      : answer_(std::move(answer)), acceptor_(io_, {asio::ip::address_v4::loopback(), 0}) {
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeShard() {
    stop_ = true;
    boost::system::error_code ec;
    // Wakes the accept or the read.
    asio::ip::tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ec);
    if (peer_) peer_->shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    thread_.join();
  }
  std::string address() const {
    return absl::StrCat("127.0.0.1:", acceptor_.local_endpoint().port());
  }

 private:
  void Serve() {
    while (!stop_) {
      asio::ip::tcp::socket peer(io_);
      boost::system::error_code ec;
      acceptor_.accept(peer, ec);
      if (ec || stop_) return;
      peer_ = &peer;
      std::string in;
      char buf[4096];
      while (!stop_) {
        const size_t n = peer.read_some(asio::buffer(buf), ec);
        if (ec) break;
        in.append(buf, n);
        // One request: a RESP array whose last bulk string ends the buffer.
        if (in.size() < 2 || in.substr(in.size() - 2) != "\r\n") continue;
        const std::string body = answer_(in);
        in.clear();
        const std::string reply = absl::StrCat("$", body.size(), "\r\n", body, "\r\n");
        asio::write(peer, asio::buffer(reply), ec);
        if (ec) break;
      }
      peer_ = nullptr;
    }
  }

  const Answer answer_;
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stop_{false};
  asio::ip::tcp::socket* peer_ = nullptr;
  std::thread thread_;
};

// INFO with `commands` processed and `cpu` seconds of the main thread.
std::string Info(uint64_t commands, double cpu, bool cluster = false) {
  return absl::StrFormat(
      "# Server\r\nredis_version:7.0.15\r\nprocess_id:1\r\n# Stats\r\n"
      "total_commands_processed:%d\r\n# CPU\r\nused_cpu_sys_main_thread:0\r\n"
      "used_cpu_user_main_thread:%.17g\r\n# Cluster\r\ncluster_enabled:%d\r\n",
      commands, cpu, cluster ? 1 : 0);
}

config::ShardOptions Options(const std::string& address) {
  config::ShardOptions o;
  o.address = address;
  o.timeout = absl::Milliseconds(500);
  return o;
}

TEST_CASE("Prober: a fake shard's busy 1000 on one core is refused, then a possible one is used",
          "[shard]") {
  // Rounds 5 s apart: 10,000 commands each; CPU 2.5 s (busy 0.5), then 5,000 s (busy
  // 1000, the "measured" capacity of 3 ops/s), then 2.5 s again.
  std::atomic<int> round{0};
  const double cpu[] = {0, 2.5, 5002.5, 5005};
  FakeShard shard([&](std::string_view) {
    const int r = round++;
    return Info(10000 * static_cast<uint64_t>(r), cpu[std::min(r, 3)]);
  });
  testing::FakeClock clock;
  Probing probing(Options(shard.address()), clock);
  CHECK(probing.Next().status.ok());  // the first reading: no load yet
  clock.Advance(absl::Seconds(5));
  Measurement m = probing.Next();
  REQUIRE(m.status.ok());
  REQUIRE(m.load);
  CHECK(m.load->busy == Approx(0.5));
  CHECK_FALSE(m.rejected);
  clock.Advance(absl::Seconds(5));
  m = probing.Next();
  CHECK(m.rejected == Rejection::kBusy);
  CHECK(m.status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(m.status.message()), Catch::Contains("busy 1000"));
  CHECK_FALSE(m.load);
  CHECK_FALSE(m.reading);
  // The next pair is judged from the refused reading: 2.5 s in 5 s again.
  clock.Advance(absl::Seconds(5));
  m = probing.Next();
  REQUIRE(m.status.ok());
  CHECK_FALSE(m.rejected);
  REQUIRE(m.load);
  CHECK(m.load->busy == Approx(0.5));
}

TEST_CASE("Prober: CPU time growing 1e300 s a second is refused, never a capacity of 4e-297",
          "[shard]") {
  std::atomic<int> round{0};
  FakeShard shard([&](std::string_view) {
    const int r = round++;
    return Info(10000 * static_cast<uint64_t>(r), r * 5e300);
  });
  testing::FakeClock clock;
  Probing probing(Options(shard.address()), clock);
  CHECK(probing.Next().status.ok());
  clock.Advance(absl::Seconds(5));
  const Measurement m = probing.Next();
  CHECK(m.rejected == Rejection::kBusy);
  CHECK_FALSE(m.load);
}

TEST_CASE("Prober: a fake cluster's slots listed twice or past 16383 are refused", "[shard]") {
  constexpr char kMe[] = "1111111111111111111111111111111111111111";
  constexpr char kOther[] = "2222222222222222222222222222222222222222";
  const auto line = [](const char* id, const char* flags, const char* slots) {
    return absl::StrCat(id, " 127.0.0.1:7000@17000 ", flags, " - 0 0 1 connected ", slots, "\n");
  };
  struct Case {
    std::string nodes;
    std::optional<Rejection> want;
  };
  const Case cases[] = {
      {line(kMe, "myself,master", "0-8191") + line(kOther, "master", "8192-16383"), std::nullopt},
      // The overlapping ranges: every node claiming every slot.
      {line(kMe, "myself,master", "0-16383") + line(kOther, "master", "0-16383"),
       Rejection::kSlotOverlap},
      {line(kMe, "myself,master", "0-8191 100"), Rejection::kSlotOverlap},
      {line(kMe, "myself,master", "0-16384"), Rejection::kSlotRange},
      {line(kMe, "myself,master", "99999999999999999999"), Rejection::kSlotRange},
  };
  for (const Case& c : cases) {
    INFO(c.nodes);
    FakeShard shard([&](std::string_view request) {
      if (request.find("CLUSTER") != std::string_view::npos) return c.nodes;
      return Info(1, 0, /*cluster=*/true);
    });
    testing::FakeClock clock;
    const Measurement m = Probing(Options(shard.address()), clock).Next();
    CHECK(m.rejected == c.want);
    CHECK(m.status.ok() == !c.want);
    if (!c.want) CHECK(m.cluster.shards == 2);
  }
}

TEST_CASE("Prober: a fake cluster of more nodes than kMaxNodes is refused", "[shard]") {
  // Short lines, so that the answer fits the reply bound (Prober::kMaxReplyBytes).
  std::string nodes;
  for (size_t i = 0; i <= cluster::kMaxNodes; ++i) {
    nodes +=
        absl::StrFormat("%x a:1 %s - 0 0 1 connected\n", i, i == 0 ? "myself,master" : "slave");
  }
  REQUIRE(nodes.size() < Prober::kMaxReplyBytes);
  FakeShard shard([&](std::string_view request) {
    if (request.find("CLUSTER") != std::string_view::npos) return nodes;
    return Info(1, 0, /*cluster=*/true);
  });
  testing::FakeClock clock;
  const Measurement m = Probing(Options(shard.address()), clock).Next();
  CHECK(m.rejected == Rejection::kNodeCount);
}

TEST_CASE("Prober: a fake shard that stops answering fails the round, and is no rejection",
          "[shard]") {
  config::ShardOptions o;
  testing::FakeClock clock;
  {
    FakeShard shard([&](std::string_view) { return Info(1, 0); });
    o = Options(shard.address());
  }
  const Measurement m = Probing(o, clock).Next();
  CHECK_FALSE(m.status.ok());
  CHECK_FALSE(m.rejected);
  CHECK_FALSE(m.load);
}

}  // namespace
}  // namespace hotkey::shard
