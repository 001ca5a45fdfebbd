// The one writer and reader of the state file's bytes (storage.h): the file's frame and its
// sections (history.h's, episodes.h's) are written and read through it alone, so that no
// two of them can disagree on width, order or bounds. The tracker's section is the sketch's
// own serialised form (versioned and checksummed by hotkey::sketch), carried as bytes.
//
// Values are the object representation of fixed-width integers and IEEE doubles, which is
// little-endian on every target hotkeyd builds for (static_assert below). The reader never
// reads past its buffer: a short input clears ok() and reads as zeros from then on, so a
// caller checks ok() once after a group of reads. Internal to hotkey::aggregate.

#ifndef HOTKEY_AGGREGATE_BYTE_CODEC_H_
#define HOTKEY_AGGREGATE_BYTE_CODEC_H_

#include <bit>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace hotkey::aggregate::internal {

static_assert(std::endian::native == std::endian::little,
              "the state file is little-endian, written as the host's representation");

// Appends to a string it does not own.
class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}
  template <typename T>
  void Put(T v) {
    static_assert(std::is_arithmetic_v<T>);
    out_->append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void Bytes(std::string_view b) { out_->append(b); }

 private:
  std::string* const out_;
};

// Reads from a view of bytes it does not own.
class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}
  template <typename T>
  T Get() {
    static_assert(std::is_arithmetic_v<T>);
    T v{};
    if (data_.size() < sizeof v) {
      ok_ = false;
      data_ = {};
      return v;
    }
    std::memcpy(&v, data_.data(), sizeof v);
    data_.remove_prefix(sizeof v);
    return v;
  }
  // A view into the buffer: valid only while the buffer lives.
  std::string_view Bytes(size_t n) {
    if (data_.size() < n) {
      ok_ = false;
      data_ = {};
      return {};
    }
    std::string_view s = data_.substr(0, n);
    data_.remove_prefix(n);
    return s;
  }
  bool ok() const { return ok_; }
  size_t remaining() const { return data_.size(); }

 private:
  std::string_view data_;
  bool ok_ = true;
};

}  // namespace hotkey::aggregate::internal

#endif  // HOTKEY_AGGREGATE_BYTE_CODEC_H_
