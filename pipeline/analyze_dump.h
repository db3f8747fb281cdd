// The one analysis pipeline of a heap dump ("extended dump"), run by the daemon's escalation worker
// (daemon/escalation.cc) and by `heapwatchctl analyze` (ctl/analyze_command.cc) alike:
//
//   read the dump (collectors/dumps ReadHeapDump, which sniffs the format; ReadDumpGraph in
//   analyze_dump.cc is the one place that calls a reader) -> dominator tree over strong and weak
//   references, unreachable objects left out (analysis/dominator_tree.h) -> retained sizes
//   (analysis/retained_size.h) -> the dump-wide report: totals, class histogram with retained
//   sizes, biggest objects, first level of the dominator tree by class (analysis/report.h
//   BuildReport) -> per requested class the suspect analysis (BuildSuspectReport: precise and
//   minimum retained size, accumulation points with their paths from GC roots, who keeps the
//   instances alive, shortest strong path) and the exact dynamic sizes (the suspect's instances
//   together, accumulation points, biggest objects; analysis/dynamic_size.h) -> with
//   AnalyzeDumpOptions::dump_summary, the dump summary a later dump is diffed against
//   (analysis/dump_summary.h).
//
// It returns data only and prints nothing: the caller converts the result into the report model
// (heapwatch.v1.DumpReport / DrillDownReport, proto/report_proto.h) and ctl renders that
// (ctl/report_render.h). The heap graph and the per-object arrays are freed before AnalyzeDump
// returns; what it returns is small (a few KB per class, the histogram, at most
// DumpSummaryOptions::max_owners owners).
//
// Secrets: the results hold class, field and GC-root-kind names, object ids, counts and sizes;
// never primitive values, and no string contents but the names of live threads, masked by default
// (AnalyzeDumpOptions::thread_names).
//
// Units: sizes in bytes, times in seconds. Memory: the graph (analysis/heap_graph.h) plus 20 bytes
// per object for the dominator tree and retained sizes plus, with dump_summary, 8 bytes per object
// for the owner path search; about 0.5 x the heap size of the JVM for a HotSpot dump. Time:
// O(objects + references) for the read and the tree, plus one simulated GC (O(objects +
// references)) per requested class, plus one search over what it reaches per exact dynamic size
// (top_objects + 1 per class + its accumulation points; each at most O(objects + references)).
// Thread-safety: reentrant; several analyses may run at once on distinct inputs (each uses its own
// memory; DumpAnalysis::peak_memory_bytes is then approximate, see below).
#ifndef HEAPWATCH_PIPELINE_ANALYZE_DUMP_H_
#define HEAPWATCH_PIPELINE_ANALYZE_DUMP_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/class_loaders.h"
#include "analysis/dominator_treemap.h"
#include "analysis/dump_summary.h"
#include "analysis/dynamic_ranking.h"
#include "analysis/dynamic_size.h"
#include "analysis/heap_graph.h"
#include "analysis/leak_patterns/leak_patterns.h"
#include "analysis/report.h"
#include "analysis/thread_names.h"
#include "common/status.h"

namespace heapwatch::pipeline {

struct AnalyzeDumpOptions {
  // ---- Reading (AnalyzeDump only).
  // Which heap dump of a file holding several, 0-based in file order; -1 = the last one.
  int dump_ordinal = -1;
  // How shallow sizes are computed (docs/size-model.md); kAuto = inferred from the dump.
  analysis::SizeModel size_model = analysis::SizeModel::kAuto;

  // ---- What to analyse.
  // Suspect classes (Java names, "com.acme.Session"); duplicates are analysed once. May be empty.
  std::vector<std::string> suspect_classes;
  // Regular expressions of dominator classes "who keeps it alive" climbs past (analysis/report.h);
  // empty = analysis::DefaultExcludePatterns().
  std::vector<std::string> exclude_patterns;
  size_t top_objects = 20;  // biggest objects of the dump by retained size
  size_t histogram_rows =
      0;  // rows of the class histogram; 0 = every class with a reachable object
  // Accumulation-point ratio in (0, 1] (analysis/aggregations.h FindAccumulationPoints).
  double accumulation_ratio = 0.7;
  // Exact dynamic sizes (analysis/report.h ReportOptions::dynamic_sizes) of each suspect class's
  // instances together, of each accumulation point and of each of the biggest objects, following
  // `dynamic`'s references (analysis/dynamic_size.h).
  bool dynamic_sizes = true;
  analysis::DynamicSizeOptions dynamic;
  // With a value > 0: the objects and classes ranked by dynamic and by shared size (dynamic -
  // retained), this many rows per list, and the shared-size histogram (analysis/dynamic_ranking.h:
  // an estimate of every object's dynamic size, exact figures for the rows; `heapwatchctl analyze
  // --by dynamic`). Follows `dynamic`'s references.
  size_t by_dynamic_rows = 0;
  // Run the known-leak pattern recognisers (analysis/leak_patterns/leak_patterns.h): every match
  // goes into report.leak_patterns, and each suspect gets those that concern it. O(objects +
  // references) more.
  bool leak_patterns = true;
  analysis::LeakPatternOptions patterns;
  // Names of live threads in the reports (AnalyzeDump only; analysis/thread_names.h,
  // docs/leak-patterns.md "Thread names and privacy"): kMasked (default) shows them with digit
  // runs masked ("pool-#-thread-#"), kFull as they are, kOff not at all. Reading them is one more
  // streaming pass over the dump (counted in timings.parse_seconds) that keeps only the names.
  analysis::ThreadNamePrivacy thread_names = analysis::ThreadNamePrivacy::kMasked;
  // Also build the dump summary (class histogram by name and owners) that the daemon stores.
  bool dump_summary = false;
  analysis::DumpSummaryOptions summary;

