#include "daemon/string_table_watch.h"

#include <string>

#include "absl/strings/str_format.h"

namespace heapwatch::daemon {
namespace {

uint64_t Entries(const collectors::StringTableStats& s) { return s.entries; }

// A suspect is an interned-string leak while the interned strings' bytes grew over the window too.
std::optional<diff::Leak> InternedStringLeak(const ScalarTrend& trend, const diff::Suspect& suspect,
                                             const collectors::StringTableStats& first,
                                             const collectors::StringTableStats& last) {
  if (last.strings_bytes() <= first.strings_bytes()) return std::nullopt;
  diff::Leak leak = trend.LeakFrom(kInternedStringsLeakKind, suspect);
  leak.bytes = last.strings_bytes();
  const double grown =
      static_cast<double>(last.strings_bytes()) - static_cast<double>(first.strings_bytes());
  const double span = absl::ToDoubleSeconds(last.time - first.time);
  if (span > 0) leak.growth_bytes_per_second = grown / span;
  leak.classes.push_back(
      {std::string(kStringTableSeries), last.strings_bytes(), leak.growth_bytes_per_second});
  const int64_t entry_growth =
      static_cast<int64_t>(last.entries) - static_cast<int64_t>(first.entries);
  leak.detail = absl::StrFormat(
      "interned-string growth: %d strings in the JVM's string table (%+d in %s, %.2f strings/s), "
      "%.1f MiB (%+.1f MiB). %s",
      last.entries, entry_growth, absl::FormatDuration(last.time - first.time),
      suspect.growth_bytes_per_second, static_cast<double>(last.strings_bytes()) / (1 << 20),
      grown / (1 << 20), std::string(kInternedStringsExplanation));
  return leak;
}

}  // namespace

StringTableWatch::StringTableWatch(diff::LeakOptions trend, absl::Time agent_start,
                                   StringTableWatchOptions options)
    : watch_({kStringTableSeries, options.min_entry_growth, options.min_relative_growth, &Entries,
              &InternedStringLeak},
             trend, agent_start) {}

std::optional<diff::Leak> StringTableWatch::Observe(const collectors::StringTableStats& stats) {
  return watch_.Observe(stats);
}

std::optional<diff::Leak> StringTableWatch::leak() const { return watch_.leak(); }

std::optional<collectors::StringTableStats> StringTableWatch::last() const { return watch_.last(); }

std::optional<diff::Suspect> StringTableWatch::suspect() const { return watch_.suspect(); }

}  // namespace heapwatch::daemon
