// The class-loading trend of one agent: a class loader leak seen from the JVM's counters alone
// (zero pause), reported as a leak of kind "class_loader" next to the class-histogram leaks and
// escalated like them.
//
// Input: ClassLoadingPoint readings (collectors/class_loading.h): the daemon's GC sampler reads an attach
// agent's counters every min(15 s, collection.interval) (no pause), so a leak is not held back by the
// pause budget's spacing of histograms.
// Rule (docs/class-loaders.md): the agent's live class count (loaded - unloaded) goes through its
// own diff::LeakDetector as one series, with the daemon's trend options (so the same warm-up,
// significance, sustained-growth and still-growing tests; start-up class loading is a step that
// warm-up and test C rule out) but thresholds in classes: growth over the window of at least
// min_class_growth classes and min_relative_growth of the count. A suspect of that detector is a
// class loader leak only while metaspace also grew over the window (the newest metaspace reading
// above the oldest one of the window), or when the JVM publishes no metaspace counters: loaded
// classes that are unloaded again (a sawtooth) or that did not take memory are not a leak.
//
// The detector and the window of readings are a ScalarTrendWatch (scalar_trend_watch.h); this class
// supplies the series' value, its thresholds and the metaspace rule.
//
// Thread-safety: thread-safe (one mutex).
#ifndef HEAPWATCH_DAEMON_CLASS_LOADING_WATCH_H_
#define HEAPWATCH_DAEMON_CLASS_LOADING_WATCH_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/time/time.h"
#include "common/class_loading.h"
#include "daemon/scalar_trend_watch.h"
#include "diff/leak_detector.h"

namespace heapwatch::daemon {

// The series name under which the live class count goes through the detector, and the
// LeakClass::class_name of a class loader leak.
inline constexpr std::string_view kClassLoadingSeries = "<loaded classes>";
// diff::Leak::kind of a class loader leak.
inline constexpr std::string_view kClassLoaderLeakKind = "class_loader";

struct ClassLoadingWatchOptions {
  uint64_t min_class_growth = 100;    // classes over the trend window
  double min_relative_growth = 0.02;  // of the live class count at the window's start
};

class ClassLoadingWatch {
 public:
  // `trend`: the daemon's trend options (config.trend); min_growth_bytes and min_relative_growth
  // are replaced by the options above. `agent_start` as for diff::LeakDetector (warm-up).
  ClassLoadingWatch(diff::LeakOptions trend, absl::Time agent_start,
                    ClassLoadingWatchOptions options = {});

  // Feeds one reading (times must increase; an older or equal one is ignored). Returns the class
  // loader leak after it, if any. O(window).
  std::optional<diff::Leak> Observe(const ClassLoadingPoint& point);
  // The current class loader leak, if any, and the newest reading.
  std::optional<diff::Leak> leak() const;
  std::optional<ClassLoadingPoint> last() const;
  // The detector's suspect for the series (the growth in classes per second is its
  // growth_bytes_per_second), for ExplainSuspect-style output; nullopt when not growing.
  std::optional<diff::Suspect> suspect() const;

 private:
  ScalarTrendWatch<ClassLoadingPoint> watch_;
};

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_CLASS_LOADING_WATCH_H_
