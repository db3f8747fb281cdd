// heapwatch_agent_memory: what one agent's state costs the daemon in memory, by holder, for
// CLASSES-class histograms (docs/agents.md, "Load"). Feeds SNAPSHOTS realistic histograms (the
// load generator's realistic mode: stable classes, drifting counts, 3 growing) of AGENTS agents,
// one per second, into what the daemon keeps per registered agent, and prints the heap bytes
// (glibc mallinfo2) each holder keeps per agent afterwards:
//  - the leak detector (diff::LeakDetector with default options; the daemon keeps two per agent,
//    the class histograms' and the live set's, the second with a handful of series),
//  - the store's per-agent Append cache (class dictionary and latest snapshot; SnapshotStore on a
//    temporary directory),
//  - one Snapshot (what a histogram in flight costs: decoded rows with their strings).
//
// Usage: heapwatch_agent_memory [AGENTS=20] [CLASSES=3000] [SNAPSHOTS=120]
#include <malloc.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bench/gateway/realistic_counts.h"
#include "common/histogram.h"
#include "diff/leak_detector.h"
#include "storage/snapshot_store.h"

namespace {

using heapwatch::AgentId;
using heapwatch::ClassHistogramRow;
using heapwatch::Snapshot;

size_t HeapBytes() {
  malloc_trim(0);
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

using Series = heapwatch::bench::RealisticCounts;

Snapshot Next(const std::string& agent, int classes, int step, Series& s, std::mt19937_64& rng) {
  heapwatch::bench::NextRealisticCounts(classes, rng, &s);
  Snapshot snap;
  snap.agent = AgentId(agent);
  snap.time = absl::FromUnixSeconds(1'800'000'000 + step);
  for (int i = 0; i < classes; ++i) {
    ClassHistogramRow row;
    row.class_name = absl::StrCat("com.example.load.pkg", (i + 1) % 97, ".Class", i + 1);
    row.module = (i + 1) % 3 == 0 ? "java.base@17.0.15" : "";
    row.instances = s.instances[i];
    row.bytes = s.instances[i] * s.instance_bytes[i];
    snap.histogram.total_instances += row.instances;
    snap.histogram.total_bytes += row.bytes;
    snap.histogram.rows.push_back(std::move(row));
  }
  return snap;
}

}  // namespace

int main(int argc, char** argv) {
  const int agents = argc > 1 ? std::atoi(argv[1]) : 20;
  const int classes = argc > 2 ? std::atoi(argv[2]) : 3000;
  const int snapshots = argc > 3 ? std::atoi(argv[3]) : 120;
  std::mt19937_64 rng(1);
  std::vector<Series> series(1);

  const size_t base = HeapBytes();
  {
    Snapshot one = Next("probe", classes, 0, series[0], rng);
    std::printf("one snapshot in flight: %.2f MiB\n", (HeapBytes() - base) / 1048576.0);
  }
  series[0] = Series();

  // The default detector, then scale 0 alone (enable_time_scales = false): what the bucketed
  // time scales add.
  for (const bool time_scales : {true, false}) {
    heapwatch::diff::LeakOptions options;
    options.enable_time_scales = time_scales;
    std::vector<Series> fresh(agents);
    std::vector<std::unique_ptr<heapwatch::diff::LeakDetector>> detectors;
    const size_t before_detectors = HeapBytes();
    for (int a = 0; a < agents; ++a) {
      detectors.push_back(std::make_unique<heapwatch::diff::LeakDetector>(
          options, absl::FromUnixSeconds(1'800'000'000)));
    }
    for (int step = 0; step < snapshots; ++step) {
      for (int a = 0; a < agents; ++a) {
        detectors[a]->Observe(Next(absl::StrCat("agent-", a), classes, step, fresh[a], rng));
      }
    }
    const double detector = (HeapBytes() - before_detectors) / 1048576.0 / agents;
    std::printf("leak detector (%s) after %d snapshots: %.2f MiB per agent\n",
                time_scales ? "default options" : "scale 0 only", snapshots, detector);
  }

  const std::string dir =
      std::filesystem::temp_directory_path() / absl::StrCat("heapwatch-agent-memory-", getpid());
  {
    heapwatch::storage::StoreOptions options;
    options.dir = dir;
    options.background_retention = false;
    options.max_cached_agents = agents;
    options.retention_age = absl::Hours(24 * 365 * 100);
    auto store = heapwatch::storage::SnapshotStore::Open(options);
    if (!store.ok()) {
      std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
      return 1;
    }
    std::vector<Series> fresh(agents);
    const size_t before_store = HeapBytes();
    for (int step = 0; step < 3; ++step) {
      for (int a = 0; a < agents; ++a) {
        auto st = (*store)->Append(Next(absl::StrCat("agent-", a), classes, step, fresh[a], rng));
        if (!st.ok()) {
          std::fprintf(stderr, "%s\n", st.ToString().c_str());
          return 1;
        }
      }
    }
    std::printf("store's Append cache: %.2f MiB per agent\n",
                (HeapBytes() - before_store) / 1048576.0 / agents);
  }
  std::filesystem::remove_all(dir);
  return 0;
}
