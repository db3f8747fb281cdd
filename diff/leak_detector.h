// Leaks, not classes: multi-timescale trend detection over one agent's class histograms, and the
// grouping of the classes that grow together into leaks (docs/trend-detection.md).
//
// A LeakDetector runs the tests of diff/trend_detector.h (Mann-Kendall significance, Theil-Sen
// magnitude, sustained growth, still growing; hysteresis) on several time scales at once:
//   - scale 0, "every snapshot": the snapshots as they come, with TrendOptions as given (window of
//     12 snapshots by default) except that recent_max_p_value is 0.05 when left at 0 (the recent-
//     trend entry tests). It keeps the guarantee for fast leaks: flagged within 10 snapshots.
//   - bucketed scales of width w = min_time_scale * 2^k (k = 0, 1, ...) up to max_time_scale (4 s to
//     about 4.5 h by default, 13 scales): the snapshots are grouped into buckets aligned to the Unix
//     epoch (floor(t / w)), and each bucket contributes, per class, the *minimum* of the class's
//     bytes over its snapshots (a per-bucket minimum is robust to garbage in -all histograms and to
//     the phase of the GC cycle, and turns a sawtooth shorter than w into its flat trough). A scale
//     is evaluated when one of its buckets closes, on a window of up to scale_window_buckets
//     buckets, with the same tests and thresholds (min_growth_bytes, min_relative_growth,
//     max_p_value; min_snapshots becomes scale_min_buckets) plus the entry tests against steps
//     (recent_max_p_value 0.05, record_noise_sigmas 2). A scale is used while its width is at least
//     the median of the last 16 collection intervals (fewer than one snapshot per bucket would only
//     repeat scale 0: 9 scales from 64 s up at a 60 s interval, all 13 at 2 s); a scale that falls
//     out of use is reset (its suspects are dropped).
// Because every scale's thresholds are in growth over its own window and the windows span from a
// few snapshots to days, a steady growth of G = max(min_growth_bytes, min_relative_growth * level)
// per T is flagged by the scale whose window is about T long, after about T (plus one bucket of
// that scale), whatever the collection interval. Measured figures: docs/trend-detection.md.
//
// Daily cycles (cycle veto): a class can only *become* a suspect, at any scale, if its current
// level (the smaller of its last two snapshot values) is above the highest level it had in the
// past cycle_lookback (26 h by default), apart from the scale's window and one bucket, by a quarter
// of G; those maxima are kept per class in 64 one-minute slots and 104 slots of cycle_lookback /
// 104. Sessions that fill every morning and drain every night never set a new
// daily record unless the peaks themselves rise, and neither does a sawtooth or a cache that is
// emptied and refilled with a period up to a day.
//
// A class is a suspect when it is one on at least one scale; its figures are those of the finest
// such scale, named by Suspect::time_scale, except first_seen: the time of the snapshot at which it
// became a suspect on some scale (kept while it stays one on any).
//
// Leaks. Suspects of the agent are grouped into leaks:
//   - before any extended dump: two suspects belong to one leak when their increments (differences
//     between consecutive values on the coarser of the two suspects' scales, over that scale's
//     window) are positively correlated (Kendall's tau >= group_min_correlation), or when both grow
//     so evenly that their increments cannot tell them apart (both have a median absolute deviation
//     of at most 20% of the median increment); groups are the connected components. Only the 256
//     fastest-growing suspects are correlated (each pair costs O(w^2)); slower ones beyond that
//     are leaks of their own unless an accumulation point groups them;
//   - once SetAccumulationPoints() has named, for some classes, the accumulation point that retains
//     their growth (from an extended dump, analysis/report.h), classes with the same accumulation
//     point are one leak and classes with different ones are different leaks, whatever their
//     increments say; classes without one join the group they correlate with. A point nested in
//     another suspect class's structure counts as that class's point (see AccumulationPoint).
// A leak is named by its main class: the grouped class that is not a JDK class (IsJdkClass) and
// holds the most bytes, else the accumulation point's class when that is not a JDK class, else the
// class holding the most bytes. Its id is stable while the leak exists:
// a new group takes the id of the previous leak it shares the most classes with (ties: the older
// leak), otherwise it gets a new id derived from its main class and first_seen (made distinct from
// every other id), so replaying the same history gives the same ids.
//
// Determinism: like TrendDetector, the state is a pure function of the options, the agent start
// time, the snapshot sequence and the SetAccumulationPoints() calls between them.
//
// Memory: scale 0 as TrendDetector (about 0.5 KB per class); each bucketed scale keeps 8 bytes
// per bucket of its lookback (48 by default) for the classes that reached min_growth_bytes / 4 in
// some bucket of it (classes that never do cannot grow by min_growth_bytes there) and 20 bytes per
// class for its open bucket; the cycle veto 168 maxima per class, 4 bytes each (8 for a class that
// reached 4 GiB: values are never saturated). Measured (bench/gateway/agent_memory.cc, 3,000
// classes, 120 snapshots at 1 s): 7.3 MiB per agent, 5.2 MiB with the bucketed scales off. A class
// with no objects for cycle_lookback plus the widest bucket, tracked by no scale, is forgotten.
//
// Thread-safety: not thread-safe; one per agent, the caller serialises calls. Const methods other
// than Explain() may run concurrently with each other (Explain reuses the scales' scratch space).
#ifndef HEAPWATCH_DIFF_LEAK_DETECTOR_H_
#define HEAPWATCH_DIFF_LEAK_DETECTOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "common/histogram.h"
#include "common/status.h"
#include "diff/heap_forecast.h"
#include "diff/trend_detector.h"

