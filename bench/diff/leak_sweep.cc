// heapwatch_leak_sweep: the LeakDetector (diff/leak_detector.h) on thousands of replayed histories
// (tests/diff/replay.h), with default LeakOptions. Prints the tables quoted in
// docs/trend-detection.md ("Measured"):
//   1. detection delay: steady leaks at random collection intervals (1 s to 5 min, log-uniform)
//      and rates (G per minute to G per 3 days, log-uniform), on classes of 0.2 to 400 MB (so G is
//      1 MiB or 10% of the level), with noise of 0.1-1% of the level, starting after 0-2 h. The
//      delay is the growth at detection in units of G (target: <= 2) and in snapshots.
//   2. false positives: healthy histories (daily cycles, sawtooth buffers of 10 min to 1 day, flat
//      noise, -all garbage, one-time steps, caches that plateau) at 60 s for 4 days: a flag after the
//      first period of a periodic pattern, or at all for a non-periodic one, is a false positive;
//      flags during a first period and cache fills are counted separately.
//
//   heapwatch_leak_sweep [--leaks=N] [--healthy=M] [--max_snapshots=K]
//
// Histories that would need more than max_snapshots snapshots (default 400,000: e.g. 1 s intervals
// with G per 3 days) are drawn again. Deterministic: the same arguments print the same numbers.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "diff/leak_detector.h"
#include "tests/diff/replay.h"

