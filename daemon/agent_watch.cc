#include "daemon/agent_watch.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "daemon/config.h"
#include "daemon/escalation_policy.h"
#include "diff/trend_stats.h"
#include "spdlog/spdlog.h"

namespace heapwatch::daemon {
namespace {

std::string ScaleText(absl::Duration scale, std::string_view zero) {
  return scale == absl::ZeroDuration() ? std::string(zero) : FormatDurationText(scale);
}

// The first non-JDK class of `classes`, else the first class (diff/leak_detector.h's rule when
// `classes` are sorted by bytes; the attribution's classes are sorted by growth).
std::string MainClassOf(const std::vector<diff::LeakClass>& classes) {
  for (const diff::LeakClass& c : classes) {
    if (!diff::IsJdkClass(c.class_name)) return c.class_name;
  }
  return classes.empty() ? std::string() : classes.front().class_name;
}

void SortLeaks(std::vector<diff::Leak>* leaks) {
  std::sort(leaks->begin(), leaks->end(), [](const diff::Leak& a, const diff::Leak& b) {
    return a.growth_bytes_per_second != b.growth_bytes_per_second
               ? a.growth_bytes_per_second > b.growth_bytes_per_second
               : a.id < b.id;
  });
}

}  // namespace

std::string DescribeAgent(const AgentInfo& info) {
  return absl::StrFormat("%s (pid %d, %s)", info.id.value, info.pid,
                         info.main_class.empty() ? "unknown main class" : info.main_class);
}

diff::LeakOptions LiveSetTrendOptions(const diff::LeakOptions& trend) {
  diff::LeakOptions o = trend;
  o.trend.warmup_snapshots = std::min<size_t>(o.trend.warmup_snapshots, 1);
  o.trend.min_snapshots = std::max<size_t>(2 * o.trend.segments, 8);
  o.trend.window_snapshots = std::max(o.trend.window_snapshots, o.trend.min_snapshots);
  o.trend.recent_snapshots = std::min(o.trend.recent_snapshots, o.trend.min_snapshots / 2);
  return o;
}

AgentWatch::AgentWatch(const AgentInfo& info, AgentWatchOptions options,
                       const storage::SnapshotStore* store)
    : info_(info),
      options_(std::move(options)),
      store_(store),
      detector_(std::make_unique<diff::LeakDetector>(options_.trend, info.start_time)),
      live_set_detector_(std::make_unique<diff::LeakDetector>(LiveSetTrendOptions(options_.trend),
                                                              info.start_time)),
      class_loading_(std::make_unique<ClassLoadingWatch>(options_.trend, info.start_time)) {
  if (options_.string_table) {
    string_table_ = std::make_unique<StringTableWatch>(options_.trend, info.start_time);
  }
}

AgentWatch::~AgentWatch() = default;

// ---- replay ----

WatchUpdate AgentWatch::Replay(absl::Duration horizon, size_t max_snapshots,
                               const std::vector<diff::LeakDetector::AccumulationPoint>& points,
                               Replayed* replayed) {
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time started = absl::Now();
  Replayed result;
  auto times = store_->ListSnapshotTimes(info_.id, absl::InfinitePast(), absl::InfiniteFuture());
  if (!times.ok()) {
    if (times.status().code() != absl::StatusCode::kNotFound) {
      spdlog::error("agent {}: cannot read its stored history, starting afresh: {}",
                    DescribeAgent(info_), times.status().ToString());
    }
    if (replayed != nullptr) *replayed = result;
    return UpdateLocked(false);
  }
  if (times->empty()) {
    if (replayed != nullptr) *replayed = result;
    return UpdateLocked(false);
  }
  const diff::TrendOptions& t = options_.trend.trend;
  const size_t min_count =
      t.warmup_snapshots + 2 * std::max(t.window_snapshots, t.peak_lookback_snapshots);
  const absl::Time from = times->back() - horizon;
  size_t first = std::lower_bound(times->begin(), times->end(), from) - times->begin();
  if (times->size() - first < min_count) first = times->size() - std::min(times->size(), min_count);
  bool capped = false;
  if (times->size() - first > max_snapshots) {
    first = times->size() - max_snapshots;
    capped = true;
  }
  // Snapshots decoded at once (bounds the replay's memory).
  constexpr size_t kChunk = 256;
  for (size_t i = first; i < times->size(); i += kChunk) {
    const size_t last = std::min(times->size(), i + kChunk) - 1;
    auto chunk = store_->ReadSnapshots(info_.id, (*times)[i], (*times)[last], 0);
    if (!chunk.ok()) {
      spdlog::error(
          "agent {}: cannot read its stored history after {} of {} snapshots, the "
          "detector continues from there: {}",
          DescribeAgent(info_), result.snapshots, times->size() - first, chunk.status().ToString());
      break;
    }
    for (const Snapshot& s : *chunk) {
      if (detector_->Observe(s)) ++result.snapshots;
      result.last_snapshot_time = s.time;
      last_histogram_time_ = s.time;
    }
  }
  if (!points.empty()) detector_->SetAccumulationPoints(points);
  // The live-set series of the same span (all of it when every snapshot is replayed: the points
  // before the first histogram count too).
  auto live = store_->ReadLiveSet(info_.id, first == 0 ? absl::InfinitePast() : times->at(first),
                                  absl::InfiniteFuture(), 0);
  if (live.ok()) {
    for (const LiveSetPoint& p : *live) ObserveLiveSetLocked(p);
  }
  // A collection reads the counters just before its snapshot is stored: the class-loading and
  // string-table points of snapshot `first` lie after snapshot first - 1.
  const absl::Time series_from =
      first == 0 ? absl::InfinitePast() : (*times)[first - 1] + absl::Microseconds(1);
  std::optional<ClassLoadingPoint> loading_last;
  auto loading = store_->ReadClassLoading(info_.id, series_from, absl::InfiniteFuture(), 0);
  if (loading.ok()) {
    for (const ClassLoadingPoint& p : *loading) class_loading_->Observe(p);
    if (!loading->empty()) loading_last = loading->back();
  } else if (loading.status().code() != absl::StatusCode::kNotFound) {
    spdlog::error(
        "agent {}: cannot read its stored class-loading series, its trend starts "
        "afresh: {}",
        DescribeAgent(info_), loading.status().ToString());
  }
  if (string_table_ != nullptr) {
    auto strings = store_->ReadStringTable(info_.id, series_from, absl::InfiniteFuture(), 0);
    if (strings.ok()) {
      for (const collectors::StringTableStats& p : *strings) string_table_->Observe(p);
    } else if (strings.status().code() != absl::StatusCode::kNotFound) {
      spdlog::error(
          "agent {}: cannot read its stored string-table series, its interned-string trend "
          "starts afresh: {}",
          DescribeAgent(info_), strings.status().ToString());
    }
  }
  RefreshHeapLeakLocked();
  if (heap_leak_.has_value() && alias_.empty()) AttributeLocked();
  WatchUpdate update = UpdateLocked(false);
  update.class_loading = loading_last;
  update.class_loader_leak = class_loading_->leak().has_value();
  if (string_table_ != nullptr) update.string_table = string_table_->last();
  // Remembered without logging: a replay is not news.
  for (const diff::Suspect& s : update.suspects) suspect_names_.insert(s.class_name);
  for (const diff::Leak& l : update.leaks) logged_leaks_[l.id] = l;
  live_set_growing_ = update.live_set_growth.has_value();
  spdlog::info(
      "agent {}: replayed {} stored snapshots of the last {} (of {} stored{}) in {:.1f} s: {} "
      "suspects in {} leaks",
      DescribeAgent(info_), result.snapshots, FormatDurationText(horizon), times->size(),
      capped ? absl::StrFormat(", capped at %d", max_snapshots) : "",
      absl::ToDoubleSeconds(absl::Now() - started), update.suspects.size(), update.leaks.size());
  if (replayed != nullptr) *replayed = result;
  return update;
}

// ---- ingestion ----

WatchUpdate AgentWatch::IngestHistogram(const Snapshot& snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool observed = detector_->Observe(snapshot);
  if (observed) last_histogram_time_ = snapshot.time;
  RefreshHeapLeakLocked();
  if (observed && heap_leak_.has_value() && alias_.empty()) AttributeLocked();
  WatchUpdate update = UpdateLocked(observed);
  LogChangesLocked(update);
  if (failing_) {
    spdlog::info("agent {}: collections succeed again", DescribeAgent(info_));
    failing_ = false;
  }
  return update;
}

WatchUpdate AgentWatch::IngestLiveSet(const LiveSetPoint& point) {
  std::lock_guard<std::mutex> lock(mu_);
  ObserveLiveSetLocked(point);
  RefreshHeapLeakLocked();
  WatchUpdate update = UpdateLocked(false);
  if (update.live_set_growth.has_value() != live_set_growing_) {
    if (const auto& g = update.live_set_growth) {
      spdlog::warn(
          "agent {}: its live set keeps growing ({:.0f} bytes/s on the {} time scale, "
          "now {} bytes){}",
          DescribeAgent(info_), g->growth_bytes_per_second, ScaleText(g->time_scale, "every-point"),
          g->bytes,
          update.exhaustion.has_value()
              ? absl::StrCat(", the heap runs out in about ",
                             FormatDurationText(absl::Seconds(
                                 std::round(absl::ToDoubleSeconds(update.exhaustion->estimate)))))
              : "");
    } else {
      spdlog::info("agent {}: its live set no longer grows", DescribeAgent(info_));
    }
    live_set_growing_ = update.live_set_growth.has_value();
  }
  LogChangesLocked(update);
  return update;
}

WatchUpdate AgentWatch::IngestClassLoading(const ClassLoadingPoint& point) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool leak = class_loading_->Observe(point).has_value();
  WatchUpdate update = UpdateLocked(false);
  update.class_loading = point;
  update.class_loader_leak = leak;
  return update;
}

