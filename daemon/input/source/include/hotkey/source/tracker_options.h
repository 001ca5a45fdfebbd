// The tracker every source builds from --track.* flags: the tracker's own options, which
// config::TrackOptions embeds (track_options.h), so nothing is copied field by field.

#ifndef HOTKEY_SOURCE_TRACKER_OPTIONS_H_
#define HOTKEY_SOURCE_TRACKER_OPTIONS_H_

#include "hotkey/config/track_options.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace hotkey::source {

inline const sketch::HeavyHittersOptions& TrackerOptions(const config::TrackOptions& t) {
  return t;
}

}  // namespace hotkey::source

#endif  // HOTKEY_SOURCE_TRACKER_OPTIONS_H_
