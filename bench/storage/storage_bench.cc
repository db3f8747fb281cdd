// Storage benchmarks: durable ingest rate (snapshots/s, 3,000 classes each) and bytes on disk per
// (class, snapshot) sample, plus the read paths the daemon and CLI use.
//
// Workload (bench/storage/workload.h): per agent, 3,000 classes with java-like names (JDK classes
// with module java.base, arrays, application classes under generated package names, inner classes,
// lambdas), log-normal instance counts, fixed instance sizes (16..72 bytes) for objects and
// variable sizes for arrays. Between two snapshots a chosen fraction of the classes drifts by a few
// percent, leaking classes grow steadily and two lambda classes come and go. Four agents are
// appended round-robin, as the daemon does, so no agent's keys are simply appended at the end of
// the B-tree.
//
// Every Append is a durable LMDB commit (fsync), as in production. The store lives under
// $HEAPWATCH_BENCH_DIR (default /var/tmp): put it on the disk you want to measure, not on tmpfs.
//
// Counters:
//   snapshots/s        Append calls per second of wall time (items_per_second)
//   disk_B/sample      st_blocks of data.mdb / (rows appended)
//   live_B/sample      LMDB pages of all tables (UsedBytes) / (rows appended)
//   snap_B/sample      LMDB pages of the snapshots table alone / (rows appended): the cost of
//   history
//                      once the class dictionaries are amortized (long retention)
//   value_B/sample     encoded snapshot values alone (key frames + deltas) / (rows appended)
//   dict_KiB/agent     class dictionary (classes + class_names tables) per agent
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "bench/storage/workload.h"
#include "storage/detail/codec.h"
#include "storage/snapshot_store.h"

