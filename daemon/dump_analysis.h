// One whole analysis of one extended dump (HPROF file) inside the daemon: what the escalation
// worker runs between "the JVM wrote the dump" and "store the reports" (issue "Escalation and
// drill-down").
//
// AnalyzeDumpFile reads the file (collectors/hprof: plain or gzip), computes the dominator tree and
// the retained sizes once (analysis/dominator_tree.h, analysis/retained_size.h), then for each
// requested class the suspect analysis of analysis/report.h (precise and minimum retained size,
// accumulation points with their paths from GC roots, who keeps the instances alive, shortest
// strong path), the biggest objects of the dump, and the dump summary of analysis/dump_summary.h
// (class histogram with retained sizes, owners) that a later dump is diffed against. The heap graph
// and the per-object arrays are freed before it returns; what it returns is small (a few KB per
// class plus the summary, at most DumpSummaryOptions::max_owners owners).
//
// Secrets: the results hold class, field and GC-root-kind names, object ids, counts and sizes only;
// never primitive values or string contents (the report model never reads them).
//
// Memory: the graph (see analysis/heap_graph.h) plus 20 bytes per object for the dominator tree and
// retained sizes plus 8 bytes per object for the owner path search; about 0.5 x the heap size of
// the JVM for a HotSpot dump. Time: O(objects + references) for the read and the tree, plus one
// simulated GC (O(objects + references)) per requested class.
// Thread-safety: reentrant; several analyses may run at once on distinct files (each uses its own
// memory; peak_memory_bytes is then approximate, see below).
#ifndef HEAPWATCH_DAEMON_DUMP_ANALYSIS_H_
#define HEAPWATCH_DAEMON_DUMP_ANALYSIS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/dump_summary.h"
#include "analysis/report.h"
#include "common/status.h"

namespace heapwatch::daemon {

struct DumpAnalysisOptions {
  // Regular expressions of dominator classes "who keeps it alive" climbs past (analysis/report.h);
  // empty = analysis::DefaultExcludePatterns().
  std::vector<std::string> exclude_patterns;
  size_t top_objects = 20;  // biggest objects of the dump by retained size
  analysis::DumpSummaryOptions summary;
  // Called from the calling thread with (stage, fraction 0..1 of that stage): "reading the dump",
  // "dominator tree", "retained sizes", then the report stages per class, "summary". May be empty.
  std::function<void(std::string_view stage, double fraction)> progress;
};

struct DumpAnalysis {
  std::string format;  // HPROF header, e.g. "JAVA PROFILE 1.0.2"
  analysis::ReportTotals totals;
  // One per requested class with at least one reachable instance, in request order (duplicates
  // dropped).
  std::vector<analysis::SuspectReport> suspects;
  // Requested classes with no reachable instance in the dump (no such class, or only unreachable
  // instances), in request order.
  std::vector<std::string> missing_classes;
  std::vector<analysis::ObjectSummary> top_objects;  // descending retained size
  analysis::DumpSummary summary;
  double analysis_seconds = 0;  // wall time of the whole call (read included)
  // Growth of the process's peak resident set size (VmHWM) during the analysis, in bytes. The peak
  // is reset first through /proc/self/clear_refs ("5") when the kernel allows it; the growth is
  // then VmHWM at the end minus VmRSS at the start. If the reset is refused, it is the growth of
  // VmHWM, which under-counts when the process had a higher peak before. Approximate when other
  // threads allocate meanwhile (e.g. overlapping analyses). 0 when /proc is unavailable.
  uint64_t peak_memory_bytes = 0;
};

// Analyses the heap dump at `path` for the suspect classes `classes` (Java names,
// "com.acme.Session"; may be empty: then only totals, top objects and summary).
// Errors: those of hprof::ReadHeapGraph (NotFound, PermissionDenied, InvalidArgument for a file
// that is not a heap dump, Unimplemented, DataLoss for a truncated or corrupt dump naming the
// offset, Internal for I/O); InvalidArgument for a bad exclude pattern or summary option; errors of
// the algorithms for graphs beyond their limits. Never crashes on a bad file.
StatusOr<DumpAnalysis> AnalyzeDumpFile(const std::string& path,
                                       const std::vector<std::string>& classes,
                                       const DumpAnalysisOptions& options = {});

}  // namespace heapwatch::daemon

#endif  // HEAPWATCH_DAEMON_DUMP_ANALYSIS_H_
