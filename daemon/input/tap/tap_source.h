// TapSource: the shard's own traffic as events, with no client change: an source::EventSource
// (event_source.h) of kind "tap" that captures the server port's TCP traffic with libpcap,
// and turns it into key counts through TapPipeline (pipeline.h: decode, reassembly,
// request parsing, and reply sizes with --tap.weight=bytes).
//
// Capture (live, --tap.interface): pcap_create, the snap length, the ring size
// (--tap.buffer-bytes), a packet buffer timeout of kBlockTimeout, pcap_activate, then a
// BPF filter "tcp and (port P ...)" so the kernel copies nothing else. On Linux libpcap
// reads through the kernel's memory-mapped packet ring (PACKET_RX_RING), TPACKET_V3: the
// kernel packs packets densely into blocks and wakes the reader once per full block or
// per kBlockTimeout, so a packet is seen at most kBlockTimeout late (well inside a
// publish tick). Not immediate mode: there libpcap falls back to TPACKET_V2, a slot of
// the snap length (or MTU, 64 KiB on lo) per packet and a wake-up per packet; measured
// beside redis-benchmark -P 1 on lo (bench/tap_cost.sh), that ring (128 slots in 8 MiB)
// missed 37% of the commands and cost a core per 100k commands/s; this one missed none
// and cost 7% of a core. Describe() reports the version the socket got and the bytes
// mapped. On a loopback interface the kernel is told to skip the leaving copy of each
// packet (see ignores_outgoing()). Needs CAP_NET_RAW: without it Create fails with
// PermissionDenied and a message saying how to grant it.
//
// From a file (--tap.file): pcap_open_offline, the same filter and path, as fast as the
// thread can read; at the end the source keeps its counts and keeps publishing them.
// Needs no privilege: tests and benchmarks use it.
//
// The thread polls the capture's selectable descriptor and an eventfd (the waker: publish
// requests and Stop()), with no timeout, reads up to kBatch frames per pcap_dispatch, reads
// the (monotonic) clock once per batch, and when asked (RequestPublish, the daemon's tick)
// reads what the ring holds, expires idle flows, reads pcap_stats (kernel drops ps_drop,
// interface drops ps_ifdrop) and publishes a recycled report (report_buffer.h). The flows'
// clock is the capture's: the batch's clock read when live, the frames' timestamps from a
// file (so a file's idle expiry follows its own time).
//
// Shutdown: Stop() wakes the loop, which publishes a last report, and joins.
// Thread-safe: Start, Stop, RequestPublish, Latest and Describe from any thread; Step() is
// the thread's work, which tests call directly instead of Start().

#ifndef HOTKEY_TAP_TAP_SOURCE_H_
#define HOTKEY_TAP_TAP_SOURCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hotkey/clock/clock.h"
#include "hotkey/config/tap_options.h"
#include "hotkey/sketch/heavy_hitters.h"
#include "hotkey/source/publishing_source.h"
#include "hotkey/source/report.h"
#include "hotkey/source/report_buffer.h"
#include "pipeline.h"

struct pcap;
struct pcap_pkthdr;

namespace hotkey::tap {

class TapSource final : public source::PublishingSource {
 public:
  // Frames per pcap_dispatch call: bounds the work between two clock reads.
  static constexpr int kBatch = 256;
  // The ring's block timeout: how late a packet can be handed over at low rates.
  static constexpr absl::Duration kBlockTimeout = absl::Milliseconds(20);

  // Opens the capture (the interface or the file) and installs the filter; does not start
  // reading. `tap` must be validated and enabled. `clock` (monotonic) must outlive the
  // source.
  static absl::StatusOr<std::unique_ptr<TapSource>> Create(
      const config::TapOptions& tap, const sketch::HeavyHittersOptions& tracker,
      const clock::Clock& clock);
  ~TapSource() override;

  std::string_view kind() const override { return "tap"; }
  void EnableSlots(const source::SlotCounts& prototype) override;
  std::vector<std::pair<std::string, std::string>> Describe() const override {
    return description_;
  }

  // Waits up to `wait` (InfiniteDuration: until woken) for frames (live) or a wake-up,
  // reads what is there (a file: up to kFileRounds batches, without waiting), and publishes
  // if asked. Returns false once a file is read to its end. Not concurrently with a running
  // thread.
  bool Step(absl::Duration wait);

  // The thread's counts so far (pcap's as of the last publish); for tests, not
  // concurrently with a running thread.
  const source::SourceCounters& counters() const { return counters_; }
  const TapCounters& tap_counters() const { return tap_counters_; }
  const sketch::HeavyHitters& tracker() const { return tracker_; }
  // PACKET_VERSION of a live capture's socket (1 = TPACKET_V2, 2 = TPACKET_V3), and the
  // bytes of its mapped ring; -1 and 0 for a file or when unknown.
  int ring_version() const { return ring_version_; }
  uint64_t ring_bytes() const { return ring_bytes_; }
  // On a loopback interface, the kernel hands over only arriving packets (each packet on lo
  // also leaves, a copy libpcap would drop): PACKET_IGNORE_OUTGOING, read back once set.
  bool ignores_outgoing() const { return ignores_outgoing_; }

 private:
  TapSource(const config::TapOptions& tap, sketch::HeavyHitters tracker, const clock::Clock& clock);
  absl::Status Open();
  void Run() override;
  void Wake() override;
  void Publish() override;
  static void OnFrame(unsigned char* user, const pcap_pkthdr* header, const unsigned char* bytes);
  // Reads batches until none is full or `rounds` are done; false at a file's end.
  bool Dispatch(int rounds);

  const config::TapOptions tap_;
  const clock::Clock& clock_;
  pcap* pcap_ = nullptr;
  int fd_ = -1;       // selectable descriptor (live)
  int wake_fd_ = -1;  // eventfd: Wake() writes, the thread's poll reads
  int link_type_ = 0;
  int ring_version_ = -1;
  uint64_t ring_bytes_ = 0;
  bool ignores_outgoing_ = false;
  std::vector<std::pair<std::string, std::string>> description_;

  // Owned by the source thread (or the caller of Step()).
  sketch::HeavyHitters tracker_;
  TapPipeline pipeline_;
  source::SourceCounters counters_;
  TapCounters tap_counters_;
  bool file_done_ = false;
  absl::Time batch_time_;
  absl::Time capture_time_ = absl::InfinitePast();  // the flows' clock (see above)
};

}  // namespace hotkey::tap

#endif  // HOTKEY_TAP_TAP_SOURCE_H_
