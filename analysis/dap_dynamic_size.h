// The dynaTrace thesis's dynamic size of every object through dominating articulation points
// ("DomArticPointsDynamicSize", seeds/001 §4.8 and §5; Table A.1 timed it on 1.78 M objects).
//
// Dynamic size (seeds/001 §2): the size of an object plus the sizes of all other objects reachable
// from it, each counted once. All objects of a strongly connected component reach each other, so
// they share one dynamic size: that of their component in the SCC graph (strong_components.h).
//
// Algorithm (the thesis's simple components dynamic size, §4.3-4.4, with the cut of §4.8): the
// components are visited in increasing id, which is reverse topological order (sinks first). For
// component c a depth-first search over the SCC graph starts at c and sums the shallow sizes of the
// components it visits; when it meets a dominating articulation point d != c
// (dominating_articulation_points.h) it adds d's dynamic size, computed before because d < c, and
// does not follow d's references. Adapted to be iterative: an explicit stack, and a "visited" mark
// per component that holds the id of the search that set it, so that no array is cleared between
// searches (the thesis resets a boolean array per node, Listing 4.2).
//
// Exactness: exact for every component and therefore every object, when the DAPs were computed on
// the same SCC graph with every component reachable from the super root (as
// ComputeDominatingArticulationPoints does). Why: no edge enters Reach(d) \ {d} from outside
// Reach(d), so a search from c meets a node of Reach(d) \ {d} only through d; adding d's
// dynamic size once counts exactly Reach(d), and nothing else is skipped or counted twice. Checked
// against a brute-force search per object on thousands of random graphs (tests/analysis).
//
// Complexity: O(sum over components c of (components and edges visited from c until the DAPs)),
// which is O(C E) in the worst case for C components and E DAG edges: the DAPs shorten the
// searches but do not change the complexity (the thesis: "does not reduce the complexity of the
// dynamic size algorithm"). Linear on trees and lists (every inner node is a DAP), quadratic on
// DAGs without DAPs (the thesis's DAG1/DAG2 examples) and on heaps where many components reach a
// large part of the heap that no DAP separates. On JVM heap dumps those are the few hundred to few
// thousand components at the top of the DAG (class objects, class loaders, threads: each reaches
// most of the heap): measured 1.0 G visits, 8.5-15 s of CPU (the spread is other processes' load)
// on a 1.77 M-object dump with 1.45 M components and 460 k DAPs; more than 2 G visits on an
// 18.6 M-object one (bench/analysis, heapwatch_dynamic_bench). Memory: a 16-byte record per
// component (what a visit adds, a stop flag and the mark, together so that a visit touches one
// cache line) plus the explicit stack (at most 4 bytes per component) plus the result (16 bytes per
// component).
// DapDynamicSizeOptions::max_visits bounds the work. (dynamic_size.h's ComputeExactDynamicSizes
// bounds the same worst case differently: it switches to a bit-parallel closure.)
//
// Units: bytes are the condensation's component_bytes (shallow sizes in bytes for
// CondenseStrongComponents on a HeapGraph); objects are counts. Which references count (weak
// referents, class-object references) is decided when the condensation is made (dynamic_size.h,
// ReferencesFor).
//
// Thread-safety: reentrant; reads its inputs only.
#ifndef HEAPWATCH_ANALYSIS_DAP_DYNAMIC_SIZE_H_
#define HEAPWATCH_ANALYSIS_DAP_DYNAMIC_SIZE_H_

#include <cstdint>
#include <vector>

#include "analysis/dominating_articulation_points.h"
#include "analysis/dynamic_size.h"
#include "analysis/strong_components.h"
#include "common/status.h"

namespace heapwatch::analysis {

struct DapDynamicSizeOptions {
  // Stop with ResourceExhausted once the searches together have visited more than this many
  // components (each visit reads a component's size and, unless it is a DAP, its edges). 0 = no
  // bound.
  uint64_t max_visits = 0;
};

// Exact dynamic sizes of every component.
struct DapDynamicSizes {
  // Per component (component_count entries). The dynamic size of object v is
  // of_component[condensation.component_of[v].value].
  std::vector<DynamicSize> of_component;
  // Times a search met a DAP other than its start and reused its size (the thesis's "Dominating
  // Articulation Points used", Table A.2).
  uint64_t points_used = 0;
  // Components visited by all searches together, start components and DAPs met included.
  uint64_t visits = 0;
};

// The thesis's DAP dynamic size of every component of `condensation` (see the file comment).
// `points` REQUIRES: ComputeDominatingArticulationPoints on the same condensation (with other DAPs
// the sizes are wrong, though never out of bounds). Errors: InvalidArgument if points.is_point or
// the size vectors do not have one entry per component, a DAG edge does not go to a lower
// component, or the components' bytes add up to 2^63 or more; ResourceExhausted if
// options.max_visits is exceeded.
StatusOr<DapDynamicSizes> ComputeDapDynamicSizes(const Condensation& condensation,
                                                 const DominatingArticulationPoints& points,
                                                 const DapDynamicSizeOptions& options = {});

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_DAP_DYNAMIC_SIZE_H_
