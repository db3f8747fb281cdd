// The report data of an extended dump (a whole heap graph): what the analysis pipeline
// (pipeline/analyze_dump.h) returns to the daemon and to `heapwatchctl analyze`. Data only: nothing
// here prints. The report model people and programs read is heapwatch.v1.DumpReport /
// DrillDownReport (proto/report_proto.h converts these structs into it; ctl/report_render.h
// renders it).
//
// A Report holds structure and sizes only: class names, field names, GC-root kinds, counts, raw
// object ids (addresses from the dump) and sizes. Never primitive values or string contents, so a
// stored report does not leak secrets held in the heap.
//
// Units: every size is in bytes (shallow sizes under the size model of the reader, see
// collectors/dumps), every duration in seconds.
//
// Definitions used throughout (seed 002, MAT; seed 001 ch. 4, dynaTrace "GC size"):
//   - shallow size: the bytes of one object itself.
//   - retained size of an object x: the sum of the shallow sizes of the objects x dominates (x
//     included), i.e. what a GC would free if x were gone.
//   - retained size of a class C in the histogram: the *minimum retained size* of the set of C's
//     reachable instances = the sum of the retained sizes of the instances that are not dominated
//     by another instance of C (so nothing is counted twice). This is MAT's "retained heap (min)"
//     of the instance set and NetBeans' getRetainedSizeByClass.
//   - precise retained size of a set S: the shallow sizes of everything that becomes unreachable
//     when S is removed (simulated GC; MAT's "precise retained heap"). Always >= the minimum
//     retained size.
//   - "who keeps C alive": the immediate dominators of C's instances grouped by class, climbing
//     past dominators whose class matches an exclude pattern (MAT's immediate_dominators query).
//   - accumulation point: see aggregations.h (FindAccumulationPoints).
//
// Thread-safety: plain values. BuildReport reads the graph and results it is given and is safe to
// run concurrently on distinct inputs.
#ifndef HEAPWATCH_ANALYSIS_REPORT_H_
#define HEAPWATCH_ANALYSIS_REPORT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/dominator_tree.h"
#include "analysis/dynamic_size.h"
#include "analysis/gc_root_paths.h"
#include "analysis/heap_graph.h"
#include "analysis/retained_size.h"
#include "common/status.h"

