// The garbage-collection counters every HotSpot JVM publishes in its hsperfdata file (what
// `jstat -gc` prints), and the live set derived from them without pausing the JVM.
//
// Sources: OpenJDK src/hotspot/share/gc/shared/collectorCounters.cpp (sun.gc.collector.N.*),
// generationCounters.cpp and hSpaceCounters.cpp (sun.gc.generation.N.*, .space.M.*),
// runtime/safepoint.cpp and services/runtimeService.cpp (sun.rt.safepointTime, sun.rt.safepoints),
// gc/g1/g1MonitoringSupport.cpp, gc/parallel and gc/serial counters, gc/z/zServiceability.cpp,
// gc/shenandoah/shenandoahMonitoringSupport.cpp (which collectors and generations each publishes).
// What each collector gives and what is estimated: docs/collection-cost.md.
//
// Reading the file maps nothing into the JVM and takes no lock of the JVM's: it costs the JVM
// nothing. The JVM updates the counters while they are read; every value is one aligned 8-byte
// word, so a reading is a mix of values from just before and just after an update, never a torn
// value.
#ifndef HEAPWATCH_COLLECTORS_GC_COUNTERS_H_
#define HEAPWATCH_COLLECTORS_GC_COUNTERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "collectors/perf_data.h"
#include "common/gc.h"
#include "common/status.h"

namespace heapwatch::collectors {

// One collector's counters (sun.gc.collector.N).
struct GcCollectorCounters {
  std::string name;          // e.g. "G1 young collection pauses", "Parallel full collection pauses"
  int64_t invocations = 0;   // collections (pauses) so far
  int64_t time_ticks = 0;    // accumulated pause time, in ticks of GcCounters::hrt_frequency
};

// What kind of collection a collector's counter counts, from its name and the GC policy.
enum class CollectorRole {
  kYoung,             // young / scavenge pauses: reclaim the young generation only
  kFull,              // stop-the-world full collections: reclaim the whole heap
  kG1ConcurrentCycle, // G1's remark and cleanup pauses: a marking cycle ended, mixed GCs follow
  kConcurrentCycle,   // a ZGC or Shenandoah cycle (their pauses): reclaims the whole heap
  kOther,
};

// One reading of the GC counters. Sizes in bytes.
struct GcCounters {
  std::string policy;      // sun.gc.policy.name: "GarbageFirst", "ParScav:MSC", "Copy:MSC", ...
  std::string last_cause;  // sun.gc.lastCause, e.g. "G1 Evacuation Pause", "Heap Inspection Initiated GC"
  int64_t hrt_frequency = 0;         // sun.os.hrt.frequency: ticks per second (> 0)
  int64_t safepoint_time_ticks = 0;  // sun.rt.safepointTime: time at safepoints (ticks)
  int64_t safepoint_sync_ticks = 0;  // sun.rt.safepointSyncTime: time reaching safepoints (ticks)
  int64_t safepoints = 0;            // sun.rt.safepoints: number of safepoints
  std::vector<GcCollectorCounters> collectors;  // by index N
  std::vector<CollectorRole> roles;             // same size as collectors
  uint64_t heap_used = 0;      // every space of every generation
  uint64_t heap_capacity = 0;  // committed
  uint64_t heap_max = 0;       // -Xmx (G1 publishes it for both generations; counted once)
  uint64_t eden_used = 0;      // young generation space "eden" (0 for single-generation collectors)
  // What a collection leaves behind: the heap without eden. For generational collectors this is
  // the old generation plus the survivor spaces, which the JVM updates only at the end of a
  // collection; for ZGC and Shenandoah the whole heap.
  uint64_t post_gc_used = 0;

