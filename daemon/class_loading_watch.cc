#include "daemon/class_loading_watch.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/histogram.h"

namespace heapwatch::daemon {
namespace {

std::string Mebibytes(uint64_t bytes) {
  return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / (1 << 20));
}

}  // namespace

ClassLoadingWatch::ClassLoadingWatch(diff::LeakOptions trend, absl::Time agent_start,
                                     ClassLoadingWatchOptions options)
    : options_(options) {
  trend.trend.min_growth_bytes = options.min_class_growth;
  trend.trend.min_relative_growth = options.min_relative_growth;
  window_ = std::max(trend.trend.window_snapshots, trend.trend.min_snapshots);
  detector_ = std::make_unique<diff::LeakDetector>(trend, agent_start);
}

std::optional<diff::Leak> ClassLoadingWatch::Observe(const ClassLoadingPoint& point) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!recent_.empty() && point.time <= recent_.back().time) return LeakLocked();
  Snapshot s;
  s.time = point.time;
  s.cost.mode = HistogramMode::kLive;
  // The count as the series' "bytes" (the trend tests run on bytes) and its "instances".
  s.histogram.rows.push_back(
      {std::string(kClassLoadingSeries), "", point.live_classes(), point.live_classes()});
  detector_->Observe(s);
  recent_.push_back(point);
  while (recent_.size() > window_) recent_.pop_front();
  return LeakLocked();
}

std::optional<diff::Leak> ClassLoadingWatch::LeakLocked() const {
  if (recent_.empty()) return std::nullopt;
  const std::optional<diff::Suspect> suspect = detector_->SuspectFor(kClassLoadingSeries);
  if (!suspect) return std::nullopt;
  const ClassLoadingPoint& first = recent_.front();
  const ClassLoadingPoint& last = recent_.back();
  const bool metaspace_known = last.metaspace_used_bytes > 0;
  if (metaspace_known && last.metaspace_used_bytes <= first.metaspace_used_bytes) {
    return std::nullopt;
  }
  diff::Leak leak;
  leak.kind = std::string(kClassLoaderLeakKind);
  leak.main_class = std::string(kClassLoadingSeries);
  leak.id = suspect->leak;
  leak.first_seen = suspect->first_seen;
  leak.time_scale = suspect->time_scale;
  leak.score = suspect->score;
  leak.bytes = last.metaspace_used_bytes;
  const double span = absl::ToDoubleSeconds(last.time - first.time);
  if (span > 0 && metaspace_known) {
    leak.growth_bytes_per_second = (static_cast<double>(last.metaspace_used_bytes) -
                                    static_cast<double>(first.metaspace_used_bytes)) /
                                   span;
  }
  leak.classes.push_back(
      {std::string(kClassLoadingSeries), last.metaspace_used_bytes, leak.growth_bytes_per_second});
  const int64_t class_growth =
      static_cast<int64_t>(last.live_classes()) - static_cast<int64_t>(first.live_classes());
  leak.detail = absl::StrFormat(
      "class loader leak: %d classes loaded and not unloaded (%+d in %s, %.2f classes/s), "
      "metaspace %s",
      last.live_classes(), class_growth, absl::FormatDuration(last.time - first.time),
      suspect->growth_bytes_per_second,
      metaspace_known ? absl::StrFormat("%s (%+.1f MiB)", Mebibytes(last.metaspace_used_bytes),
                                        (static_cast<double>(last.metaspace_used_bytes) -
                                         static_cast<double>(first.metaspace_used_bytes)) /
                                            (1 << 20))
                      : std::string("not published"));
  return leak;
}

std::optional<diff::Leak> ClassLoadingWatch::leak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return LeakLocked();
}

std::optional<ClassLoadingPoint> ClassLoadingWatch::last() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (recent_.empty()) return std::nullopt;
  return recent_.back();
}

std::optional<diff::Suspect> ClassLoadingWatch::suspect() const {
  std::lock_guard<std::mutex> lock(mu_);
  return detector_->SuspectFor(kClassLoadingSeries);
}

}  // namespace heapwatch::daemon
