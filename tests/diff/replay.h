// Replayed histories for the LeakDetector tests and the trend sweep: classes whose bytes are
// functions of time, sampled at a (jittered) collection interval for hours or days, fed to a
// LeakDetector one snapshot at a time (nothing is stored, so days at 1 s intervals fit in memory).
#ifndef HEAPWATCH_TESTS_DIFF_REPLAY_H_
#define HEAPWATCH_TESTS_DIFF_REPLAY_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/histogram.h"
#include "diff/leak_detector.h"

namespace heapwatch::diff::replay {

// Bytes of one class at `seconds` since the start of the history (before noise). Negative or zero:
// no row.
using Shape = std::function<double(double seconds)>;

struct ReplayClass {
  std::string name;
  Shape shape;
  double noise_sd = 0;      // Gaussian noise, bytes
  double garbage = 0;       // -all garbage: uniform in [0, garbage) bytes added to every sample
  uint64_t object_size = 32;
};

struct ReplayOptions {
  absl::Duration interval = absl::Seconds(60);
  double jitter = 0.1;  // each interval is interval * U(1 - jitter, 1 + jitter)
  absl::Duration length = absl::Hours(24);
  uint64_t seed = 1;
  HistogramMode mode = HistogramMode::kLive;
};

// What happened to one class during a replay.
struct ClassOutcome {
  std::optional<double> first_flagged;  // seconds since the start, first time it was a suspect
  std::optional<double> last_flagged;   // seconds, start of its latest episode
  std::optional<double> last_cleared;   // seconds, last time it stopped being one
  bool flagged_at_end = false;
  size_t episodes = 0;
};

struct ReplayResult {
  std::vector<ClassOutcome> classes;  // in the order given
  size_t snapshots = 0;
  size_t max_leaks = 0;  // most leaks at once
};

// Runs the replay; `on_snapshot` (optional) is called after every Observe with the seconds since
// the start. Stops early when `stop` returns true.
inline ReplayResult Replay(const LeakOptions& options, const std::vector<ReplayClass>& classes,
                           const ReplayOptions& r,
                           const std::function<bool(const LeakDetector&, double)>& stop = {}) {
  LeakDetector detector(options);
  std::mt19937_64 rng(r.seed);
  std::uniform_real_distribution<double> jitter(1 - r.jitter, 1 + r.jitter);
  std::uniform_real_distribution<double> unit(0, 1);
  std::normal_distribution<double> normal(0, 1);
  ReplayResult out;
  out.classes.resize(classes.size());
  std::vector<bool> was(classes.size(), false);
  const absl::Time start = absl::FromUnixSeconds(1'700'000'000);
  const double length = absl::ToDoubleSeconds(r.length);
  Snapshot snapshot;
  snapshot.agent = AgentId("replay");
  snapshot.cost.mode = r.mode;
  for (double t = 0; t <= length; t += absl::ToDoubleSeconds(r.interval) * jitter(rng)) {
    snapshot.time = start + absl::Seconds(t);
    snapshot.histogram.rows.clear();
    for (const ReplayClass& c : classes) {
      double v = c.shape(t);
      if (v <= 0) continue;
      v += c.noise_sd * normal(rng) + (c.garbage > 0 ? c.garbage * unit(rng) : 0);
      if (v <= 0) continue;
      const uint64_t bytes = static_cast<uint64_t>(std::llround(v));
      snapshot.histogram.rows.push_back(
          {c.name, "", std::max<uint64_t>(1, bytes / c.object_size), bytes});
    }
    detector.Observe(snapshot);
    ++out.snapshots;
    for (size_t i = 0; i < classes.size(); ++i) {
      const bool is = detector.SuspectFor(classes[i].name).has_value();
      if (is && !was[i]) {
        if (!out.classes[i].first_flagged) out.classes[i].first_flagged = t;
        out.classes[i].last_flagged = t;
        ++out.classes[i].episodes;
      }
      if (!is && was[i]) out.classes[i].last_cleared = t;
      was[i] = is;
    }
    out.max_leaks = std::max(out.max_leaks, detector.Leaks().size());
    if (stop && stop(detector, t)) break;
  }
  for (size_t i = 0; i < classes.size(); ++i) out.classes[i].flagged_at_end = was[i];
  return out;
}

// Shapes.
inline Shape Flat(double level) {
  return [level](double) { return level; };
}
// Flat at `base` until `start` seconds, then grows by `rate` bytes/s.
inline Shape LinearLeak(double base, double rate, double start = 0) {
  return [=](double t) { return base + (t > start ? rate * (t - start) : 0); };
}
// Fills linearly from `base` by `amount` between `from` and `to` seconds, then stays.
inline Shape Fill(double base, double amount, double from, double to) {
  return [=](double t) {
    if (t <= from) return base;
    if (t >= to) return base + amount;
    return base + amount * (t - from) / (to - from);
  };
}
// A buffer that grows linearly by `amplitude` over `period` seconds and is then emptied.
inline Shape Sawtooth(double base, double amplitude, double period, double phase = 0) {
  return [=](double t) {
    const double x = std::fmod(t + phase, period) / period;
    return base + amplitude * x;
  };
}
// A daily cycle: sessions fill from 08:00 to 12:00, stay until 18:00, drain by 22:00; the peak is
// the same every day. `start_hour` is the hour of day at t = 0.
inline Shape DailyCycle(double base, double amplitude, double start_hour = 0) {
  return [=](double t) {
    const double h = std::fmod(t / 3600 + start_hour, 24);
    double x = 0;
    if (h >= 8 && h < 12) x = (h - 8) / 4;
    if (h >= 12 && h < 18) x = 1;
    if (h >= 18 && h < 22) x = 1 - (h - 18) / 4;
    return base + amplitude * x;
  };
}
// A smooth daily cycle (sine), minimum at midnight.
inline Shape SineDay(double base, double amplitude, double start_hour = 0) {
  return [=](double t) {
    const double h = std::fmod(t / 3600 + start_hour, 24);
    return base + amplitude * 0.5 * (1 - std::cos(2 * M_PI * h / 24));
  };
}
// A one-time step of `amount` at `at` seconds.
inline Shape Step(double base, double amount, double at) {
  return [=](double t) { return t < at ? base : base + amount; };
}

}  // namespace heapwatch::diff::replay

#endif  // HEAPWATCH_TESTS_DIFF_REPLAY_H_