namespace heapwatch::diff {
namespace {

using namespace replay;  // NOLINT: the shapes are the vocabulary of this file

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kHour = 3600, kDay = 86400;

std::vector<ReplayClass> Background() {
  return {{"java.lang.String", Flat(8e6), 4e4},
          {"byte[]", Flat(20e6), 3e5},
          {"java.util.HashMap$Node", Flat(3e6), 0},
          {"com.example.Small", Flat(1e5), 2e4}};
}

double LogUniform(std::mt19937_64& rng, double lo, double hi) {
  return std::exp(std::uniform_real_distribution<double>(std::log(lo), std::log(hi))(rng));
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

void Delays(int runs, double max_snapshots) {
  std::mt19937_64 rng(2026);
  std::vector<double> grown, snapshots, seconds;
  int missed = 0, over = 0;
  // Per decade of T (G per T), how many were over 2G.
  for (int run = 0; run < runs; ++run) {
    double interval, per, base;
    do {
      interval = LogUniform(rng, 1, 300);
      per = LogUniform(rng, 60, 3 * kDay);
      base = LogUniform(rng, 0.2e6, 400e6);
    } while (per / interval < 4 || (per * 3 + 2 * kHour) / interval > max_snapshots);
    const double g = std::max(kMiB, 0.1 * base);
    const double rate = g / per;
    const double start = std::uniform_real_distribution<double>(0, 2 * kHour)(rng);
    std::vector<ReplayClass> classes = Background();
    classes.push_back({"com.example.Leak", LinearLeak(base, rate, start),
                       base * std::uniform_real_distribution<double>(0.001, 0.01)(rng)});
    ReplayOptions r;
    r.interval = absl::Seconds(interval);
    r.seed = static_cast<uint64_t>(run) + 1;
    r.length = absl::Seconds(start + std::max(4 * per, 20 * interval));
    const ReplayResult res = Replay(LeakOptions{}, classes, r, [](const LeakDetector& d, double) {
      return d.SuspectFor("com.example.Leak").has_value();
    });
    const ClassOutcome& o = res.classes.back();
    if (!o.first_flagged || *o.first_flagged < start) {
      ++missed;
      continue;
    }
    const double after = *o.first_flagged - start;
    grown.push_back(after * rate / g);
    seconds.push_back(after);
    snapshots.push_back(after / interval);
    if (after * rate / g > 2) {
      ++over;
      if (std::getenv("HEAPWATCH_SWEEP_VERBOSE")) {
        std::printf("  [over 2G] interval %.1f per %.0f base %.3g start %.0f: %.2f G\n", interval,
                    per, base, start, after * rate / g);
      }
    }
  }
  std::printf("detection delay, %d steady leaks (interval 1 s-5 min, G per 1 min-3 days):\n", runs);
  std::printf("  growth at detection in G: p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n",
              Percentile(grown, 0.5), Percentile(grown, 0.9), Percentile(grown, 0.99),
              Percentile(grown, 1.0));
  std::printf("  snapshots from leak start: p50 %.0f  p90 %.0f  max %.0f\n",
              Percentile(snapshots, 0.5), Percentile(snapshots, 0.9), Percentile(snapshots, 1.0));
  std::printf("  over 2G: %d   not flagged by 4G (or flagged before the leak began): %d\n", over,
              missed);
}

struct HealthyKind {
  const char* name;
  double period;  // 0 = not periodic
};

void FalsePositives(int runs) {
  std::mt19937_64 rng(7);
  int false_positives = 0, first_period = 0, cache_flags = 0, cache_not_cleared = 0;
  std::vector<int> per_kind(8, 0), fp_per_kind(8, 0);
  const char* names[] = {"daily cycle", "smooth daily cycle", "sawtooth", "flat noise",
                         "-all garbage", "one-time step", "cache", "mixed"};
  for (int run = 0; run < runs; ++run) {
    const int kind = run % 7;
    ++per_kind[kind];
    const double level = LogUniform(rng, 1e6, 300e6);
    const double noise = level * LogUniform(rng, 0.001, 0.05);
    ReplayClass c{"com.example.Healthy", Flat(level), noise};
    double period = 0;  // end of the first full period (seconds since the start); 0: not periodic
    HistogramMode mode = HistogramMode::kLive;
    std::uniform_real_distribution<double> u(0, 1);
    std::string desc;
    switch (kind) {
      case 0:
      case 1: {
        // The first full period starts at the first 08:00 (daily) or midnight (sine) trough.
        const double start_hour = u(rng) * 24;
        const double amp = level * LogUniform(rng, 0.2, 5);
        c.shape = kind == 0 ? DailyCycle(level, amp, start_hour) : SineDay(level, amp, start_hour);
        const double trough = kind == 0 ? 8 : 0;
        period = (std::fmod(trough - start_hour + 48, 24) + 24) * kHour;
        desc = absl::StrFormat("amplitude %.4g start hour %.1f", amp, start_hour);
        break;
      }
      case 2: {
        period = LogUniform(rng, 600, kDay);
        const double amp = level * LogUniform(rng, 0.2, 3), phase = u(rng) * period;
        c.shape = Sawtooth(level, amp, period, phase);
        period = std::fmod(period - phase, period) + period;  // end of the first full tooth
        desc = absl::StrFormat("amplitude %.4g phase %.0f", amp, phase);
        break;
      }
      case 3:
        break;
      case 4:
        c.garbage = level * LogUniform(rng, 0.05, 0.5);
        mode = u(rng) < 0.5 ? HistogramMode::kAll : HistogramMode::kAllAfterGc;
        break;
      case 5: {
        const double amount = level * LogUniform(rng, 0.2, 3), at = u(rng) * kDay;
        c.shape = Step(level, amount, at);
        desc = absl::StrFormat("amount %.4g at %.0f", amount, at);
        break;
      }
      case 6: {
        const double from = u(rng) * kDay, fill = LogUniform(rng, 60, 6 * kHour);
        const double amount = level * LogUniform(rng, 0.2, 3);
        c.shape = Fill(level, amount, from, from + fill);
        desc = absl::StrFormat("amount %.4g from %.0f to %.0f", amount, from, from + fill);
        period = from + fill;  // flagged while filling is allowed; must be cleared after
        break;
      }
    }
    std::vector<ReplayClass> classes = Background();
    classes.push_back(c);
    ReplayOptions r;
    r.seed = static_cast<uint64_t>(run) + 100;
    r.length = absl::Seconds(4 * kDay);
    r.mode = mode;
    const ReplayResult res = Replay(LeakOptions{}, classes, r);
    bool fp = false;
    for (size_t i = 0; i + 1 < classes.size(); ++i) fp = fp || res.classes[i].first_flagged.has_value();
    const ClassOutcome& o = res.classes.back();
    if (kind == 6) {
      // A fill may be flagged while it lasts; flagged at the end, or again 2 h after the plateau
      // began, is a false positive.
      if (o.first_flagged) ++cache_flags;
      if (o.flagged_at_end || (o.last_flagged && *o.last_flagged > period + 2 * kHour)) {
        ++cache_not_cleared;
        fp = true;
      }
    } else if (period > 0) {
      // A periodic pattern may be flagged during its first period, never after.
      if (o.last_flagged && *o.last_flagged >= period) {
        fp = true;
      } else if (o.first_flagged) {
        ++first_period;
      }
      if (o.flagged_at_end) fp = true;
    } else if (o.first_flagged) {
      fp = true;
    }
    if (fp && std::getenv("HEAPWATCH_SWEEP_VERBOSE")) {
      std::printf("  [%s] seed %d level %.4g noise %.4g period %.0f %s: flagged at %.0f, last at %.0f, "
                  "episodes %zu, last cleared %.0f, at end %d\n",
                  names[kind], run + 100, level, noise, period, desc.c_str(),
                  o.first_flagged.value_or(-1), o.last_flagged.value_or(-1), o.episodes,
                  o.last_cleared.value_or(-1), o.flagged_at_end);
    }
    if (fp) {
      ++false_positives;
      ++fp_per_kind[kind];
    }
  }
  std::printf("false positives, %d healthy histories (60 s, 4 days, 5 classes each):\n", runs);
  for (int k = 0; k < 7; ++k) {
    std::printf("  %-20s %4d runs, %d false positives\n", names[k], per_kind[k], fp_per_kind[k]);
  }
  std::printf("  total false positives: %d (caches flagged 2 h after their plateau or at the end: "
              "%d); periodic patterns flagged during their first period only: %d; caches flagged "
              "while filling: %d\n",
              false_positives, cache_not_cleared, first_period, cache_flags);
}

int Main(int argc, char** argv) {
  int leaks = 2000, healthy = 1400;
  double max_snapshots = 400'000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const size_t eq = arg.find('=');
    double v = 0;
    if (eq == std::string::npos || !absl::SimpleAtod(arg.substr(eq + 1), &v)) {
      std::fprintf(stderr, "usage: %s [--leaks=N] [--healthy=M] [--max_snapshots=K]\n", argv[0]);
      return 2;
    }
    const std::string key = arg.substr(0, eq);
    if (key == "--leaks") {
      leaks = static_cast<int>(v);
    } else if (key == "--healthy") {
      healthy = static_cast<int>(v);
    } else if (key == "--max_snapshots") {
      max_snapshots = v;
    } else {
      std::fprintf(stderr, "unknown option %s\n", key.c_str());
      return 2;
    }
  }
  Delays(leaks, max_snapshots);
  FalsePositives(healthy);
  return 0;
}

}  // namespace
}  // namespace heapwatch::diff

int main(int argc, char** argv) { return heapwatch::diff::Main(argc, argv); }
