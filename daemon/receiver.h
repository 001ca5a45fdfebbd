// UdpReceiver: one UDP socket, one thread, one tracker: the daemon's ingest path.
//
// The thread runs its own Asio io_context. When the socket is readable it drains it with
// recvmmsg (up to `batch` datagrams a system call, through the native handle: Asio has no
// batched receive), reads the clock once per batch, parses every datagram in place
// (protocol.h) and counts each event in its HeavyHitters. Nothing on that path allocates,
// locks or throws. Every publish interval it copies its tracker and counters into an
// immutable Report (one allocation a tick) that other threads read through Latest().
//
// With --udp.receivers=N the daemon opens N sockets on one port with SO_REUSEPORT: the
// kernel spreads senders over them by flow hash, and each receiver's tracker is merged
// into the snapshot (aggregator.h).
//
// Shutdown, in phases: Stop() closes input (the socket), drains what the kernel already
// holds, publishes a last Report, and joins the thread.
//
// Thread-safe: Start, Stop and Latest may be called from any thread.

#ifndef HOTKEY_DAEMON_RECEIVER_H_
#define HOTKEY_DAEMON_RECEIVER_H_

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "absl/status/statusor.h"
#include "hotkey/clock/clock.h"
#include "hotkey/config/options.h"
#include "hotkey/config/values.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "protocol.h"

namespace hotkey::daemon {

struct ReceiverCounters {
  uint64_t datagrams = 0;
  uint64_t events = 0;
  std::array<uint64_t, kNumRejects> rejected = {};  // lines (datagrams for kBadHeader)
  uint64_t datagrams_denied = 0;                    // from a source outside --udp.allowed-sources
  uint64_t receive_errors = 0;  // recvmmsg failures other than "nothing to read"

  void Add(const ReceiverCounters& o);
};

// What a receiver publishes each tick: immutable once published.
struct ReceiverReport {
  absl::Time time;
  sketch::HeavyHitters tracker;
  ReceiverCounters counters;
};

class UdpReceiver {
 public:
  // Called on the receiver's thread after each publish; must be cheap (post and return).
  using PublishCallback = std::function<void()>;

  // Opens and binds the socket (SO_REUSEPORT, SO_RCVBUF raised); does not start reading.
  static absl::StatusOr<std::unique_ptr<UdpReceiver>> Create(
      const config::UdpOptions& udp, const sketch::HeavyHittersOptions& tracker,
      absl::Duration publish_interval, const clock::Clock& clock, PublishCallback on_publish);
  ~UdpReceiver();

  // Replaces the tracker with restored state (storage.h). Only before Start().
  void Restore(sketch::HeavyHitters tracker) { tracker_ = std::move(tracker); }

  void Start();
  void Stop();

  // The last published report; null before the first tick.
  std::shared_ptr<const ReceiverReport> Latest() const;

  boost::asio::ip::udp::endpoint local_endpoint() const { return local_; }
  // The socket's inode: its row in /proc/net/udp (kernel drop counts).
  uint64_t socket_inode() const { return inode_; }
  // SO_RCVBUF as the kernel granted it.
  int receive_buffer_bytes() const { return rcvbuf_; }

 private:
  UdpReceiver(const config::UdpOptions& udp, sketch::HeavyHitters tracker,
              absl::Duration publish_interval, const clock::Clock& clock,
              PublishCallback on_publish);
  absl::Status Open();
  void ArmRead();
  void ArmTimer();
  void Drain(int max_rounds);
  void Process(const char* data, size_t len, const sockaddr_storage& from);
  void Publish();

  const config::UdpOptions udp_;
  const absl::Duration publish_interval_;
  const clock::Clock& clock_;
  const PublishCallback on_publish_;
  std::vector<config::Cidr> allowed_;

  boost::asio::io_context io_;
  boost::asio::ip::udp::socket socket_;
  boost::asio::steady_timer timer_;
  boost::asio::ip::udp::endpoint local_;
  uint64_t inode_ = 0;
  int rcvbuf_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  // Owned by the receiver thread.
  sketch::HeavyHitters tracker_;
  ReceiverCounters counters_;
  std::vector<char> buffers_;  // batch * kMaxDatagram bytes
  std::vector<struct mmsghdr> msgs_;
  std::vector<struct iovec> iovecs_;
  std::vector<sockaddr_storage> sources_;

  mutable std::mutex mu_;
  std::shared_ptr<const ReceiverReport> latest_;  // guarded by mu_
};

// Resolves a listen address ("host:port", "[v6]:port", ":port") to an endpoint; ":port"
// is every interface (IPv6 dual-stack where the host has IPv6, else IPv4).
absl::StatusOr<boost::asio::ip::address> ListenHost(const config::HostPort& hp);

}  // namespace hotkey::daemon

#endif  // HOTKEY_DAEMON_RECEIVER_H_
