// heapwatch_analysis_bench: seconds and peak RSS per stage of the extended-dump analysis on one
// HPROF file, and the Boost.Graph Lengauer-Tarjan baseline on the same graph.
//
// Usage: heapwatch_analysis_bench [--boost] [--class NAME] DUMP
// Stages, each timed with a monotonic clock; the kernel's peak-RSS mark is reset before each stage
// (`echo 5 > /proc/self/clear_refs`) so "peak" is the peak of that stage (with everything still
// held from earlier stages, e.g. the graph):
//   read        reading the file once (4 MiB read() calls; baseline (a))
//   parse       hprof::ReadHeapGraph
//   dominators  ComputeDominatorTree (all GC roots, strong + weak references, unreachable left out)
//   retained    ComputeRetainedSizes
//   paths       ShortestPathsFromGcRoots to each of the 5 objects with the largest retained size
//   report      BuildReport: histogram with retained sizes, biggest objects, grouped dominator tree
//   and,
//               with --class, the suspect analysis (precise retained size by simulated GC,
//               accumulation point, immediate dominators, paths from GC roots)
//   boost_build / boost_lt (with --boost) copying the graph into Boost's CSR graph / Boost's
//               lengauer_tarjan_dominator_tree; the immediate dominators are compared with ours.
//               Boost gets the references of reachable objects only
//               (HEAPWATCH_BENCH_BOOST_FULL_GRAPH=1: all of them; see boost_dominators.h).
// Output: one line per stage, "stage NAME seconds S cpu_seconds C peak_rss_bytes B start_rss_bytes
// R0 end_rss_bytes R1" (peak = VmHWM of the stage, R0/R1 = VmRSS when it starts and ends), then
// "check ..." lines. With HEAPWATCH_BENCH_TRACE_RSS=1 set, the report stage also prints the RSS
// and the peak so far at each of its steps to stderr.
//
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "analysis/aggregations.h"
#include "analysis/dominator_tree.h"
#include "analysis/gc_root_paths.h"
#include "analysis/report.h"
#include "analysis/retained_size.h"
#include "bench/analysis/boost_dominators.h"
#include "collectors/dumps/hprof/hprof_reader.h"

namespace heapwatch::bench {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t ReadStatusKb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(std::strlen(key)));
  }
  return 0;
}

bool ResetPeak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

// User + system CPU seconds of this process so far.
double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

// Prints "stage NAME seconds S cpu_seconds C peak_rss_bytes B" when it goes out of scope. CPU
// seconds are reported next to wall-clock seconds because other processes share the machine's two
// cores.
class Stage {
 public:
  explicit Stage(const char* name) : name_(name) {
    ResetPeak();
    start_rss_kb_ = ReadStatusKb("VmRSS:");
    start_ = Clock::now();
    cpu_start_ = CpuSeconds();
  }
  ~Stage() {
    double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    std::printf(
        "stage %s seconds %.3f cpu_seconds %.3f peak_rss_bytes %llu start_rss_bytes %llu "
        "end_rss_bytes %llu\n",
        name_, seconds, CpuSeconds() - cpu_start_,
        static_cast<unsigned long long>(ReadStatusKb("VmHWM:") * 1024),
        static_cast<unsigned long long>(start_rss_kb_ * 1024),
        static_cast<unsigned long long>(ReadStatusKb("VmRSS:") * 1024));
    std::fflush(stdout);
  }

 private:
  const char* name_;
  Clock::time_point start_;
  double cpu_start_;
  uint64_t start_rss_kb_ = 0;
};

int Fail(const Status& status) {
  std::fprintf(stderr, "heapwatch_analysis_bench: %s\n", status.ToString().c_str());
  return 1;
}

