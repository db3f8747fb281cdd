// What heapwatchd knows about one agent's leaks, behind one lock: the one ingestion path of both
// kinds of agents (attach and registered). The daemon reads, collects and stores; it hands every
// stored reading to the agent's AgentWatch, which runs the detectors and returns what changed as a
// WatchUpdate; the daemon publishes that in one place (metrics, the agent table, escalation).
//
// Inside (docs/trend-detection.md):
//   - the class detector (diff/leak_detector.h) over the class histograms;
//   - the live-set detector (the same, over the one series "<live set>", with a shorter warm-up
//     and fewer points: eight exact points that keep rising, LiveSetTrendOptions), and
//     from the live-set points the heap exhaustion forecast (diff/heap_forecast.h); the growth
//     probe (daemon/growth_probe.h) asks for histograms when young collections hint at growth
//     before the JVM's own old-generation collections show it;
//   - the heap leak: as soon as the live-set detector flags growth, the agent has a leak (kind
//     "heap", no classes yet) with id LeakId("<live set>", first_seen). Its classes are named by
//     the first of: a class leak of the class detector that appeared since the growth was flagged
//     (that leak takes over the heap leak's id: one leak, not two), or the attribution of the live
//     set's growth to classes from the histograms of the growth (diff/leak_attribution.h).
//     When a class leak exists when the live set is flagged, the growth is that leak's:
//     no heap leak is made and the forecast goes on that leak. While the heap leak's classes are
//     unnamed, wants_confirmation asks the daemon for histograms sooner (collectors/pause_budget.h
//     PlanConfirmation);
//   - the class-loading and interned-string trends (daemon/class_loading_watch.h,
//     daemon/string_table_watch.h);
//   - the log-once state: suspects, leaks and failures are logged when they change.
//
// Thread-safety: thread-safe; every method takes the object's mutex. The methods that read the
// store (Replay, IngestHistogram while a heap leak waits for its classes) do so under it: other
// callers of the same agent wait, other agents do not.
#ifndef HEAPWATCH_DAEMON_AGENT_WATCH_H_
#define HEAPWATCH_DAEMON_AGENT_WATCH_H_

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "collectors/string_table.h"
#include "common/agent.h"
#include "common/class_loading.h"
#include "common/gc.h"
#include "common/histogram.h"
#include "daemon/class_loading_watch.h"
#include "daemon/growth_probe.h"
#include "daemon/string_table_watch.h"
#include "diff/heap_forecast.h"
#include "diff/leak_attribution.h"
#include "diff/leak_detector.h"
#include "storage/snapshot_store.h"

namespace heapwatch::daemon {

// The "class" name under which an agent's live-set series goes through its own LeakDetector.
inline constexpr std::string_view kLiveSetSeries = "<live set>";

// The live-set detector's options from the class detector's: live-set points are exact heap
// occupancies, not histograms with garbage, so the warm-up is one point and eight points (at
// least twice the segments) in the window of twelve may make a verdict; every other threshold
// (significance, growth, relative growth, records, cycle veto, time scales) is the class
// detector's. Six would do for significance (Mann-Kendall's smallest p for six points is 1/720 =
// 0.0014 <= max_p_value 0.002), but a cache that fills over five points and then plateaus is
// flagged for a moment then (tests/daemon/agent_watch_test.cc); eight see the plateau.
diff::LeakOptions LiveSetTrendOptions(const diff::LeakOptions& trend);

// "<id> (pid <pid>, <main class>)": how logs name an agent.
std::string DescribeAgent(const AgentInfo& info);

struct AgentWatchOptions {
  diff::LeakOptions trend;
  // Classes exported per agent besides the suspects (exporter.top_classes).
  size_t top_classes = 20;
  // Keep an interned-string trend (collection.string_table_interval > 0).
  bool string_table = true;
  diff::HeapForecastOptions forecast;
  diff::AttributionOptions attribution;
  // Histograms the attribution reads at most: the newest since the forecast's oldest point (live
  // histograms only when there are two of them).
  size_t attribution_histograms = 6;
};

// What an ingestion changed, for the daemon to publish.
struct WatchUpdate {
  std::vector<diff::Suspect> suspects;  // by score, highest first; each names its leak
  // Every leak of the agent: the class leaks, the heap leak, a class loader leak, an
  // interned-string leak; by growth, fastest first.
  std::vector<diff::Leak> leaks;
  // After a histogram the detector took: the classes to export (top classes by bytes, then the
  // suspects in the snapshot). Unset otherwise (and when the detector refused the snapshot).
  std::optional<std::vector<diff::ClassTotal>> exported;
  // The live-set series as a trend suspect while it grows.
  std::optional<diff::Suspect> live_set_growth;
  // While the live set grows: when it reaches the maximum heap.
  std::optional<diff::HeapExhaustion> exhaustion;
  // A heap leak waits for its classes, or the growth probe wants exact live-set points: the next
  // histogram should come as soon as the budget allows (WantsConfirmation).
  bool wants_confirmation = false;
  // The newest class-loading reading and whether it is a class loader leak (IngestClassLoading and
  // Replay).
  std::optional<ClassLoadingPoint> class_loading;
  bool class_loader_leak = false;
  // The newest string-table reading (Replay only).
  std::optional<collectors::StringTableStats> string_table;
};

class AgentWatch {
 public:
  // `store` (not owned; outlives this object) is read by Replay and by the attribution.
  AgentWatch(const AgentInfo& info, AgentWatchOptions options, const storage::SnapshotStore* store);
  ~AgentWatch();
  AgentWatch(const AgentWatch&) = delete;
  AgentWatch& operator=(const AgentWatch&) = delete;

