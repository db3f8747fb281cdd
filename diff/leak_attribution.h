// Naming the classes of a growing live set from a few class histograms (docs/trend-detection.md,
// "Naming the classes of a heap leak").
//
// The live-set series (every old-generation collection, no pause) says that the heap leaks and how
// fast (g bytes/s); the class histograms say what the heap holds, but the trend detector needs a
// dozen of them per time scale before it trusts a class's trend, and the pause budget spaces them
// minutes to hours apart. Once the live set is known to grow, the question is smaller: which classes
// carry *this* growth? Over the histograms h_0..h_k (k >= 1 intervals) taken since shortly before
// the growth was flagged:
//   - a candidate grew in every interval, in bytes and in instances (a leak's objects are
//     reachable: no histogram mode or GC phase hides them);
//   - the anchor is a candidate whose byte rate over the span is at least min_anchor_share of g and
//     that grew steadily (its fastest interval's rate at most max_unsteadiness times its slowest);
//     the first max_anchors candidates by byte rate are tried in turn;
//   - the leak's classes are the anchor and every candidate connected to it by being in step: its
//     instance increments proportional to a member's in every interval (one order brings one
//     payload array and one String: their counts grow in step), within max_ratio_spread of the
//     ratio over the span; a member must be sizeable: its byte rate is at least min_member_share of g and either large_member_share of g or a
//     growth over the span of min_member_relative_growth of the class's bytes in h_0 (a class
//     that churns around a large level does not grow by a tenth of it in a minute). With one
//     interval nothing tells a co-mover from a chance riser: every candidate of that size joins;
//   - an anchor's group counts when its classes' byte rates add up to between min_explained and
//     max_explained times g (with one interval, min_explained_single, and the live set must have
//     grown over it by single_interval_min_growth of the newest histogram's bytes), and their growth
//     over the span is at least min_growth_bytes; of the groups that count, the one whose rate is
//     closest to g (in ratio) is the leak.
// Measured on synthetic histograms (tests/diff/leak_attribution_test.cc): with churn as large as
// the leak's growth per interval, 3-4 histograms name the leak's own classes in most seeds and a
// churning class now and then as a small member; churn alone is named in well under 1 % of seeds
// even when the live set is said to grow (in a real JVM it is not: the gate).
// Garbage in `-all` histograms moves classes up and down at random: such a class rarely rises in
// every interval with its instances in step with another's, and what rises by chance rarely adds up
// to the live set's measured growth. The rule never runs on a heap whose live set is not growing
// (the caller gates it on the live-set trend), which is what keeps healthy JVMs quiet.
//
// Thread-safety: pure functions.
#ifndef HEAPWATCH_DIFF_LEAK_ATTRIBUTION_H_
#define HEAPWATCH_DIFF_LEAK_ATTRIBUTION_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/time/time.h"
#include "common/histogram.h"
#include "diff/leak_detector.h"

namespace heapwatch::diff {

struct AttributionOptions {
  double min_anchor_share = 0.2;
  size_t max_anchors = 8;
  double max_unsteadiness = 4;
  double max_ratio_spread = 0.35;
  double min_member_share = 0.01;
  double large_member_share = 0.1;
  double min_member_relative_growth = 0.1;
  double min_explained = 0.5;
  double max_explained = 2;
  double min_explained_single = 0.7;
  double single_interval_min_growth = 0.05;
  uint64_t min_growth_bytes = uint64_t{1} << 20;
  size_t max_classes = 16;
};

struct Attribution {
  std::vector<LeakClass> classes;  // by growth rate descending; bytes of the newest histogram
  // Per class of `classes` (same order): its instances in the newest histogram and their growth
  // over the span (instances/s).
  std::vector<uint64_t> instances;
  std::vector<double> instances_per_second;
  double growth_bytes_per_second = 0;  // the named classes' rates added up
  double explained = 0;  // that sum / the live set's growth
  absl::Time from, to;   // times of the first and the newest histogram used
  size_t histograms = 0;
};

// Names the classes carrying `live_set_growth` bytes/s (> 0) from `histograms` (time order, at
// least 2; rows of one class name are summed). nullopt when the rule above names nothing.
// Complexity O(k r) hash operations for k histograms of r rows, plus O(c log c) for c candidates.
std::optional<Attribution> AttributeLiveSetGrowth(std::span<const Snapshot> histograms,
                                                  double live_set_growth_bytes_per_second,
                                                  const AttributionOptions& options = {});

}  // namespace heapwatch::diff

#endif  // HEAPWATCH_DIFF_LEAK_ATTRIBUTION_H_
