#include "pipeline/analyze_dump.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analysis/aggregations.h"
#include "analysis/dominator_tree.h"
#include "analysis/retained_size.h"
#include "analysis/thread_names.h"
#include "collectors/dumps/heap_dump_reader.h"
#include "collectors/dumps/string_contents.h"

namespace heapwatch::pipeline {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void Progress(const AnalyzeDumpOptions& options, std::string_view stage, double fraction) {
  if (options.progress) options.progress(stage, fraction);
}

// The one call of a dump reader (the format-sniffing entry of collectors/dumps).
StatusOr<analysis::HeapGraph> ReadDumpGraph(const std::string& path,
                                            const AnalyzeDumpOptions& options) {
  dumps::ReadOptions read;
  read.dump_ordinal = options.dump_ordinal;
  read.size_model = options.size_model;
  if (options.progress) {
    read.progress = [&options](uint64_t done, uint64_t total) {
      options.progress("reading the dump",
                       total == 0 ? 0 : static_cast<double>(done) / static_cast<double>(total));
    };
  }
  return dumps::ReadHeapDump(path, read);
}

// A "VmHWM:"/"VmRSS:" line of /proc/self/status in bytes; nullopt when unreadable.
std::optional<uint64_t> ProcStatusBytes(std::string_view key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(key.size())) * 1024;
  }
  return std::nullopt;
}

// The growth of the process's peak RSS from construction to Measure() (see
// DumpAnalysis::peak_memory_bytes): VmHWM is reset to VmRSS first when the kernel allows it (Linux
// >= 4.0: "5" to /proc/self/clear_refs).
class PeakMemory {
 public:
  PeakMemory() {
    const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    bool reset = false;
    if (fd >= 0) {
      reset = ::write(fd, "5", 1) == 1;
      ::close(fd);
    }
    baseline_ = ProcStatusBytes(reset ? "VmRSS:" : "VmHWM:");
  }
  // Growth since construction, 0 when unknown.
  uint64_t Growth() const {
    const std::optional<uint64_t> peak = ProcStatusBytes("VmHWM:");
    return baseline_ && peak && *peak > *baseline_ ? *peak - *baseline_ : 0;
  }
  // VmHWM now (the peak since the reset), 0 when unknown.
  static uint64_t Peak() { return ProcStatusBytes("VmHWM:").value_or(0); }

 private:
  std::optional<uint64_t> baseline_;
};

Status CheckOptions(const AnalyzeDumpOptions& options, std::vector<std::string>* exclude) {
  *exclude = options.exclude_patterns.empty() ? analysis::DefaultExcludePatterns()
                                              : options.exclude_patterns;
  HW_RETURN_IF_ERROR(analysis::ClassNamePatterns::Compile(*exclude).status());
  if (!(options.accumulation_ratio > 0 && options.accumulation_ratio <= 1)) {
    return absl::InvalidArgumentError("the accumulation ratio must be in (0, 1]");
  }
  if (!(options.summary.min_owner_share >= 0 && options.summary.min_owner_share <= 1)) {
    return absl::InvalidArgumentError("summary.min_owner_share must be in [0, 1]");
  }
  return absl::OkStatus();
}

// The class of the top-level dominator above the first accumulation point (see DumpAnalysis);
// climbs the dominator tree iteratively.
std::string TopDominatorClass(const analysis::HeapGraph& graph, const analysis::DominatorTree& tree,
                              const std::vector<analysis::AccumulationPointReport>& points) {
  if (points.empty()) return "";
  analysis::ObjectIndex v = graph.FindObject(points.front().object.object_id);
  if (v == analysis::kNoObject || !tree.reachable(v)) return "";
  for (;;) {
    const analysis::ObjectIndex up = tree.immediate_dominator(v);
    if (up == analysis::kNoObject || up == tree.super_root()) break;
    v = up;
  }
  // Named as report.top_dominators_by_class names its rows (the instance's class).
  const analysis::ClassId cls = graph.class_of(v);
  if (!cls.valid() || cls.value >= graph.class_count()) return "<unknown class>";
  return graph.class_info(cls).name;
}