namespace heapwatch::diff {

struct LeakOptions {
  // Scale 0 (every snapshot) and the thresholds shared by every scale.
  TrendOptions trend;
  // Bucketed scales: widths min_time_scale * 2^k up to max_time_scale. min_time_scale in [1 s, 1 d],
  // max_time_scale in [min_time_scale, 30 d]; max_time_scale < min_time_scale * 2 gives one
  // bucketed scale. enable_time_scales = false runs scale 0 alone (the detector of before, plus
  // the cycle veto and the grouping).
  bool enable_time_scales = true;
  absl::Duration min_time_scale = absl::Seconds(4);
  absl::Duration max_time_scale = absl::Hours(5);
  // Window, fewest buckets before a verdict, and test D's lookback on a bucketed scale. Ranges:
  // scale_min_buckets in [max(4, 2 * trend.segments), scale_window_buckets], scale_window_buckets
  // <= 40 (exact Mann-Kendall), scale_lookback_buckets in [scale_window_buckets, 4096].
  size_t scale_window_buckets = 24;
  size_t scale_min_buckets = 8;
  size_t scale_lookback_buckets = 48;
  // Cycle veto horizon (see the file comment); 0 disables the veto. Range [0, 30 d].
  absl::Duration cycle_lookback = absl::Hours(26);
  // Grouping: least Kendall's tau between two suspects' increments for them to be one leak.
  // Range [-1, 1].
  double group_min_correlation = 0.3;
};

// Checks every field (TrendOptions included). Returns OK or InvalidArgument naming the first bad
// field and its value, e.g. "LeakOptions.min_time_scale = 0 not in [1s, 24h]". O(1).
Status ValidateLeakOptions(const LeakOptions& options);

// True for classes of the JDK: names (source form; arrays by their element type, so "byte[]",
// "java.lang.String[][]") that are primitive, or start with "java.", "javax.", "jdk.", "sun.",
// "com.sun.", "org.w3c.", "org.xml.", "org.ietf.". O(length).
bool IsJdkClass(std::string_view class_name);

// The id of a new leak: "L" + 12 lowercase hex digits of the FNV-1a hash of "<main_class>@<first_seen
// in Unix microseconds>" (stable across builds and replays). O(length).
std::string LeakId(std::string_view main_class, absl::Time first_seen);

// One class of a leak.
struct LeakClass {
  std::string class_name;
  uint64_t bytes = 0;                  // shallow bytes in the latest snapshot
  double growth_bytes_per_second = 0;  // Theil-Sen slope on the class's suspect scale
  friend bool operator==(const LeakClass&, const LeakClass&) = default;
};

// A group of suspect classes of one agent that grow because of one cause.
struct Leak {
  std::string id;          // stable id, "L" + 12 lowercase hex digits
  std::string main_class;  // see the file comment
  std::vector<LeakClass> classes;  // every member, sorted by bytes descending, then name
  uint64_t bytes = 0;              // sum of the members' bytes
  double growth_bytes_per_second = 0;  // sum of the members' slopes
  double score = 0;                    // highest member score, in [0, 1]
  absl::Time first_seen;               // earliest first_seen of its members in this leak
  absl::Duration time_scale;           // finest scale of any member (0 = every snapshot)
  // Class name of the object that retains the growth, once SetAccumulationPoints gave one for a
  // member (e.g. "java.util.concurrent.ConcurrentHashMap"), else empty.
  std::string accumulation_point;
  // What kind of leak: empty for a group of classes of the class histograms (this detector);
  // "heap" for a growing live set whose classes are not named yet (daemon/agent_watch.h);
  // "class_loader" for the daemon's class-loading trend (daemon/class_loading_watch.h), whose
  // `detail` then says what grew ("live classes 5120 (+840), metaspace ...").
  std::string kind;
  std::string detail;
  // The agent's heap exhaustion forecast, on the leak the live set's growth belongs to (set by the
  // daemon's daemon/agent_watch.h, never by this detector).
  std::optional<HeapExhaustion> exhaustion;
  friend bool operator==(const Leak&, const Leak&) = default;
};

// One class's totals in a snapshot: its rows (one per class loader defining it) summed.
struct ClassTotal {
  std::string class_name;
  uint64_t bytes = 0;      // shallow bytes, summed saturating
  uint64_t instances = 0;  // summed saturating
  friend bool operator==(const ClassTotal&, const ClassTotal&) = default;
};

// One episode for TrendDetector --history style output: a leak or one class being flagged.
struct Episode {
  enum class Kind { kLeak, kClass };
  Kind kind = Kind::kClass;
  std::string leak;        // leak id (for a class episode: its leak when it was last flagged)
  std::string main_class;  // the leak's main class, or the class
  std::vector<std::string> classes;  // every class that was part of it (sorted), or the class
  absl::Time first_seen;
  std::optional<absl::Time> cleared;  // absent while still flagged
  absl::Duration time_scale;          // finest scale it was flagged on while it lasted
  friend bool operator==(const Episode&, const Episode&) = default;
};

// Why a class is (not) a suspect: each test's value and threshold, per scale (the per-scale
// structs are in diff/trend_detector.h).
struct Explanation {
  std::string class_name;
  bool known = false;    // the detector has history for the class
  bool suspect = false;
  std::string leak;      // its leak id when a suspect
  std::vector<ScaleExplanation> scales;  // scale 0 first, then ascending width
  std::optional<TestExplanation> cycle_veto;
};

class LeakDetector {
 public:
  // REQUIRES: ValidateLeakOptions(options).ok() (HW_CHECKed). `agent_start` as for TrendDetector.
  explicit LeakDetector(LeakOptions options, absl::Time agent_start = absl::InfinitePast());
  static StatusOr<std::unique_ptr<LeakDetector>> Create(LeakOptions options,
                                                        absl::Time agent_start = absl::InfinitePast());
  ~LeakDetector();
  LeakDetector(const LeakDetector&) = delete;
  LeakDetector& operator=(const LeakDetector&) = delete;

