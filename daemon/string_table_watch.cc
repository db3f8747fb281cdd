#include "daemon/string_table_watch.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/histogram.h"

namespace heapwatch::daemon {

StringTableWatch::StringTableWatch(diff::LeakOptions trend, absl::Time agent_start,
                                   StringTableWatchOptions options) {
  trend.trend.min_growth_bytes = options.min_entry_growth;
  trend.trend.min_relative_growth = options.min_relative_growth;
  window_ = std::max(trend.trend.window_snapshots, trend.trend.min_snapshots);
  detector_ = std::make_unique<diff::LeakDetector>(trend, agent_start);
}

std::optional<diff::Leak> StringTableWatch::Observe(const collectors::StringTableStats& stats) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!recent_.empty() && stats.time <= recent_.back().time) return LeakLocked();
  Snapshot s;
  s.time = stats.time;
  s.cost.mode = HistogramMode::kLive;
  // The entry count as the series' "bytes" (the trend tests run on bytes) and its "instances".
  s.histogram.rows.push_back({std::string(kStringTableSeries), "", stats.entries, stats.entries});
  detector_->Observe(s);
  recent_.push_back(stats);
  while (recent_.size() > window_) recent_.pop_front();
  return LeakLocked();
}

std::optional<diff::Leak> StringTableWatch::LeakLocked() const {
  if (recent_.empty()) return std::nullopt;
  const std::optional<diff::Suspect> suspect = detector_->SuspectFor(kStringTableSeries);
  if (!suspect) return std::nullopt;
  const collectors::StringTableStats& first = recent_.front();
  const collectors::StringTableStats& last = recent_.back();
  if (last.strings_bytes() <= first.strings_bytes()) return std::nullopt;
  diff::Leak leak;
  leak.kind = std::string(kInternedStringsLeakKind);
  leak.main_class = std::string(kStringTableSeries);
  leak.id = suspect->leak;
  leak.first_seen = suspect->first_seen;
  leak.time_scale = suspect->time_scale;
  leak.score = suspect->score;
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
      suspect->growth_bytes_per_second, static_cast<double>(last.strings_bytes()) / (1 << 20),
      grown / (1 << 20), std::string(kInternedStringsExplanation));
  return leak;
}

std::optional<diff::Leak> StringTableWatch::leak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return LeakLocked();
}

std::optional<collectors::StringTableStats> StringTableWatch::last() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (recent_.empty()) return std::nullopt;
  return recent_.back();
}

std::optional<diff::Suspect> StringTableWatch::suspect() const {
  std::lock_guard<std::mutex> lock(mu_);
  return detector_->SuspectFor(kStringTableSeries);
}

}  // namespace heapwatch::daemon
