// heapwatch_trend_sweep: detection latency and false positives of the trend detector over many
// seeds of the synthetic patterns used by tests/diff (tests/diff/synthetic.h), with default
// TrendOptions or the overrides given on the command line. Prints the tables quoted in
// docs/trend-detection.md ("Measured").
//
//   heapwatch_trend_sweep [--seeds=N] [--stress_runs=M] [field=value ...]
//
// field is a TrendOptions field (window_snapshots, min_snapshots, warmup_snapshots, max_p_value,
// min_growth_bytes, min_relative_growth, segments, min_step_fraction, recent_snapshots,
// peak_lookback_snapshots, confirm_snapshots, clear_snapshots). Deterministic: the same arguments
// print the same numbers.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "diff/trend_detector.h"
#include "tests/diff/synthetic.h"

namespace heapwatch::diff {
namespace {

using namespace synthetic;  // NOLINT: the generators are the point of this file

const std::string kTarget = "T";

struct Histogram {
  std::map<int, int> counts;
  int late = 0;  // > 10
  void Add(int latency) {
    ++counts[latency];
    late += latency > 10;
  }
  std::string Format() const {
    std::string out;
    for (const auto& [k, v] : counts)
      out += absl::StrFormat(" %s:%d", k < 0 ? "missed" : std::to_string(k), v);
    return out;
  }
};

bool SetOption(TrendOptions& o, const std::string& key, double v) {
  if (key == "window_snapshots")
    o.window_snapshots = static_cast<size_t>(v);
  else if (key == "min_snapshots")
    o.min_snapshots = static_cast<size_t>(v);
  else if (key == "warmup_snapshots")
    o.warmup_snapshots = static_cast<size_t>(v);
  else if (key == "max_p_value")
    o.max_p_value = v;
  else if (key == "min_growth_bytes")
    o.min_growth_bytes = static_cast<uint64_t>(v);
  else if (key == "min_relative_growth")
    o.min_relative_growth = v;
  else if (key == "segments")
    o.segments = static_cast<size_t>(v);
  else if (key == "min_step_fraction")
    o.min_step_fraction = v;
  else if (key == "recent_snapshots")
    o.recent_snapshots = static_cast<size_t>(v);
  else if (key == "peak_lookback_snapshots")
    o.peak_lookback_snapshots = static_cast<size_t>(v);
  else if (key == "confirm_snapshots")
    o.confirm_snapshots = static_cast<size_t>(v);
  else if (key == "clear_snapshots")
    o.clear_snapshots = static_cast<size_t>(v);
  else if (key == "recent_max_p_value")
    o.recent_max_p_value = v;
  else if (key == "record_noise_sigmas")
    o.record_noise_sigmas = v;
  else
    return false;
  return true;
}

int Main(int argc, char** argv) {
  TrendOptions o;
  int seeds = 1000, stress_runs = 5000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    double v = 0;
    if (eq == std::string::npos || !absl::SimpleAtod(arg.substr(eq + 1), &v)) {
      std::fprintf(stderr, "usage: %s [--seeds=N] [--stress_runs=M] [field=value ...]\n", argv[0]);
      return 2;
    }
    const std::string key = arg.substr(0, eq);
    if (key == "--seeds")
      seeds = static_cast<int>(v);
    else if (key == "--stress_runs")
      stress_runs = static_cast<int>(v);
    else if (!SetOption(o, key, v)) {
      std::fprintf(stderr, "unknown option %s\n", key.c_str());
      return 2;
    }
  }
  if (Status s = ValidateTrendOptions(o); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 2;
  }
  const size_t warm = o.warmup_snapshots;
  std::printf(
      "seeds per pattern: %d; latency = snapshots from the last snapshot before growth (after "
      "warm-up) to the first with the class flagged\n",
      seeds);