  // Adds the next snapshot (same rules as TrendDetector::Observe: time order, one agent; returns
  // false and changes nothing otherwise), evaluates every scale whose bucket closed, and regroups
  // the suspects into leaks. Complexity: scale 0 as TrendDetector::Observe; each bucket close of a
  // scale costs as one TrendDetector::Observe over the classes tracked there; grouping is O(s^2 w)
  // for s suspects and windows of w.
  bool Observe(const Snapshot& snapshot);

  // Current suspects (each with its leak id and scale), sorted by score descending, then name.
  std::vector<Suspect> Suspects() const;
  std::optional<Suspect> SuspectFor(std::string_view class_name) const;
  // The classes of the latest observed snapshot, rows of one name summed: the `top` with the most
  // bytes (ties: name ascending), then each class named in `also` that is in the snapshot and not
  // among them (in the order of `also`, once). What the daemon exports as per-class metrics,
  // without hashing every row's name again (Observe resolved each row to its class already).
  // Empty before the first snapshot. O(r + top log r) for r rows, plus O(|also|) lookups.
  std::vector<ClassTotal> LatestClasses(size_t top, const std::vector<std::string>& also) const;

  // Current leaks, sorted by growth_bytes_per_second descending, then id.
  std::vector<Leak> Leaks() const;
  std::optional<Leak> LeakFor(std::string_view leak_id) const;

  // Every episode seen so far (leaks and classes), oldest first; at most the last 10,000.
  const std::vector<Episode>& Episodes() const { return episodes_; }

  // Per scale, every test's value and threshold for `class_name` at the latest snapshot. Evaluates
  // afresh (does not change any state). O(scales * w^2).
  Explanation Explain(std::string_view class_name) const;

  // From an extended dump's report: the class name of the accumulation point that retains each
  // suspect class's growth, as (suspect class, accumulation point id, accumulation point class).
  // The id distinguishes two objects of the same class (e.g. "0x7f0012345678"). Replaces earlier
  // calls; classes that are no longer suspects are ignored. Regroups at once.
  // `dominator_ids`: the ids of the point's dominators, immediate dominator first (a few levels;
  // may be empty). Nested points: when the point of class A is an instance of suspect class B and
  // B's point is A's point itself or one of its dominators, A's growth accumulates inside B's
  // growing structure (a Cleaner's list of PhantomCleanable nodes holds the objects the nodes
  // clean; a map's table holds the map's values), and A is grouped under B's point: one leak.
  struct AccumulationPoint {
    std::string suspect_class;
    std::string object_id;
    std::string object_class;
    std::vector<std::string> dominator_ids;
  };
  void SetAccumulationPoints(const std::vector<AccumulationPoint>& points);

  const LeakOptions& options() const { return options_; }
  size_t snapshots_observed() const;
  // Widths of the bucketed scales in use (those with at least one snapshot per bucket on average
  // so far), ascending.
  std::vector<absl::Duration> time_scales() const;

 private:
  struct Impl;
  LeakOptions options_;
  std::unique_ptr<Impl> impl_;
  std::vector<Episode> episodes_;
};

}  // namespace heapwatch::diff

#endif  // HEAPWATCH_DIFF_LEAK_DETECTOR_H_
