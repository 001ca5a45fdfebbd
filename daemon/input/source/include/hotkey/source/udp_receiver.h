// UdpReceiver: one UDP socket, one thread, one tracker: the daemon's ingest path.
//
// The thread runs its own Asio io_context. When the socket is readable it drains it with
// recvmmsg (up to `batch` datagrams a system call, through the native handle: Asio has no
// batched receive), reads the clock once per batch, parses every datagram in place
// (parsers/wire.h) and counts each event in its HeavyHitters. Nothing on that path allocates,
// locks or throws. When asked (RequestPublish, the daemon's tick) it drains what the kernel
// holds, then copies its tracker and counters into a recycled, immutable SourceReport
// (report_buffer.h: no allocation once warm) that other threads read through Latest(). So
// a datagram sent before the tick is in that tick's report. It counts the distinct hosts
// that sent accepted datagrams (client_hosts.h; SourceCounters::client_hosts). It is an EventSource
// (event_source.h) of kind "udp".
//
// With --udp.receivers=N the daemon opens N sockets on one port with SO_REUSEPORT: the
// kernel spreads senders over them by flow hash, and each receiver's tracker is merged
// into the snapshot (aggregate/aggregator.h).
//
// Shutdown, in phases: Stop() closes input (the socket), drains what the kernel already
// holds, publishes a last report, and joins the thread.
//
// Thread-safe: Start, Stop and Latest may be called from any thread.

#ifndef HOTKEY_SOURCE_UDP_RECEIVER_H_
#define HOTKEY_SOURCE_UDP_RECEIVER_H_

#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>

#include "absl/status/statusor.h"
#include "hotkey/clock/clock.h"
#include "hotkey/config/udp_options.h"
#include "hotkey/config/values.h"
#include "hotkey/parsers/wire.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "hotkey/source/client_hosts.h"
#include "hotkey/source/publishing_source.h"
#include "hotkey/source/report.h"
#include "hotkey/source/report_buffer.h"
#include "hotkey/source/udp_counters.h"

namespace hotkey::source {

class UdpReceiver final : public PublishingSource {
 public:
  // Opens and binds the socket (SO_REUSEPORT, SO_RCVBUF raised); does not start reading.
  // `clock` (monotonic: the tracker's time) must outlive the receiver.
  static absl::StatusOr<std::unique_ptr<UdpReceiver>> Create(
      const config::UdpOptions& udp, const sketch::HeavyHittersOptions& tracker,
      const clock::Clock& clock, PublishCallback on_publish = nullptr);
  ~UdpReceiver() override;

  // Replaces the tracker with restored state (storage.h): same options. Only before Start().
  void Restore(sketch::HeavyHitters tracker) { tracker_ = std::move(tracker); }

  std::string_view kind() const override { return "udp"; }

  boost::asio::ip::udp::endpoint local_endpoint() const { return local_; }
  // The socket's inode: its row in /proc/net/udp (kernel drop counts).
  uint64_t socket_inode() const { return inode_; }
  // SO_RCVBUF as the kernel granted it.
  int receive_buffer_bytes() const { return rcvbuf_; }

  // An IPv4 or IPv6 sender as ClientHosts keys it (IPv4 mapped into IPv6); false for
  // another family.
  static bool HostAddress(const sockaddr_storage& from, ClientHosts::Address& out);

 private:
  UdpReceiver(const config::UdpOptions& udp, sketch::HeavyHitters tracker,
              const clock::Clock& clock, PublishCallback on_publish);
  absl::Status Open();
  void Run() override;
  void Wake() override;
  void Publish() override;
  void ArmRead();
  void Drain(int max_rounds);
  void Process(const char* data, size_t len, const sockaddr_storage& from);

  const config::UdpOptions udp_;
  const clock::Clock& clock_;
  std::vector<config::Cidr> allowed_;

  boost::asio::io_context io_;
  boost::asio::ip::udp::socket socket_;
  boost::asio::ip::udp::endpoint local_;
  uint64_t inode_ = 0;
  int rcvbuf_ = 0;

  // Owned by the receiver thread.
  sketch::HeavyHitters tracker_;
  SourceCounters counters_;
  UdpCounters udp_counters_;
  ClientHosts hosts_;          // the senders of accepted datagrams
  absl::Time batch_time_;      // the clock read of the batch being processed
  std::vector<char> buffers_;  // batch * kMaxDatagram bytes
  std::vector<struct mmsghdr> msgs_;
  std::vector<struct iovec> iovecs_;
  std::vector<sockaddr_storage> sources_;
};

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_UDP_RECEIVER_H_
