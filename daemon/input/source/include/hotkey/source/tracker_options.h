// The tracker every source builds from --track.* flags.

#ifndef HOTKEY_SOURCE_TRACKER_OPTIONS_H_
#define HOTKEY_SOURCE_TRACKER_OPTIONS_H_

#include "hotkey/config/options.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace hotkey::source {

inline sketch::HeavyHittersOptions TrackerOptions(const config::TrackOptions& t) {
  sketch::HeavyHittersOptions o;
  o.candidates = t.candidates;
  o.sketch_bytes = t.sketch_bytes;
  o.max_key_bytes = t.stored_key_bytes;
  o.half_life = t.half_life;
  return o;
}

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_TRACKER_OPTIONS_H_
