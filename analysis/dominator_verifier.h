// Checks that a DominatorTree is the dominator tree of a graph, at three costs.
//
// kStructure (O(n)) and kProperties (O(n + m)) are cheap enough to run on every production dump;
// the exhaustive check (O(n * (n + m))) is for tests on small graphs. What each level checks,
// cumulatively:
//   kStructure:  the immediate dominators are in range and form one tree rooted at the super root
//                (every object in the tree hangs from it, no cycles); children() agrees with
//                immediate_dominator(); the counts (tree objects, unreachable objects) add up;
//                artificial roots are children of the super root.
//   kProperties: the flow graph's own facts, with the super root's successors = GC roots +
//   artificial
//                roots and the tree's follow_weak_references: every GC root and artificial root is
//                a child of the super root; the objects in the tree are exactly those reachable
//                (and reachable_from_gc_roots() is exactly reachability from the GC roots); every
//                immediate dominator precedes its object in a depth-first preorder (a dominator is
//                an ancestor in every DFS tree); the parent property of Georgiadis & Tarjan
//                ("Dominator tree verification and vertex-disjoint paths", SODA 2005): for every
//                reference u -> v, idom(v) is an ancestor of u or u itself.
//   kExhaustive: the definition: for every object d in the tree, removing d makes unreachable
//   exactly
//                the proper descendants of d in the tree (so d dominates them and nothing else, and
//                every object's ancestors are exactly its dominators).
// The parent property alone admits trees that are too flat (an object hung from a dominator above
// its immediate dominator); kExhaustive catches those.
//
// Thread-safety: reentrant; reads its inputs only.
#ifndef HEAPWATCH_ANALYSIS_DOMINATOR_VERIFIER_H_
#define HEAPWATCH_ANALYSIS_DOMINATOR_VERIFIER_H_

#include <span>

#include "analysis/csr_graph.h"
#include "analysis/dominator_tree.h"
#include "common/status.h"

namespace heapwatch::analysis {

enum class VerificationLevel {
  kStructure,   // O(n)
  kProperties,  // O(n + m), 9 bytes per object of temporary arrays
  kExhaustive,  // O(n * (n + m)); tests only
};

// Verifies `tree` against `graph` and `gc_roots` (the inputs it was computed from) up to `level`.
// Errors: InvalidArgument if the sizes of graph and tree differ or a GC root or reference is out of
// range; Internal with the first violated property (naming the objects) if the tree is wrong.
Status VerifyDominatorTree(const CsrGraph& graph, std::span<const ObjectIndex> gc_roots,
                           const DominatorTree& tree,
                           VerificationLevel level = VerificationLevel::kProperties);

// Compares two trees (e.g. a stored one with a fresh computation): object counts, immediate
// dominators, artificial roots, reachability from GC roots. O(n). Errors: Internal naming the first
// difference.
Status CompareDominatorTrees(const DominatorTree& expected, const DominatorTree& actual);

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_DOMINATOR_VERIFIER_H_
