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
// ComputeDagDominatingArticulationPoints does). Why: no edge enters Reach(d) \ {d} from outside
// Reach(d), so a search from c meets a node of Reach(d) \ {d} only through d; adding d's
// dynamic size once counts exactly Reach(d), and nothing else is skipped or counted twice. Checked
// against a brute-force search per object on thousands of random graphs (tests/analysis).
//
// Complexity: O(sum over components c of (components and edges visited from c until the DAPs)),
// which is O(n m) in the worst case for n components and m DAG edges: the DAPs shorten the
// searches but do not change the complexity (the thesis: "does not reduce the complexity of the
// dynamic size algorithm"). Linear on trees and lists (every inner node is a DAP), quadratic on DAGs
// without DAPs (the thesis's DAG1/DAG2 examples) and on heaps where many objects reach a large part
// of the heap that no DAP separates. Memory: 4 bytes per component (the marks) plus the explicit
// stack (at most 4 bytes per component) plus the result (16 bytes per component).
// DapDynamicSizeOptions::max_visits bounds the work.
//
// Thread-safety: reentrant; reads its inputs only.
#ifndef HEAPWATCH_ANALYSIS_DAP_DYNAMIC_SIZE_H_
#define HEAPWATCH_ANALYSIS_DAP_DYNAMIC_SIZE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/csr_graph.h"
#include "analysis/dominating_articulation_points.h"
#include "common/status.h"

namespace heapwatch::analysis {

struct DapDynamicSizeOptions {
  // Stop with ResourceExhausted once the searches together have visited this many components
  // (each visit reads the component's size and, unless it is a DAP, its edges). 0 = no bound.
  uint64_t max_visits = 0;
};

// Dynamic sizes of every node of a DAG, in the units of the inputs.
struct DagDynamicSizes {
  std::vector<uint64_t> bytes;    // per node: total of node_bytes over the nodes it reaches
  std::vector<uint64_t> objects;  // per node: total of node_objects over the nodes it reaches
  // Times a search met a DAP other than its start and reused its size (the thesis's "Dominating
  // Articulation Points used", Table A.2).
  uint64_t points_used = 0;
  // Components visited by all searches together, start nodes and DAPs met included.
  uint64_t visits = 0;
};

// The thesis's DAP dynamic size of every node of `dag` (see the file comment). `points` is
// ComputeDagDominatingArticulationPoints on the same `dag`; node_bytes and node_objects give each
// node's own size (a component's shallow bytes and its object count), one entry per node. Errors:
// InvalidArgument if the sizes or points.is_point do not have one entry per node or an edge does
// not go to a lower node; ResourceExhausted if options.max_visits is exceeded.
StatusOr<DagDynamicSizes> ComputeDapDynamicSizesOfDag(const CsrGraph& dag,
                                                      const DagDominatingArticulationPoints& points,
                                                      std::span<const uint64_t> node_bytes,
                                                      std::span<const uint32_t> node_objects,
                                                      const DapDynamicSizeOptions& options = {});

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_DAP_DYNAMIC_SIZE_H_