bool AgentWatch::IngestUpperBound(absl::Time time, uint64_t bytes, uint64_t max_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  last_reading_ = std::max(last_reading_, time);
  probe_.ObserveUpperBound(time, bytes, max_bytes);
  if (growth_pending_) {
    // The wait for a full collection may have run out.
    AcceptGrowthLocked(last_reading_);
    RefreshHeapLeakLocked();
  }
  return WantsConfirmationLocked();
}

void AgentWatch::IngestStringTable(const collectors::StringTableStats& stats) {
  std::lock_guard<std::mutex> lock(mu_);
  if (string_table_ != nullptr) string_table_->Observe(stats);
}

WatchUpdate AgentWatch::SetAccumulationPoints(
    const std::vector<diff::LeakDetector::AccumulationPoint>& points) {
  std::lock_guard<std::mutex> lock(mu_);
  detector_->SetAccumulationPoints(points);
  // The named heap leak's classes are not the class detector's suspects: their points are kept
  // here.
  named_points_.clear();
  for (const auto& p : points) named_points_[p.suspect_class] = p.object_class;
  RefreshHeapLeakLocked();
  WatchUpdate update = UpdateLocked(false);
  LogChangesLocked(update);
  return update;
}

void AgentWatch::SetFailing(bool failing, std::string_view reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failing && !failing_) {
    spdlog::warn("agent {}: collection failed, retrying with backoff: {}", DescribeAgent(info_),
                 reason);
  } else if (failing) {
    spdlog::debug("agent {}: collection failed again: {}", DescribeAgent(info_), reason);
  }
  failing_ = failing;
}

