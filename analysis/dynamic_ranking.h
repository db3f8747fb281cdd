// Objects and classes ranked by dynamic size and by shared size: the view the dynaTrace thesis
// builds in its Tab. 5.3 (seed 001, section 5.3.1, "Differences between Dynamic and Garbage
// Collector Size"): objects whose dynamic size is much larger than their retained (GC) size hold
// references into structures others hold too (the thesis's Fig. 2.3: a buffer and a list holding
// the same data objects are both small by retained size and both the biggest by dynamic size), and
// "memory leaks in such nodes can often only be found by comparing the dynamic size".
//
// Definitions:
//   * dynamic size of an object (analysis/dynamic_size.h): its reachable set's shallow bytes and
//     object count, following the references DynamicSizeOptions selects (strong references by
//     default); of a class: of its instances taken together;
//   * shared size = dynamic size - retained size (bytes). The retained size is the report's
//     (analysis/report.h: dominator tree over strong *and* weak references; for a class, the
//     minimum retained size of its instances). Because the default dynamic size does not follow
//     soft/weak/phantom referents, an object that alone holds a soft cache can have a dynamic size
//     below its retained size: its shared size is then negative. With
//     DynamicSizeOptions::all_references (the thesis's variant) the dynamic size is never below
//     the retained size.
//
// How (exact where listed, estimated to rank):
//   1. EstimateDynamicSizes (priority-sampling sketches over the strongly connected components,
//      dynamic_size.h) gives every object's estimated dynamic size in near-linear time;
//   2. objects: every object of one strongly connected component has the same dynamic size, so the
//      lists hold at most one object per component (by dynamic size: the member with the largest
//      retained size; by shared size: the member with the largest estimated shared size, i.e. the
//      smallest retained size). The 2 x rows components with the largest estimates are candidates;
//      each candidate's exact dynamic size is computed (ComputeDynamicSize), the candidates are
//      sorted by the exact figure and the first `rows` listed. A component whose estimate is far
//      enough below its exact value can be missed; the exact figures of the listed rows are exact;
//   3. classes: per class (ClassId; several loaders' classes of one name are separate rows) the
//      largest and the sum of its instances' estimated dynamic sizes bound the estimate of the
//      set from below and above; the `rows` classes with the largest maximum, the `rows` with the
//      largest sum and the `rows` with the largest sum minus retained size are candidates; each
//      candidate's exact dynamic size (instances together) is computed and the lists are sorted by
//      it;
//   4. a histogram of the estimated shared sizes of all reachable objects in the thesis's Tab. 5.3
//      buckets (binary units: < 1 KiB, 1-10 KiB, 10-100 KiB, 100 KiB-1 MiB, 1-10 MiB, 10-25 MiB,
//      25-50 MiB, 50-75 MiB, 75-100 MiB, >= 100 MiB; a negative estimate counts as < 1 KiB and in
//      below_retained).
// Only objects reachable from a GC root (those of the dominator tree) are ranked and counted.
//
// Cost: the estimate, O(n + m + E k) for E condensation edges and sketch size k (dynamic_size.h);
// one pass over the objects per list; then one search per exact figure, at most 2 x rows for the
// objects and 3 x rows for the classes, each O(reached objects + their references) (up to the
// whole heap: a candidate typically reaches a large part of it). Memory: the estimate (4 bytes per
// object, 13 per component) and the condensation while it is built, plus the instances of the
// candidate classes (4 bytes each).
// Thread-safety: reentrant; reads its inputs only. Never recursive.
#ifndef HEAPWATCH_ANALYSIS_DYNAMIC_RANKING_H_
#define HEAPWATCH_ANALYSIS_DYNAMIC_RANKING_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/dominator_tree.h"
#include "analysis/dynamic_size.h"
#include "analysis/heap_graph.h"
#include "analysis/report.h"
#include "analysis/retained_size.h"
#include "common/status.h"

namespace heapwatch::analysis {

struct DynamicRankingOptions {
  size_t rows = 20;                   // rows of each list
  DynamicSizeOptions references;      // which references the dynamic sizes follow
  DynamicSizeSketchOptions estimate;  // sketch size and seed of the estimate
};

struct DynamicObjectRow {
  // The object with its exact dynamic size (dynamic_bytes, dynamic_objects).
  ObjectSummary object;
  // The estimate it was ranked by (EstimateDynamicSizes), and whether that was exact.
  uint64_t estimated_dynamic_bytes = 0;
  bool estimate_exact = false;
  // Objects of its strongly connected component (the object included): all have its dynamic size.
  uint64_t component_objects = 0;
  // Exact dynamic size - retained size (negative: see the file comment).
  int64_t shared_bytes = 0;
};

struct DynamicClassRow {
  std::string class_name;
  uint64_t instances = 0;       // reachable instances
  uint64_t retained_bytes = 0;  // minimum retained size of the instances (as in the histogram)
  uint64_t dynamic_bytes = 0;   // exact, the instances taken together
  uint64_t dynamic_objects = 0;
  int64_t shared_bytes = 0;  // dynamic_bytes - retained_bytes
  // The bounds the class was ranked by: the largest and the sum (saturating) of its instances'
  // estimated dynamic sizes.
  uint64_t estimated_max_bytes = 0;
  uint64_t estimated_sum_bytes = 0;
};

// Reachable objects whose estimated shared size is in [from_bytes, to_bytes) (to_bytes 0 = no
// upper bound).
struct SharedSizeBucket {
  uint64_t from_bytes = 0;
  uint64_t to_bytes = 0;
  uint64_t objects = 0;
};

struct DynamicRanking {
  bool all_references = false;   // the references followed (DynamicSizeOptions)
  uint32_t sketch_size = 0;      // k of the estimate
  uint64_t objects = 0;          // reachable objects ranked
  uint64_t exact_estimates = 0;  // of them, those whose estimate was exact (small reachable sets)
  std::vector<DynamicObjectRow> objects_by_dynamic;  // by exact dynamic bytes, descending
  std::vector<DynamicObjectRow> objects_by_shared;   // by exact shared bytes, descending
  std::vector<DynamicClassRow> classes_by_dynamic;   // by exact dynamic bytes, descending
  std::vector<DynamicClassRow> classes_by_shared;    // by exact shared bytes, descending
  std::vector<SharedSizeBucket> shared_histogram;    // the ten buckets above, in order
  uint64_t below_retained = 0;  // reachable objects whose estimate is below their retained size
  double estimate_seconds = 0;  // the estimate of every object
  double exact_seconds = 0;     // the exact figures of the candidates
};

// The ranking of `graph` (see the file comment). `tree` = ComputeDominatorTree(graph.graph(),
// graph.root_objects()) and `retained_sizes` = ComputeRetainedSizes(tree, shallow sizes), as for
// BuildReport. Errors: InvalidArgument when the tree or retained sizes do not belong to the graph,
// for rows == 0, or from EstimateDynamicSizes (sketch size out of range) and
// CondenseStrongComponents; ResourceExhausted when the estimate's sketches would exceed
// options.estimate.max_sketch_bytes.
StatusOr<DynamicRanking> RankByDynamicSize(const HeapGraph& graph, const DominatorTree& tree,
                                           const RetainedSizes& retained_sizes,
                                           const DynamicRankingOptions& options = {});

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_DYNAMIC_RANKING_H_
