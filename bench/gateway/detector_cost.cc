// heapwatch_detector_cost: CPU per histogram of the daemon's per-histogram work outside gRPC, with
// many agents' state cold in the caches as in heapwatchd under load (docs/agents.md, "Load"):
// AGENTS agents, each one LeakDetector (default options) fed CLASSES-class realistic histograms
// (bench/gateway/realistic_counts.h), round robin, one per agent per simulated second. The
// first WARMUP rounds fill the detectors' history (not timed); the next ROUNDS are timed.
//
// Usage: heapwatch_detector_cost [AGENTS=300] [CLASSES=3000] [WARMUP=40] [ROUNDS=20]
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bench/gateway/realistic_counts.h"
#include "common/histogram.h"
#include "diff/leak_detector.h"

namespace {

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct Agent {
  heapwatch::Snapshot snapshot;
  heapwatch::bench::RealisticCounts counts;
  std::unique_ptr<heapwatch::diff::LeakDetector> detector;
};

// The next histogram, in place (its rows' names stay).
void Next(Agent& a, std::mt19937_64& rng) {
  auto& rows = a.snapshot.histogram.rows;
  heapwatch::bench::NextRealisticCounts(static_cast<int>(rows.size()), rng, &a.counts);
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].instances = a.counts.instances[i];
    rows[i].bytes = a.counts.instances[i] * a.counts.instance_bytes[i];
  }
  a.snapshot.time += absl::Seconds(1);
}

}  // namespace

int main(int argc, char** argv) {
  const int agents = argc > 1 ? std::atoi(argv[1]) : 300;
  const int classes = argc > 2 ? std::atoi(argv[2]) : 3000;
  const int warmup = argc > 3 ? std::atoi(argv[3]) : 40;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 20;
  std::mt19937_64 rng(1);
  std::vector<Agent> all(agents);
  for (int a = 0; a < agents; ++a) {
    Agent& ag = all[a];
    ag.snapshot.agent = heapwatch::AgentId(absl::StrCat("agent-", a));
    ag.snapshot.time = absl::FromUnixSeconds(1'800'000'000);
    ag.snapshot.cost.mode = heapwatch::HistogramMode::kAll;
    for (int i = 0; i < classes; ++i) {
      heapwatch::ClassHistogramRow row;
      row.class_name = absl::StrCat("com.example.load.pkg", (i + 1) % 97, ".Class", i + 1);
      row.module = (i + 1) % 3 == 0 ? "java.base@17.0.15" : "";
      ag.snapshot.histogram.rows.push_back(std::move(row));
    }
    ag.detector = std::make_unique<heapwatch::diff::LeakDetector>(heapwatch::diff::LeakOptions(),
                                                                  ag.snapshot.time);
  }
  double timed = 0;
  for (int r = 0; r < warmup + rounds; ++r) {
    for (Agent& a : all) {
      Next(a, rng);
      const double t0 = CpuSeconds();
      a.detector->Observe(a.snapshot);
      (void)a.detector->Suspects();
      (void)a.detector->Leaks();
      (void)a.detector->LatestClasses(20, {});
      if (r >= warmup) timed += CpuSeconds() - t0;
    }
  }
  std::printf("agents %d classes %d: leak detector %.3f ms CPU per histogram (%d timed)\n", agents,
              classes, timed * 1000 / (static_cast<double>(agents) * rounds), agents * rounds);
  return 0;
}