diff::Explanation AgentWatch::Explain(std::string_view class_name) const {
  std::lock_guard<std::mutex> lock(mu_);
  diff::Explanation e = detector_->Explain(class_name);
  // Named as the leaks are: a class leak that took over the heap leak's id answers by that id.
  if (auto it = alias_.find(e.leak); it != alias_.end()) e.leak = it->second;
  return e;
}

bool AgentWatch::WantsConfirmation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return WantsConfirmationLocked();
}

bool AgentWatch::WantsConfirmationLocked() const {
  if (heap_leak_.has_value()) return alias_.empty() && !heap_leak_->attribution.has_value();
  if (growth_pending_) return true;  // a full collection is wanted to accept the growth
  // Not flagged yet: the probe decides (a growing live set already flagged needs no more points).
  return !live_set_growth_.has_value() &&
         probe_.Wants(last_reading_) != GrowthProbe::Want::kNothing;
}

absl::Duration AgentWatch::ConfirmationSpacing() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!heap_leak_.has_value() || !live_set_growth_.has_value()) return kMinConfirmationSpacing;
  const double g = GrowthLocked();
  uint64_t live = 0;
  for (auto it = recent_points_.rbegin(); it != recent_points_.rend(); ++it) {
    if (it->source != LiveSetSource::kYoungUpperBound) {
      live = it->live_bytes;
      break;
    }
  }
  if (live == 0 && !recent_points_.empty()) live = recent_points_.back().live_bytes;
  if (!(g > 0) || live == 0) return kMinConfirmationSpacing;
  const absl::Duration spacing = absl::Seconds(kConfirmationGrowth * static_cast<double>(live) / g);
  return std::clamp(spacing, kMinConfirmationSpacing, kMaxConfirmationSpacing);
}

std::string AgentWatch::WhySooner() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (heap_leak_.has_value()) {
    return heap_leak_->attribution.has_value() || !alias_.empty()
               ? absl::StrCat("heap leak ", heap_leak_->id, " named")
               : absl::StrCat("heap leak ", heap_leak_->id, " waits for its classes");
  }
  return absl::StrCat("growth probe ", probe_.Describe(last_reading_));
}

