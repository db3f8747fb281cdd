// What heapwatch knows about a JVM's garbage collections and what watching it costs: the live-set
// series (tier 0, read from the JVM's hsperfdata counters without pausing it) and the mode and
// pause of each class histogram (tier 1). Produced by collectors/gc_counters.h, stored by
// storage/snapshot_store.h, exported by the daemon. Design and measured costs:
// docs/collection-cost.md.
#ifndef HEAPWATCH_COMMON_GC_H_
#define HEAPWATCH_COMMON_GC_H_

#include <cstdint>
#include <string_view>

#include "absl/time/time.h"

namespace heapwatch {

// How a class histogram was taken. Stored on disk as a u8: DO NOT CHANGE the values.
enum class HistogramMode : uint8_t {
  kUnknown = 0,     // not recorded (snapshots stored before heapwatch recorded modes)
  kLive = 1,        // `GC.class_histogram`: a full GC first, live objects only
  kAll = 2,         // `GC.class_histogram -all`: no GC, every object including garbage
  kAllAfterGc = 3,  // `-all` taken right after the JVM's own old-generation collection
};
// "unknown", "live", "all", "all_after_gc".
inline std::string_view HistogramModeName(HistogramMode mode) {
  switch (mode) {
    case HistogramMode::kLive: return "live";
    case HistogramMode::kAll: return "all";
    case HistogramMode::kAllAfterGc: return "all_after_gc";
    case HistogramMode::kUnknown: break;
  }
  return "unknown";
}

// The cost to the JVM of one collection (histogram or extended dump).
struct CollectionCost {
  HistogramMode mode = HistogramMode::kUnknown;
  // Stop-the-world time the JVM spent reaching and at safepoints during the operation: the change
  // of its own `sun.rt.safepointSyncTime` + `sun.rt.safepointTime` counters across it (so it
  // includes the forced full GC of a live histogram, and any safepoint the application itself
  // caused in the same interval).
  // absl::ZeroDuration() when unknown.
  absl::Duration pause = absl::ZeroDuration();
  friend bool operator==(const CollectionCost&, const CollectionCost&) = default;
};

// Where a live-set point comes from. Stored on disk as a u8: DO NOT CHANGE the values.
enum class LiveSetSource : uint8_t {
  // Heap occupancy right after a stop-the-world full collection (the JVM's own, or the one a live
  // histogram or heap dump forced): exact up to the survivors' rounding.
  kFullGc = 1,
  // End of an old-generation reclaim by a concurrent collector: G1's mixed collections after a
  // concurrent cycle (the lowest post-collection occupancy of that phase), ZGC and Shenandoah
  // cycles (occupancy at the end of the cycle, including what was allocated during it). An
  // estimate, never below the true live set by more than the garbage the cycle missed.
  kConcurrentCycle = 2,
  // Occupancy after a young collection only: an upper bound of the live set (the old generation
  // still holds garbage). Stored at most once per minute, so the series exists for JVMs that
  // rarely reclaim their old generation.
  kYoungUpperBound = 3,
};
// "full_gc", "concurrent_cycle", "young_upper_bound".
inline std::string_view LiveSetSourceName(LiveSetSource source) {
  switch (source) {
    case LiveSetSource::kFullGc: return "full_gc";
    case LiveSetSource::kConcurrentCycle: return "concurrent_cycle";
    case LiveSetSource::kYoungUpperBound: return "young_upper_bound";
  }
  return "unknown";
}

// One point of an agent's live-set series.
struct LiveSetPoint {
  absl::Time time;  // when the daemon read the counters (after the collection ended)
  LiveSetSource source = LiveSetSource::kFullGc;
  uint64_t live_bytes = 0;      // heap occupancy after the collection, bytes
  uint64_t capacity_bytes = 0;  // committed heap at that time, bytes
  uint64_t max_bytes = 0;       // maximum heap (-Xmx), bytes
  friend bool operator==(const LiveSetPoint&, const LiveSetPoint&) = default;
};

}  // namespace heapwatch

#endif  // HEAPWATCH_COMMON_GC_H_
