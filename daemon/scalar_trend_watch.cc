#include "daemon/scalar_trend_watch.h"

#include <algorithm>
#include <utility>

#include "common/histogram.h"

namespace heapwatch::daemon {

ScalarTrend::ScalarTrend(std::string_view series, diff::LeakOptions trend, absl::Time agent_start,
                         uint64_t min_growth, double min_relative_growth)
    : series_(series) {
  trend.trend.min_growth_bytes = min_growth;
  trend.trend.min_relative_growth = min_relative_growth;
  window_ = std::max(trend.trend.window_snapshots, trend.trend.min_snapshots);
  detector_ = std::make_unique<diff::LeakDetector>(trend, agent_start);
}

void ScalarTrend::Observe(absl::Time time, uint64_t value) {
  Snapshot s;
  s.time = time;
  s.cost.mode = HistogramMode::kLive;
  // The value as the series' "bytes" (the trend tests run on bytes) and its "instances".
  s.histogram.rows.push_back({series_, "", value, value});
  detector_->Observe(s);
}

std::optional<diff::Suspect> ScalarTrend::suspect() const { return detector_->SuspectFor(series_); }

diff::Leak ScalarTrend::LeakFrom(std::string_view kind, const diff::Suspect& suspect) const {
  diff::Leak leak;
  leak.kind = std::string(kind);
  leak.main_class = series_;
  leak.id = suspect.leak;
  leak.first_seen = suspect.first_seen;
  leak.time_scale = suspect.time_scale;
  leak.score = suspect.score;
  return leak;
}

}  // namespace heapwatch::daemon
