// Heap exhaustion forecast: when an agent's live set reaches its maximum heap at the live set's
// current growth (docs/trend-detection.md, "Heap exhaustion forecast").
//
// Method: a Theil-Sen line (Theil 1950, Sen 1968) through the newest live-set points, with Sen's
// distribution-free confidence interval for the slope (Sen 1968 section 4; Gilbert 1987 section
// 16.5.1; Hollander & Wolfe 1999 section 9.3): of the N = n(n-1)/2 pairwise slopes sorted, the
// interval is [slope_(M1), slope_(M2 + 1)] with M1 = (N - C) / 2, M2 = (N + C) / 2 and
// C = z_(1 - alpha/2) * sqrt(n(n-1)(2n+5)/18) (the variance of Kendall's S without ties). The
// level "now" is the line at the newest point's time (Conover's intercept, robust to the newest
// point being a low or high reading); the estimate is (max - level) / slope, and the interval's ends
// divide by the interval's slopes.
//
// The target is options.exhaustion_fraction (98 %) of the maximum heap, not all of it.
// Inputs are the exact and concurrent-cycle points (kFullGc, kConcurrentCycle); young-collection
// upper bounds include the old generation's garbage and are skipped. The forecast is only as good
// as a straight line: a leak that accelerates makes it late, one that slows makes it early. The JVM
// fails with OutOfMemoryError before its live set equals the maximum (GC overhead, fragmentation,
// humongous objects), so the estimate bounds the time left from above.
//
// Thread-safety: pure functions.
#ifndef HEAPWATCH_DIFF_HEAP_FORECAST_H_
#define HEAPWATCH_DIFF_HEAP_FORECAST_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "absl/time/time.h"
#include "common/gc.h"

namespace heapwatch::diff {

struct HeapForecastOptions {
  // Newest points the line is fitted to (the older ones are the growth before the current one).
  // Range [4, 256].
  size_t max_points = 24;
  // Fewest points for a forecast. Range [4, max_points].
  size_t min_points = 6;
  // Two-sided confidence of the slope's interval. Range (0, 1).
  double confidence = 0.90;
  // The heap counts as exhausted when the live set reaches this fraction of the maximum: the
  // Parallel collector throws OutOfMemoryError once a full collection frees less than 2 % of the
  // heap (-XX:+UseGCOverheadLimit, GCHeapFreeLimit=2), and G1 spends most of its time collecting
  // long before the last regions fill. For a slow leak the last 2 % are a long time: 29 minutes of
  // a 256 MiB heap that would fill in a day. Range (0, 1].
  double exhaustion_fraction = 0.98;
};

struct HeapExhaustion {
  absl::Duration estimate;  // from the slope
  absl::Duration soonest;   // from the interval's steepest slope
  // From the interval's flattest slope; InfiniteDuration when that slope is not positive.
  absl::Duration latest;
  double growth_bytes_per_second = 0;  // the Theil-Sen slope
  double growth_low_bytes_per_second = 0;
  double growth_high_bytes_per_second = 0;
  uint64_t live_bytes = 0;  // the line at `computed_time`
  uint64_t max_bytes = 0;   // the newest point's maximum heap
  absl::Time computed_time;  // the newest point's time; the durations count from here
  size_t points = 0;
  friend bool operator==(const HeapExhaustion&, const HeapExhaustion&) = default;
};

// The forecast from `points` (time order, any sources; only kFullGc and kConcurrentCycle are used,
// the newest options.max_points of them). With a positive `span`, the points within `span` of the
// newest usable one, thinned to at most options.max_points spread over it: the span is cut into
// max_points equal parts and the newest point of each part is used (the line then spans the growth
// the trend detector saw, not the last seconds of dense readings: after G1's old generation passes
// its occupancy threshold a concurrent cycle ends every few seconds, and a slow leak's growth over
// 24 of them is lost in their noise). nullopt when fewer than min_points usable points, when the
// newest point has no maximum heap (max_bytes 0), or when the slope is not positive. A level already
// at or above the maximum gives an estimate of 0. Complexity O(n^2 log n) for n = max_points.
std::optional<HeapExhaustion> ForecastHeapExhaustion(std::span<const LiveSetPoint> points,
                                                     const HeapForecastOptions& options = {},
                                                     absl::Duration span = absl::ZeroDuration());

// Sen's interval for the Theil-Sen slope of (times, values) at two-sided `confidence`: (low, high).
// Returns (0, 0) for fewer than 2 points with distinct times. Ties in `values` are ignored in the
// variance (a slightly wider interval is not computed). REQUIRES: equal sizes, finite values.
// O(n^2 log n).
std::pair<double, double> TheilSenSlopeInterval(std::span<const double> times,
                                                std::span<const double> values, double confidence);

}  // namespace heapwatch::diff

#endif  // HEAPWATCH_DIFF_HEAP_FORECAST_H_
