// Synthetic class-histogram series for the trend detector tests: leaks, caches, sawtooth buffers,
// noise.
//
// Every generator returns one value per snapshot time: the class's shallow bytes, or nullopt when
// the class has no row in that histogram (no live objects). Growth is expressed per second of real
// (jittered) time, so irregular timestamps matter. All randomness comes from the caller's seeded
// engine.
#ifndef HEAPWATCH_TESTS_DIFF_SYNTHETIC_H_
#define HEAPWATCH_TESTS_DIFF_SYNTHETIC_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "common/histogram.h"
#include "diff/trend_detector.h"

namespace heapwatch::diff::synthetic {

using Rng = std::mt19937_64;
using Values = std::vector<std::optional<uint64_t>>;

inline double Uniform(Rng& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}
inline double Normal(Rng& rng, double sd) {
  return sd > 0 ? std::normal_distribution<double>(0, sd)(rng) : 0.0;
}
inline uint64_t ToBytes(double v) { return v <= 0 ? 0 : static_cast<uint64_t>(std::llround(v)); }

// Snapshot times: each interval is `interval` times a factor uniform in [lo, hi].
inline std::vector<absl::Time> MakeTimes(size_t n, absl::Duration interval, double lo, double hi,
                                         Rng& rng) {
  std::vector<absl::Time> times;
  absl::Time t = absl::FromUnixSeconds(1'700'000'000);
  for (size_t i = 0; i < n; ++i) {
    times.push_back(t);
    t += interval * Uniform(rng, lo, hi);
  }
  return times;
}

inline double Seconds(const std::vector<absl::Time>& times, size_t i, size_t j) {
  return absl::ToDoubleSeconds(times[j] - times[i]);
}

// Flat at `base`, then from snapshot `start` on grows by `rate` bytes/s (counted from snapshot
// start-1, so snapshot `start` is the first grown one), plus Gaussian noise of `noise_sd` bytes.
inline Values SteadyLeak(const std::vector<absl::Time>& times, size_t start, double base,
                         double rate, double noise_sd, Rng& rng) {
  Values v;
  for (size_t i = 0; i < times.size(); ++i) {
    const double growth = (start > 0 && i >= start) ? rate * Seconds(times, start - 1, i)
                          : (start == 0)            ? rate * Seconds(times, 0, i)
                                                    : 0.0;
    v.push_back(ToBytes(base + growth + Normal(rng, noise_sd)));
  }
  return v;
}

// How a noisy leak misbehaves. Every figure is in units of the mean growth per snapshot interval.
struct LeakNoise {
  // Each interval grows by U(1 - spread, 1 + spread) mean increments.
  double increment_spread = 0.5;
  double setback_probability = 0.05;          // part of the leaked set is released for good...
  double setback_lo = 0.5, setback_hi = 1.5;  // ...this many increments
  double dip_probability = 0.10;              // one snapshot reads low (a transient drop)...
  double dip_lo = 1, dip_hi = 3;              // ...by this many increments
};
// "Growth with occasional drops": the default LeakNoise.
inline LeakNoise OccasionalDrops() { return LeakNoise{}; }
// A much rougher leak: increments anywhere in [0, 2], 10% setbacks, 15% dips.
inline LeakNoise Rough() { return LeakNoise{1.0, 0.10, 0.5, 1.5, 0.15, 1, 3}; }

// A leak of `rate` bytes/s on average from snapshot `start` on, misbehaving as `shape` says, plus
// Gaussian noise of `noise_sd` bytes. Setbacks and dips never go below the pre-leak level.
inline Values NoisyLeak(const std::vector<absl::Time>& times, size_t start, double base,
                        double rate, double noise_sd, const LeakNoise& shape, Rng& rng) {
  Values v;
  double level = base;
  for (size_t i = 0; i < times.size(); ++i) {
    double observed = level;
    if (i >= start && i > 0) {
      const double step = rate * Seconds(times, i - 1, i);
      level += step * Uniform(rng, 1 - shape.increment_spread, 1 + shape.increment_spread);
      if (Uniform(rng, 0, 1) < shape.setback_probability) {
        level = std::max(base, level - step * Uniform(rng, shape.setback_lo, shape.setback_hi));
      }
      observed = level;
      if (Uniform(rng, 0, 1) < shape.dip_probability) {
        observed = std::max(base, observed - step * Uniform(rng, shape.dip_lo, shape.dip_hi));
      }
    }
    v.push_back(ToBytes(observed + Normal(rng, noise_sd)));
  }
  return v;
}

// A cache: `base` until snapshot fill_start, fills to base + capacity by snapshot fill_end
// (linearly in time, or concave: fast first, then slower), then stays there with Gaussian noise (or
// exactly, when noise_sd is 0, as in live-object histograms of an idle cache).
inline Values PlateauCache(const std::vector<absl::Time>& times, size_t fill_start, size_t fill_end,
                           double base, double capacity, bool concave, double noise_sd, Rng& rng) {
  Values v;
  for (size_t i = 0; i < times.size(); ++i) {
    double p = 0;
    if (i >= fill_end) {
      p = 1;
    } else if (i > fill_start) {
      p = Seconds(times, fill_start, i) / Seconds(times, fill_start, fill_end);
      if (concave) p = (1 - std::exp(-4 * p)) / (1 - std::exp(-4.0));
    }
    v.push_back(ToBytes(base + capacity * p + Normal(rng, noise_sd)));
  }
  return v;
}

// A buffer that fills over `period` snapshots and is emptied: base + amplitude * k / period for
// k = (i + phase) mod period, with each tooth's amplitude jittered by +-amp_jitter and Gaussian
// noise.
inline Values Sawtooth(size_t n, size_t period, size_t phase, double base, double amplitude,
                       double amp_jitter, double noise_sd, Rng& rng) {
  Values v;
  double tooth_amp = amplitude;
  for (size_t i = 0; i < n; ++i) {
    const size_t k = (i + phase) % period;
    if (k == 0) tooth_amp = amplitude * (1 + Uniform(rng, -amp_jitter, amp_jitter));
    v.push_back(ToBytes(base +
                        tooth_amp * static_cast<double>(k + 1) / static_cast<double>(period) +
                        Normal(rng, noise_sd)));
  }
  return v;
}

// Flat at `level` with Gaussian noise; with garbage > 0, plus uniform [0, garbage] bytes of
// unreachable objects (what `GC.class_histogram -all` adds between collections).
inline Values FlatNoise(size_t n, double level, double noise_sd, double garbage, Rng& rng) {
  Values v;
  for (size_t i = 0; i < n; ++i) {
    v.push_back(
        ToBytes(level + Normal(rng, noise_sd) + (garbage > 0 ? Uniform(rng, 0, garbage) : 0)));
  }
  return v;
}

struct ClassSeries {
  std::string name;
  uint64_t object_size = 32;  // bytes per instance, to derive instance counts
  Values bytes;
};

// Background classes of a quiet JVM: a few big flat ones (exact or noisy) and many small ones.
inline std::vector<ClassSeries> Background(size_t n, Rng& rng) {
  std::vector<ClassSeries> out;
  out.push_back({"java.lang.String", 24, FlatNoise(n, 8e6, 4e4, 0, rng)});
  out.push_back({"byte[]", 1, FlatNoise(n, 20e6, 3e5, 0, rng)});
  out.push_back({"java.util.HashMap$Node", 32, FlatNoise(n, 3e6, 0, 0, rng)});
  out.push_back({"java.lang.Object[]", 1, FlatNoise(n, 4e6, 2e5, 2e6, rng)});
  for (int k = 0; k < 24; ++k) {
    out.push_back({absl::StrFormat("com.example.Small%d", k), 16,
                   FlatNoise(n, Uniform(rng, 1e3, 2e5), Uniform(rng, 0, 2e4), 0, rng)});
  }
  return out;
}

inline std::vector<Snapshot> BuildSnapshots(const std::vector<absl::Time>& times,
                                            const std::vector<ClassSeries>& classes) {
  std::vector<Snapshot> out;
  for (size_t i = 0; i < times.size(); ++i) {
    Snapshot s;
    s.agent = AgentId("agent-1");
    s.time = times[i];
    for (const ClassSeries& c : classes) {
      if (!c.bytes[i].has_value()) continue;
      const uint64_t b = *c.bytes[i];
      const uint64_t inst = b / std::max<uint64_t>(1, c.object_size);
      if (b == 0 && inst == 0) continue;
      s.histogram.rows.push_back({c.name, "", inst, b});
      s.histogram.total_bytes += b;
      s.histogram.total_instances += inst;
    }
    out.push_back(std::move(s));
  }
  return out;
}

// Feeds every snapshot to a fresh detector; suspects_at[i] lists the suspects after snapshot i.
struct DetectorRun {
  std::vector<std::vector<Suspect>> suspects_at;

  bool IsSuspect(size_t i, const std::string& name) const {
    for (const Suspect& s : suspects_at[i])
      if (s.class_name == name) return true;
    return false;
  }
  // First snapshot index at which `name` is a suspect, or -1.
  int FirstSuspect(const std::string& name) const {
    for (size_t i = 0; i < suspects_at.size(); ++i)
      if (IsSuspect(i, name)) return static_cast<int>(i);
    return -1;
  }
  // "class@snapshot" for every suspect entry of a class other than `except` (for failure messages).
  std::string DescribeOthers(const std::string& except) const {
    std::string out;
    for (size_t i = 0; i < suspects_at.size(); ++i)
      for (const Suspect& s : suspects_at[i])
        if (s.class_name != except) out += absl::StrFormat(" %s@%d", s.class_name, i);
    return out;
  }
  // Number of (snapshot, class) suspect entries for classes other than `except`.
  size_t OtherSuspects(const std::string& except) const {
    size_t n = 0;
    for (const auto& at : suspects_at)
      for (const Suspect& s : at) n += s.class_name != except;
    return n;
  }
};

inline DetectorRun RunDetector(const TrendOptions& options, const std::vector<Snapshot>& snapshots,
                               absl::Time agent_start = absl::InfinitePast()) {
  TrendDetector detector(options, agent_start);
  DetectorRun run;
  for (const Snapshot& s : snapshots) {
    detector.Observe(s);
    run.suspects_at.push_back(detector.Suspects());
  }
  return run;
}

}  // namespace heapwatch::diff::synthetic

#endif  // HEAPWATCH_TESTS_DIFF_SYNTHETIC_H_
