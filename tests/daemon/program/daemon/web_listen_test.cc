// The HTTP server's listening sockets and the lifecycle gate, on a whole Daemon: several
// --web.listen-address, sockets passed as systemd passes them, and POST /-/reload with and
// without --web.enable-lifecycle.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "checkers.h"
#include "hotkey/clock/clock.h"
#include "hotkey/config/rules_file.h"
#include "hotkey/daemon/daemon.h"
#include "hotkey/net/systemd_socket.h"

namespace hotkey::daemon {
namespace {

using testing::HttpCall;
using testing::WaitFor;

const clock::RealClock kClock;

config::DaemonOptions Options() {
  config::DaemonOptions o;
  o.udp.listen_address = "127.0.0.1:0";
  o.web.listen_addresses = {"127.0.0.1:0"};
  o.track.publish_interval = absl::Milliseconds(25);
  return o;
}

// A daemon on its own thread; stops and joins on destruction.
class Running {
 public:
  explicit Running(const config::DaemonOptions& o, std::vector<int> fds = {}) {
    Daemon::Inputs inputs;
    inputs.web_listen_fds = std::move(fds);
    absl::StatusOr<std::unique_ptr<Daemon>> d =
        Daemon::Create(o, std::move(inputs), clock::SteadyClock::Get(), kClock, nullptr);
    INFO(d.status().ToString());
    REQUIRE(d.ok());
    daemon_ = *std::move(d);
    thread_ = std::thread([this] { daemon_->Run(/*handle_signals=*/false); });
    const uint16_t port = daemon_->web_endpoint().port();
    REQUIRE(WaitFor([port] { return HttpCall(port, "GET", "/-/ready").status == 200; }));
  }
  ~Running() {
    daemon_->Shutdown();
    thread_.join();
  }
  Daemon& operator*() { return *daemon_; }
  Daemon* operator->() { return daemon_.get(); }

 private:
  std::unique_ptr<Daemon> daemon_;
  std::thread thread_;
};

// A listening TCP socket on 127.0.0.1, an ephemeral port; returns its fd and port.
std::pair<int, uint16_t> ListeningSocket() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(::listen(fd, 16) == 0);
  socklen_t len = sizeof(a);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  return {fd, ntohs(a.sin_port)};
}

TEST_CASE("Web listen: each --web.listen-address is listened on and serves /metrics",
          "[daemon][e2e][web]") {
  config::DaemonOptions o = Options();
  o.web.listen_addresses = {"127.0.0.1:0", "127.0.0.1:0"};
  Running d(o);
  const std::vector<boost::asio::ip::tcp::endpoint> eps = d->web_endpoints();
  REQUIRE(eps.size() == 2);
  CHECK(eps[0].port() != eps[1].port());
  CHECK(d->web_endpoint() == eps[0]);
  for (const auto& ep : eps) {
    const testing::HttpReply r = HttpCall(ep.port(), "GET", "/metrics");
    CHECK(r.status == 200);
    CHECK(r.body.find("hotkey_build_info") != std::string::npos);
  }
}

TEST_CASE("Web listen: one address that cannot be bound fails the start, naming it",
          "[daemon][e2e][web]") {
  auto [fd, port] = ListeningSocket();  // holds the port
  config::DaemonOptions o = Options();
  const std::string taken = absl::StrCat("127.0.0.1:", port);
  o.web.listen_addresses = {"127.0.0.1:0", taken};
  absl::StatusOr<std::unique_ptr<Daemon>> d =
      Daemon::Create(o, {}, clock::SteadyClock::Get(), kClock, nullptr);
  REQUIRE_FALSE(d.ok());
  CHECK(d.status().message().find(absl::StrCat("cannot listen on http ", taken)) !=
        absl::string_view::npos);
  ::close(fd);
}

TEST_CASE("Web listen: with systemd_socket the passed sockets are served, nothing is bound",
          "[daemon][e2e][web]") {
  auto [fd, port] = ListeningSocket();
  config::DaemonOptions o = Options();
  o.web.systemd_socket = true;
  o.web.listen_addresses = {"127.0.0.1:1"};  // would fail to bind (privileged or taken)
  Running d(o, {fd});
  REQUIRE(d->web_endpoints().size() == 1);
  CHECK(d->web_endpoint().port() == port);
  CHECK(HttpCall(port, "GET", "/metrics").status == 200);
}

TEST_CASE(
    "Web listen: systemd_socket without a socket, or with one that is not listening, "
    "is a clear error",
    "[daemon][e2e][web]") {
  config::DaemonOptions o = Options();
  o.web.systemd_socket = true;
  absl::StatusOr<std::unique_ptr<Daemon>> none =
      Daemon::Create(o, {}, clock::SteadyClock::Get(), kClock, nullptr);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("systemd passed no socket") != absl::string_view::npos);

  const int udp = ::socket(AF_INET, SOCK_DGRAM, 0);
  Daemon::Inputs inputs;
  inputs.web_listen_fds = {udp};
  absl::StatusOr<std::unique_ptr<Daemon>> bad =
      Daemon::Create(o, std::move(inputs), clock::SteadyClock::Get(), kClock, nullptr);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("not a listening stream socket") != absl::string_view::npos);
  ::close(udp);
}

TEST_CASE("Systemd socket: LISTEN_PID and LISTEN_FDS count sockets only for this process",
          "[daemon][systemd]") {
  CHECK(*net::SystemdListenFdCount(std::nullopt, std::nullopt, 42) == 0);
  CHECK(*net::SystemdListenFdCount("42", std::nullopt, 42) == 0);
  CHECK(*net::SystemdListenFdCount("42", "2", 42) == 2);
  CHECK(*net::SystemdListenFdCount("41", "2", 42) == 0);  // inherited from a parent
  CHECK_FALSE(net::SystemdListenFdCount("x", "2", 42).ok());
  CHECK_FALSE(net::SystemdListenFdCount("42", "two", 42).ok());
  CHECK_FALSE(net::SystemdListenFdCount("42", "-1", 42).ok());
  CHECK_FALSE(net::SystemdListenFdCount("42", "100000", 42).ok());
}

TEST_CASE("Lifecycle: POST /-/reload is 403 without enable_lifecycle and reloads with it",
          "[daemon][e2e][web]") {
  {
    Running d(Options());
    const testing::HttpReply r = HttpCall(d->web_endpoint().port(), "POST", "/-/reload");
    CHECK(r.status == 403);
    CHECK(r.body == "Lifecycle API is not enabled.\n");
    CHECK(d->Reload().ok());  // what SIGHUP calls works either way
  }
  config::DaemonOptions o = Options();
  o.web.enable_lifecycle = true;
  Running d(o);
  CHECK(HttpCall(d->web_endpoint().port(), "POST", "/-/reload").status == 200);
}

}  // namespace
}  // namespace hotkey::daemon