WatchUpdate AgentWatch::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return UpdateLocked(false);
}

// ---- the live set, the forecast and the heap leak ----

void AgentWatch::ObserveLiveSetLocked(const LiveSetPoint& point) {
  last_reading_ = std::max(last_reading_, point.time);
  if (point.source == LiveSetSource::kYoungUpperBound) return;
  probe_.ObserveExact(point);
  Snapshot s;
  s.agent = info_.id;
  s.time = point.time;
  s.cost.mode = HistogramMode::kLive;
  s.histogram.rows.push_back({std::string(kLiveSetSeries), "", 1, point.live_bytes});
  if (!live_set_detector_->Observe(s)) return;  // out of time order
  recent_points_.push_back(point);
  forecast_points_.push_back(point);
  if (forecast_points_.size() > 2 * kForecastHistory) {
    forecast_points_.erase(forecast_points_.begin(), forecast_points_.end() - kForecastHistory);
  }
  if (recent_points_.size() > options_.forecast.max_points) {
    recent_points_.erase(
        recent_points_.begin(),
        recent_points_.end() - static_cast<ptrdiff_t>(options_.forecast.max_points));
  }
  trend_growth_ = live_set_detector_->SuspectFor(kLiveSetSeries);
  AcceptGrowthLocked(last_reading_);
}

void AgentWatch::AcceptGrowthLocked(absl::Time now) {
  std::optional<diff::Suspect> held = std::move(live_set_growth_);
  live_set_growth_.reset();
  exhaustion_.reset();
  growth_pending_ = false;
  if (!trend_growth_.has_value()) {
    if (held.has_value()) HoldGrowthLocked(std::move(*held), now);
    return;
  }
  const LiveSetPoint* newest = nullptr;  // the newest full collection
  bool full_before = false;              // a full collection before the trend flagged the growth
  for (const LiveSetPoint& p : recent_points_) {
    if (p.source != LiveSetSource::kFullGc) continue;
    // One in the few minutes before: this JVM gets full collections (live histograms fit).
    if (p.time < trend_growth_->first_seen && p.time >= trend_growth_->first_seen - kFullGcRecent) {
      full_before = true;
    }
    newest = &p;
  }
  if (newest == nullptr || newest->time < trend_growth_->first_seen) {
    if (full_before && now - trend_growth_->first_seen < kFullGcWait) {
      growth_pending_ = true;
      return;
    }
  } else {
    // The growth the full collections show (Theil-Sen slope of every one among the recent exact
    // points) against the growth the other points claim over the same span (their Theil-Sen
    // slope; the trend's when fewer than two).
    std::vector<double> full_t, full_v, other_t, other_v, scratch;
    for (const LiveSetPoint& p : recent_points_) {
      if (p.source == LiveSetSource::kFullGc) {
        full_t.push_back(absl::ToDoubleSeconds(p.time - info_.start_time));
        full_v.push_back(static_cast<double>(p.live_bytes));
      }
    }
    for (const LiveSetPoint& p : recent_points_) {
      const double t = absl::ToDoubleSeconds(p.time - info_.start_time);
      if (p.source != LiveSetSource::kFullGc && t >= full_t.front() - 60 &&
          t <= full_t.back() + 60) {
        other_t.push_back(t);
        other_v.push_back(static_cast<double>(p.live_bytes));
      }
    }
    if (full_t.size() >= 2) {
      const double shown = diff::TheilSenSlope(full_t, full_v, &scratch);
      const double claimed = other_t.size() >= 2 ? diff::TheilSenSlope(other_t, other_v, &scratch)
                                                 : trend_growth_->growth_bytes_per_second;
      const double span = full_t.back() - full_t.front();
      const double slack = std::max(double{1 << 20}, 0.02 * static_cast<double>(newest->max_bytes));
      if (shown < 0.5 * claimed && (claimed - shown) * span >= slack) return;  // refuted
    }
  }
  live_set_growth_ = trend_growth_;
  // Where the evidence of this episode starts: its window's oldest point when first accepted (kept
  // while the same episode, same first_seen, is accepted again).
  if (!held.has_value() || held->first_seen != trend_growth_->first_seen) {
    absl::Time start = trend_growth_->first_seen -
                       trend_growth_->time_scale * static_cast<double>(trend_growth_->window_size);
    if (trend_growth_->time_scale == absl::ZeroDuration() && !recent_points_.empty()) {
      const size_t n =
          std::min(recent_points_.size(), std::max<size_t>(trend_growth_->window_size, 1));
      start = recent_points_[recent_points_.size() - n].time;
    }
    growth_evidence_start_ = start;
    growth_accepted_at_ = now;
  }
  // Over the window the trend flagged (its buckets' width times their number; the newest points on
  // the every-point scale).
  const absl::Duration span =
      trend_growth_->time_scale * static_cast<double>(trend_growth_->window_size);
  exhaustion_ = diff::ForecastHeapExhaustion(forecast_points_, options_.forecast, span);
}

