#include "daemon/dump_analysis.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <set>
#include <utility>

#include "analysis/aggregations.h"
#include "analysis/dominator_tree.h"
#include "analysis/heap_graph.h"
#include "analysis/retained_size.h"
#include "collectors/dumps/hprof/hprof_reader.h"

namespace heapwatch::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// A "VmHWM:"/"VmRSS:" line of /proc/self/status in bytes; nullopt when unreadable.
std::optional<uint64_t> ProcStatusBytes(std::string_view key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(key.size())) * 1024;
  }
  return std::nullopt;
}

// Resets the peak RSS (VmHWM) to the current RSS (Linux >= 4.0: "5" to clear_refs).
bool ResetPeakRss() {
  int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, "5", 1) == 1;
  ::close(fd);
  return ok;
}

void Progress(const DumpAnalysisOptions& options, std::string_view stage, double fraction) {
  if (options.progress) options.progress(stage, fraction);
}

}  // namespace

StatusOr<DumpAnalysis> AnalyzeDumpFile(const std::string& path,
                                       const std::vector<std::string>& classes,
                                       const DumpAnalysisOptions& options) {
  const auto start = Clock::now();
  const std::vector<std::string> exclude = options.exclude_patterns.empty()
                                               ? analysis::DefaultExcludePatterns()
                                               : options.exclude_patterns;
  HW_RETURN_IF_ERROR(analysis::ClassNamePatterns::Compile(exclude).status());
  if (!(options.summary.min_owner_share >= 0 && options.summary.min_owner_share <= 1)) {
    return absl::InvalidArgumentError("summary.min_owner_share must be in [0, 1]");
  }

  const bool reset = ResetPeakRss();
  const std::optional<uint64_t> baseline = ProcStatusBytes(reset ? "VmRSS:" : "VmHWM:");

  DumpAnalysis result;
  {
    hprof::ReadOptions read;
    if (options.progress) {
      read.progress = [&options](uint64_t done, uint64_t total) {
        options.progress("reading the dump",
                         total == 0 ? 0 : static_cast<double>(done) / static_cast<double>(total));
      };
    }
    HW_ASSIGN_OR_RETURN(analysis::HeapGraph graph, hprof::ReadHeapGraph(path, read));
    result.format = graph.info().format;

    Progress(options, "dominator tree", 0);
    HW_ASSIGN_OR_RETURN(analysis::DominatorTree tree,
                        analysis::ComputeDominatorTree(graph.graph(), graph.root_objects()));
    Progress(options, "retained sizes", 0);
    const analysis::RetainedSizes retained = analysis::ComputeRetainedSizes(
        tree, [&graph](analysis::ObjectIndex v) { return graph.shallow_size(v); });

    // Totals and the biggest objects once; then only the suspect analysis per class.
    analysis::ReportOptions report_options;
    report_options.top_objects = options.top_objects;
    report_options.histogram_rows = 1;
    report_options.exclude_patterns = exclude;
    report_options.progress = options.progress;
    HW_ASSIGN_OR_RETURN(analysis::Report overview,
                        analysis::BuildReport(graph, tree, retained, report_options));
    result.totals = overview.totals;
    result.top_objects = std::move(overview.top_objects);

    std::set<std::string> seen;
    for (const std::string& name : classes) {
      if (!seen.insert(name).second) continue;
      if (graph.FindClasses(name).empty()) {
        result.missing_classes.push_back(name);
        continue;
      }
      HW_ASSIGN_OR_RETURN(
          analysis::SuspectReport suspect,
          analysis::BuildSuspectReport(graph, tree, retained, name, report_options));
      if (suspect.instances == 0) {
        result.missing_classes.push_back(name);
        continue;
      }
      result.suspects.push_back(std::move(suspect));
    }

    Progress(options, "summary", 0);
    HW_ASSIGN_OR_RETURN(result.summary,
                        analysis::BuildDumpSummary(graph, tree, retained, options.summary));
    const std::optional<uint64_t> peak = ProcStatusBytes("VmHWM:");
    if (baseline && peak && *peak > *baseline) result.peak_memory_bytes = *peak - *baseline;
  }  // the graph, tree and retained sizes are freed here
  result.analysis_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Progress(options, "done", 1);
  return result;
}

}  // namespace heapwatch::daemon