  // Stop-the-world time so far: reaching safepoints plus at safepoints (sun.rt.safepointSyncTime +
  // sun.rt.safepointTime), what -Xlog:safepoint prints as each safepoint's "Total".
  absl::Duration SafepointTime() const;
  // Sum of invocations of the collectors with `role`.
  int64_t Invocations(CollectorRole role) const;
};

// Reads the GC counters out of a parsed hsperfdata region. Errors: FailedPrecondition when the
// region has no GC counters (a JVM started with -XX:-UsePerfData publishes no file at all; one
// whose counters are missing or inconsistent, e.g. hrt frequency <= 0, gets this error naming the
// counter). Complexity: O(counters). Thread-safety: pure function.
StatusOr<GcCounters> ReadGcCounters(const PerfData& perf);

// Reads the hsperfdata file at `path` (collectors/local_jvm.h: LocalJvm::perfdata_path) and its GC
// counters. Errors: those of PerfData::ReadFile and ReadGcCounters. Cost: one read of the file
// (32 KiB by default). Thread-safety: thread-safe.
StatusOr<GcCounters> ReadGcCountersFile(const std::string& path);

// The stop-the-world time between two readings of one JVM (GcCounters::SafepointTime), zero when
// the counters went backwards (another JVM with the same file) or the frequency differs.
absl::Duration SafepointTimeBetween(const GcCounters& before, const GcCounters& after);

// The role of a collector named `name` under `policy` (see CollectorRole).
CollectorRole ClassifyCollector(std::string_view policy, std::string_view name);

// True when `cause` names a collection that a diagnostic command forced ("Heap Inspection
// Initiated GC", "Heap Dump Initiated GC"): a histogram or dump, not the application.
bool IsForcedByDiagnostics(std::string_view cause);

// Derives the live-set series from successive readings of one JVM's counters (docs/collection-cost.md):
//  - full collections (G1, Parallel, Serial): post_gc_used after it, source kFullGc;
//  - G1: after a concurrent cycle, the mixed phase: the lowest post_gc_used over the young/mixed
//    collections that follow, emitted when the old generation stops shrinking (or after 8 of
//    them, G1MixedGCCountTarget's default), source kConcurrentCycle;
//  - ZGC and Shenandoah: post_gc_used (the whole heap) at the first reading after a cycle, source
//    kConcurrentCycle;
//  - otherwise, after a young collection, post_gc_used as an upper bound when no point (of any
//    source) was emitted for `upper_bound_interval`, source kYoungUpperBound.
// Readings further apart than one collection of each kind merge several collections into one
// step; the tracker then reports what the counters show at its end.
//
// Thread-safety: thread-compatible (the daemon guards each agent's tracker with a mutex).
class LiveSetTracker {
 public:
  explicit LiveSetTracker(absl::Duration upper_bound_interval = absl::Minutes(1))
      : upper_bound_interval_(upper_bound_interval) {}

  // Feeds one reading taken at `time`. `forced` is true when the reading follows an operation of
  // heapwatch's own (a live histogram, a dump): a full collection it shows is still a live-set
  // point, but it is not the application's own reclaim (see natural_old_gc()). Returns the point
  // this reading completes, if any. The first reading only sets the baseline (unless it shows a
  // full collection that heapwatch forced). O(collectors).
  std::optional<LiveSetPoint> Observe(absl::Time time, const GcCounters& counters, bool forced);

  // Whether the last Observe() saw the JVM reclaim its old generation by itself (a full
  // collection not forced by a diagnostic command, the end of a G1 mixed phase, a ZGC or
  // Shenandoah cycle): the moment a `-all` histogram holds the least garbage.
  bool natural_old_gc() const { return natural_old_gc_; }
  // The newest point emitted, if any.
  const std::optional<LiveSetPoint>& last_point() const { return last_point_; }
  // The newest reading, if any.
  const std::optional<GcCounters>& last_reading() const { return last_; }

 private:
  std::optional<LiveSetPoint> Emit(absl::Time time, const GcCounters& c, LiveSetSource source,
                                   uint64_t live_bytes);

  absl::Duration upper_bound_interval_;
  std::optional<GcCounters> last_;
  std::optional<LiveSetPoint> last_point_;
  bool natural_old_gc_ = false;
  // G1 mixed phase: after a concurrent cycle until the old generation stops shrinking.
  bool in_mixed_phase_ = false;
  int mixed_collections_ = 0;
  uint64_t mixed_min_ = 0;
  uint64_t mixed_prev_post_ = 0;
};

}  // namespace heapwatch::collectors

#endif  // HEAPWATCH_COLLECTORS_GC_COUNTERS_H_
