// Little-endian byte writer and bounds-checked reader for the sketches' serialised forms.
//
// Every serialised sketch is: 4-byte magic, u16 format version, payload, u64 XXH3 checksum
// of everything before it. The reader never reads past its buffer: a short or corrupt input
// turns into an error status, never undefined behaviour. Internal to hotkey::sketch.

#ifndef HOTKEY_SKETCH_BYTE_IO_H_
#define HOTKEY_SKETCH_BYTE_IO_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace hotkey::sketch::internal {

class ByteWriter {
 public:
  ByteWriter(std::string_view magic, uint16_t version);
  void U8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U16(uint16_t v) { Raw(&v, sizeof v); }
  void U32(uint32_t v) { Raw(&v, sizeof v); }
  void U64(uint64_t v) { Raw(&v, sizeof v); }
  void I64(int64_t v) { Raw(&v, sizeof v); }
  void F32(float v) { Raw(&v, sizeof v); }
  void F64(double v) { Raw(&v, sizeof v); }
  void Bytes(std::string_view b) { out_.append(b); }
  // Appends the checksum and returns the finished buffer.
  std::string Finish() &&;

 private:
  // The supported targets are little-endian (static_assert in byte_io.cc), so a copy of
  // the object representation is the wire order.
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

class ByteReader {
 public:
  // Checks length, magic, checksum and version (which must be `version`).
  // On success the reader is positioned at the payload.
  static absl::Status Open(std::string_view buf, std::string_view magic, uint16_t version,
                           ByteReader* reader) {
    uint16_t got;
    return Open(buf, magic, version, version, reader, &got);
  }
  // The same for any version in [oldest, newest], stored in *version.
  static absl::Status Open(std::string_view buf, std::string_view magic, uint16_t oldest,
                           uint16_t newest, ByteReader* reader, uint16_t* version);

  bool U8(uint8_t* v) { return Raw(v, sizeof *v); }
  bool U16(uint16_t* v) { return Raw(v, sizeof *v); }
  bool U32(uint32_t* v) { return Raw(v, sizeof *v); }
  bool U64(uint64_t* v) { return Raw(v, sizeof *v); }
  bool I64(int64_t* v) { return Raw(v, sizeof *v); }
  bool F32(float* v) { return Raw(v, sizeof *v); }
  bool F64(double* v) { return Raw(v, sizeof *v); }
  // A view into the buffer: valid only while the buffer lives.
  bool Bytes(size_t n, std::string_view* v);
  size_t remaining() const { return rest_.size(); }

 private:
  bool Raw(void* p, size_t n) {
    if (rest_.size() < n) return false;
    std::memcpy(p, rest_.data(), n);
    rest_.remove_prefix(n);
    return true;
  }
  std::string_view rest_;
};

}  // namespace hotkey::sketch::internal

#endif  // HOTKEY_SKETCH_BYTE_IO_H_
