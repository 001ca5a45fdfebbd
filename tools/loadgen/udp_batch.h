// Internal to hotkey::loadgen: a connected UDP socket and a batch of protocol v1 datagrams
// sent with one sendmmsg(2) per batch. Shared by Sender and Replayer.
//
// Cost: Append() is a bounds check and a memcpy of the line; Send() is one system call per
// kMaxDatagrams datagrams (plus one per refused datagram). Memory: kMaxDatagrams *
// datagram_bytes, allocated once.

#ifndef HOTKEY_LOADGEN_UDP_BATCH_H_
#define HOTKEY_LOADGEN_UDP_BATCH_H_

#include <sys/socket.h>
#include <sys/uio.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace hotkey::loadgen::detail {

// A UDP socket connect()ed to HOST:PORT ("127.0.0.1:10111", "[::1]:10111",
// "localhost:10111"; an empty host means 127.0.0.1). Connecting lets the kernel skip the
// route lookup per datagram, and makes ICMP port-unreachable visible as ECONNREFUSED.
// Owns the descriptor. Thread-compatible.
class UdpSocket {
 public:
  static absl::StatusOr<UdpSocket> Connect(std::string_view host_port);
  UdpSocket(UdpSocket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  UdpSocket& operator=(UdpSocket&& other) noexcept;
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;
  ~UdpSocket();
  int fd() const { return fd_; }

 private:
  explicit UdpSocket(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// Counters written by the one sending thread and read by any thread (relaxed atomics: each
// value is exact, the set is not one consistent snapshot).
struct SendCounters {
  std::atomic<uint64_t> events{0};          // events in datagrams the kernel accepted
  std::atomic<uint64_t> datagrams{0};       // datagrams the kernel accepted
  std::atomic<uint64_t> bytes{0};           // UDP payload bytes accepted
  std::atomic<uint64_t> send_errors{0};     // datagrams refused by the kernel, dropped
  std::atomic<uint64_t> events_dropped{0};  // events in those datagrams
  std::atomic<int> last_errno{0};           // errno of the latest refusal
};

// Up to kMaxDatagrams datagrams, each `header` followed by event lines "<op> <key>\n".
// Thread-compatible.
class DatagramBatch {
 public:
  // 32 datagrams of 1400 bytes is ~45 KB per system call: large enough that the syscall
  // cost is small per event, small enough to stay in L2 and in the socket's send buffer.
  static constexpr int kMaxDatagrams = 32;

  // `header` is "" or a full header line with its "\n"; it must leave room for a line.
  DatagramBatch(size_t datagram_bytes, std::string header);

  // Adds "<op> <key>\n", starting a new datagram when the current one is full. Returns
  // false, adding nothing, when the batch is full (send it and retry). The caller ensures
  // FitsAlone(key) and that the key holds no '\n'.
  bool Append(char op, std::string_view key) {
    const size_t line = key.size() + 3;
    if (len_[current_] + line > datagram_bytes_) {
      if (current_ + 1 == kMaxDatagrams) return false;
      ++current_;
    }
    char* p = buffer_.data() + current_ * datagram_bytes_ + len_[current_];
    p[0] = op;
    p[1] = ' ';
    __builtin_memcpy(p + 2, key.data(), key.size());
    p[line - 1] = '\n';
    len_[current_] += line;
    ++events_[current_];
    return true;
  }

  // True when a key could be sent at all: header + "r " + key + "\n" fits one datagram.
  bool FitsAlone(std::string_view key) const {
    return header_.size() + key.size() + 3 <= datagram_bytes_;
  }

  bool empty() const { return current_ == 0 && events_[0] == 0; }

  // Sends every non-empty datagram, adds the outcome to `counters` and empties the batch.
  // Never fails: a datagram the kernel refuses (ECONNREFUSED after an ICMP port
  // unreachable, ENOBUFS, ...) is counted in send_errors and dropped.
  void Send(int fd, SendCounters& counters);

 private:
  void Reset();

  const size_t datagram_bytes_;
  const std::string header_;
  std::vector<char> buffer_;  // kMaxDatagrams slots of datagram_bytes_
  std::array<size_t, kMaxDatagrams> len_{};
  std::array<uint32_t, kMaxDatagrams> events_{};
  int current_ = 0;
  std::array<iovec, kMaxDatagrams> iov_{};
  std::array<mmsghdr, kMaxDatagrams> msgs_{};
};

// "!v1 rate=<p>\n" for p < 1, else "" (p = 1 is the protocol's default).
std::string SamplingHeader(double p);

}  // namespace hotkey::loadgen::detail

#endif  // HOTKEY_LOADGEN_UDP_BATCH_H_