void AgentWatch::HoldGrowthLocked(diff::Suspect held, absl::Time now) {
  // A flag younger than kHoldMinAge is not held: a healthy JVM's brief flicker (16 s in CI) must
  // end when the trend says so.
  if (now - growth_accepted_at_ < kHoldMinAge) return;
  const absl::Duration flagged_span = held.first_seen - growth_evidence_start_;
  const absl::Duration span =
      std::min(now - growth_evidence_start_, std::max(flagged_span, kHoldSpan));
  std::optional<diff::HeapExhaustion> forecast =
      diff::ForecastHeapExhaustion(forecast_points_, options_.forecast, span);
  if (!forecast.has_value() || !(forecast->growth_low_bytes_per_second > 0)) return;
  // And still now: the newest quarter's slope is positive when it has enough points (a live set
  // that stopped growing ends the hold once its plateau fills that quarter, not when it outweighs
  // the growth before).
  const absl::Time quarter = forecast_points_.back().time - span / 4;
  std::vector<const LiveSetPoint*> recent;
  for (const LiveSetPoint& p : forecast_points_) {
    if (p.time >= quarter && p.source != LiveSetSource::kYoungUpperBound) recent.push_back(&p);
  }
  if (recent.size() >= options_.forecast.min_points) {
    std::vector<double> ts, vs, scratch;
    const size_t n = std::min(recent.size(), options_.forecast.max_points);
    for (size_t i = 0; i < n; ++i) {  // n of them, evenly by index, the newest included
      const LiveSetPoint& p =
          *recent[recent.size() - 1 - i * (recent.size() - 1) / std::max<size_t>(n - 1, 1)];
      ts.push_back(absl::ToDoubleSeconds(p.time - info_.start_time));
      vs.push_back(static_cast<double>(p.live_bytes));
    }
    if (!(diff::TheilSenSlope(ts, vs, &scratch) > 0)) return;
  }
  held.bytes = forecast->live_bytes;
  held.growth_bytes_per_second = forecast->growth_bytes_per_second;
  live_set_growth_ = std::move(held);
  exhaustion_ = std::move(forecast);
}

void AgentWatch::RefreshHeapLeakLocked() {
  const std::vector<diff::Leak> class_leaks = detector_->Leaks();
  // Aliases of class leaks that ended are dropped.
  for (auto it = alias_.begin(); it != alias_.end();) {
    const bool alive = std::any_of(class_leaks.begin(), class_leaks.end(),
                                   [&](const diff::Leak& l) { return l.id == it->first; });
    it = alive ? std::next(it) : alias_.erase(it);
  }
  if (!live_set_growth_.has_value()) {
    heap_leak_.reset();
    return;
  }
  if (!heap_leak_.has_value()) {
    // A class leak that exists when the live set is flagged is what makes it grow (its first_seen
    // can move later as its members regroup, so existence is the test, not the times).
    if (!class_leaks.empty()) return;
    HeapLeak h;
    h.id = diff::LeakId(kLiveSetSeries, live_set_growth_->first_seen);
    h.first_seen = live_set_growth_->first_seen;
    heap_leak_ = std::move(h);
  }
  // The class evidence arrived: the fastest class leak of this episode takes over the id.
  bool joined = false;
  for (const auto& [from, to] : alias_) joined |= to == heap_leak_->id;
  if (!joined && !class_leaks.empty()) {
    const diff::Leak* fastest = nullptr;
    for (const diff::Leak& l : class_leaks) {
      if (alias_.contains(l.id)) continue;
      if (fastest == nullptr || l.growth_bytes_per_second > fastest->growth_bytes_per_second) {
        fastest = &l;
      }
    }
    if (fastest != nullptr) alias_[fastest->id] = heap_leak_->id;
  }
  // Later class leaks that are parts of it, not leaks of their own (the class detector may group a
  // leak's classes apart: byte[] payloads blurred by garbage in -all histograms did not correlate
  // with their Order records in bench/exhaustion, and were listed as a second leak):
  //   - made only of the heap leak's classes (those the attribution named, those of the class
  //     leaks joined to it), or
  //   - while the parts joined so far carry less than half of the live set's growth, one whose
  //     growth keeps their sum within twice it (the bounds of diff/leak_attribution.h);
  // never one whose accumulation point (an extended dump's) differs from the joined parts'.
  std::set<std::string, std::less<>> members;
  std::set<std::string, std::less<>> points;
  if (heap_leak_->attribution.has_value()) {
    for (const diff::LeakClass& c : heap_leak_->attribution->classes) members.insert(c.class_name);
  }
  double carried = 0;
  for (const diff::Leak& l : class_leaks) {
    auto it = alias_.find(l.id);
    if (it == alias_.end() || it->second != heap_leak_->id) continue;
    for (const diff::LeakClass& c : l.classes) members.insert(c.class_name);
    if (!l.accumulation_point.empty()) points.insert(l.accumulation_point);
    carried += l.growth_bytes_per_second;
  }
  const double growth = GrowthLocked();
  for (const diff::Leak& l : class_leaks) {
    if (alias_.contains(l.id) || l.classes.empty()) continue;
    if (!l.accumulation_point.empty() && !points.empty() &&
        !points.contains(l.accumulation_point)) {
      continue;
    }
    const bool ours =
        std::all_of(l.classes.begin(), l.classes.end(),
                    [&](const diff::LeakClass& c) { return members.contains(c.class_name); });
    const bool rest = carried < 0.5 * growth && carried + l.growth_bytes_per_second <= 2 * growth;
    if (ours || rest) {
      alias_[l.id] = heap_leak_->id;
      carried += l.growth_bytes_per_second;
    }
  }
}

