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
// its empty reach but separates nothing, so it is no articulation point.) Which references make
// the SCC graph is the condensation's choice (dynamic_size.h, ReferencesFor): with every object's
// reference to its class object (all_references), every object reaches the class objects, which
// no single component dominates, and DAPs become rare (none on the corpus dumps tried); with strong
// references only they are common (460 k of 1.45 M components on the benchmark's 1.77 M-object
// dump).
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
// Complexity: step 3 O(C + E) time for C components and E DAG edges, 4 bytes per component (the
// thesis's value array) plus the result (1 bit per component and 4 bytes per DAP); step 2 that of
// ComputeDominatorTree on the DAG (near linear; about 16 bytes per component while it runs and
// 9.5 bytes per component for the tree, freed before step 3; the result keeps 4 bytes per
// component); finding the SCC roots needs 2 bits per component. Never recurses.
//
// Thread-safety: the functions are reentrant and read their inputs only; results are plain values.
#ifndef HEAPWATCH_ANALYSIS_DOMINATING_ARTICULATION_POINTS_H_
#define HEAPWATCH_ANALYSIS_DOMINATING_ARTICULATION_POINTS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/csr_graph.h"
#include "analysis/strong_components.h"
#include "common/status.h"

namespace heapwatch::analysis {

// The DAPs of a condensation's SCC graph and what they were computed from.
struct DominatingArticulationPoints {
  // The SCC roots the super root points to: the components of the given GC roots and every source
  // component, increasing, without duplicates.
  std::vector<ComponentId> scc_roots;
  // Immediate dominator of every component (component_count entries): a component, or
  // ComponentId(component_count) = the super root.
  std::vector<ComponentId> immediate_dominators;
  // is_point[c]: component c is a dominating articulation point (component_count entries).
  std::vector<bool> is_point;
  // The DAPs in increasing order.
  std::vector<ComponentId> points;
};

// The SCC roots: the components of `gc_roots` (duplicates allowed) and every component without a
// predecessor in condensation.dag, increasing. O(C + E + number of GC roots), 2 bits per component.
// Errors: InvalidArgument if a GC root is out of range (>= condensation.component_of.size()) or the
// condensation is inconsistent (see below).
StatusOr<std::vector<ComponentId>> SccRoots(const Condensation& condensation,
                                            std::span<const ObjectIndex> gc_roots);

// Step 2: the immediate dominator of every component in the SCC graph with a super root over
// `scc_roots` (ComponentId(component_count) stands for the super root). REQUIRES: every component
// is reachable from `scc_roots` (true for SccRoots' result). Errors: InvalidArgument if a root is
// out of range, a component is unreachable, or the condensation is inconsistent.
StatusOr<std::vector<ComponentId>> SccImmediateDominators(const Condensation& condensation,
                                                          std::span<const ComponentId> scc_roots);

// Step 3 (Listing 4.4) alone: is_point (component_count entries) from the SCC graph's immediate
// dominators. O(C + E) time, 4 bytes per component besides the result. Errors: InvalidArgument if
// `immediate_dominators` does not have one entry per component, each a larger component or the
// super root (so not the dominators of this DAG), or the condensation is inconsistent.
StatusOr<std::vector<bool>> DominatingArticulationPointsFromDominators(
    const Condensation& condensation, std::span<const ComponentId> immediate_dominators);

// All three steps: SccRoots, SccImmediateDominators, DominatingArticulationPointsFromDominators.
// Cost: see the file comment. Errors: those of the three; the condensation is inconsistent when
// dag.node_count() != component_count, a DAG edge does not go to a lower component, or the
// condensation has 2^32 - 3 components or more.
StatusOr<DominatingArticulationPoints> ComputeDominatingArticulationPoints(
    const Condensation& condensation, std::span<const ObjectIndex> gc_roots);

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_DOMINATING_ARTICULATION_POINTS_H_