namespace heapwatch::analysis {

// Dump-wide counts. Objects are instances, object arrays, primitive arrays and class objects.
struct ReportTotals {
  uint64_t objects = 0;
  uint64_t classes = 0;
  uint64_t gc_roots = 0;             // distinct objects that are GC roots
  uint64_t reachable_objects = 0;    // reachable from a GC root (over strong and weak references)
  uint64_t unreachable_objects = 0;  // excluded from the dominator tree and reported here
  uint64_t shallow_bytes = 0;        // all objects
  uint64_t reachable_shallow_bytes = 0;
  uint64_t unreachable_shallow_bytes = 0;
  // Of gc_roots, those inferred because the dump has no GC root records (IBM PHD and text dumps:
  // GC root kinds PURE_ROOT and ARTIFICIAL_ROOT, analysis/root_inference.h); 0 for HPROF dumps.
  // Last, so that positional initialisers of the fields above keep their meaning.
  uint64_t inferred_roots = 0;
};

// One row of the class histogram. Counts only reachable objects; unreachable ones are in the
// totals.
struct ClassRow {
  std::string class_name;
  uint64_t instances = 0;
  uint64_t shallow_bytes = 0;
  uint64_t retained_bytes = 0;  // minimum retained size of the instance set (see above)
};

// One object, named the way a person finds it in another tool.
struct ObjectSummary {
  uint64_t object_id = 0;  // the raw id (address) from the dump
  std::string class_name;
  uint64_t shallow_bytes = 0;
  uint64_t retained_bytes = 0;
  std::string gc_root_kind;  // empty unless the object is a GC root
  // Exact dynamic size (analysis/dynamic_size.h): the objects reachable from this one, itself
  // included, and their shallow bytes. Only for the biggest objects and the accumulation points,
  // with ReportOptions::dynamic_sizes; dynamic_objects == 0 means "not computed" (a computed one
  // counts at least the object itself).
  uint64_t dynamic_bytes = 0;
  uint64_t dynamic_objects = 0;
  // For a live thread: its name as a report may show it (analysis/thread_names.h; digit runs
  // masked unless full names are enabled). Filled by the pipeline (pipeline/analyze_dump.h), empty
  // otherwise.
  std::string thread_name;
};

// One step of a path from a GC root: `object`, reached from the previous step through `reference`
// ("field next", "static SESSIONS", "[12]"; empty for the first step, which is the GC root).
struct PathStepReport {
  std::string reference;
  bool weak =
      false;  // the reference is a java.lang.ref.Reference.referent (soft/weak/phantom/final)
  ObjectSummary object;
};

// A path of more than kPathHeadSteps + kPathTailSteps steps is kept shortened (PathReport): its
// first kPathHeadSteps steps (from the GC root) and its last kPathTailSteps steps (to the object),
// the steps between only counted. A heap may hold a chain of millions of objects (a linked list);
// a report naming every step would outgrow gRPC's 4 MiB message limit (a leak at the end of a
// 100,000-object chain made a 3.5 MB DrillDownReport; tests/proto/report_proto_test.cc).
inline constexpr size_t kPathHeadSteps = 32;
inline constexpr size_t kPathTailSteps = 32;

// The shortest path from a GC root to an object. `strong` is false when every path needs a weak
// reference.
struct GcRootPathReport {
  bool found = false;  // false for an unreachable object
  bool strong = true;
  std::vector<PathStepReport> steps;  // steps.front() is the GC root, steps.back() the object
  // A shortened path: `elided_steps` steps left out between steps[elided_after - 1] and
  // steps[elided_after] (the first left-out step's reference is from steps[elided_after - 1], and
  // steps[elided_after].reference is from the last left-out step). 0 for a whole path.
  uint64_t elided_steps = 0;
  size_t elided_after = 0;
};

// MAT's immediate_dominators row: instances grouped by the class of their (non-excluded) dominator.
struct DominatorClassRow {
  std::string
      class_name;  // "<ROOT>" when the climb reached the super root (a GC root or top-level object)
  uint64_t dominators = 0;               // distinct dominator objects
  uint64_t dominated = 0;                // instances of the suspect class they dominate
  uint64_t dominator_shallow_bytes = 0;  // of the distinct dominators
  uint64_t dominated_shallow_bytes = 0;  // of the dominated instances
  uint64_t dominator_retained_bytes =
      0;  // retained size of the set of distinct dominators (minimum)
  ObjectSummary
      biggest_dominator;  // the dominator with the largest retained size (none for <ROOT>)
};

// An object that holds most of the suspect class's retained size (see aggregations.h).
struct AccumulationPointReport {
  ObjectSummary object;
  uint64_t suspect_instances = 0;  // instances of the suspect class in its retained set
  uint64_t suspect_bytes = 0;      // of the class's (minimum) retained size, the part it retains
  double share = 0;                // suspect_bytes / the class's minimum retained size
  GcRootPathReport path;           // shortest path from a GC root, strong references first
  // Raw ids of the point's dominators, its immediate dominator first, up the dominator tree to a
  // top-level object, at most kMaxPointDominators. Leak grouping uses them (diff/leak_detector.h:
  // a class whose point lies inside another suspect class's growing structure is part of that
  // leak).
  std::vector<uint64_t> dominator_ids;
};
inline constexpr size_t kMaxPointDominators = 8;

// One match of a known-leak pattern (analysis/leak_patterns/leak_patterns.h, docs/leak-patterns.md)
// in one dump.
struct LeakPatternMatch {
  std::string pattern_id;
  std::string pattern_name;
  // One sentence naming the culprit, e.g. "ThreadLocal static com.acme.RequestContext.BUFFERS
  // holds 4 values (3.1 MiB) in 4 live threads of class java.lang.Thread".
  std::string summary;
  std::string explanation;  // LeakPatternInfo::explanation
  // The named culprits, one per line: "thread java.lang.Thread@0x7f0 (THREAD_OBJECT root)",
  // "ThreadLocal declared by static com.acme.RequestContext.BUFFERS", ...
  std::vector<std::string> culprits;
  // The path from a GC root through the field that holds the leaked objects (e.g. Thread ->
  // threadLocals -> table -> [3] -> value), found = false when the recogniser has none.
  GcRootPathReport path;
  uint64_t objects = 0;         // leaked objects the match covers (values, listeners, loaders)
  uint64_t retained_bytes = 0;  // sum of their retained sizes (disjoint subtrees are not assumed)
  // The objects the match is about (the ThreadLocal values, the listener array, the pinned
  // loaders): used to attach the match to a suspect's report (MatchesForSuspect). At most 64.
  std::vector<ObjectIndex> anchors;
};

// Suspect analysis for one class (`heapwatchctl analyze --class C`).
struct SuspectReport {
  std::string class_name;
  uint64_t instances = 0;  // reachable instances
  uint64_t shallow_bytes = 0;
  uint64_t retained_bytes = 0;          // precise, by simulated GC with all instances removed
  uint64_t minimum_retained_bytes = 0;  // from the dominator tree
  // Exact dynamic size of the instances taken together (every object reachable from any of them,
  // each once); with ReportOptions::dynamic_sizes, else dynamic_objects == 0.
  uint64_t dynamic_bytes = 0;
  uint64_t dynamic_objects = 0;
  std::vector<AccumulationPointReport> accumulation_points;
  std::vector<DominatorClassRow> kept_alive_by;  // sorted by dominated_shallow_bytes, descending
  std::vector<std::string> exclude_patterns;     // the patterns kept_alive_by climbed past
  GcRootPathReport shortest_path;  // shortest strong path from a GC root to the nearest instance
  // Known-leak patterns that concern this class (leak_patterns.h MatchesForSuspect): filled by the
  // pipeline (pipeline/analyze_dump.h), not by BuildSuspectReport.
  std::vector<LeakPatternMatch> leak_patterns;
};

// Wall-clock seconds per stage and the process's peak resident set size.
struct ReportTimings {
  double parse_seconds = 0;
  double dominators_seconds = 0;
  double retained_seconds = 0;
  double gc_root_paths_seconds = 0;
  double aggregation_seconds = 0;
  double dynamic_seconds = 0;  // exact dynamic sizes (ReportOptions::dynamic_sizes)
  double total_seconds = 0;
  uint64_t peak_rss_bytes = 0;  // VmHWM of the process at the end (Linux), 0 if unknown
};

struct Report {
  std::string dump_path;
  uint64_t dump_file_bytes = 0;
  std::string dump_format;  // HPROF header, e.g. "JAVA PROFILE 1.0.2"
  std::string size_model;   // how shallow sizes were computed: "hotspot", "android", "netbeans"
  ReportTotals totals;
  std::vector<ClassRow> histogram;  // sorted by retained_bytes, then shallow_bytes, descending
  std::vector<ObjectSummary>
      top_objects;  // biggest objects by retained size (any depth), descending
  // The first level of the dominator tree grouped by class (MAT's dominator tree "group by class"):
  // `instances` counts the top-level objects of the class, retained_bytes is the sum of their
  // retained sizes. Sorted by retained_bytes descending, at most ReportOptions::top_objects rows.
  std::vector<ClassRow> top_dominators_by_class;
  std::optional<SuspectReport> suspect;
  ReportTimings timings;
  // Every known-leak pattern the dump matches (pipeline/analyze_dump.h fills it; BuildReport does
  // not).
  std::vector<LeakPatternMatch> leak_patterns;
};

// What to put in a report.
struct ReportOptions {
  size_t top_objects = 20;                   // number of biggest objects by retained size
  size_t histogram_rows = 0;                 // 0 = every class with at least one reachable object
  std::optional<std::string> suspect_class;  // run the suspect analysis for this class name
  // Regular expressions (ECMAScript, matching the whole class name, as MAT's skip patterns) of
  // dominator classes to climb past in "who keeps C alive". Default: DefaultExcludePatterns().
  std::optional<std::vector<std::string>> exclude_patterns;
  // Accumulation point walk: keep descending while the heaviest child holds at least this share of
  // its parent's part of the suspect's retained size (MAT's leak-suspect "big drop" ratio is 0.7).
  double accumulation_ratio = 0.7;
  size_t max_kept_alive_rows = 20;
  // Exact dynamic sizes (analysis/dynamic_size.h ComputeDynamicSize, following `dynamic`'s
  // references) of the suspect's instances together, of each accumulation point and of each of the
  // biggest objects: one search over what each reaches, O(reached objects + their references),
  // up to the whole heap each.
  bool dynamic_sizes = false;
  DynamicSizeOptions dynamic;
  // Called with (stage name, fraction 0..1 of that stage) from the calling thread. May be empty.
  std::function<void(std::string_view stage, double fraction)> progress;
};

// The objects `objects` named as the report names them (ObjectSummary: raw id, class name or
// "class X" for a class object, shallow and retained size, GC-root kind; no dynamic size).
// `retained_sizes` as for BuildReport. O(GC roots + objects.size()). REQUIRES: every object <
// graph.object_count().
std::vector<ObjectSummary> SummarizeObjects(const HeapGraph& graph,
                                            const RetainedSizes& retained_sizes,
                                            std::span<const ObjectIndex> objects);

// The report of `path` (one of ShortestPathsFromGcRoots over `graph`): found, strong unless the
// path has a weak reference, each kept step's reference named by HeapGraph::DescribeReference and
// its object by `summary`; a path of more than kPathHeadSteps + kPathTailSteps steps shortened to
// its first kPathHeadSteps and last kPathTailSteps steps (elided_steps, elided_after). O(kept
// steps): the steps left out are neither named nor summarised. REQUIRES: path.steps not empty.
GcRootPathReport PathReport(const HeapGraph& graph, const GraphPath& path,
                            const std::function<ObjectSummary(ObjectIndex)>& summary);

// Dump-wide counts of `graph`, reachability as in `tree` (ComputeDominatorTree of the graph).
// O(objects).
ReportTotals ComputeReportTotals(const HeapGraph& graph, const DominatorTree& tree);

// Computes the dominator tree (over strong and weak references, unreachable objects left out), the
// retained sizes and, for options.suspect_class, the suspect analysis and its paths from GC roots,
// and builds the report. Fills every field but dump_path, dump_file_bytes, timings.parse_seconds
// and timings.peak_rss_bytes, which the caller (who read the file) knows.
// Errors: InvalidArgument for a bad exclude pattern or accumulation ratio; NotFound when
// options.suspect_class names no class of the graph; errors of the algorithms (InvalidArgument for
// a graph that breaks their limits).
// Cost: O(objects + references) time, plus one simulated GC and a few breadth-first searches for
// the suspect; memory: the dominator tree (about 9.5 bytes per object) and retained sizes (4 bytes
// per object, 8 when the heap needs it, see RetainedSizes) on top of the graph.
StatusOr<Report> BuildReport(const HeapGraph& graph, const ReportOptions& options);

// The same from a dominator tree and retained sizes the caller already computed (for benchmarks
// that time the stages themselves): `tree` = ComputeDominatorTree(graph.graph(),
// graph.root_objects(), options) and `retained_sizes` = ComputeRetainedSizes(tree, shallow size).
// timings.dominators_seconds and timings.retained_seconds stay 0. Same errors.
StatusOr<Report> BuildReport(const HeapGraph& graph, const DominatorTree& tree,
                             const RetainedSizes& retained_sizes, const ReportOptions& options);

// Only the suspect analysis of `class_name` (SuspectReport, as Report::suspect of BuildReport with
// options.suspect_class = class_name), without the dump-wide histogram, totals and biggest objects:
// for callers that analyse several classes of one dump. `tree` and `retained_sizes` as above;
// options.suspect_class is ignored. Errors: as BuildReport. Cost: one simulated GC and a few
// breadth-first searches; no pass over the whole graph for the histogram. When `timings` is given,
// the time of the paths from GC roots and of the dynamic sizes is added to its
// gc_root_paths_seconds and dynamic_seconds.
StatusOr<SuspectReport> BuildSuspectReport(const HeapGraph& graph, const DominatorTree& tree,
                                           const RetainedSizes& retained_sizes,
                                           const std::string& class_name,
                                           const ReportOptions& options,
                                           ReportTimings* timings = nullptr);

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_REPORT_H_