double AgentWatch::GrowthLocked() const {
  return exhaustion_.has_value() ? exhaustion_->growth_bytes_per_second
                                 : live_set_growth_->growth_bytes_per_second;
}

void AgentWatch::AttributeLocked() {
  if (!live_set_growth_.has_value() || store_ == nullptr) return;
  const double g = GrowthLocked();
  // The histograms of the newest exact points' span (since the oldest of the forecast.max_points
  // newest), the newest attribution_histograms of them; live histograms only when there are two (a
  // full GC first: no garbage to blur the classes' steps).
  const absl::Time from = recent_points_.empty() ? heap_leak_->first_seen - absl::Minutes(10)
                                                 : recent_points_.front().time;
  auto read = store_->ReadSnapshots(info_.id, from, absl::InfiniteFuture(),
                                    4 * options_.attribution_histograms);
  if (!read.ok()) return;
  std::vector<Snapshot> live, histograms;
  for (const Snapshot& s : *read) {
    if (s.cost.mode == HistogramMode::kLive) live.push_back(s);
  }
  histograms = live.size() >= 2 ? std::move(live) : *std::move(read);
  if (histograms.size() > options_.attribution_histograms) {
    histograms.erase(histograms.begin(),
                     histograms.end() - static_cast<ptrdiff_t>(options_.attribution_histograms));
  }
  auto named = diff::AttributeLiveSetGrowth(histograms, g, options_.attribution);
  if (!named.has_value()) return;
  spdlog::info(
      "agent {}: the live set's growth ({:.0f} bytes/s) is carried by {} ({:.0f} % of "
      "it, from {} histograms over {})",
      DescribeAgent(info_), g,
      absl::StrJoin(
          named->classes, ", ",
          [](std::string* out, const diff::LeakClass& c) { absl::StrAppend(out, c.class_name); }),
      named->explained * 100, named->histograms, FormatDurationText(named->to - named->from));
  heap_leak_->attribution = std::move(named);
}

std::vector<diff::Leak> AgentWatch::ClassLeaksLocked() const {
  std::vector<diff::Leak> leaks;
  for (diff::Leak& l : detector_->Leaks()) {
    if (auto it = alias_.find(l.id); it != alias_.end()) l.id = it->second;
    auto same =
        std::find_if(leaks.begin(), leaks.end(), [&](const diff::Leak& m) { return m.id == l.id; });
    if (same == leaks.end()) {
      leaks.push_back(std::move(l));
      continue;
    }
    // Parts of one leak (RefreshHeapLeakLocked): one entry, its main class the application's
    // class over the JDK's, then the faster part's.
    const bool take_main = diff::IsJdkClass(same->main_class) != diff::IsJdkClass(l.main_class)
                               ? diff::IsJdkClass(same->main_class)
                               : l.growth_bytes_per_second > same->growth_bytes_per_second;
    if (take_main) {
      same->main_class = l.main_class;
      same->accumulation_point = l.accumulation_point;
    }
    for (diff::LeakClass& c : l.classes) same->classes.push_back(std::move(c));
    std::sort(same->classes.begin(), same->classes.end(),
              [](const diff::LeakClass& a, const diff::LeakClass& b) {
                return a.bytes != b.bytes ? a.bytes > b.bytes : a.class_name < b.class_name;
              });
    same->bytes = l.bytes > UINT64_MAX - same->bytes ? UINT64_MAX : same->bytes + l.bytes;
    same->growth_bytes_per_second += l.growth_bytes_per_second;
    same->score = std::max(same->score, l.score);
    same->first_seen = std::min(same->first_seen, l.first_seen);
    same->time_scale = std::min(same->time_scale, l.time_scale);
  }
  std::sort(leaks.begin(), leaks.end(), [](const diff::Leak& a, const diff::Leak& b) {
    return a.growth_bytes_per_second != b.growth_bytes_per_second
               ? a.growth_bytes_per_second > b.growth_bytes_per_second
               : a.id < b.id;
  });
  return leaks;
}

