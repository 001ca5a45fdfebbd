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
// Version 2: f64 counters (version 1 had f32 ones, which saturate). Version 3: u32 cells of
// one f64 scale.
constexpr uint16_t kVersion = 3;

// Whether x is a power of two in [lo, hi].
bool PowerOfTwoIn(double x, double lo, double hi) {
  int e;
  return x >= lo && x <= hi && std::frexp(x, &e) == 0.5;
}
}  // namespace

CountMinSketch::CountMinSketch(uint32_t width, uint32_t depth)
    : width_(width),
      depth_(depth),
      mask_(width - 1),
      layout_(std::has_single_bit(width) ? depth : kRangeLayout + depth),
      counters_(static_cast<size_t>(width) * depth, 0) {}

void CountMinSketch::SetScale(double scale) {
  assert(PowerOfTwoIn(scale, kMinScale, kMaxScale));
  scale_ = scale;
  inv_scale_ = 1 / scale;
}

void CountMinSketch::MakeRoom(double value) {
  const Counter largest = *std::max_element(counters_.begin(), counters_.end());
  const double scale = internal::ScaleFor(std::max(value, largest * scale_), scale_);
  if (scale == scale_) return;
  // Every cell divided by 2^shift, rounding up: a positive cell stays positive.
  const int shift = std::ilogb(scale) - std::ilogb(scale_);
  for (Counter& c : counters_) {
    if (shift >= 32) {
      c = c != 0;
    } else {
      c = (c >> shift) + ((c & ((Counter{1} << shift) - 1)) != 0);
    }
  }
  SetScale(scale);
  ++halvings_;
}

absl::StatusOr<CountMinSketch> CountMinSketch::Create(uint32_t width, uint32_t depth) {
  if (width == 0 || width > kMaxWidth) {
    return absl::InvalidArgumentError(
        absl::StrCat("count-min width must be in [1, ", kMaxWidth, "], got ", width));
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
  return Create(static_cast<uint32_t>(std::min<size_t>(per_row, kMaxWidth)), depth);
}

double CountMinSketch::Update(uint64_t hash, double weight) {
  assert(weight > 0 && std::isfinite(weight));
  return UpdateInline(hash, std::min(weight, kMaxWeight));
}

double CountMinSketch::UpdateAnyDepth(uint64_t hash, double weight) {
  Counter* c[kMaxDepth];
  Counter min = kCellMax;
  for (uint32_t r = 0; r < depth_; ++r) {
    c[r] = &counters_[Column(hash, r)];
    min = std::min(min, *c[r]);
  }
  if (!(weight * inv_scale_ < static_cast<double>(kCellMax - min))) [[unlikely]] {
    return UpdateSaturating(hash, weight, /*exact_units=*/true);
  }
  const Counter target = min + UnitsUp(weight, inv_scale_);
  for (uint32_t r = 0; r < depth_; ++r) *c[r] = std::max(*c[r], target);
  return target * scale_;
}

double CountMinSketch::UpdateSaturating(uint64_t hash, double weight, bool exact_units) {
  // Room for the key's new estimate (rounded up) and every cell, then the add. Past
  // kCellMax units of kMaxScale (about 2^1022), which no stream of finite weights that a
  // double total could count reaches, a cell stops at kCellMax.
  MakeRoom(internal::AddUp(Estimate(hash), weight));
  Counter min = kCellMax;
  for (uint32_t r = 0; r < depth_; ++r) min = std::min(min, counters_[Column(hash, r)]);
  const double x = weight * inv_scale_;
  Counter target = kCellMax;
  if (x + 1 < static_cast<double>(kCellMax - min)) {
    target = min + (exact_units ? UnitsUp(weight, inv_scale_) : UnitsAbove(x));
  }
  for (uint32_t r = 0; r < depth_; ++r) {
    Counter& c = counters_[Column(hash, r)];
    c = std::max(c, target);
  }
  return target * scale_;
}

void CountMinSketch::RaiseTo(uint64_t hash, double value) {
  assert(value >= 0 && std::isfinite(value));
  if (!(value * inv_scale_ < kCellMax)) MakeRoom(value);
  const Counter units = value * inv_scale_ < kCellMax ? UnitsUp(value, inv_scale_) : kCellMax;
  for (uint32_t r = 0; r < depth_; ++r) {
    Counter& c = counters_[Column(hash, r)];
    c = std::max(c, units);
  }
}

double CountMinSketch::Estimate(uint64_t hash) const {
  Counter est = kCellMax;
  for (uint32_t r = 0; r < depth_; ++r) est = std::min(est, counters_[Column(hash, r)]);
  return est * scale_;
}

absl::Status CountMinSketch::Merge(const CountMinSketch& other, double factor) {
  if (other.width_ != width_ || other.depth_ != depth_) {
    return absl::InvalidArgumentError(absl::StrCat("cannot merge a ", other.width_, "x",
                                                   other.depth_, " count-min into a ", width_, "x",
                                                   depth_, " one"));
  }
  assert(factor >= 0 && std::isfinite(factor));
  Revalue(
      [&](size_t i) { return internal::AddUp(value(i), internal::MulUp(factor, other.value(i))); });
  return absl::OkStatus();
}

void CountMinSketch::Scale(double factor) {
  // 0 is allowed: a rescale after thousands of half-lives underflows to it (= Clear()).
  assert(factor >= 0 && std::isfinite(factor));
  Revalue([&](size_t i) { return internal::MulUp(value(i), factor); });
}

void CountMinSketch::Clear() {
  std::fill(counters_.begin(), counters_.end(), 0);
  SetScale(kInitialScale);
}

double CountMinSketch::epsilon() const { return std::numbers::e / width_; }
double CountMinSketch::delta() const { return std::exp(-static_cast<double>(depth_)); }

std::string CountMinSketch::Serialize() const {
  internal::ByteWriter w(kMagic, kVersion);
  w.U32(width_);
  w.U32(depth_);
  w.F64(scale_);
  for (Counter c : counters_) w.U32(c);
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
  double scale;
  if (!r.F64(&scale)) return absl::DataLossError("count-min: short header");
  // A power of two in range, so that every cell's value is exact and finite, and
  // Serialize(Deserialize(b)) == b.
  if (!PowerOfTwoIn(scale, kMinScale, kMaxScale)) {
    return absl::DataLossError("count-min: the scale is not a power of two in range");
  }
  if (r.remaining() != uint64_t{width} * depth * sizeof(Counter)) {
    return absl::DataLossError("count-min: cell block has the wrong length");
  }
  absl::StatusOr<CountMinSketch> cms = Create(width, depth);
  if (!cms.ok()) return cms.status();
  cms->SetScale(scale);
  for (Counter& c : cms->counters_) r.U32(&c);
  return cms;
}

}  // namespace hotkey::sketch
