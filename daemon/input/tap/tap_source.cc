#include "tap_source.h"

#include <linux/if_packet.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include <unistd.h>

#include <pcap/pcap.h>

#include "absl/strings/str_cat.h"
#include "hotkey/config/values.h"
#include "hotkey/source/tracker_options.h"
#include "hotkey/tap/tap.h"

namespace hotkey::tap {

namespace {

// Batches read per Step() from a file before the clock is looked at again.
constexpr int kFileRounds = 64;
// Batches read per wake-up of a live capture before publishing gets a look-in.
constexpr int kLiveRounds = 64;

// The bytes mapped for the packet socket with inode `inode` (its PACKET_RX_RING), from
// /proc/self/maps: "7f..-7f.. rw-s 00000000 00:09 702610   socket:[702610]".
uint64_t MappedBytes(uint64_t inode) {
  std::ifstream maps("/proc/self/maps");
  const std::string want = absl::StrCat("socket:[", inode, "]");
  uint64_t total = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.size() < want.size() || line.compare(line.size() - want.size(), want.size(), want))
      continue;
    const size_t dash = line.find('-');
    const size_t space = line.find(' ');
    if (dash == std::string::npos || space == std::string::npos || space < dash) continue;
    uint64_t lo = 0, hi = 0;
    const char* b = line.data();
    const auto a = std::from_chars(b, b + dash, lo, 16);
    const auto z = std::from_chars(b + dash + 1, b + space, hi, 16);
    if (a.ec == std::errc() && z.ec == std::errc() && hi > lo) total += hi - lo;
  }
  return total;
}

// Whether `interface` is a loopback device, by libpcap's device list.
bool IsLoopback(const std::string& interface) {
  char err[PCAP_ERRBUF_SIZE] = {};
  pcap_if_t* devs = nullptr;
  if (pcap_findalldevs(&devs, err) != 0) return false;
  bool loopback = false;
  for (const pcap_if_t* d = devs; d != nullptr; d = d->next) {
    if (interface == d->name) loopback = (d->flags & PCAP_IF_LOOPBACK) != 0;
  }
  pcap_freealldevs(devs);
  return loopback;
}