WatchUpdate AgentWatch::UpdateLocked(bool with_exported) const {
  WatchUpdate u;
  u.live_set_growth = live_set_growth_;
  u.exhaustion = exhaustion_;
  u.suspects = detector_->Suspects();
  for (diff::Suspect& s : u.suspects) {
    if (auto it = alias_.find(s.leak); it != alias_.end()) s.leak = it->second;
  }
  u.leaks = ClassLeaksLocked();
  const bool joined = heap_leak_.has_value() &&
                      std::any_of(u.leaks.begin(), u.leaks.end(),
                                  [&](const diff::Leak& l) { return l.id == heap_leak_->id; });
  if (heap_leak_.has_value() && !joined) {
    diff::Leak leak;
    leak.id = heap_leak_->id;
    leak.first_seen = heap_leak_->first_seen;
    leak.time_scale = live_set_growth_->time_scale;
    leak.score = live_set_growth_->score;
    if (const auto& a = heap_leak_->attribution) {
      // The main class: the non-JDK class that grows fastest (a->classes are by rate).
      leak.main_class = MainClassOf(a->classes);
      leak.classes = a->classes;
      std::sort(leak.classes.begin(), leak.classes.end(),
                [](const diff::LeakClass& x, const diff::LeakClass& y) {
                  return x.bytes != y.bytes ? x.bytes > y.bytes : x.class_name < y.class_name;
                });
      if (auto it = named_points_.find(leak.main_class); it != named_points_.end()) {
        leak.accumulation_point = it->second;
      } else {
        for (const diff::LeakClass& c : leak.classes) {
          if (auto p = named_points_.find(c.class_name); p != named_points_.end()) {
            leak.accumulation_point = p->second;
            break;
          }
        }
      }
      for (const diff::LeakClass& c : leak.classes) leak.bytes += c.bytes;
      leak.growth_bytes_per_second = a->growth_bytes_per_second;
      leak.detail = absl::StrFormat(
          "named from the live set's growth: %d histograms over %s, the classes carry %.0f %% "
          "of the live set's %s/s",
          a->histograms, FormatDurationText(a->to - a->from), a->explained * 100,
          FormatBytes(static_cast<uint64_t>(live_set_growth_->growth_bytes_per_second)));
      for (size_t i = 0; i < a->classes.size(); ++i) {
        const diff::LeakClass& c = a->classes[i];
        diff::Suspect s;
        s.class_name = c.class_name;
        if (i < a->instances.size()) {
          s.instances = a->instances[i];
          s.growth_instances_per_second = a->instances_per_second[i];
        }
        s.score = std::min(1.0, a->explained);
        s.first_seen = heap_leak_->first_seen;
        s.growth_bytes_per_second = c.growth_bytes_per_second;
        s.bytes = c.bytes;
        s.p_value = live_set_growth_->p_value;
        s.window_size = a->histograms;
        s.time_scale = a->to - a->from;
        s.leak = heap_leak_->id;
        u.suspects.push_back(std::move(s));
      }
    } else {
      leak.kind = "heap";
      leak.bytes = live_set_growth_->bytes;
      leak.growth_bytes_per_second = live_set_growth_->growth_bytes_per_second;
      leak.detail = absl::StrFormat(
          "the live set grows %s/s (now %s); its classes are not named yet",
          FormatBytes(static_cast<uint64_t>(live_set_growth_->growth_bytes_per_second)),
          FormatBytes(live_set_growth_->bytes));
    }
    u.leaks.push_back(std::move(leak));
  }
  // The forecast goes on the leak the live set's growth belongs to: the heap leak (or the class
  // leak that took its id), else the fastest class leak.
  if (exhaustion_.has_value() && !u.leaks.empty()) {
    diff::Leak* target = nullptr;
    for (diff::Leak& l : u.leaks) {
      if (heap_leak_.has_value() && l.id == heap_leak_->id) target = &l;
    }
    if (target == nullptr && !heap_leak_.has_value()) {
      for (diff::Leak& l : u.leaks) {
        if (target == nullptr || l.growth_bytes_per_second > target->growth_bytes_per_second) {
          target = &l;
        }
      }
    }
    if (target != nullptr) target->exhaustion = exhaustion_;
  }
  std::sort(u.suspects.begin(), u.suspects.end(),
            [](const diff::Suspect& a, const diff::Suspect& b) {
              return a.score != b.score ? a.score > b.score : a.class_name < b.class_name;
            });
  if (auto class_loader_leak = class_loading_->leak()) {
    // Escalated like any leak: its series is a suspect (the dump's analysis shows the class
    // loaders).
    if (auto s = class_loading_->suspect()) u.suspects.push_back(*s);
    u.leaks.push_back(*std::move(class_loader_leak));
  }
  // An interned-string leak is reported, not escalated: a heap dump does not mark interned
  // strings (docs/leak-patterns.md).
  if (string_table_ != nullptr) {
    if (auto interned = string_table_->leak()) u.leaks.push_back(*std::move(interned));
  }
  SortLeaks(&u.leaks);
  if (with_exported) {
    std::vector<std::string> names;
    names.reserve(u.suspects.size());
    for (const diff::Suspect& s : u.suspects) names.push_back(s.class_name);
    u.exported = detector_->LatestClasses(options_.top_classes, names);
  }
  u.wants_confirmation = WantsConfirmationLocked();
  return u;
}

