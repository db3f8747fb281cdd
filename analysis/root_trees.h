// HeapRoots' "dump from roots" (seed 000): the heap as one depth-first tree per root, with each
// object's total (subtree) size, number of descendants and maximum depth. What
// `heapwatchctl analyze FILE --from-roots` prints (ctl/from_roots.h renders it).
//
// Definitions (seed 000, "Algorithms" and the definitions before it):
//   * roots, in traversal order: the dump's GC roots other than artificial roots, in ascending
//     ObjectIndex order, then its artificial roots (GcRootKind::kArtificialRoot: IBM dumps, whose
//     roots are all inferred, list pure roots first as HeapRoots does); then, for objects no GC
//     root reaches (garbage in an HPROF dump), the roots root inference gives them
//     (analysis/root_inference.h: pure roots, then artificial roots), so that every object is in
//     exactly one tree;
//   * each root is the start of a depth-first search that follows references in the dump's order
//     and enters only objects no earlier search has reached ("marking objects which have already
//     been processed"): an object's parent is the object from which the search first reached it,
//     and it belongs to the tree of that search's root ("root-owner");
//   * total size of an object: its shallow size plus those of its descendants (bytes);
//     descendants: the number of objects below it in its tree ("uniquely owned" in HeapRoots'
//     sense: owned by the tree, not dominated; the numbers depend on the search order, as seed 000
//     notes); maximum depth: the number of objects on the deepest branch below it (0 for a leaf;
//     seed 000's A has max-depth 6 for B->C->D->E->F->G).
//
// Cost: O(n + m) time, iterative (an explicit stack of 8 bytes per level: chains of millions of
// objects do not recurse); 28 bytes per object for the result (parent 4, total 8, descendants 4,
// depth 4, the children in CSR form 8) plus 4 per object and two bitmaps while it is built, and
// what root inference takes for the part no GC root reaches (root_inference.h).
//
// Thread-safety: reentrant; the graph is only read.
#ifndef HEAPWATCH_ANALYSIS_ROOT_TREES_H_
#define HEAPWATCH_ANALYSIS_ROOT_TREES_H_

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/csr_graph.h"
#include "analysis/heap_graph.h"
#include "common/status.h"

namespace heapwatch::analysis {

struct RootTreeOptions {
  // Follow references flagged weak (java.lang.ref.Reference.referent). HeapRoots follows its "soft"
  // links too; false stops at them (objects held only through them then start trees of their own
  // as inferred roots).
  bool follow_weak_references = true;
};

struct RootTrees {
  // The roots in traversal order (see the file comment); a GC root that an earlier tree reaches
  // belongs to that tree and is not listed.
  std::vector<ObjectIndex> roots;
  // Parallel to `roots`: the kind of its first GC root record, or kPureRoot / kArtificialRoot for
  // the inferred ones.
  std::vector<GcRootKind> root_kinds;
  // How many of `roots` (the last ones) were inferred for objects no GC root record reaches.
  uint32_t inferred_roots = 0;
  // Per object (indexed by ObjectIndex::value): the tree parent (kNoObject for a root), the total
  // size in bytes of its subtree (itself included), its descendants, its maximum depth.
  std::vector<ObjectIndex> parent;
  std::vector<uint64_t> total_bytes;
  std::vector<uint32_t> descendants;
  std::vector<uint32_t> max_depth;
  // The children of each object in the order the search reached them (successors(v)).
  CsrGraph children;
};

// Builds the trees of `graph`. Errors: InvalidArgument when the graph is malformed (a reference or
// root out of range; never for a HeapGraph the readers built).
StatusOr<RootTrees> ComputeRootTrees(const HeapGraph& graph, const RootTreeOptions& options = {});

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_ROOT_TREES_H_