const char* RingName(int version) {
  switch (version) {
    case 0:
      return "TPACKET_V1";
    case 1:
      return "TPACKET_V2";
    case 2:
      return "TPACKET_V3";
    default:
      return "unknown";
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<TapSource>> TapSource::Create(
    const config::TapOptions& tap, const sketch::HeavyHittersOptions& tracker,
    const clock::Clock& clock) {
  if (absl::Status s = tap.Validate(); !s.ok()) return s;
  if (!tap.enabled()) {
    return absl::InvalidArgumentError("tap: neither --tap.interface nor --tap.file is given");
  }
  absl::StatusOr<sketch::HeavyHitters> hh = sketch::HeavyHitters::Create(tracker, clock.Now());
  if (!hh.ok()) return hh.status();
  std::unique_ptr<TapSource> s(new TapSource(tap, *std::move(hh), clock));
  if (absl::Status st = s->Open(); !st.ok()) return st;
  return s;
}

TapSource::TapSource(const config::TapOptions& tap, sketch::HeavyHitters tracker,
                     const clock::Clock& clock)
    : PublishingSource(tracker),
      tap_(tap),
      clock_(clock),
      tracker_(std::move(tracker)),
      pipeline_(tap_, tracker_) {
  counters_.memory_bound_bytes = tap_.MemoryBoundBytes();
  tap_counters_.memory_bound_bytes = counters_.memory_bound_bytes;
}

TapSource::~TapSource() {
  Stop();
  if (pcap_) pcap_close(pcap_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

absl::Status TapSource::Open() {
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno)));
  char err[PCAP_ERRBUF_SIZE] = {};
  std::string what;
  if (!tap_.file.empty()) {
    what = absl::StrCat("--tap.file=", tap_.file);
    pcap_ = pcap_open_offline(tap_.file.c_str(), err);
    if (!pcap_) return absl::NotFoundError(absl::StrCat(what, ": ", err));
  } else {
    what = absl::StrCat("--tap.interface=", tap_.interface);
    pcap_ = pcap_create(tap_.interface.c_str(), err);
    if (!pcap_) return absl::InvalidArgumentError(absl::StrCat(what, ": ", err));
    pcap_set_snaplen(pcap_, tap_.snaplen);
    // Not immediate mode: libpcap then uses TPACKET_V3, whose blocks pack small packets
    // densely and are handed over whole (one wake-up per block, or per kBlockTimeout),
    // where immediate mode's TPACKET_V2 has a slot of the snap length per packet (128
    // slots in 8 MiB on lo) and a wake-up per packet (see tap_source.h).
    pcap_set_immediate_mode(pcap_, 0);
    pcap_set_timeout(pcap_, static_cast<int>(absl::ToInt64Milliseconds(kBlockTimeout)));
    pcap_set_buffer_size(pcap_, static_cast<int>(std::min<size_t>(tap_.buffer_bytes, INT32_MAX)));
    const int rc = pcap_activate(pcap_);
    if (rc == PCAP_ERROR_PERM_DENIED || (rc < 0 && errno == EPERM)) {
      return absl::PermissionDeniedError(
          absl::StrCat(what,
                       ": capturing needs CAP_NET_RAW (run as root, or `setcap cap_net_raw+ep "
                       "/usr/bin/hotkeyd`, or AmbientCapabilities=CAP_NET_RAW in the unit: see "
                       "deploy/systemd/hotkeyd-tap.conf)"));
    }
    if (rc == PCAP_ERROR_NO_SUCH_DEVICE) {
      return absl::NotFoundError(
          absl::StrCat(what, ": no such interface (", pcap_geterr(pcap_), ")"));
    }
    if (rc < 0) {
      return absl::UnavailableError(absl::StrCat(what, ": cannot capture: ", pcap_statustostr(rc),
                                                 " (", pcap_geterr(pcap_), ")"));
    }
  }
  link_type_ = pcap_datalink(pcap_);
  const std::string filter = TapFilter(tap_);
  struct bpf_program prog;
  if (pcap_compile(pcap_, &prog, filter.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
    return absl::InternalError(
        absl::StrCat(what, ": filter \"", filter, "\": ", pcap_geterr(pcap_)));
  }
  const int set = pcap_setfilter(pcap_, &prog);
  pcap_freecode(&prog);
  if (set != 0) {
    return absl::InternalError(
        absl::StrCat(what, ": filter \"", filter, "\": ", pcap_geterr(pcap_)));
  }
  if (tap_.file.empty()) {
    if (pcap_setnonblock(pcap_, 1, err) != 0) {
      return absl::InternalError(absl::StrCat(what, ": non-blocking: ", err));
    }
    fd_ = pcap_get_selectable_fd(pcap_);
    if (fd_ < 0) return absl::InternalError(absl::StrCat(what, ": no selectable descriptor"));
    int version = -1;
    socklen_t len = sizeof version;
    if (::getsockopt(fd_, SOL_PACKET, PACKET_VERSION, &version, &len) == 0) {
      ring_version_ = version;
    }
    struct stat st;
    if (::fstat(fd_, &st) == 0) ring_bytes_ = MappedBytes(st.st_ino);
    // On loopback every packet passes twice, leaving and arriving, and libpcap throws the
    // leaving copy away after the kernel has cloned it, run the filter on it and copied it
    // into the ring. PACKET_IGNORE_OUTGOING stops the kernel handing it over at all: less
    // work in the sending process (the Redis being watched, for its replies), nothing lost.
    // Not elsewhere: on a real interface the server's replies (and its FIN) leave.
    if (IsLoopback(tap_.interface)) {
      const int one = 1;
      int got = 0;
      socklen_t got_len = sizeof got;
      ignores_outgoing_ =
          ::setsockopt(fd_, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) == 0 &&
          ::getsockopt(fd_, SOL_PACKET, PACKET_IGNORE_OUTGOING, &got, &got_len) == 0 && got == 1;
    }
  }
  description_ = {tap_.file.empty()
                      ? std::pair<std::string, std::string>{"interface", tap_.interface}
                      : std::pair<std::string, std::string>{"file", tap_.file},
                  {"filter", filter},
                  {"protocol", std::string(config::TapProtocolName(tap_.protocol))},
                  {"weight", std::string(config::TapWeightName(tap_.weight))},
                  {"link_type", absl::StrCat(link_type_)}};
  if (tap_.file.empty()) {
    description_.push_back({"ring", std::string(RingName(ring_version_))});
    description_.push_back({"ring_bytes", absl::StrCat(ring_bytes_)});
    description_.push_back({"snaplen", absl::StrCat(tap_.snaplen)});
    if (ignores_outgoing_) description_.push_back({"outgoing", "ignored"});
  }
  description_.push_back({"max_flows", absl::StrCat(tap_.max_flows)});
  description_.push_back({"memory_bound", config::FormatByteSize(tap_.MemoryBoundBytes())});
  return absl::OkStatus();
}

void TapSource::Run() {
  // A file read to its end keeps its counts and goes on publishing them when asked.
  while (!stopping()) Step(absl::InfiniteDuration());
}

void TapSource::Wake() {
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);  // fails only when the counter is full: awake
}

void TapSource::OnFrame(unsigned char* user, const pcap_pkthdr* header,
                        const unsigned char* bytes) {
  auto* self = reinterpret_cast<TapSource*>(user);
  ++self->tap_counters_.packets;
  self->tap_counters_.captured_bytes += header->caplen;
  if (!self->tap_.file.empty()) {
    self->capture_time_ = absl::TimeFromTimeval(header->ts);
  }
  const uint64_t before = self->pipeline_.events();
  self->pipeline_.Frame(self->link_type_,
                        std::string_view(reinterpret_cast<const char*>(bytes), header->caplen),
                        self->capture_time_);
  if (self->pipeline_.events() != before) self->counters_.last_event = self->batch_time_;
}

bool TapSource::Dispatch(int rounds) {
  for (int i = 0; i < rounds; ++i) {
    batch_time_ = clock_.Now();  // one clock read per batch, not per frame
    tracker_.Advance(batch_time_);
    AdvanceSlots(batch_time_);
    if (tap_.file.empty()) capture_time_ = batch_time_;
    const int n =
        pcap_dispatch(pcap_, kBatch, &TapSource::OnFrame, reinterpret_cast<unsigned char*>(this));
    if (n < 0) {  // an error (or pcap_breakloop): a live capture tries again next wake-up
      ++tap_counters_.capture_errors;
      if (!tap_.file.empty()) return false;
      return true;
    }
    if (n == 0 && !tap_.file.empty()) return false;  // end of file
    if (n < kBatch) return true;
  }
  return true;
}

bool TapSource::Step(absl::Duration wait) {
  const bool live = tap_.file.empty();
  const bool reading_file = !live && !file_done_;
  // Live: the waker and the capture; a file: the waker only, and no wait while it is read.
  struct pollfd p[2] = {{wake_fd_, POLLIN, 0}, {fd_, POLLIN, 0}};
  const int timeout =
      reading_file || wait <= absl::ZeroDuration() ? 0
      : wait == absl::InfiniteDuration()
          ? -1
          : static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(wait), INT32_MAX));
  if (::poll(p, live ? 2 : 1, timeout) > 0) {
    if (p[0].revents != 0) {
      uint64_t wakes;
      (void)!::read(wake_fd_, &wakes, sizeof wakes);
    }
    if (live && p[1].revents != 0) Dispatch(kLiveRounds);
  }
  if (reading_file && !Dispatch(kFileRounds)) {
    file_done_ = true;
    tap_counters_.file_done = 1;
    Publish();  // the whole file, at once
  }
  PublishIfAsked();
  return !file_done_;
}