// Everything after the read; fills all of DumpAnalysis but the dump file's fields, parse time,
// total time and memory.
// The names of the live threads as reports may show them (analysis/thread_names.h), read from the
// dump at `path` in one more pass (collectors/dumps/string_contents.h). Empty with
// ThreadNamePrivacy::kOff, for dumps without string contents (IBM formats), and when the pass
// fails (the file changed since it was read): names are a help, not a reason to fail an analysis.
analysis::ThreadNames ReadThreadNames(const std::string& path, const analysis::HeapGraph& graph,
                                      analysis::ThreadNamePrivacy privacy) {
  analysis::ThreadNames names;
  if (privacy == analysis::ThreadNamePrivacy::kOff) return names;
  const std::vector<std::pair<analysis::ObjectIndex, analysis::ObjectIndex>> threads =
      analysis::ThreadNameObjects(graph);
  std::vector<analysis::ObjectIndex> name_objects;
  for (const auto& [thread, name] : threads) name_objects.push_back(name);
  auto contents = dumps::ReadStringContents(path, graph, name_objects);
  if (!contents.ok()) return names;
  for (const auto& [thread, name] : threads) {
    auto it = contents->find(name.value);
    if (it == contents->end()) continue;
    std::string shown =
        analysis::ThreadNameForReport(it->second.utf8, it->second.truncated, privacy);
    if (!shown.empty()) names[thread.value] = std::move(shown);
  }
  return names;
}

// Sets ObjectSummary::thread_name on every object of `result` that is a named thread.
void NameThreads(const analysis::HeapGraph& graph, const analysis::ThreadNames& names,
                 DumpAnalysis* result) {
  if (names.empty()) return;
  absl::flat_hash_map<uint64_t, const std::string*> by_id;
  for (const auto& [thread, name] : names) {
    by_id[graph.object_id(analysis::ObjectIndex(thread))] = &name;
  }
  auto name = [&by_id](analysis::ObjectSummary& o) {
    auto it = by_id.find(o.object_id);
    if (it != by_id.end()) o.thread_name = *it->second;
  };
  auto name_path = [&name](analysis::GcRootPathReport& path) {
    for (analysis::PathStepReport& step : path.steps) name(step.object);
  };
  auto name_matches = [&name_path](std::vector<analysis::LeakPatternMatch>& matches) {
    for (analysis::LeakPatternMatch& m : matches) name_path(m.path);
  };
  for (analysis::ObjectSummary& o : result->report.top_objects) name(o);
  name_matches(result->report.leak_patterns);
  for (analysis::SuspectReport& s : result->suspects) {
    for (analysis::AccumulationPointReport& p : s.accumulation_points) {
      name(p.object);
      name_path(p.path);
    }
    for (analysis::DominatorClassRow& row : s.kept_alive_by) name(row.biggest_dominator);
    name_path(s.shortest_path);
    name_matches(s.leak_patterns);
  }
}

