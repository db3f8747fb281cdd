// heapwatch_diff_bench: cost of TrendDetector::Observe (one evaluation of every class of an agent
// per snapshot) and of DiffSnapshots, on synthetic histograms of 5,000 classes.
//
// Workloads (every one after the detector's history is full, so each Observe runs the tests):
//   typical    95% small classes (< 200 KB, skipped by the min_growth_bytes range check), 4% large
//   flat
//              noisy classes, 1% leaking: what a real JVM's histogram looks like;
//   noisy      every class large (5-55 MB) and flat with 2% noise: every class passes the range
//   check; worst      every class large and leaking with noise, so that every class is a suspect
//   and runs every
//              test (Mann-Kendall, Theil-Sen, records) and the instances slope on every snapshot:
//              the upper bound, not a real JVM.
// One class in ten is array-like (bytes not a fixed multiple of instances, so its instances slope
// needs its own Theil-Sen pass); the others have bytes = 24 * instances exactly, as HotSpot reports
// fixed-size objects. Window 12 (default) and 30 snapshots (the figure). Target: well under
// 50 ms per Observe. Run: build-bench/bench/diff/heapwatch_diff_bench (scripts/bench.sh builds it
// in Release).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "diff/leak_detector.h"
#include "diff/snapshot_diff.h"
#include "diff/trend_detector.h"

namespace heapwatch::diff {
namespace {

enum class Workload { kTypical, kNoisy, kWorst };

// Rewrites the rows of `s` in place for snapshot number `i` (cheap arithmetic, no allocation).
class HistogramGenerator {
 public:
  HistogramGenerator(size_t classes, Workload w, absl::Duration interval = absl::Seconds(60))
      : rng_(42), interval_(interval) {
    snapshot_.agent = AgentId("bench-agent");
    snapshot_.time = absl::FromUnixSeconds(1'700'000'000);
    std::uniform_real_distribution<double> u(0, 1);
    for (size_t c = 0; c < classes; ++c) {
      snapshot_.histogram.rows.push_back(
          {absl::StrFormat("com.example.generated.package%d.SomeClassName%d", c % 97, c), "", 0,
           0});
      kind_.push_back(w == Workload::kWorst   ? 2
                      : w == Workload::kNoisy ? 1
                                              : (c % 100 == 0 ? 2 : (c % 25 == 1 ? 1 : 0)));
      base_.push_back(kind_.back() == 0 ? 1e3 + u(rng_) * 2e5 : 5e6 + u(rng_) * 5e7);
    }
  }

  const Snapshot& Next() {
    ++i_;
    snapshot_.time += interval_;
    std::uniform_real_distribution<double> noise(-1, 1);
    for (size_t c = 0; c < kind_.size(); ++c) {
      double v = base_[c];
      if (kind_[c] == 0) v += 2e3 * noise(rng_);
      if (kind_[c] == 1) v *= 1 + 0.02 * noise(rng_);
      if (kind_[c] == 2) v += 5e5 * static_cast<double>(i_) + 2e5 * noise(rng_);
      ClassHistogramRow& row = snapshot_.histogram.rows[c];
      if (c % 10 == 0) {  // array-like
        row.bytes = static_cast<uint64_t>(v);
        row.instances = row.bytes / 1000;
      } else {
        row.instances = static_cast<uint64_t>(v / 24);
        row.bytes = 24 * row.instances;
      }
    }
    return snapshot_;
  }

 private:
  std::mt19937_64 rng_;
  absl::Duration interval_;
  Snapshot snapshot_;
  std::vector<int> kind_;  // 0 small flat, 1 large flat noisy, 2 leaking
  std::vector<double> base_;
  int64_t i_ = 0;
};

void BM_Observe(benchmark::State& state) {
  const size_t classes = static_cast<size_t>(state.range(0));
  const size_t window = static_cast<size_t>(state.range(1));
  const auto workload = static_cast<Workload>(state.range(2));
  TrendOptions options;
  options.window_snapshots = window;
  options.peak_lookback_snapshots = std::max<size_t>(36, window);
  TrendDetector detector(options);
  HistogramGenerator gen(classes, workload);
  // Fill warm-up, window and lookback first.
  for (size_t i = 0; i < options.warmup_snapshots + options.peak_lookback_snapshots + 1; ++i) {
    detector.Observe(gen.Next());
  }
  for (auto _ : state) {
    state.PauseTiming();
    const Snapshot& s = gen.Next();
    state.ResumeTiming();
    detector.Observe(s);
  }
  state.counters["suspects"] = static_cast<double>(detector.Suspects().size());
  state.counters["classes"] = static_cast<double>(detector.tracked_classes());
  state.SetLabel(workload == Workload::kTypical ? "typical"
                 : workload == Workload::kNoisy ? "noisy"
                                                : "worst");
}
BENCHMARK(BM_Observe)
    ->ArgNames({"classes", "window", "workload"})
    ->Args({5000, 12, static_cast<int>(Workload::kTypical)})
    ->Args({5000, 30, static_cast<int>(Workload::kTypical)})
    ->Args({5000, 12, static_cast<int>(Workload::kNoisy)})
    ->Args({5000, 30, static_cast<int>(Workload::kNoisy)})
    ->Args({5000, 12, static_cast<int>(Workload::kWorst)})
    ->Args({5000, 30, static_cast<int>(Workload::kWorst)})
    ->Unit(benchmark::kMillisecond);

// LeakDetector::Observe: scale 0 plus the bucketed time scales (13 at a 2 s interval, 8 at 60 s)
// and the grouping of the suspects into leaks, after 1,000 snapshots of history.
void BM_LeakObserve(benchmark::State& state) {
  const size_t classes = static_cast<size_t>(state.range(0));
  const auto interval = absl::Seconds(state.range(1));
  const auto workload = static_cast<Workload>(state.range(2));
  LeakDetector detector{LeakOptions{}};
  HistogramGenerator gen(classes, workload, interval);
  for (size_t i = 0; i < 1000; ++i) detector.Observe(gen.Next());
  for (auto _ : state) {
    state.PauseTiming();
    const Snapshot& s = gen.Next();
    state.ResumeTiming();
    detector.Observe(s);
  }
  state.counters["suspects"] = static_cast<double>(detector.Suspects().size());
  state.counters["leaks"] = static_cast<double>(detector.Leaks().size());
  state.counters["scales"] = static_cast<double>(detector.time_scales().size());
  state.SetLabel(workload == Workload::kTypical ? "typical"
                 : workload == Workload::kNoisy ? "noisy"
                                                : "worst");
}
BENCHMARK(BM_LeakObserve)
    ->ArgNames({"classes", "interval_s", "workload"})
    ->Args({5000, 2, static_cast<int>(Workload::kTypical)})
    ->Args({5000, 60, static_cast<int>(Workload::kTypical)})
    ->Args({5000, 60, static_cast<int>(Workload::kNoisy)})
    ->Args({5000, 60, static_cast<int>(Workload::kWorst)})
    ->Unit(benchmark::kMillisecond);

void BM_DiffSnapshots(benchmark::State& state) {
  HistogramGenerator gen(static_cast<size_t>(state.range(0)), Workload::kTypical);
  const Snapshot from = gen.Next();
  const Snapshot to = gen.Next();
  for (auto _ : state) benchmark::DoNotOptimize(DiffSnapshots(from, to));
}
BENCHMARK(BM_DiffSnapshots)->Arg(5000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace heapwatch::diff

BENCHMARK_MAIN();
