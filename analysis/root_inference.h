// Root inference: roots for a heap graph that has no GC root records (IBM Portable Heap Dumps and
// IBM text heap dumps list objects and references, never roots), or for the part of a graph that
// no GC root reaches.
//
// Sources: seed 000 (HeapRoots: "Pure Root - an object which has no parents"; "Artificial Root -
// an object chosen as a good starting point for graph traversal ... because it is part of a cyclic
// structure which isn't reachable from a 'Pure Root'") and seed 001 section 3.2 (dynaTrace: "If no
// referree nodes exists for a node, the node is called a root node ... If the garbage collector
// root node is part of a cycle the node with the lowest ID is selected as the root node").
//
// Definition. Let U be the objects that no GC root reaches through followed references (every
// object when there are no GC roots). Take the strongly connected components of the subgraph of U;
// a component is a *source* when no followed reference from an object outside the component enters
// it (objects outside U never reference U, so this is the same as a source component of the whole
// graph that contains no object reached from a GC root).
//   * pure root: the object of a source component of one object, i.e. an object of U with no
//     referrer other than itself (a reference of an object to itself does not make it a child);
//   * artificial root: the lowest ObjectIndex of a source component of two objects or more, i.e.
//     one member of each cycle that neither a GC root nor a pure root reaches. HeapRoots takes an
//     arbitrary member and dynaTrace the lowest id; we take the lowest ObjectIndex, which is the
//     lowest id (ObjectIndex follows ascending raw id).
// Properties (checked against a brute-force reachability oracle in
// tests/analysis/root_inference_test.cc): every object of U is reachable from an inferred root; no
// inferred root is reachable from a GC root or from another inferred root; the set is the smallest
// with these properties (every source component needs a root of its own, one suffices), and it
// does not depend on the order of references or of the GC roots. DominatorOptions::keep_unreachable
// (dominator_tree.h) attaches garbage below exactly these roots.
//
// Algorithm: an iterative depth-first search marks what the GC roots reach, then Pearce's
// space-efficient variant of Tarjan's strongly connected components algorithm (D. J. Pearce, "A
// space-efficient algorithm for finding strongly connected components", IPL 116(1), 2016) runs over
// U with explicit stacks (never recursion: heaps have chains of millions of objects). While a
// component is completed, every reference that reaches an already completed component marks that
// component as entered. O(n + m) time for n objects and m references; memory 4n bytes for the
// index array, three n-bit maps, and 8 bytes per level of DFS depth plus 4 per object on Tarjan's
// stack (both at most n).
//
// Thread-safety: reentrant; the graph is only read.
#ifndef HEAPWATCH_ANALYSIS_ROOT_INFERENCE_H_
#define HEAPWATCH_ANALYSIS_ROOT_INFERENCE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/csr_graph.h"
#include "analysis/heap_graph.h"
#include "common/status.h"

namespace heapwatch::analysis {

struct RootInferenceOptions {
  // Follow references flagged weak (java.lang.ref.Reference.referent). The default follows every
  // reference, like DominatorOptions; PHD and text dumps carry no weak flags anyway.
  bool follow_weak_references = true;
};

// The inferred roots, each list in ascending ObjectIndex order.
struct InferredRoots {
  std::vector<ObjectIndex> pure_roots;
  std::vector<ObjectIndex> artificial_roots;
  // Objects no GC root reaches (the size of U above): 0 when every object is reachable.
  uint64_t unreached_objects = 0;
};

// Infers the roots of the part of `graph` that `gc_roots` do not reach (all of it when `gc_roots`
// is empty; duplicates allowed). See the file comment for the definition and costs.
// Errors: InvalidArgument if a GC root is out of range, a followed reference targets an object out
// of range or the CSR offsets are malformed.
StatusOr<InferredRoots> InferRoots(const CsrGraph& graph, std::span<const ObjectIndex> gc_roots,
                                   const RootInferenceOptions& options = {});

// The same when the caller already knows which objects the GC roots reach: `reached[v]` is true
// for every object reached (a set closed under followed references, as a search from the GC roots
// gives; REQUIRES reached.size() == graph.node_count()). Used by the dominator tree's
// keep_unreachable. Errors as InferRoots.
StatusOr<InferredRoots> InferRootsOfUnreached(const CsrGraph& graph,
                                              const std::vector<bool>& reached,
                                              const RootInferenceOptions& options = {});

// For dump readers of formats without GC root records (IBM PHD, IBM text): infers the roots of
// the part of `graph` no GC root record reaches and adds them as GC roots of kind
// GcRootKind::kPureRoot and kArtificialRoot (DumpInfo::roots_inferred becomes true and a line in
// DumpInfo::warnings says how many). A graph whose every object is reached is returned unchanged.
// O(n + m). Errors as InferRoots (a malformed graph) and as HeapGraph::AddRoots.
StatusOr<HeapGraph> AddInferredRoots(HeapGraph graph, const RootInferenceOptions& options = {});

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_ROOT_INFERENCE_H_