StatusOr<DumpAnalysis> Analyze(const analysis::HeapGraph& graph, const AnalyzeDumpOptions& options,
                               const std::vector<std::string>& exclude,
                               const analysis::ThreadNames* thread_names = nullptr) {
  const auto start = Clock::now();
  Progress(options, "dominator tree", 0);
  HW_ASSIGN_OR_RETURN(analysis::DominatorTree tree,
                      analysis::ComputeDominatorTree(graph.graph(), graph.root_objects()));
  const double dominators_seconds = SecondsSince(start);
  const auto retained_start = Clock::now();
  Progress(options, "retained sizes", 0);
  const analysis::RetainedSizes retained = analysis::ComputeRetainedSizes(
      tree, [&graph](analysis::ObjectIndex v) { return graph.shallow_size(v); });
  const double retained_seconds = SecondsSince(retained_start);

  analysis::ReportOptions report_options;
  report_options.top_objects = options.top_objects;
  report_options.histogram_rows = options.histogram_rows;
  report_options.exclude_patterns = exclude;
  report_options.accumulation_ratio = options.accumulation_ratio;
  report_options.dynamic_sizes = options.dynamic_sizes;
  report_options.dynamic = options.dynamic;
  report_options.progress = options.progress;

  DumpAnalysis result;
  HW_ASSIGN_OR_RETURN(result.report, analysis::BuildReport(graph, tree, retained, report_options));
  result.report.timings.dominators_seconds = dominators_seconds;
  result.report.timings.retained_seconds = retained_seconds;

  if (options.leak_patterns) {
    Progress(options, "leak patterns", 0);
    const auto patterns_start = Clock::now();
    HW_ASSIGN_OR_RETURN(
        result.report.leak_patterns,
        analysis::RecognizeLeakPatterns(graph, tree, retained, options.patterns, thread_names));
    result.report.timings.aggregation_seconds += SecondsSince(patterns_start);
  }

  HW_ASSIGN_OR_RETURN(result.treemap, analysis::BuildDominatorTreemap(graph, tree, retained));

  std::set<std::string> seen;
  for (const std::string& name : options.suspect_classes) {
    if (!seen.insert(name).second) continue;
    if (graph.FindClasses(name).empty()) {
      result.missing_classes.push_back(name);
      continue;
    }
    HW_ASSIGN_OR_RETURN(analysis::SuspectReport suspect,
                        analysis::BuildSuspectReport(graph, tree, retained, name, report_options,
                                                     &result.report.timings));
    if (!result.report.leak_patterns.empty()) {
      // The suspect's accumulation points, or its instances when it has none.
      std::vector<analysis::ObjectIndex> points;
      for (const analysis::AccumulationPointReport& point : suspect.accumulation_points) {
        points.push_back(graph.FindObject(point.object.object_id));
      }
      if (points.empty()) {
        points = analysis::InstancesOf(graph, tree, graph.FindClasses(name));
      }
      suspect.leak_patterns =
          analysis::MatchesForSuspect(tree, result.report.leak_patterns, points);
    }
    result.accumulation_point_top_classes.push_back(
        TopDominatorClass(graph, tree, suspect.accumulation_points));
    analysis::DominatorTreemap marked = result.treemap;
    if (!suspect.accumulation_points.empty()) {
      analysis::MarkAccumulationPoint(
          graph, tree, graph.FindObject(suspect.accumulation_points.front().object.object_id),
          &marked);
    }
    result.suspect_treemaps.push_back(std::move(marked));
    result.suspects.push_back(std::move(suspect));
  }

  result.class_loaders = analysis::SummarizeClassLoaders(graph);

  if (options.by_dynamic_rows > 0) {
    Progress(options, "dynamic size of every object", 0);
    analysis::DynamicRankingOptions ranking;
    ranking.rows = options.by_dynamic_rows;
    ranking.references = options.dynamic;
    HW_ASSIGN_OR_RETURN(result.by_dynamic,
                        analysis::RankByDynamicSize(graph, tree, retained, ranking));
    result.report.timings.dynamic_seconds +=
        result.by_dynamic->estimate_seconds + result.by_dynamic->exact_seconds;
  }

  if (options.dump_summary) {
    Progress(options, "summary", 0);
    const auto summary_start = Clock::now();
    HW_ASSIGN_OR_RETURN(result.summary,
                        analysis::BuildDumpSummary(graph, tree, retained, options.summary));
    result.report.timings.aggregation_seconds += SecondsSince(summary_start);
  }
  if (thread_names != nullptr) NameThreads(graph, *thread_names, &result);
  return result;
}

}  // namespace

StatusOr<DumpAnalysis> AnalyzeHeapGraph(const analysis::HeapGraph& graph,
                                        const AnalyzeDumpOptions& options) {
  const auto start = Clock::now();
  std::vector<std::string> exclude;
  HW_RETURN_IF_ERROR(CheckOptions(options, &exclude));
  const PeakMemory memory;
  HW_ASSIGN_OR_RETURN(DumpAnalysis result, Analyze(graph, options, exclude));
  result.peak_memory_bytes = memory.Growth();
  result.report.timings.peak_rss_bytes = PeakMemory::Peak();
  result.report.timings.total_seconds = SecondsSince(start);
  Progress(options, "done", 1);
  return result;
}

StatusOr<DumpAnalysis> AnalyzeDump(const std::string& path, const AnalyzeDumpOptions& options) {
  const auto start = Clock::now();
  std::vector<std::string> exclude;
  HW_RETURN_IF_ERROR(CheckOptions(options, &exclude));
  const PeakMemory memory;
  DumpAnalysis result;
  {
    HW_ASSIGN_OR_RETURN(analysis::HeapGraph graph, ReadDumpGraph(path, options));
    // The thread names' pass counts as reading the dump.
    const analysis::ThreadNames thread_names = ReadThreadNames(path, graph, options.thread_names);
    const double parse_seconds = SecondsSince(start);
    HW_ASSIGN_OR_RETURN(result, Analyze(graph, options, exclude, &thread_names));
    result.report.timings.parse_seconds = parse_seconds;
    result.peak_memory_bytes = memory.Growth();
  }  // the graph is freed here
  result.report.dump_path = path;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0)
    result.report.dump_file_bytes = static_cast<uint64_t>(st.st_size);
  result.report.timings.peak_rss_bytes = PeakMemory::Peak();
  result.report.timings.total_seconds = SecondsSince(start);
  Progress(options, "done", 1);
  return result;
}

}  // namespace heapwatch::pipeline