  // Called from the calling thread with (stage, fraction 0..1 of that stage): "reading the dump",
  // "dominator tree", "retained sizes", the report stages, "summary", "done". May be empty.
  std::function<void(std::string_view stage, double fraction)> progress;
};

struct DumpAnalysis {
  // The dump-wide report: dump_path, dump_file_bytes (the size of `path` on disk; 0 when it cannot
  // be stat'ed or for AnalyzeHeapGraph), dump_format, size_model, totals, histogram, top_objects,
  // top_dominators_by_class and timings (parse, stages, total = the whole call, peak_rss_bytes =
  // the process's VmHWM at the end). Its `suspect` is unset: see `suspects`.
  analysis::Report report;
  // One per requested class that the dump names (several loaders' classes of one name together), in
  // request order, duplicates dropped. A class whose instances are all unreachable has one with
  // instances == 0.
  std::vector<analysis::SuspectReport> suspects;
  // One per entry of `suspects`: the class of the top-level dominator (a child of the dominator
  // tree's super root) that dominates the suspect's first accumulation point, the point itself when
  // it is top-level; empty without an accumulation point. Marks the point's cell in the web
  // report's treemap of report.top_dominators_by_class (docs/web.md). O(depth of the point) each.
  std::vector<std::string> accumulation_point_top_classes;
  // The dump's dominator tree two levels deep, grouped by class (analysis/dominator_treemap.h,
  // default bounds), for the web report's treemap; O(objects) once per dump.
  analysis::DominatorTreemap treemap;
  // One per entry of `suspects`: `treemap` with the cells above the suspect's first accumulation
  // point marked (MarkAccumulationPoint); unmarked without an accumulation point.
  std::vector<analysis::DominatorTreemap> suspect_treemaps;
  // Requested names that no class of the dump has, in request order.
  std::vector<std::string> missing_classes;
  // With AnalyzeDumpOptions::dump_summary.
  std::optional<analysis::DumpSummary> summary;
  // The dump's class loaders and the class names several of them define
  // (analysis/class_loaders.h SummarizeClassLoaders, default options); always computed (O(n + C
  // log C)).
  analysis::ClassLoaderSummary class_loaders;
  // With AnalyzeDumpOptions::by_dynamic_rows > 0.
  std::optional<analysis::DynamicRanking> by_dynamic;
  // Growth of the process's peak resident set size (VmHWM) during the call, in bytes. The peak is
  // reset first through /proc/self/clear_refs ("5") when the kernel allows it; the growth is then
  // VmHWM at the end minus VmRSS at the start. If the reset is refused, it is the growth of VmHWM,
  // which under-counts when the process had a higher peak before. Approximate when other threads
  // allocate meanwhile (e.g. overlapping analyses). 0 when /proc is unavailable.
  uint64_t peak_memory_bytes = 0;
};

// Reads the heap dump at `path` and analyses it (see the file comment).
// Errors: those of the dump readers (collectors/dumps/heap_dump_reader.h ReadHeapDump: NotFound,
// PermissionDenied, InvalidArgument for a file that is not a heap dump or an ordinal beyond the
// file's dumps, Unimplemented for a recognised but unsupported format, DataLoss for a truncated or
// corrupt dump naming the offset, Internal for I/O); InvalidArgument for a bad exclude pattern,
// accumulation ratio or summary option (checked before the file is read); errors of the
// algorithms for graphs beyond their limits. Never crashes on a bad file.
StatusOr<DumpAnalysis> AnalyzeDump(const std::string& path, const AnalyzeDumpOptions& options = {});

// The same on a graph the caller already holds (reads nothing; the reading options are ignored,
// report.dump_path and dump_file_bytes stay empty, timings.parse_seconds 0). Same errors but the
// reader's.
StatusOr<DumpAnalysis> AnalyzeHeapGraph(const analysis::HeapGraph& graph,
                                        const AnalyzeDumpOptions& options = {});

}  // namespace heapwatch::pipeline

#endif  // HEAPWATCH_PIPELINE_ANALYZE_DUMP_H_