  // Rebuilds the state from the agent's stored history: the snapshots of the last `horizon` before
  // the newest one (at least enough to fill scale 0's warm-up, lookback and window twice over; at
  // most max_snapshots, the newest), then `points` (the newest analysed dump's accumulation
  // points), then the live-set, class-loading and string-table series of the same span. Read errors
  // are logged and the detectors continue from what was read. Returns the update and, in
  // `replayed`, how many snapshots the class detector took and the newest one's time.
  struct Replayed {
    size_t snapshots = 0;
    absl::Time last_snapshot_time = absl::InfinitePast();
  };
  WatchUpdate Replay(absl::Duration horizon, size_t max_snapshots,
                     const std::vector<diff::LeakDetector::AccumulationPoint>& points,
                     Replayed* replayed);

  // A stored class histogram (time order; an older one is refused by the detector and only
  // republished). Logs new and cleared suspects and leaks.
  WatchUpdate IngestHistogram(const Snapshot& snapshot);
  // A stored live-set point. Young-collection upper bounds are left out of the trend (their
  // build-up between old-generation reclaims is a sawtooth) and of the forecast.
  WatchUpdate IngestLiveSet(const LiveSetPoint& point);
  // The heap a young collection left (an upper bound of the live set; every reading, not stored):
  // the growth probe's hint (daemon/growth_probe.h). Returns whether histograms are wanted sooner.
  bool IngestUpperBound(absl::Time time, uint64_t bytes, uint64_t max_bytes);
  // A stored class-loading reading.
  WatchUpdate IngestClassLoading(const ClassLoadingPoint& point);
  // A stored string-table reading (ignored when options.string_table is false).
  void IngestStringTable(const collectors::StringTableStats& stats);
  // An extended dump's accumulation points regroup the class leaks.
  WatchUpdate SetAccumulationPoints(
      const std::vector<diff::LeakDetector::AccumulationPoint>& points);

  // A collection failed (true) or succeeded again (false): logged once per streak.
  void SetFailing(bool failing, std::string_view reason);

  // The class detector's explanation of `class_name`.
  diff::Explanation Explain(std::string_view class_name) const;
  // Whether histograms are wanted sooner than the interval: a heap leak waits for its classes, or
  // the growth probe wants exact live-set points.
  bool WantsConfirmation() const;
  // How long after the last histogram the next one is wanted when WantsConfirmation: for a heap
  // leak waiting for its classes, the time the live set takes to grow by kConfirmationGrowth of
  // its newest exact reading at the measured growth (two histograms that far apart show the leak's
  // classes above the churn: diff/leak_attribution.h asks 5 % of one interval), within
  // [kMinConfirmationSpacing, kMaxConfirmationSpacing]; for the growth probe's exact points,
  // kMinConfirmationSpacing. The pause budget still decides when each histogram may start.
  absl::Duration ConfirmationSpacing() const;
  static constexpr double kConfirmationGrowth = 0.06;
  static constexpr absl::Duration kMinConfirmationSpacing = absl::Seconds(10);
  static constexpr absl::Duration kMaxConfirmationSpacing = absl::Minutes(10);
  // Why histograms are wanted sooner, for logs: the heap leak's or the growth probe's state.
  std::string WhySooner() const;
  // The current state without ingesting anything.
  WatchUpdate Current() const;

  const AgentInfo& info() const { return info_; }

 private:
  struct HeapLeak {
    std::string id;
    absl::Time first_seen;
    std::optional<diff::Attribution> attribution;  // classes named from the histograms
  };