void TapSource::EnableSlots(const source::SlotCounts& prototype) {
  PublishingSource::EnableSlots(prototype);
  pipeline_.SetSlotCounts(slot_counts());
}

void TapSource::Publish() {
  const absl::Time now = clock_.Now();
  if (tap_.file.empty()) Dispatch(kLiveRounds);  // what the ring holds is in the report
  const absl::Time flows_now = tap_.file.empty() ? now : capture_time_;
  pipeline_.ExpireIdle(flows_now);
  if (tap_.file.empty()) {
    struct pcap_stat ps;
    if (pcap_stats(pcap_, &ps) == 0) {
      tap_counters_.kernel_drops = ps.ps_drop;
      tap_counters_.interface_drops = ps.ps_ifdrop;
    }
  }
  counters_.events = pipeline_.events();
  counters_.client_hosts = pipeline_.client_hosts().count();
  counters_.client_hosts_capped = pipeline_.client_hosts().capped(flows_now);
  pipeline_.Fill(tap_counters_);
  tap_counters_.Fill(counters_.own);
  PublishReport(now, tracker_, counters_);
}

absl::StatusOr<std::unique_ptr<source::EventSource>> NewTapSource(
    const config::DaemonOptions& options, const clock::Clock& clock) {
  absl::StatusOr<std::unique_ptr<TapSource>> s =
      TapSource::Create(options.tap, source::TrackerOptions(options.track), clock);
  if (!s.ok()) return s.status();
  return std::unique_ptr<source::EventSource>(*std::move(s));
}

absl::Status CheckCapture(const config::DaemonOptions& options, const clock::Clock& clock) {
  // The source is made and destroyed without Start(): opened, never read.
  return NewTapSource(options, clock).status();
}

}  // namespace hotkey::tap