  for (const double interval : {60.0, 1.5}) {
    const double jitter = interval == 60 ? 0.1 : 0.3;
    auto times_of = [&](size_t n, Rng& rng) {
      return MakeTimes(n, absl::Seconds(interval), 1 - jitter, 1 + jitter, rng);
    };
    int background_fp_runs = 0;
    auto run = [&](const std::vector<absl::Time>& times, Values v, Rng& rng) {
      std::vector<ClassSeries> classes = Background(times.size(), rng);
      classes.push_back({kTarget, 40, std::move(v)});
      DetectorRun r = RunDetector(o, BuildSnapshots(times, classes));
      background_fp_runs += r.OtherSuspects(kTarget) > 0;
      return r;
    };

    // Leaks: steady, occasional drops, rough. Start with the agent, at the end of warm-up, or after
    // 10-40 flat snapshots, in turn.
    const char* names[] = {"steady leak", "noisy leak (occasional drops)", "rough leak"};
    for (int kind = 0; kind < 3; ++kind) {
      Histogram lat;
      int flaps = 0;
      for (int seed = 0; seed < seeds; ++seed) {
        Rng rng(1000 * (kind + 1) + seed);
        const auto times = times_of(70, rng);
        const size_t start = seed % 3 == 0   ? 0
                             : seed % 3 == 1 ? warm
                                             : warm + 10 + static_cast<size_t>(Uniform(rng, 0, 30));
        const double step = Uniform(rng, kind == 0 ? 200e3 : 300e3, 2e6);
        const double base = Uniform(rng, 0, kind == 0 ? 8e6 : 6e6);
        const double noise = step * Uniform(rng, 0, kind == 0 ? 0.2 : 0.3);
        Values v = kind == 0 ? SteadyLeak(times, start, base, step / interval, noise, rng)
                             : NoisyLeak(times, start, base, step / interval, noise,
                                         kind == 1 ? OccasionalDrops() : Rough(), rng);
        const DetectorRun r = run(times, std::move(v), rng);
        const int first = r.FirstSuspect(kTarget);
        lat.Add(first < 0 ? -1 : first - (static_cast<int>(std::max(start, warm)) - 1));
        if (first >= 0) {
          for (size_t i = static_cast<size_t>(first) + 1; i < times.size(); ++i) {
            flaps += r.IsSuspect(i - 1, kTarget) && !r.IsSuspect(i, kTarget);
          }
        }
      }
      std::printf("%5.1fs %-30s latency>10: %4d  cleared mid-leak: %4d  latency:%s\n", interval,
                  names[kind], lat.late, flaps, lat.Format().c_str());
    }

    // Plateauing cache: fill of 2-15 snapshots starting anywhere in the first 30, then flat (exact
    // or with noise up to 0.5% of the capacity); linear or tapering (concave) fill.
    {
      int flagged = 0, max_into_plateau = 0;
      size_t shortest = 1000;
      for (int seed = 0; seed < seeds; ++seed) {
        Rng rng(6000 + seed);
        const size_t fs = static_cast<size_t>(Uniform(rng, 0, 30));
        const size_t fe = fs + 2 + static_cast<size_t>(Uniform(rng, 0, 14));
        const auto times = times_of(fe + 40, rng);
        const double capacity = Uniform(rng, 5e6, 100e6);
        const double noise = seed % 2 ? 0.0 : capacity * Uniform(rng, 0, 0.005);
        const double base = Uniform(rng, 0, 5e6);
        const DetectorRun r =
            run(times, PlateauCache(times, fs, fe, base, capacity, seed % 4 < 2, noise, rng), rng);
        int last = -1;
        for (size_t i = 0; i < times.size(); ++i)
          if (r.IsSuspect(i, kTarget)) last = static_cast<int>(i);
        if (last < 0) continue;
        ++flagged;
        shortest = std::min(shortest, fe > warm ? fe - std::max(fs, warm) : 0);
        max_into_plateau = std::max(max_into_plateau, last - static_cast<int>(fe) + 1);
      }
      std::printf(
          "%5.1fs plateauing cache: flagged during its fill in %d runs; shortest fill flagged %zu "
          "snapshots; still flagged at most %d snapshots into the plateau\n",
          interval, flagged, shortest, max_into_plateau);
    }

    // Sawtooth, periods 2-10, any phase, amplitude 2-50 MB with 5% tooth-to-tooth jitter.
    {
      int fp = 0;
      for (int seed = 0; seed < seeds; ++seed) {
        Rng rng(7000 + seed);
        const size_t period = 2 + static_cast<size_t>(seed % 9);
        const size_t phase = static_cast<size_t>(Uniform(rng, 0, static_cast<double>(period)));
        const double amplitude = Uniform(rng, 2e6, 50e6);
        const auto times = times_of(120, rng);
        const double base = Uniform(rng, 0, 5e6);
        const double noise = amplitude * Uniform(rng, 0, 0.01);
        fp += run(times, Sawtooth(120, period, phase, base, amplitude, 0.05, noise, rng), rng)
                  .FirstSuspect(kTarget) >= 0;
      }
      std::printf("%5.1fs sawtooth: %d of %d runs (120 snapshots) ever flagged\n", interval, fp,
                  seeds);
    }

    // Flat with noise: level 1-500 MB, Gaussian sd 0.1-10%, half the runs with up to 50% `-all`
    // garbage.
    {
      int fp = 0;
      for (int seed = 0; seed < seeds; ++seed) {
        Rng rng(8000 + seed);
        const double level = std::exp(Uniform(rng, std::log(1e6), std::log(500e6)));
        const double sd = level * Uniform(rng, 0.001, 0.1);
        const double garbage = seed % 2 ? level * Uniform(rng, 0, 0.5) : 0;
        const auto times = times_of(120, rng);
        fp += run(times, FlatNoise(120, level, sd, garbage, rng), rng).FirstSuspect(kTarget) >= 0;
      }
      std::printf("%5.1fs flat noise: %d of %d runs (120 snapshots) ever flagged\n", interval, fp,
                  seeds);
    }
    std::printf(
        "%5.1fs background classes of a quiet JVM (28 per run, every run above): flagged in %d "
        "runs\n",
        interval, background_fp_runs);
  }

