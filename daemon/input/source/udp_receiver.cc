#include "hotkey/source/udp_receiver.h"

#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <span>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "hotkey/net/listen.h"

namespace hotkey::source {

namespace asio = boost::asio;
using asio::ip::udp;

// Every event the wire protocol accepts (cost / rate, parsers/wire.h) reaches the tracker whole.
static_assert(parsers::kMaxCost / parsers::kMinRate <= sketch::HeavyHitters::kMaxWeight,
              "the heaviest event the protocol accepts must count in full");

namespace {

// Receive buffer per datagram: the largest UDP payload (65,507 bytes over IPv4) fits, so
// no datagram is ever cut.
constexpr size_t kMaxDatagram = 65536;
// Batches drained per wake-up before yielding to a publish request: bounds how late a
// publish can be under a flood.
constexpr int kRoundsPerWake = 64;

std::string Av(boost::system::error_code ec) { return ec.message(); }

}  // namespace

absl::StatusOr<std::unique_ptr<UdpReceiver>> UdpReceiver::Create(
    const config::UdpOptions& udp, const sketch::HeavyHittersOptions& tracker,
    const clock::Clock& clock, PublishCallback on_publish) {
  absl::StatusOr<sketch::HeavyHitters> hh = sketch::HeavyHitters::Create(tracker, clock.Now());
  if (!hh.ok()) return hh.status();
  std::unique_ptr<UdpReceiver> r(
      new UdpReceiver(udp, *std::move(hh), clock, std::move(on_publish)));
  for (const std::string& cidr : udp.allowed_sources) {
    absl::StatusOr<config::Cidr> c = config::ParseCidr(cidr);
    if (!c.ok()) return c.status();
    r->allowed_.push_back(*c);
  }
  if (absl::Status s = r->Open(); !s.ok()) return s;
  return r;
}

UdpReceiver::UdpReceiver(const config::UdpOptions& udp, sketch::HeavyHitters tracker,
                         const clock::Clock& clock, PublishCallback on_publish)
    : PublishingSource(tracker),
      udp_(udp),
      clock_(clock),
      socket_(io_),
      tracker_(std::move(tracker)),
      buffers_(static_cast<size_t>(udp.batch) * kMaxDatagram),
      msgs_(udp.batch),
      iovecs_(udp.batch),
      sources_(udp.batch) {
  SetPublishCallback(std::move(on_publish));
  for (int i = 0; i < udp.batch; ++i) {
    iovecs_[i] = {&buffers_[static_cast<size_t>(i) * kMaxDatagram], kMaxDatagram};
    std::memset(&msgs_[i], 0, sizeof msgs_[i]);
    msgs_[i].msg_hdr.msg_iov = &iovecs_[i];
    msgs_[i].msg_hdr.msg_iovlen = 1;
    msgs_[i].msg_hdr.msg_name = &sources_[i];
    msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
  }
}

UdpReceiver::~UdpReceiver() { Stop(); }

absl::Status UdpReceiver::Open() {
  absl::StatusOr<config::HostPort> hp = config::ParseListenAddress(udp_.listen_address);
  if (!hp.ok()) return hp.status();
  absl::StatusOr<asio::ip::address> host = net::ListenHost(*hp);
  if (!host.ok()) return host.status();
  udp::endpoint ep(*host, hp->port);
  boost::system::error_code ec;
  socket_.open(ep.protocol(), ec);
  if (ec && host->is_v6() && hp->host.empty()) {
    // No IPv6 on this host: every interface means every IPv4 interface.
    ep = udp::endpoint(asio::ip::address_v4::any(), hp->port);
    socket_.open(ep.protocol(), ec);
  }
  if (ec) return absl::InternalError(absl::StrCat("udp socket: ", Av(ec)));
  if (ep.address().is_v6()) socket_.set_option(asio::ip::v6_only(false), ec);
  const int one = 1;
  if (::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
    return absl::InternalError(absl::StrCat("SO_REUSEPORT: ", std::strerror(errno)));
  }
  // The kernel caps SO_RCVBUF at net.core.rmem_max; as root, SO_RCVBUFFORCE goes past it.
  const int want = static_cast<int>(std::min<size_t>(udp_.read_buffer_bytes, INT32_MAX / 2));
  if (::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof want) != 0) {
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVBUF, &want, sizeof want);
  }
  socklen_t len = sizeof rcvbuf_;
  ::getsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVBUF, &rcvbuf_, &len);
  socket_.bind(ep, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on udp ", udp_.listen_address, ": ", Av(ec)));
  }
  local_ = socket_.local_endpoint(ec);
  socket_.non_blocking(true, ec);
  struct stat st;
  if (::fstat(socket_.native_handle(), &st) == 0) inode_ = st.st_ino;
  return absl::OkStatus();
}

