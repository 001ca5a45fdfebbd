#include "byte_io.h"

#include <bit>

#include "absl/strings/str_cat.h"
#include "hotkey/sketch/hash.h"

namespace hotkey::sketch::internal {

static_assert(std::endian::native == std::endian::little,
              "the serialised forms are little-endian; add byte swaps for this target");

namespace {
constexpr size_t kMagicBytes = 4;
constexpr size_t kChecksumBytes = sizeof(uint64_t);
// The checksum is the key hash under a fixed seed, so it never changes with the keys' seed.
constexpr uint64_t kChecksumSeed = 0x636865636b73756dULL;  // "checksum"
}  // namespace

ByteWriter::ByteWriter(std::string_view magic, uint16_t version) {
  out_.append(magic.substr(0, kMagicBytes));
  U16(version);
}

std::string ByteWriter::Finish() && {
  U64(HashKey(out_, kChecksumSeed));
  return std::move(out_);
}

bool ByteReader::Bytes(size_t n, std::string_view* v) {
  if (rest_.size() < n) return false;
  *v = rest_.substr(0, n);
  rest_.remove_prefix(n);
  return true;
}

absl::Status ByteReader::Open(std::string_view buf, std::string_view magic, uint16_t oldest,
                              uint16_t newest, ByteReader* reader, uint16_t* version) {
  if (buf.size() < kMagicBytes + sizeof(uint16_t) + kChecksumBytes) {
    return absl::InvalidArgumentError(absl::StrCat("buffer too short: ", buf.size(), " bytes"));
  }
  if (buf.substr(0, kMagicBytes) != magic) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a ", std::string(magic), " buffer (bad magic)"));
  }
  const std::string_view body = buf.substr(0, buf.size() - kChecksumBytes);
  uint64_t stored;
  std::memcpy(&stored, buf.data() + body.size(), kChecksumBytes);
  if (stored != HashKey(body, kChecksumSeed)) {
    return absl::DataLossError("checksum mismatch: truncated or corrupt buffer");
  }
  reader->rest_ = body.substr(kMagicBytes);
  // The length check above guarantees the two version bytes; the initialiser and the
  // check keep GCC's -Wmaybe-uninitialized (an error in the sanitizer build) quiet.
  uint16_t got = 0;
  if (!reader->U16(&got) || got < oldest || got > newest) {
    return absl::FailedPreconditionError(absl::StrCat(
        "unsupported ", std::string(magic), " format version ", got, " (this build reads ",
        oldest == newest ? absl::StrCat(newest) : absl::StrCat(oldest, " to ", newest), ")"));
  }
  *version = got;
  return absl::OkStatus();
}

}  // namespace hotkey::sketch::internal
