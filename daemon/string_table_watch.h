// The interned-string trend of one agent: String.intern() on unbounded input (request ids, user
// input, generated keys) seen from the JVM's string table statistics (collectors/string_table.h,
// `jcmd VM.stringtable`), reported as a leak of kind "interned_strings" next to the
// class-histogram leaks. A heap dump does not mark interned strings, so this is the only place
// heapwatch names this leak.
//
// Input: StringTableStats readings, one per collection at most every
// collection.string_table_interval (docs/leak-patterns.md).
// Rule: the number of table entries goes through its own diff::LeakDetector as one series, with the
// daemon's trend options (same warm-up, significance, sustained-growth and still-growing tests:
// the strings interned while the application starts are a step that warm-up and test C rule out)
// but thresholds in entries: growth over the window of at least min_entry_growth entries and
// min_relative_growth of the count. A suspect of that detector is an interned-string leak only
// while the interned strings' bytes (entries + literals) also grew over the window.
//
// The detector and the window of readings are a ScalarTrendWatch (scalar_trend_watch.h); this class
// supplies the series' value, its thresholds and the bytes rule.
//
// Thread-safety: thread-safe (one mutex).
#ifndef HEAPWATCH_DAEMON_STRING_TABLE_WATCH_H_
#define HEAPWATCH_DAEMON_STRING_TABLE_WATCH_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/time/time.h"
#include "collectors/string_table.h"
#include "daemon/scalar_trend_watch.h"
#include "diff/leak_detector.h"

namespace heapwatch::daemon {

// The series name under which the entry count goes through the detector, and the
// LeakClass::class_name of an interned-string leak.
inline constexpr std::string_view kStringTableSeries = "<interned strings>";
// diff::Leak::kind of an interned-string leak.
inline constexpr std::string_view kInternedStringsLeakKind = "interned_strings";
// The explanation and usual fix shown with the leak (docs/leak-patterns.md).
inline constexpr std::string_view kInternedStringsExplanation =
    "The JVM's string table keeps growing: the application calls String.intern() on values that "
    "never repeat (request or session ids, user input, generated keys) and keeps them reachable, "
    "so every call adds an entry. Usual fix: do not intern unbounded values; deduplicate them with "
    "a bounded map or cache, or let G1 deduplicate String contents with "
    "-XX:+UseStringDeduplication, which shares the byte arrays without the table.";

struct StringTableWatchOptions {
  uint64_t min_entry_growth = 10000;  // entries over the trend window
  double min_relative_growth = 0.05;  // of the entry count at the window's start
};

class StringTableWatch {
 public:
  // `trend`: the daemon's trend options (config.trend); min_growth_bytes and min_relative_growth
  // are replaced by the options above. `agent_start` as for diff::LeakDetector (warm-up).
  StringTableWatch(diff::LeakOptions trend, absl::Time agent_start,
                   StringTableWatchOptions options = {});

  // Feeds one reading (times must increase; an older or equal one is ignored). Returns the
  // interned-string leak after it, if any. O(window).
  std::optional<diff::Leak> Observe(const collectors::StringTableStats& stats);
  // The current interned-string leak, if any, and the newest reading.
  std::optional<diff::Leak> leak() const;
  std::optional<collectors::StringTableStats> last() const;
  // The detector's suspect for the series (growth in entries per second as its
  // growth_bytes_per_second); nullopt when not growing.
  std::optional<diff::Suspect> suspect() const;

 private:
  ScalarTrendWatch<collectors::StringTableStats> watch_;
};

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_STRING_TABLE_WATCH_H_
