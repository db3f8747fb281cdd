#include "diff/heap_forecast.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/status.h"
#include "diff/trend_stats.h"

namespace heapwatch::diff {
namespace {

// z with P(Z >= z) = p, for p in (0, 0.5], by bisection on NormalUpperTail (60 steps: exact to
// double precision over [0, 40]).
double NormalUpperQuantile(double p) {
  double lo = 0, hi = 40;
  for (int i = 0; i < 60; ++i) {
    const double mid = (lo + hi) / 2;
    if (NormalUpperTail(mid) > p) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return (lo + hi) / 2;
}

}  // namespace

std::pair<double, double> TheilSenSlopeInterval(std::span<const double> times,
                                                std::span<const double> values,
                                                double confidence) {
  HW_CHECK(times.size() == values.size());
  std::vector<double> slopes;
  const size_t n = times.size();
  slopes.reserve(n * (n - (n > 0)) / 2);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      if (times[j] == times[i]) continue;
      slopes.push_back((values[j] - values[i]) / (times[j] - times[i]));
    }
  }
  if (slopes.empty()) return {0, 0};
  std::sort(slopes.begin(), slopes.end());
  const double big_n = static_cast<double>(slopes.size());
  const double nn = static_cast<double>(n);
  const double var_s = nn * (nn - 1) * (2 * nn + 5) / 18;
  const double c = NormalUpperQuantile((1 - confidence) / 2) * std::sqrt(var_s);
  // 1-based ranks M1 and M2 + 1, rounded outwards (the interval is at least as wide as asked).
  const double m1 = std::floor((big_n - c) / 2);
  const double m2 = std::ceil((big_n + c) / 2) + 1;
  const size_t lo = static_cast<size_t>(std::clamp(m1, 1.0, big_n)) - 1;
  const size_t hi = static_cast<size_t>(std::clamp(m2, 1.0, big_n)) - 1;
  return {slopes[lo], slopes[hi]};
}

std::optional<HeapExhaustion> ForecastHeapExhaustion(std::span<const LiveSetPoint> points,
                                                     const HeapForecastOptions& options,
                                                     absl::Duration span) {
  // The newest usable points (one per part of the span when it is positive), oldest first.
  std::vector<const LiveSetPoint*> used;
  const LiveSetPoint* newest_usable = nullptr;
  for (auto it = points.rbegin(); it != points.rend(); ++it) {
    if (it->source != LiveSetSource::kYoungUpperBound) {
      newest_usable = &*it;
      break;
    }
  }
  if (newest_usable == nullptr) return std::nullopt;
  const bool thin = span > absl::ZeroDuration() && options.max_points > 0;
  const absl::Duration part = thin ? span / static_cast<double>(options.max_points) : absl::ZeroDuration();
  int64_t last_part = -1;
  for (auto it = points.rbegin(); it != points.rend() && used.size() < options.max_points; ++it) {
    if (it->source == LiveSetSource::kYoungUpperBound) continue;
    if (thin) {
      const absl::Duration age = newest_usable->time - it->time;
      if (age > span) break;
      absl::Duration rem;
      const int64_t p = absl::IDivDuration(age, part, &rem);
      if (p == last_part) continue;  // the newest point of this part is already used
      last_part = p;
    }
    used.push_back(&*it);
  }
  if (used.size() < std::max<size_t>(options.min_points, 2)) return std::nullopt;
  std::reverse(used.begin(), used.end());
  const LiveSetPoint& newest = *used.back();
  if (newest.max_bytes == 0) return std::nullopt;
  // Seconds since the oldest point used (keeps the products well inside double precision).
  const absl::Time origin = used.front()->time;
  std::vector<double> t, y, scratch;
  for (const LiveSetPoint* p : used) {
    t.push_back(absl::ToDoubleSeconds(p->time - origin));
    y.push_back(static_cast<double>(p->live_bytes));
  }
  const double slope = TheilSenSlope(t, y, &scratch);
  if (!(slope > 0)) return std::nullopt;
  const auto [low, high] = TheilSenSlopeInterval(t, y, options.confidence);
  const double intercept = TheilSenIntercept(t, y, slope, &scratch);
  const double level = std::max(0.0, intercept + slope * t.back());
  const double room =
      std::max(0.0, options.exhaustion_fraction * static_cast<double>(newest.max_bytes) - level);
  auto seconds = [](double s) {
    return s >= 1e12 ? absl::InfiniteDuration() : absl::Seconds(s);
  };
  HeapExhaustion e;
  e.growth_bytes_per_second = slope;
  e.growth_low_bytes_per_second = low;
  e.growth_high_bytes_per_second = std::max(high, slope);
  e.estimate = seconds(room / slope);
  e.soonest = seconds(room / e.growth_high_bytes_per_second);
  e.latest = low > 0 ? seconds(room / low) : absl::InfiniteDuration();
  e.live_bytes = static_cast<uint64_t>(level);
  e.max_bytes = newest.max_bytes;
  e.computed_time = newest.time;
  e.points = used.size();
  return e;
}

}  // namespace heapwatch::diff
