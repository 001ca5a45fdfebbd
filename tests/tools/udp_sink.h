// UdpSink: a loopback UDP socket for tools tests that collects every datagram it receives
// on a background thread, so senders under test can run at full speed without the
// kernel's receive buffer overflowing.

#ifndef HOTKEY_TESTS_TOOLS_UDP_SINK_H_
#define HOTKEY_TESTS_TOOLS_UDP_SINK_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hotkey::testing {

// Thread-safe: the receiving thread appends under a mutex; readers copy under it.
class UdpSink {
 public:
  UdpSink() {
    fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const int rcvbuf = 8 << 20;  // capped by net.core.rmem_max; the thread drains anyway
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    timeval tv{0, 20000};  // 20 ms: how often the thread looks at `stop_`
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~UdpSink() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // Waits until `n` datagrams arrived or `timeout` passed; returns what arrived.
  std::vector<std::string> WaitFor(
      size_t n, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (datagrams_.size() >= n || std::chrono::steady_clock::now() > deadline) {
          return datagrams_;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

 private:
  void Loop() {
    std::vector<char> buf(65536);
    while (!stop_) {
      const ssize_t n = recv(fd_, buf.data(), buf.size(), 0);
      if (n < 0) continue;  // timeout or EINTR
      std::lock_guard<std::mutex> lock(mu_);
      datagrams_.emplace_back(buf.data(), static_cast<size_t>(n));
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> datagrams_;
  std::thread thread_;
};

}  // namespace hotkey::testing

#endif  // HOTKEY_TESTS_TOOLS_UDP_SINK_H_
