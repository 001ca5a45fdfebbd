// Internal to hotkey::loadgen: UdpSocket and DatagramBatch (see udp_batch.h).

#include "udp_batch.h"

#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace hotkey::loadgen::detail {

absl::StatusOr<UdpSocket> UdpSocket::Connect(std::string_view host_port) {
  const std::string spec(host_port);
  const size_t colon = spec.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", spec, "' is not HOST:PORT (e.g. 127.0.0.1:10111)"));
  }
  std::string host = spec.substr(0, colon);
  const std::string port = spec.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "127.0.0.1";
  int port_number = 0;
  if (!absl::SimpleAtoi(port, &port_number) || port_number < 1 || port_number > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", spec, "': port must be a number in [1, 65535]"));
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", spec, "': cannot resolve host: ", gai_strerror(rc)));
  }
  int last_errno = 0;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      freeaddrinfo(found);
      // A larger send buffer lets a whole sendmmsg batch queue without blocking.
      const int sndbuf = 1 << 20;
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
      return UdpSocket(fd);
    }
    last_errno = errno;
    close(fd);
  }
  freeaddrinfo(found);
  return absl::UnavailableError(
      absl::StrCat("address '", spec, "': cannot connect a UDP socket: ", strerror(last_errno)));
}

UdpSocket& UdpSocket::operator=(UdpSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

UdpSocket::~UdpSocket() {
  if (fd_ >= 0) close(fd_);
}

DatagramBatch::DatagramBatch(size_t datagram_bytes, std::string header)
    : datagram_bytes_(datagram_bytes),
      header_(std::move(header)),
      buffer_(kMaxDatagrams * datagram_bytes) {
  for (int i = 0; i < kMaxDatagrams; ++i) {
    iov_[i].iov_base = buffer_.data() + i * datagram_bytes_;
    msgs_[i].msg_hdr.msg_iov = &iov_[i];
    msgs_[i].msg_hdr.msg_iovlen = 1;
    // The header never changes, so it is written once per slot and kept.
    std::memcpy(buffer_.data() + i * datagram_bytes_, header_.data(), header_.size());
    len_[i] = header_.size();
  }
}

void DatagramBatch::Reset() {
  for (int i = 0; i <= current_; ++i) {
    len_[i] = header_.size();
    events_[i] = 0;
  }
  current_ = 0;
}

void DatagramBatch::Send(int fd, SendCounters& counters) {
  int n = current_ + 1;
  if (events_[current_] == 0) --n;  // the last slot may be empty
  for (int i = 0; i < n; ++i) iov_[i].iov_len = len_[i];
  uint64_t events = 0, datagrams = 0, bytes = 0, errors = 0, dropped = 0;
  int i = 0;
  while (i < n) {
    const int sent = sendmmsg(fd, &msgs_[i], n - i, 0);
    if (sent > 0) {
      for (int j = i; j < i + sent; ++j) {
        events += events_[j];
        bytes += len_[j];
      }
      datagrams += sent;
      i += sent;
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    // Refused: drop this datagram, count it, go on with the rest. A pending ICMP error is
    // reported once, so the next call usually succeeds.
    counters.last_errno.store(sent < 0 ? errno : 0, std::memory_order_relaxed);
    ++errors;
    dropped += events_[i];
    ++i;
  }
  // One writer: load + store is enough and cheaper than a locked add.
  auto add = [](std::atomic<uint64_t>& c, uint64_t v) {
    c.store(c.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  };
  add(counters.events, events);
  add(counters.datagrams, datagrams);
  add(counters.bytes, bytes);
  add(counters.send_errors, errors);
  add(counters.events_dropped, dropped);
  Reset();
}

std::string SamplingHeader(double p) {
  if (!(p < 1.0)) return "";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), p);
  return "!v1 rate=" + std::string(buf, end - buf) + "\n";
}

}  // namespace hotkey::loadgen::detail
