// When to take a class histogram for its live-set point, not for its classes: the probe that lets
// the live-set trend see a leak within minutes of its start (docs/trend-detection.md, "How a leak
// is found").
//
// The exact live-set points (full collections, ends of concurrent cycles) come when the JVM
// reclaims its old generation. G1 starts its marking cycle only once the heap is 45 % full, so a
// leak that started with the JVM has no exact point before it has eaten almost half the heap; the
// trend detector then needs six more before it may call the growth significant. What the JVM shows
// at every young collection, for free, is an upper bound: the heap a young collection leaves (old
// generation and survivors), garbage included. It rises with a leak, and with healthy promotion of
// soon-dead objects alike. This class turns that cheap hint into exact points where they matter:
//   - probe: the upper bound has risen since the newest exact point, over at least min_readings
//     readings spanning min_rise_span, by at least max(min_rise_bytes, min_rise_fraction of the
//     maximum heap), and the back-off has passed: one histogram is asked for (a live histogram is
//     a full collection: an exact point);
//   - confirm: a full-collection point above every one of the record_points before it by the same
//     max(min_rise_bytes, min_rise_fraction of the maximum heap) (noise in a steady live set
//     rarely beats three earlier points by 2 % of the heap): histograms are asked for every
//     `spacing` (the caller's) until the trend decides, at most max_confirmations exact points in
//     a row without such a rise;
//   - back-off: an exact point that did not rise above the ones before (the rise was garbage) ends
//     the probing for backoff_initial, doubled at each such miss up to backoff_max, and reset by a
//     rise. A healthy JVM costs at most two histograms per back-off period.
// The histograms it asks for are spent from the pause budget like any other, with one window of
// budget in advance (collectors/pause_budget.h PlanConfirmation).
//
// Thread-safety: not thread-safe; the agent's AgentWatch serialises calls.
#ifndef HEAPWATCH_DAEMON_GROWTH_PROBE_H_
#define HEAPWATCH_DAEMON_GROWTH_PROBE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "common/gc.h"

namespace heapwatch::daemon {

struct GrowthProbeOptions {
  size_t min_readings = 3;
  absl::Duration min_rise_span = absl::Seconds(10);
  uint64_t min_rise_bytes = uint64_t{1} << 20;
  double min_rise_fraction = 0.02;
  size_t record_points = 3;
  size_t max_confirmations = 6;
  absl::Duration backoff_initial = absl::Minutes(5);
  absl::Duration backoff_max = absl::Hours(1);
};

class GrowthProbe {
 public:
  explicit GrowthProbe(GrowthProbeOptions options = {}) : options_(options) {}

  // The heap a young collection left at `time` (bytes), of a heap of `max_bytes`. O(1) amortised.
  void ObserveUpperBound(absl::Time time, uint64_t bytes, uint64_t max_bytes);
  // A live-set point. Any reclaim (kFullGc, kConcurrentCycle) restarts the upper bounds' rise; only
  // full collections (a live histogram's, or the JVM's own) confirm or refute one: a concurrent
  // cycle's end includes what was allocated during it, and healthy JVMs' G1 mixed-phase minima
  // were seen climbing 30 -> 86 MiB while full collections read 18-27 MiB. O(1).
  void ObserveExact(const LiveSetPoint& point);

  enum class Want {
    kNothing,
    kProbe,    // one histogram for an exact point
    kConfirm,  // histograms every `spacing` until the trend decides
  };
  // What the probe asks for at `now`.
  Want Wants(absl::Time now) const;

  // Readable state for logs: "idle", "probing", "confirming (3 exact points)", "backing off until
  // ...".
  std::string Describe(absl::Time now) const;

 private:
  bool RiseSeen() const;
  // max(min_rise_bytes, min_rise_fraction of the maximum heap).
  uint64_t RiseNeeded() const;

  GrowthProbeOptions options_;
  // Upper bounds since the newest exact point.
  std::vector<std::pair<absl::Time, uint64_t>> rise_;
  uint64_t max_bytes_ = 0;
  std::vector<LiveSetPoint> exact_;  // the newest record_points exact points
  bool confirming_ = false;
  size_t confirmations_ = 0;  // exact points in a row without a rise while confirming
  absl::Time backoff_until_ = absl::InfinitePast();
  absl::Duration backoff_ = absl::ZeroDuration();
};

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_GROWTH_PROBE_H_