  // False-positive stress: 10 large flat classes per run, every one noisy (Gaussian sd 0.1-10%,
  // half with up to 50% `-all` garbage), 120 snapshots at 60 s.
  {
    int runs_with_fp = 0;
    long evaluations = 0;
    std::map<int, int> first_at;
    for (int seed = 0; seed < stress_runs; ++seed) {
      Rng rng(123456 + seed);
      const size_t n = 120;
      const auto times = MakeTimes(n, absl::Seconds(60), 0.9, 1.1, rng);
      std::vector<ClassSeries> classes;
      for (int k = 0; k < 10; ++k) {
        const double level = std::exp(Uniform(rng, std::log(2e6), std::log(500e6)));
        const double sd = level * Uniform(rng, 0.001, 0.1);
        const double garbage = k % 2 ? level * Uniform(rng, 0, 0.5) : 0;
        classes.push_back({absl::StrFormat("C%d", k), 32, FlatNoise(n, level, sd, garbage, rng)});
      }
      const DetectorRun r = RunDetector(o, BuildSnapshots(times, classes));
      evaluations += 10 * static_cast<long>(n - o.warmup_snapshots - o.min_snapshots + 1);
      for (size_t i = 0; i < n; ++i) {
        if (!r.suspects_at[i].empty()) {
          ++runs_with_fp;
          ++first_at[static_cast<int>(i)];
          break;
        }
      }
    }
    std::string at;
    for (const auto& [k, v] : first_at) at += absl::StrFormat(" %d:%d", k, v);
    std::printf(
        "false-positive stress: %d of %d runs (10 noisy classes, 120 snapshots, %ld class "
        "evaluations) "
        "had a suspect; first at snapshot:%s\n",
        runs_with_fp, stress_runs, evaluations, at.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace heapwatch::diff

int main(int argc, char** argv) { return heapwatch::diff::Main(argc, argv); }
