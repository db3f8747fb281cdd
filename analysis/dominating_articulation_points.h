// Dominating articulation points of the strongly-connected-components (SCC) graph: the nodes at
// which the dynamic size computation of the dynaTrace thesis (seeds/001, Riha 2009, §4.8) may stop
// following references and reuse a dynamic size computed before (dap_dynamic_size.h).
//
// Definitions (seeds/001 §4.6 and §4.8):
//   Definition 10 (articulation point): a is an articulation point of an undirected graph if there
//     are distinct vertices v, w, a such that a lies on every path v -> w and at least one such
//     path exists (removing a disconnects v from w).
//   Definition 11 (dominating articulation point, DAP): an articulation point which dominates all
//     other nodes that can be reached from it directly or indirectly.
// Both are taken on the SCC graph (a DAG: one node per strongly connected component, see
// strong_components.h) made a flow graph by a super root with an edge to every SCC root, and
// dominance is that flow graph's (dominator_tree.h). The SCC roots are the components that contain
// a GC root plus every source component (no incoming edge). The thesis's dumps had no root records,
// so its roots were exactly the sources (§5, "GCRootsAndLeaves"); adding the sources to the
// GC-root components keeps every component reachable from the super root, which the DAP property
// below needs for every object, garbage included. In a dump without garbage (every object
// reachable from a GC root) every source component contains a GC root and both choices agree.
// Articulation points are taken in the undirected version of that flow graph, super root included.
//
// What a DAP d gives (the property dap_dynamic_size.h relies on): no edge enters Reach(d) \ {d}
// from outside Reach(d), so every path from any node to a node reachable from d passes through d,
// and the dynamic size of d can be added as a whole, once, when d is met. Characterisation used by
// the algorithm and checked by brute force in the tests: d is a DAP iff d has at least one
// successor and d dominates every node reachable from it. (Such a d is an articulation point:
// removing it separates its successors from the super root. A node without successors dominates
// its empty reach but separates nothing, so it is no articulation point.)
//
// Algorithm (seeds/001 §4.8, Listing 4.4), three steps:
//   1. Number the SCC graph topologically. Tarjan's SCC algorithm already numbers components in
//      reverse topological order (every edge goes from a higher to a lower id), so this step is the
//      condensation's own order (the thesis: "the first step can be omitted").
//   2. The dominator tree of the SCC graph (ComputeDominatorTree with the super root over the SCC
//      roots; the thesis used its simple Lengauer-Tarjan too).
//   3. For i = 0, 1, ... (sinks first): max = the largest value[c] over the successors c of i; i is
//      a DAP iff it has a successor and max == i; value[i] = max(max, idom(i)). value[i] is the
//      largest immediate-dominator id over the nodes reachable from i (i included), the super root
//      counting as the largest id. The ids of those idoms are at most i exactly when i dominates
//      its whole reach (an idom outside the reach reaches i, so has a larger id), and the successor
//      with the largest id then has idom i.
// Complexity: step 3 O(n + m) time for n components and m DAG edges, 4 bytes per component (the
// thesis's value array) plus the result; step 2 that of ComputeDominatorTree on the DAG (near
// linear, about 16 bytes per component while it runs, 9.5 bytes per component kept in the tree
// until this function returns); finding the SCC roots needs 1 bit per component. Never recurses.
//
// Thread-safety: the functions are reentrant and read their inputs only; results are plain values.
#ifndef HEAPWATCH_ANALYSIS_DOMINATING_ARTICULATION_POINTS_H_
#define HEAPWATCH_ANALYSIS_DOMINATING_ARTICULATION_POINTS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/csr_graph.h"
#include "common/status.h"

namespace heapwatch::analysis {

// The DAPs of a DAG and what they were computed from. DAG nodes are numbered 0..n-1; ObjectIndex is
// the node type of CsrGraph and here names a DAG node (a component), not an object.
struct DagDominatingArticulationPoints {
  // Nodes the super root points to: the given root nodes and every source node, increasing,
  // without duplicates.
  std::vector<ObjectIndex> flow_roots;
  // Immediate dominator of every node (n entries): a node, or ObjectIndex(n) = the super root.
  std::vector<ObjectIndex> immediate_dominators;
  // is_point[v]: v is a dominating articulation point (n entries).
  std::vector<bool> is_point;
  // The DAPs in increasing order.
  std::vector<ObjectIndex> points;
};

// Step 3 (Listing 4.4) alone: the DAPs of `dag` given the immediate dominators of its flow graph.
// `dag` REQUIRES no particular edge order, but every edge must go from a higher to a lower node
// (reverse topological numbering; duplicates allowed, self-loops not) and `immediate_dominators`
// must have one entry per node, each a larger node or ObjectIndex(n) (the super root). Returns
// is_point (n entries). O(n + m) time, 4 bytes per node besides the result. Errors:
// InvalidArgument if an edge does not go to a lower node or an immediate dominator is missing,
// not larger than its node or out of range (the input is not a DAG in reverse topological order
// with its dominators).
StatusOr<std::vector<bool>> DominatingArticulationPointsOfDag(
    const CsrGraph& dag, std::span<const ObjectIndex> immediate_dominators);

// Steps 2 and 3 on a DAG in reverse topological order: the super root gets an edge to every node in
// `root_nodes` (duplicates allowed; for the SCC graph: the components that contain a GC root) and
// to every source node; then the dominator tree (ComputeDominatorTree) and Listing 4.4. Cost: see
// the file comment. Errors: InvalidArgument if a root node is out of range, an edge does not go
// to a lower node, or the DAG has 2^32 - 3 nodes or more.
StatusOr<DagDominatingArticulationPoints> ComputeDagDominatingArticulationPoints(
    const CsrGraph& dag, std::span<const ObjectIndex> root_nodes);

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_DOMINATING_ARTICULATION_POINTS_H_
