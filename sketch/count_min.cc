#include "hotkey/sketch/count_min.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "byte_io.h"
#include "count_min_inline.h"
#include "rounding.h"

namespace hotkey::sketch {

namespace {
constexpr char kMagic[] = "HKCM";
// Version 2: f64 counters (version 1 had f32 ones, which saturate).
constexpr uint16_t kVersion = 2;
}  // namespace

CountMinSketch::CountMinSketch(uint32_t width, uint32_t depth)
    : width_(width),
      depth_(depth),
      mask_(width - 1),
      counters_(static_cast<size_t>(width) * depth, 0.0) {}

absl::StatusOr<CountMinSketch> CountMinSketch::Create(uint32_t width, uint32_t depth) {
  if (width == 0 || !std::has_single_bit(width) || width > kMaxWidth) {
    return absl::InvalidArgumentError(absl::StrCat("count-min width must be a power of two in [1, ",
                                                   kMaxWidth, "], got ", width));
  }
  if (depth == 0 || depth > kMaxDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("count-min depth must be in [1, ", kMaxDepth, "], got ", depth));
  }
  return CountMinSketch(width, depth);
}

absl::StatusOr<CountMinSketch> CountMinSketch::FromError(double epsilon, double delta) {
  if (!(epsilon > 0 && epsilon < 1) || !(delta > 0 && delta < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "count-min epsilon and delta must be in (0, 1), got ", epsilon, " and ", delta));
  }
  // width >= e / epsilon and depth >= ln(1 / delta) give the bounds in the header.
  const double min_width = std::ceil(std::numbers::e / epsilon);
  if (min_width > kMaxWidth) {
    return absl::InvalidArgumentError(absl::StrCat("epsilon ", epsilon, " is too small"));
  }
  const uint32_t width = std::bit_ceil(static_cast<uint32_t>(min_width));
  const double min_depth = std::ceil(std::log(1.0 / delta));
  if (min_depth > kMaxDepth) {
    // Clamping would return a sketch weaker than asked (delta() > delta).
    return absl::InvalidArgumentError(absl::StrCat("delta ", delta, " is too small (needs ",
                                                   min_depth, " rows, at most ", kMaxDepth, ")"));
  }
  return Create(width, static_cast<uint32_t>(std::max(min_depth, 1.0)));
}

absl::StatusOr<CountMinSketch> CountMinSketch::FromBytes(size_t bytes, uint32_t depth) {
  if (depth == 0 || depth > kMaxDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("count-min depth must be in [1, ", kMaxDepth, "], got ", depth));
  }
  const size_t per_row = bytes / depth / sizeof(Counter);
  if (per_row == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(bytes, " bytes cannot hold ", depth, " count-min rows"));
  }
  const size_t width = std::bit_floor(std::min<size_t>(per_row, kMaxWidth));
  return Create(static_cast<uint32_t>(width), depth);
}

double CountMinSketch::Update(uint64_t hash, double weight) {
  return UpdateInline<true>(hash, weight);
}

double CountMinSketch::UpdateNearest(uint64_t hash, double weight) {
  return UpdateInline<false>(hash, weight);
}

void CountMinSketch::RaiseTo(uint64_t hash, double value) { RaiseToInline(hash, value); }

double CountMinSketch::Estimate(uint64_t hash) const {
  Counter est = std::numeric_limits<Counter>::infinity();
  for (uint32_t r = 0; r < depth_; ++r) est = std::min(est, counters_[Column(hash, r)]);
  return est;
}

absl::Status CountMinSketch::Merge(const CountMinSketch& other, double factor) {
  if (other.width_ != width_ || other.depth_ != depth_) {
    return absl::InvalidArgumentError(absl::StrCat("cannot merge a ", other.width_, "x",
                                                   other.depth_, " count-min into a ", width_, "x",
                                                   depth_, " one"));
  }
  assert(factor >= 0 && std::isfinite(factor));
  for (size_t i = 0; i < counters_.size(); ++i) {
    counters_[i] = internal::AddUp(counters_[i], internal::MulUp(factor, other.counters_[i]));
  }
  return absl::OkStatus();
}

void CountMinSketch::Scale(double factor) {
  // 0 is allowed: a rescale after thousands of half-lives underflows to it (= Clear()).
  assert(factor >= 0 && factor <= 1);
  for (Counter& c : counters_) c = internal::MulUp(c, factor);
}

void CountMinSketch::Clear() { std::fill(counters_.begin(), counters_.end(), 0.0); }

double CountMinSketch::epsilon() const { return std::numbers::e / width_; }
double CountMinSketch::delta() const { return std::exp(-static_cast<double>(depth_)); }

std::string CountMinSketch::Serialize() const {
  internal::ByteWriter w(kMagic, kVersion);
  w.U32(width_);
  w.U32(depth_);
  for (Counter c : counters_) w.F64(c);
  return std::move(w).Finish();
}

absl::StatusOr<CountMinSketch> CountMinSketch::Deserialize(std::string_view bytes) {
  internal::ByteReader r;
  if (absl::Status s = internal::ByteReader::Open(bytes, kMagic, kVersion, &r); !s.ok()) {
    return s;
  }
  uint32_t width, depth;
  if (!r.U32(&width) || !r.U32(&depth)) return absl::DataLossError("count-min: short header");
  // Check the length before Create(): a hostile header must not make us allocate 8 GiB.
  if (r.remaining() != uint64_t{width} * depth * sizeof(Counter)) {
    return absl::DataLossError("count-min: counter block has the wrong length");
  }
  absl::StatusOr<CountMinSketch> cms = Create(width, depth);
  if (!cms.ok()) return cms.status();
  for (Counter& c : cms->counters_) {
    r.F64(&c);
    // -0 is refused too: the rounding helpers take +0 only, and one encoding per value
    // keeps Serialize(Deserialize(b)) == b.
    if (!(c >= 0) || std::signbit(c) || !std::isfinite(c)) {
      return absl::DataLossError("count-min: a counter is negative or not finite");
    }
  }
  return cms;
}

}  // namespace hotkey::sketch