int Main(int argc, char** argv) {
  bool boost = false;
  std::optional<std::string> suspect;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--boost") {
      boost = true;
    } else if (arg == "--class" && i + 1 < argc) {
      suspect = argv[++i];
    } else if (path.empty() && arg[0] != '-') {
      path = arg;
    } else {
      std::fprintf(stderr, "usage: heapwatch_analysis_bench [--boost] [--class NAME] DUMP\n");
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: heapwatch_analysis_bench [--boost] [--class NAME] DUMP\n");
    return 2;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Fail(absl::NotFoundError("cannot stat " + path));
  std::printf("file %s bytes %lld\n", path.c_str(), static_cast<long long>(st.st_size));

  {
    Stage stage("read");
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Fail(absl::NotFoundError("cannot open " + path));
    std::vector<char> buffer(4 << 20);
    uint64_t total = 0;
    ssize_t got;
    while ((got = ::read(fd, buffer.data(), buffer.size())) > 0)
      total += static_cast<uint64_t>(got);
    ::close(fd);
    if (total != static_cast<uint64_t>(st.st_size)) return Fail(absl::DataLossError("short read"));
  }

  std::optional<analysis::HeapGraph> graph;
  {
    Stage stage("parse");
    auto read = hprof::ReadHeapGraph(path);
    if (!read.ok()) return Fail(read.status());
    graph.emplace(std::move(*read));
  }
  std::printf("check objects %u references %llu gc_roots %zu classes %u graph_bytes %llu\n",
              graph->object_count(), static_cast<unsigned long long>(graph->graph().edge_count()),
              graph->root_objects().size(), graph->class_count(),
              static_cast<unsigned long long>(graph->MemoryUsage()));

  std::optional<analysis::DominatorTree> tree;
  {
    Stage stage("dominators");
    auto computed = analysis::ComputeDominatorTree(graph->graph(), graph->root_objects());
    if (!computed.ok()) return Fail(computed.status());
    tree.emplace(std::move(*computed));
  }
  analysis::RetainedSizes retained;
  {
    Stage stage("retained");
    retained = analysis::ComputeRetainedSizes(
        *tree, [&](analysis::ObjectIndex v) { return graph->shallow_size(v); });
  }
  std::printf(
      "check reachable %u unreachable %u total_retained %llu retained_unit %llu "
      "retained_memory_bytes %zu\n",
      tree->tree_object_count(), tree->unreachable_count(),
      static_cast<unsigned long long>(retained.back()),
      static_cast<unsigned long long>(retained.compact() ? retained.unit() : 0),
      retained.MemoryUsage());
  {
    Stage stage("paths");
    for (analysis::ObjectIndex target : analysis::TopObjectsByRetainedSize(*tree, retained, 5)) {
      auto paths =
          analysis::ShortestPathsFromGcRoots(graph->graph(), graph->root_objects(), target, 1);
      if (!paths.ok()) return Fail(paths.status());
    }
  }
  {
    Stage stage("report");
    analysis::ReportOptions options;
    options.suspect_class = suspect;
    if (std::getenv("HEAPWATCH_BENCH_TRACE_RSS") != nullptr) {
      options.progress = [](std::string_view step, double) {
        std::fprintf(stderr, "report step %.*s: rss %llu MB, peak so far %llu MB\n",
                     static_cast<int>(step.size()), step.data(),
                     static_cast<unsigned long long>(ReadStatusKb("VmRSS:") / 1024),
                     static_cast<unsigned long long>(ReadStatusKb("VmHWM:") / 1024));
      };
    }
    auto report = analysis::BuildReport(*graph, *tree, retained, options);
    if (!report.ok()) return Fail(report.status());
    if (report->suspect) {
      const auto& s = *report->suspect;
      std::printf(
          "check suspect %s instances %llu retained %llu minimum %llu accumulation %s\n",
          s.class_name.c_str(), static_cast<unsigned long long>(s.instances),
          static_cast<unsigned long long>(s.retained_bytes),
          static_cast<unsigned long long>(s.minimum_retained_bytes),
          s.accumulation_points.empty() ? "-" : s.accumulation_points[0].object.class_name.c_str());
    }
  }
  std::printf("peak_rss_bytes_process %llu\n",
              static_cast<unsigned long long>(ReadStatusKb("VmHWM:") * 1024));

  if (boost) {
    std::vector<analysis::ObjectIndex> ours(tree->immediate_dominators().begin(),
                                            tree->immediate_dominators().end());
    const uint32_t n = tree->object_count();
    tree.reset();
    retained = analysis::RetainedSizes();
    ResetPeak();
    // HEAPWATCH_BENCH_BOOST_FULL_GRAPH=1 gives Boost the references of unreachable objects too
    // (see boost_dominators.h for what Boost 1.74 then gets wrong).
    const bool full_graph = std::getenv("HEAPWATCH_BENCH_BOOST_FULL_GRAPH") != nullptr;
    BoostDominatorResult result =
        RunBoostLengauerTarjan(graph->graph(), graph->root_objects(), !full_graph);
    uint64_t peak = ReadStatusKb("VmHWM:") * 1024;
    std::printf("stage boost_build seconds %.3f cpu_seconds %.3f peak_rss_bytes %llu\n",
                result.build_seconds, result.build_cpu_seconds,
                static_cast<unsigned long long>(peak));
    std::printf("stage boost_lt seconds %.3f cpu_seconds %.3f peak_rss_bytes %llu\n",
                result.lt_seconds, result.lt_cpu_seconds, static_cast<unsigned long long>(peak));
    uint64_t mismatches = 0;
    uint64_t boost_null_for_reachable = 0;
    std::vector<bool> seen(n, false);
    {
      std::vector<analysis::ObjectIndex> stack(graph->root_objects().begin(),
                                               graph->root_objects().end());
      for (auto r : stack) seen[r.value] = true;
      while (!stack.empty()) {
        auto v = stack.back();
        stack.pop_back();
        for (auto w : graph->graph().successors(v)) {
          if (!seen[w.value]) {
            seen[w.value] = true;
            stack.push_back(w);
          }
        }
      }
    }
    for (uint32_t v = 0; v < n; ++v) {
      uint32_t expected = ours[v].valid() ? ours[v].value : UINT32_MAX;  // super root == n in both
      if (result.idom[v] != expected) {
        if (mismatches - boost_null_for_reachable < 5 &&
            !(result.idom[v] == UINT32_MAX && seen[v])) {
          auto roots = graph->root_objects();
          bool is_root = std::binary_search(roots.begin(), roots.end(), analysis::ObjectIndex(v));
          std::printf(
              "mismatch object %u (id 0x%llx, %s, root %d, reachable %d): ours %u boost %u\n", v,
              static_cast<unsigned long long>(graph->object_id(analysis::ObjectIndex(v))),
              graph->class_info(graph->class_of(analysis::ObjectIndex(v))).name.c_str(), is_root,
              static_cast<int>(seen[v]), expected, result.idom[v]);
        }
        if (result.idom[v] == UINT32_MAX && seen[v]) ++boost_null_for_reachable;
        ++mismatches;
      }
    }
    // A reachable object always has an immediate dominator; with the full graph Boost 1.74 leaves
    // those referenced from unreachable objects at null_vertex (boost_dominators.h). Count them
    // separately.
    std::printf("check boost_idom_mismatches %llu boost_null_for_reachable %llu\n",
                static_cast<unsigned long long>(mismatches),
                static_cast<unsigned long long>(boost_null_for_reachable));
    if (mismatches != boost_null_for_reachable) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace heapwatch::bench

int main(int argc, char** argv) { return heapwatch::bench::Main(argc, argv); }
