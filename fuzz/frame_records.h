// The input format the tap's fuzz targets share (fuzz_reassembly.cc, fuzz_tap.cc), after
// each target's own header bytes: frames, each a 2-byte big-endian length, one byte of
// clock advance (in 10 ms steps) and the frame's bytes; a record cut short ends the input.
// fuzz/pcap_to_reassembly_seed.py turns a capture into this form.

#ifndef HOTKEY_FUZZ_FRAME_RECORDS_H_
#define HOTKEY_FUZZ_FRAME_RECORDS_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "absl/time/time.h"
#include "hotkey/tcp/packet.h"

namespace hotkey::fuzz {

// The link types a header byte picks from (byte % size), in this order so that the seeds
// keep their meaning; the last one is a type the decoder does not support.
inline constexpr int kFuzzLinks[] = {tcp::kDltEn10Mb,    tcp::kDltLinuxSll, tcp::kDltLinuxSll2,
                                     tcp::kDltNull,      tcp::kDltLoop,     tcp::kDltRaw,
                                     tcp::kLinktypeRaw,  tcp::kDltIpv4,     tcp::kDltIpv6,
                                     /*unsupported=*/147};
inline int FuzzLink(uint8_t byte) { return kFuzzLinks[byte % std::size(kFuzzLinks)]; }
inline bool IsUnsupportedFuzzLink(int link) {
  return link == kFuzzLinks[std::size(kFuzzLinks) - 1];
}

// Reads the frame records of data[at, size), moving a clock that starts at `start`.
class FrameRecords {
 public:
  FrameRecords(const uint8_t* data, size_t size, size_t at, absl::Time start)
      : data_(data), size_(size), at_(at), now_(start) {}

  // The next whole frame and the clock after its advance; false at the end of the input.
  bool Next(std::string_view* frame, absl::Time* now) {
    if (at_ > size_ || size_ - at_ < 3) return false;
    const size_t len = size_t{data_[at_]} << 8 | data_[at_ + 1];
    now_ += absl::Milliseconds(10 * data_[at_ + 2]);
    at_ += 3;
    if (len > size_ - at_) return false;
    *frame = std::string_view(reinterpret_cast<const char*>(data_) + at_, len);
    *now = now_;
    at_ += len;
    return true;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_;
  absl::Time now_;
};

}  // namespace hotkey::fuzz

#endif  // HOTKEY_FUZZ_FRAME_RECORDS_H_