  // REQUIRES: mu_ held.
  WatchUpdate UpdateLocked(bool with_exported) const;
  bool WantsConfirmationLocked() const;
  void ObserveLiveSetLocked(const LiveSetPoint& point);
  // Accepts the live-set trend's suspect (trend_growth_) as live_set_growth_, or not, at `now`:
  // concurrent-cycle points hold the garbage G1's mixed phase left, which grows with the committed
  // heap (a healthy 256 MiB JVM's mixed-phase minima climbed 30 -> 86 MiB while its full
  // collections read 18-27 MiB). So on a JVM whose recent exact points include full collections
  // (where live histograms fit the budget), growth is accepted only once a full collection after
  // the trend flagged it (and one in the kFullGcRecent before) agrees: the Theil-Sen slope of the
  // full collections among the recent exact points is at least half that of the other points over
  // the same span, or short of it by less than max(1 MiB, 2 % of the heap) over that span. Until
  // one comes (histograms are wanted sooner meanwhile) it is pending, for at most kFullGcWait; a
  // JVM without full collections (a heap whose live histograms exceed the budget) is taken at the
  // trend's word. Sets exhaustion_ too.
  void AcceptGrowthLocked(absl::Time now);
  static constexpr absl::Duration kFullGcWait = absl::Minutes(2);
  static constexpr absl::Duration kFullGcRecent = absl::Minutes(5);
  // Hysteresis: the trend's word on the live set is lost when its points crowd (past G1's
  // occupancy threshold a concurrent cycle ends every few seconds, and the every-point window then
  // spans under a minute of a slow leak: the 8 GiB / 2 h leak of bench/exhaustion was dropped and
  // listed again as a second leak under a new id, its classes to be named again). A growth accepted
  // before is kept while the live set still grows over the span from the oldest point of the window
  // it was first accepted on to now (at most max(kHoldSpan, that window's span)): the lower end of
  // the forecast's confidence interval for the slope (diff/heap_forecast.h) over that span is above
  // zero, and the slope over its newest quarter is positive (a plateau ends the hold within about a
  // quarter of the span). Its figures are then the forecast's. O(n^2 log n) for n =
  // forecast.max_points.
  void HoldGrowthLocked(diff::Suspect held, absl::Time now);
  static constexpr absl::Duration kHoldSpan = absl::Hours(1);
  // Only a growth accepted for at least this long is held.
  static constexpr absl::Duration kHoldMinAge = absl::Minutes(2);
  // Starts or ends the heap leak from the live-set trend; joins a new class leak to it.
  void RefreshHeapLeakLocked();
  // Tries to name the heap leak's classes from the stored histograms.
  void AttributeLocked();
  // The live set's growth in bytes/s: the forecast's slope when there is one, else the trend's.
  // REQUIRES: live_set_growth_.
  double GrowthLocked() const;
  std::vector<diff::Leak> ClassLeaksLocked() const;
  void LogChangesLocked(const WatchUpdate& update);

  const AgentInfo info_;
  const AgentWatchOptions options_;
  const storage::SnapshotStore* const store_;
  mutable std::mutex mu_;
  std::unique_ptr<diff::LeakDetector> detector_;           // guarded by mu_
  std::unique_ptr<diff::LeakDetector> live_set_detector_;  // guarded by mu_
  std::unique_ptr<ClassLoadingWatch> class_loading_;       // guarded by mu_
  std::unique_ptr<StringTableWatch> string_table_;         // guarded by mu_; null when off
  std::vector<LiveSetPoint> recent_points_;  // guarded by mu_; the newest forecast.max_points
  // The exact and concurrent-cycle points of the longer past (up to 2 * kForecastHistory of them):
  // the forecast's input over the trend's window; guarded by mu_.
  std::vector<LiveSetPoint> forecast_points_;
  static constexpr size_t kForecastHistory = 2048;
  GrowthProbe probe_;                               // guarded by mu_
  absl::Time last_reading_ = absl::InfinitePast();  // guarded by mu_; newest GC reading's time
  std::optional<diff::Suspect> trend_growth_;       // guarded by mu_; the trend's word
  std::optional<diff::Suspect> live_set_growth_;    // guarded by mu_; accepted (AcceptGrowthLocked)
  absl::Time growth_accepted_at_;     // guarded by mu_; when this growth episode was first accepted
  absl::Time growth_evidence_start_;  // guarded by mu_; HoldGrowthLocked's span start
  bool growth_pending_ = false;       // guarded by mu_; waits for a full collection
  std::optional<diff::HeapExhaustion> exhaustion_;  // guarded by mu_
  std::optional<HeapLeak> heap_leak_;               // guarded by mu_
  // Suspect class -> accumulation point class of the newest analysed dump; guarded by mu_.
  std::map<std::string, std::string> named_points_;
  // Class leak id -> heap leak id it took over; guarded by mu_.
  std::map<std::string, std::string> alias_;
  absl::Time last_histogram_time_ = absl::InfinitePast();  // guarded by mu_
  // Log-once state; guarded by mu_.
  std::set<std::string> suspect_names_;
  std::map<std::string, diff::Leak> logged_leaks_;
  bool live_set_growing_ = false;
  bool failing_ = false;
};

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_AGENT_WATCH_H_