namespace heapwatch::storage {
namespace {

constexpr int kClasses = 3000;
constexpr int kAgents = 4;

std::string BenchDir() {
  const char* base = std::getenv("HEAPWATCH_BENCH_DIR");
  std::string tmpl =
      std::string(base != nullptr ? base : "/var/tmp") + "/heapwatch-storage-bench-XXXXXX";
  HW_CHECK(::mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}

struct ScopedDir {
  std::string path = BenchDir();
  ~ScopedDir() { std::filesystem::remove_all(path); }
};

std::unique_ptr<SnapshotStore> OpenStore(const std::string& dir, bool compress) {
  StoreOptions o;
  o.dir = dir;
  o.compress_snapshots = compress;
  o.background_retention = false;
  o.retention_bytes = ~uint64_t{0};
  o.retention_age = absl::InfiniteDuration();
  auto s = SnapshotStore::Open(o);
  HW_CHECK(s.ok());
  return std::move(*s);
}

// Sum of encoded value sizes for the same sequence the store writes (key frame every 32nd
// snapshot).
struct ValueSizer {
  std::vector<detail::NumberedHistogram> last;
  std::vector<uint32_t> depth;
  std::vector<absl::flat_hash_map<std::string, uint32_t>> ids;
  uint64_t bytes = 0;
  bool compress;
  explicit ValueSizer(bool compress)
      : last(kAgents), depth(kAgents, 0), ids(kAgents), compress(compress) {}
  void Add(int agent, const Snapshot& s, bool first) {
    detail::NumberedHistogram h;
    for (const ClassHistogramRow& r : s.histogram.rows) {
      auto [it, inserted] = ids[agent].try_emplace(r.class_name, ids[agent].size());
      h.rows.push_back({detail::ClassNo{it->second}, r.instances, r.bytes});
    }
    std::sort(h.rows.begin(), h.rows.end(),
              [](const auto& a, const auto& b) { return a.cls < b.cls; });
    h.total_instances = s.histogram.total_instances;
    h.total_bytes = s.histogram.total_bytes;
    if (first || depth[agent] + 1 >= 32) {
      bytes += detail::EncodeFullSnapshot(h, compress).size();
      depth[agent] = 0;
    } else {
      bytes += detail::EncodeDeltaSnapshot(last[agent], h, 60'000'000, depth[agent] + 1, compress)
                   .size();
      ++depth[agent];
    }
    last[agent] = std::move(h);
  }
};

// Arg 0: percent of classes whose counts change between two snapshots of an agent; arg 1: zlib
// on/off.
void BM_Ingest(benchmark::State& state) {
  const double changed = state.range(0) / 100.0;
  const bool compress = state.range(1) != 0;
  ScopedDir dir;
  auto store = OpenStore(dir.path, compress);
  std::vector<bench::Workload> agents;
  for (int a = 0; a < kAgents; ++a) agents.emplace_back(/*seed=*/a + 1, kClasses, changed);
  ValueSizer sizer(compress);
  uint64_t samples = 0, appended = 0;
  for (auto _ : state) {
    state.PauseTiming();
    int a = static_cast<int>(appended % kAgents);
    Snapshot s = agents[a].Next("bench-agent-" + std::to_string(a));
    samples += s.histogram.rows.size();
    sizer.Add(a, s, appended < kAgents);
    state.ResumeTiming();
    Status st = store->Append(s);
    if (!st.ok()) {
      state.SkipWithError(st.ToString().c_str());
      break;
    }
    ++appended;
  }
  state.SetItemsProcessed(static_cast<int64_t>(appended));
  auto stats = store->Stats();
  HW_CHECK(stats.ok());
  state.counters["disk_B/sample"] = static_cast<double>(stats->disk_bytes) / samples;
  state.counters["live_B/sample"] = static_cast<double>(stats->used_bytes) / samples;
  state.counters["snap_B/sample"] = static_cast<double>(stats->snapshot_bytes) / samples;
  state.counters["value_B/sample"] = static_cast<double>(sizer.bytes) / samples;
  state.counters["dict_KiB/agent"] = stats->dictionary_bytes / 1024.0 / kAgents;
  state.counters["rows/snapshot"] = static_cast<double>(samples) / appended;
  state.counters["disk_MiB"] = stats->disk_bytes / 1048576.0;
}
BENCHMARK(BM_Ingest)
    ->ArgNames({"changed_pct", "zlib"})
    ->ArgsProduct({{10, 50, 100}, {0, 1}})
    ->Iterations(2000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Encoding alone (no LMDB): what Append costs besides the commit (includes the interning map).
void BM_EncodeDelta(benchmark::State& state) {
  bench::Workload w(1, kClasses, state.range(0) / 100.0);
  ValueSizer sizer(state.range(1) != 0);
  Snapshot prev = w.Next("a");
  sizer.Add(0, prev, true);
  Snapshot next = w.Next("a");
  for (auto _ : state) sizer.Add(0, next, false);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EncodeDelta)
    ->ArgNames({"changed_pct", "zlib"})
    ->ArgsProduct({{10, 100}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// A store with one agent and 2,000 snapshots, for the read benchmarks.
struct ReadFixture {
  ScopedDir dir;
  std::unique_ptr<SnapshotStore> store;
  std::vector<absl::Time> times;
  std::string leak_class;
  ReadFixture() {
    store = OpenStore(dir.path, /*compress=*/true);
    bench::Workload w(7, kClasses, 0.5);
    leak_class = w.LeakClassName();
    for (int i = 0; i < 2000; ++i) {
      Snapshot s = w.Next("reader");
      times.push_back(s.time);
      HW_CHECK(store->Append(s).ok());
    }
  }
};

ReadFixture& Fixture() {
  static ReadFixture* f = new ReadFixture();
  return *f;
}

void BM_ReadSnapshot(benchmark::State& state) {
  ReadFixture& f = Fixture();
  size_t i = 0;
  for (auto _ : state) {
    auto s = f.store->ReadSnapshot(AgentId("reader"), f.times[(i++ * 7919) % f.times.size()]);
    HW_CHECK(s.ok());
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ReadSnapshot)->Unit(benchmark::kMillisecond);

void BM_ClassHistory2000Snapshots(benchmark::State& state) {
  ReadFixture& f = Fixture();
  for (auto _ : state) {
    auto h = f.store->ClassHistory(AgentId("reader"), f.leak_class, absl::InfinitePast(),
                                   absl::InfiniteFuture());
    HW_CHECK(h.ok() && h->size() == f.times.size());
    benchmark::DoNotOptimize(h);
  }
}
BENCHMARK(BM_ClassHistory2000Snapshots)->Unit(benchmark::kMillisecond);

void BM_ReadLast10Snapshots(benchmark::State& state) {
  ReadFixture& f = Fixture();
  for (auto _ : state) {
    auto s =
        f.store->ReadSnapshots(AgentId("reader"), absl::InfinitePast(), absl::InfiniteFuture(), 10);
    HW_CHECK(s.ok() && s->size() == 10);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_ReadLast10Snapshots)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace heapwatch::storage

BENCHMARK_MAIN();
