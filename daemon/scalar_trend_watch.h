// The trend of one scalar series of one agent (a count read from the JVM, e.g. its live classes or
// its interned strings), through its own diff::LeakDetector: what ClassLoadingWatch
// (class_loading_watch.h) and StringTableWatch (string_table_watch.h) share. Each of them is a
// thin specialisation that says what the series' value of a reading is, its thresholds, and how a
// suspect becomes a leak (the second signal that confirms it, the leak's text).
//
// Rule: the value goes through the detector as the series' "bytes" and "instances" of a one-row
// class histogram, with the daemon's trend options (the same warm-up, significance,
// sustained-growth and still-growing tests as class histograms) except for min_growth_bytes and
// min_relative_growth, which take the series' own thresholds (in its own unit). The newest `window`
// readings are kept (window = max(trend.window_snapshots, trend.min_snapshots)), so that the leak
// rule can compare the oldest and newest of them.
//
// Thread-safety: ScalarTrendWatch is thread-safe (one mutex); ScalarTrend is not.
#ifndef HEAPWATCH_DAEMON_SCALAR_TREND_WATCH_H_
#define HEAPWATCH_DAEMON_SCALAR_TREND_WATCH_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "diff/leak_detector.h"

namespace heapwatch::daemon {

// The detector half: one series through one diff::LeakDetector. Not thread-safe.
class ScalarTrend {
 public:
  // `series`: the detector's class name for the series (and the leak's main_class); `min_growth`
  // (in the series' unit, over the trend window) and `min_relative_growth` replace the trend's
  // byte thresholds. `agent_start` as for diff::LeakDetector (warm-up).
  ScalarTrend(std::string_view series, diff::LeakOptions trend, absl::Time agent_start,
              uint64_t min_growth, double min_relative_growth);
  // Feeds one value at `time` (callers ensure times increase). O(window).
  void Observe(absl::Time time, uint64_t value);
  // The detector's suspect for the series (growth per second in the series' unit as its
  // growth_bytes_per_second); nullopt when not growing.
  std::optional<diff::Suspect> suspect() const;
  // Readings the leak rule compares (oldest and newest of the window).
  size_t window() const { return window_; }
  // A leak of `kind` on the series with the suspect's id, first_seen, time_scale and score; the
  // caller fills bytes, growth, classes and detail.
  diff::Leak LeakFrom(std::string_view kind, const diff::Suspect& suspect) const;

 private:
  std::string series_;
  size_t window_;
  std::unique_ptr<diff::LeakDetector> detector_;
};

// The reading half: readings of type Point (with a `time` member) kept for the window, the
// series' value of a reading, and the rule that turns a suspect into a leak.
template <typename Point>
class ScalarTrendWatch {
 public:
  struct Spec {
    std::string_view series;          // as for ScalarTrend
    uint64_t min_growth = 0;          // as for ScalarTrend
    double min_relative_growth = 0;   // as for ScalarTrend
    uint64_t (*value)(const Point&);  // the series' value of a reading
    // The leak after a reading, given the detector's suspect and the oldest and newest readings of
    // the window (ScalarTrend::LeakFrom builds its common fields); nullopt when the series'
    // confirming signal says it is not one.
    std::optional<diff::Leak> (*leak)(const ScalarTrend& trend, const diff::Suspect& suspect,
                                      const Point& first, const Point& last);
  };

  ScalarTrendWatch(const Spec& spec, const diff::LeakOptions& trend, absl::Time agent_start)
      : spec_(spec),
        trend_(spec.series, trend, agent_start, spec.min_growth, spec.min_relative_growth) {}

  // Feeds one reading (times must increase; an older or equal one is ignored). Returns the leak
  // after it, if any. O(window).
  std::optional<diff::Leak> Observe(const Point& point) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!recent_.empty() && point.time <= recent_.back().time) return LeakLocked();
    trend_.Observe(point.time, spec_.value(point));
    recent_.push_back(point);
    while (recent_.size() > trend_.window()) recent_.pop_front();
    return LeakLocked();
  }
  // The current leak, if any.
  std::optional<diff::Leak> leak() const {
    std::lock_guard<std::mutex> lock(mu_);
    return LeakLocked();
  }
  // The newest reading.
  std::optional<Point> last() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (recent_.empty()) return std::nullopt;
    return recent_.back();
  }
  // The detector's suspect for the series; nullopt when not growing.
  std::optional<diff::Suspect> suspect() const {
    std::lock_guard<std::mutex> lock(mu_);
    return trend_.suspect();
  }

 private:
  std::optional<diff::Leak> LeakLocked() const {
    if (recent_.empty()) return std::nullopt;
    const std::optional<diff::Suspect> suspect = trend_.suspect();
    if (!suspect) return std::nullopt;
    return spec_.leak(trend_, *suspect, recent_.front(), recent_.back());
  }

  const Spec spec_;
  mutable std::mutex mu_;
  ScalarTrend trend_;
  std::deque<Point> recent_;
};

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_SCALAR_TREND_WATCH_H_
