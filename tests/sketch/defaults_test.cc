// The tracker's defaults are the daemon's: config::TrackOptions (the --track.* and
// --key.max-bytes flags) and sketch::HeavyHittersOptions start from the same values, so a
// tracker made with default options behaves as the daemon's does.

#include <catch2/catch.hpp>

#include "hotkey/config/options.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace hotkey::sketch {
namespace {

TEST_CASE("HeavyHittersOptions: the defaults are the daemon's TrackOptions defaults", "[sketch]") {
  const HeavyHittersOptions sketch;
  const config::TrackOptions track;
  CHECK(sketch.candidates == track.candidates);
  CHECK(sketch.sketch_bytes == track.sketch_bytes);
  CHECK(sketch.max_key_bytes == track.stored_key_bytes);
  CHECK(sketch.half_life == track.half_life);
  CHECK(sketch.Validate().ok());
  CHECK(track.Validate().ok());
}

}  // namespace
}  // namespace hotkey::sketch