void UdpReceiver::Run() {
  ArmRead();
  io_.run();  // until the socket is closed (Wake() at stop) and nothing is left to do
}

void UdpReceiver::Wake() {
  asio::post(io_, [this] {
    if (stopping()) {
      Drain(kRoundsPerWake);  // what the kernel already holds is counted, not lost
      boost::system::error_code ec;
      socket_.close(ec);  // ends the read wait, and with it Run()
      return;
    }
    PublishIfAsked();
  });
}

void UdpReceiver::ArmRead() {
  socket_.async_wait(udp::socket::wait_read, [this](boost::system::error_code ec) {
    if (ec || stopping()) return;
    Drain(kRoundsPerWake);
    ArmRead();
  });
}

void UdpReceiver::Drain(int max_rounds) {
  const int fd = socket_.native_handle();
  for (int round = 0; round < max_rounds; ++round) {
    for (int i = 0; i < udp_.batch; ++i) msgs_[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
    const int n = ::recvmmsg(fd, msgs_.data(), udp_.batch, MSG_DONTWAIT, nullptr);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EBADF) ++udp_counters_.receive_errors;
      return;
    }
    batch_time_ = clock_.Now();  // one clock read per batch, not per event
    tracker_.Advance(batch_time_);
    AdvanceSlots(batch_time_);
    for (int i = 0; i < n; ++i) {
      Process(static_cast<const char*>(iovecs_[i].iov_base), msgs_[i].msg_len, sources_[i]);
    }
    if (n < udp_.batch) return;
  }
}

bool UdpReceiver::HostAddress(const sockaddr_storage& from, ClientHosts::Address& out) {
  if (from.ss_family == AF_INET6) {
    std::memcpy(out.data(), &reinterpret_cast<const sockaddr_in6&>(from).sin6_addr, 16);
    return true;
  }
  if (from.ss_family == AF_INET) {
    out = {};
    out[10] = out[11] = 0xff;
    std::memcpy(out.data() + 12, &reinterpret_cast<const sockaddr_in&>(from).sin_addr, 4);
    return true;
  }
  return false;
}

void UdpReceiver::Process(const char* data, size_t len, const sockaddr_storage& from) {
  ++udp_counters_.datagrams;
  if (!allowed_.empty()) {
    std::span<const uint8_t> addr;
    if (from.ss_family == AF_INET) {
      addr = {
          reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in&>(from).sin_addr),
          4};
    } else if (from.ss_family == AF_INET6) {
      addr = {
          reinterpret_cast<const uint8_t*>(&reinterpret_cast<const sockaddr_in6&>(from).sin6_addr),
          16};
    }
    bool ok = false;
    for (const config::Cidr& c : allowed_) ok = ok || c.Contains(addr);
    if (!ok) {
      ++udp_counters_.datagrams_denied;
      return;
    }
  }
  if (ClientHosts::Address host; HostAddress(from, host)) hosts_.Saw(host, batch_time_);
  const parsers::ParseStats st =
      parsers::ParseDatagram(std::string_view(data, len), config::UdpOptions::kMaxPayloadBytes,
                             [this](const parsers::Event& e) {
                               tracker_.Update(e.key, e.op, e.weight);
                               CountSlot(e.key, e.op, e.weight);
                             });
  counters_.events += st.events;
  if (st.events > 0) counters_.last_event = batch_time_;
  for (size_t i = 0; i < parsers::kNumRejects; ++i) udp_counters_.rejected[i] += st.rejected[i];
}

void UdpReceiver::Publish() {
  Drain(kRoundsPerWake);  // a datagram sent before the request is in the report (a closed
                          // socket drains nothing)
  const absl::Time now = clock_.Now();
  hosts_.Expire(now);
  counters_.client_hosts = hosts_.count();
  counters_.client_hosts_capped = hosts_.capped(now);
  udp_counters_.Fill(counters_.own);
  PublishReport(now, tracker_, counters_);
}

}  // namespace hotkey::source
