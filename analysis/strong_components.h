// Strongly connected components (SCCs) of a heap graph and its condensation: the DAG with one node
// per component, which the dynamic-size algorithms (analysis/dynamic_size.h) and the dominating
// articulation points work on.
//
// Definitions (dynaTrace thesis, seed 001, section 4.4, Definitions 7 and 8, after Tarjan 1972):
// two objects are in the same component when each is reachable from the other. Every object of a
// component reaches the same objects, so all of them have the same dynamic size, and the graph of
// the components (an edge X -> Y when some object of X references some object of Y, X != Y) is a
// DAG. The thesis removes duplicate references between components ("double references between the
// SCC's are removed"), and so do we; self-loops are dropped.
//
// Algorithm: Tarjan's SCC algorithm (Tarjan, "Depth-first search and linear graph algorithms", SIAM
// J. Comput. 1(2), 1972) in Pearce's space-efficient form (D. J. Pearce, "A space-efficient
// algorithm for finding strongly connected components", Inf. Process. Lett. 116(1), 2016,
// PEA_FIND_SCC2 made iterative as in its PEA_FIND_SCC3): one 32-bit word per object (rindex) holds
// the DFS index while an object is on the stack and its component number once it is assigned, plus
// one "root" bit per object; no separate lowlink and on-stack arrays. The DFS is iterative (an
// explicit stack of 8-byte frames, one per level of DFS depth): a chain of 10^8 objects never
// touches the call stack. Components are numbered in the order Tarjan's algorithm completes them,
// which is a reverse topological order of the DAG: a component completes only after every
// component it reaches, so every DAG edge goes from a higher to a lower ComponentId (sinks first).
//
// Cost: O(n + m) time for n objects and m references. Memory while running: 4n (rindex, returned
// as component_of) + n/8 (root bits) + at most 4n (the SCC stack) + 8 bytes per DFS level; then
// for the DAG, with C components: 4n + 4C (objects grouped by component) + 4C (a per-component
// "last seen" marker that removes duplicate edges in O(1) each), and for the result 4C (offsets)
// + 12C (bytes, counts) + 4 bytes per followed reference reserved for the DAG edges (trimmed to
// the DAG's size when that is under 80% of it). Measured on the 978 MiB benchmark dump (18.6 M
// objects, 25.7 M references, 14.4 M components): 2.5-4.0 s CPU, peak RSS 841 MB with the graph's
// 370 MB (docs/dynamic-size.md).
//
// Thread-safety: the functions are reentrant and read their inputs only; a Condensation is a plain
// value.
#ifndef HEAPWATCH_ANALYSIS_STRONG_COMPONENTS_H_
#define HEAPWATCH_ANALYSIS_STRONG_COMPONENTS_H_

#include <compare>
#include <cstdint>
#include <limits>
#include <vector>

#include "analysis/csr_graph.h"
#include "analysis/heap_graph.h"
#include "analysis/retained_size.h"
#include "common/status.h"

namespace heapwatch::analysis {

// Number of a strongly connected component within one Condensation: 0..component_count-1. Distinct
// from ObjectIndex so that object and component numbers cannot be mixed up.
struct ComponentId {
  uint32_t value = std::numeric_limits<uint32_t>::max();
  constexpr ComponentId() = default;
  constexpr explicit ComponentId(uint32_t v) : value(v) {}
  friend constexpr auto operator<=>(ComponentId, ComponentId) = default;
  constexpr bool valid() const { return value != std::numeric_limits<uint32_t>::max(); }
};
inline constexpr ComponentId kNoComponent{};

// Which references are edges.
struct StrongComponentsOptions {
  // Follow references flagged weak in the CsrGraph (java.lang.ref.Reference.referent of soft, weak,
  // phantom and final references). The default follows strong references only.
  bool follow_weak_references = false;
  // Follow the reference from every object to its class object (MAT's "<class>" pseudo reference,
  // JVMTI's JVMTI_HEAP_REFERENCE_CLASS; for a class object: to java.lang.Class's class object).
  // Only the HeapGraph overload can tell these references apart; see there. The CsrGraph overload
  // follows every edge it has and rejects false (InvalidArgument).
  bool follow_class_edges = true;
};

// The components of a graph and the DAG between them.
struct Condensation {
  // The component of each object (node_count() entries, indexed by ObjectIndex::value).
  std::vector<ComponentId> component_of;
  uint32_t component_count = 0;
  // Components numbered in reverse topological order: every DAG edge goes from a higher to a lower
  // id (Tarjan's order: sinks first).
  // One node per component (node i is ComponentId(i); the targets' ObjectIndex values are
  // component numbers), no self-loops, no duplicate edges, no weak flags. Each component's edges
  // are listed in the order their first underlying reference is met when the component's objects
  // are visited in increasing ObjectIndex order, each object's references in CSR order.
  CsrGraph dag;
  // Sum of the shallow sizes of each component's objects (in the unit of the ShallowSizeFn: bytes).
  std::vector<uint64_t> component_bytes;
  // Number of objects of each component (>= 1).
  std::vector<uint32_t> component_objects;

  // The DAG successors of component c. REQUIRES: c.value < component_count. O(1).
  std::span<const ObjectIndex> successors(ComponentId c) const {
    return dag.successors(ObjectIndex(c.value));
  }
  // Bytes held by the vectors.
  uint64_t MemoryUsage() const;
};

// Computes the SCCs of `graph` and its condensation. Every edge of the CsrGraph is a reference
// (except weak ones unless options.follow_weak_references); the CsrGraph carries no mark for
// class-object edges, so options.follow_class_edges must be true (use the HeapGraph overload to
// leave them out). `shallow_size` is called once per object (for component_bytes).
// Time O(n + m), memory: see the file comment. Never recurses.
// Errors: InvalidArgument if a followed reference targets an object out of range, if the graph has
// 2^32 - 1 objects, or if options.follow_class_edges is false.
StatusOr<Condensation> CondenseStrongComponents(const CsrGraph& graph, ShallowSizeFn shallow_size,
                                                const StrongComponentsOptions& options = {});

// The same on a heap graph, with shallow sizes in bytes from graph.shallow_size(). Here
// follow_class_edges has one meaning whatever the graph was read with: true makes every object's
// reference to the class object of its class an edge (instances and arrays to their class's class
// object, class objects to java.lang.Class's), as JVMTI reports it (thesis appendix B.2); where the
// graph does not store these references (HeapGraphOptions::instance_class_edges was false) they are
// added on the fly, so the result does not depend on how the dump was read. false leaves them out:
// the stored "<class>" edges are skipped. Classes whose class object is not in the dump contribute
// no such edge. Other pseudo references of class objects (superclass, class loader, signers,
// protection domain, constant pool) and static fields are always edges.
// Time O(n + m), memory as above. Errors: InvalidArgument as above (except for
// follow_class_edges).
StatusOr<Condensation> CondenseStrongComponents(const HeapGraph& graph,
                                                const StrongComponentsOptions& options = {});

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_STRONG_COMPONENTS_H_