// ---- logs ----

void AgentWatch::LogChangesLocked(const WatchUpdate& update) {
  std::set<std::string> names;
  for (const diff::Suspect& s : update.suspects) {
    names.insert(s.class_name);
    if (!suspect_names_.contains(s.class_name)) {
      spdlog::info(
          "agent {}: class {} is a leak suspect in leak {} (grows {:.0f} bytes/s, {:.0f} "
          "instances/s on the {} time scale, now {} bytes in {} instances, score {:.2f})",
          DescribeAgent(info_), s.class_name, s.leak, s.growth_bytes_per_second,
          s.growth_instances_per_second, ScaleText(s.time_scale, "every-snapshot"), s.bytes,
          s.instances, s.score);
    }
  }
  for (const std::string& name : suspect_names_) {
    if (!names.contains(name)) {
      spdlog::info("agent {}: class {} is no longer a leak suspect", DescribeAgent(info_), name);
    }
  }
  suspect_names_ = std::move(names);

  auto describe = [](const diff::Leak& l) {
    return absl::StrFormat(
        "leak %s (%s, %d classes, grows %.0f bytes/s, now %d bytes%s)", l.id,
        l.kind == "heap" ? std::string("the live set") : absl::StrCat("main class ", l.main_class),
        l.classes.size(), l.growth_bytes_per_second, l.bytes,
        l.accumulation_point.empty() ? ""
                                     : absl::StrCat(", accumulates in ", l.accumulation_point));
  };
  auto class_names = [](const diff::Leak& l) {
    std::vector<std::string> out;
    for (const diff::LeakClass& c : l.classes) out.push_back(c.class_name);
    std::sort(out.begin(), out.end());
    return out;
  };
  std::map<std::string, diff::Leak> now;
  for (const diff::Leak& l : update.leaks) {
    auto before = logged_leaks_.find(l.id);
    if (before == logged_leaks_.end()) {
      spdlog::warn("agent {}: {} is a leak: {}", DescribeAgent(info_), describe(l),
                   l.classes.empty() ? l.detail : absl::StrJoin(class_names(l), ", "));
    } else if (class_names(before->second) != class_names(l) ||
               before->second.main_class != l.main_class ||
               before->second.accumulation_point != l.accumulation_point) {
      spdlog::info("agent {}: {} changed: {}", DescribeAgent(info_), describe(l),
                   absl::StrJoin(class_names(l), ", "));
    }
    now[l.id] = l;
  }
  for (const auto& [id, l] : logged_leaks_) {
    if (!now.contains(id)) {
      spdlog::info("agent {}: leak {} ({}) is no longer a leak", DescribeAgent(info_), id,
                   l.main_class.empty() ? l.kind : l.main_class);
    }
  }
  logged_leaks_ = std::move(now);
}

}  // namespace heapwatch::daemon
