// Dominator tree of a heap graph, rooted at a virtual super root over all GC roots.
//
// Definitions (Lengauer & Tarjan 1979, TOPLAS 1(1):121-141, section 1; dynaTrace thesis
// chapter 4.1): in the flow graph G = (objects + super root, references + {super root -> every GC
// root}, super root), an object d dominates w != d if every path from the super root to w contains
// d. The immediate dominator idom(w) is the dominator of w that every other dominator of w
// dominates; the edges (idom(w), w) form a tree rooted at the super root. If idom(w) became
// garbage, so would w: the retained (GC) size of an object is the total shallow size of its
// dominator subtree (see retained_size.h).
//
// Algorithm: Lengauer-Tarjan, "simple" version (path compression without balanced linking),
// O(m log n) worst case, near-linear in practice, for n objects and m references. Chosen over
// Semi-NCA because Semi-NCA's NCA step is quadratic in the worst case, on a pattern that heaps
// contain (many objects first discovered below a long linked list but also referenced from a
// shallow map; see the ItemsBelowALongListAlsoHeldByAMap test), and over the balanced-linking
// version because Georgiadis, Tarjan & Werneck ("Finding Dominators in Practice", JGAA 10(1), 2006)
// found the simple version faster in practice. Every step is iterative (explicit stacks,
// pointer reversal for path compression): chains of 10^8 objects do not touch the call stack.
//
// Memory: the algorithm's peak is 16 bytes per object (a 12-byte record per DFS number holding the
// three fields path compression reads together, and one 32-bit array reused by every phase) plus 4
// bytes per reference that goes to an object with a smaller DFS number (back and cross references;
// tree and forward references are folded into the semidominator candidates on a forward scan and
// never stored). No object -> DFS number array is kept: while it is needed (step 1 and the
// classification of references) it lives in an unused field of the records, and at the end the
// DFS is replayed to map DFS numbers back to objects (a second DFS pass, a bitmap and a stack of 8
// bytes per level of DFS depth). The finished tree keeps about 9.5 bytes per object: immediate
// dominators (4), the children (4) and their offsets in a blocked form (about 1.5). Measured
// figures: README. With keep_unreachable and garbage present, root inference (root_inference.h)
// adds about 4 bytes per object while the garbage's roots are chosen.
//
// Super root: represented by ObjectIndex(graph.node_count()), one past the last object. It is the
// immediate dominator of every GC root and has no immediate dominator itself (kNoObject).
//
// Unreachable objects (not reachable from any GC root by the followed references): by default they
// are not in the tree (immediate_dominator() == kNoObject, reachable() == false) and only counted
// (unreachable_count(), UnreachableObjects()). With DominatorOptions::keep_unreachable they are
// kept the way HeapRoots keeps them (seeds/000: "artificial roots"): after the GC roots, the super
// root also gets an edge to each root that root inference (root_inference.h) gives the garbage:
// the objects no other unreachable object references (the sources of the garbage), then the
// lowest-indexed object of each garbage cycle that none of them reaches, each list in increasing
// ObjectIndex order. The chosen objects are listed in
// artificial_roots(). (MAT's keep_unreachable_objects option keeps unreachable objects too; how it
// attaches them differs in detail, so retained sizes of garbage can differ from MAT's.)
//
// Thread-safety: ComputeDominatorTree is reentrant; a DominatorTree is immutable and can be read
// from many threads at once.
#ifndef HEAPWATCH_ANALYSIS_DOMINATOR_TREE_H_
#define HEAPWATCH_ANALYSIS_DOMINATOR_TREE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "analysis/csr_graph.h"
#include "common/status.h"

namespace heapwatch::analysis {

class DominatorTreeBuilder;  // internal to dominator_tree.cc

struct DominatorOptions {
  // Follow references flagged weak in the CsrGraph (java.lang.ref.Reference.referent). The default
  // follows every reference, as MAT does; false computes dominators of the strong graph only, in
  // which objects held only through referents are unreachable.
  bool follow_weak_references = true;
  // Keep unreachable objects in the tree below artificial roots (see the file comment) instead of
  // leaving them out.
  bool keep_unreachable = false;
};

class DominatorTree {
 public:
  DominatorTree(DominatorTree&&) = default;
  DominatorTree& operator=(DominatorTree&&) = default;

  // Builds a tree from given immediate dominators (for tests, the verifier and trees loaded from
  // storage). `idom` has one entry per object: the immediate dominator (an object or the super
  // root, ObjectIndex(idom.size())) or kNoObject for objects outside the tree. With
  // options.keep_unreachable, `artificial_roots` lists the objects attached to the super root for
  // garbage and `from_gc_roots[v]` tells whether object v is reachable from a GC root (idom.size()
  // entries); without it both must be empty and every object in the tree counts as reachable from a
  // GC root. O(n). Errors: InvalidArgument if an entry is out of range, an object is its own
  // immediate dominator, the entries do not form a tree rooted at the super root (a cycle), an
  // artificial root is not a child of the super root, or the optional arguments do not match
  // options.keep_unreachable.
  static StatusOr<DominatorTree> FromImmediateDominators(
      std::vector<ObjectIndex> idom, const DominatorOptions& options,
      std::vector<ObjectIndex> artificial_roots = {}, std::vector<bool> from_gc_roots = {});

  // Number of objects of the graph (the super root not included).
  uint32_t object_count() const { return object_count_; }
  // The virtual root over all GC roots: ObjectIndex(object_count()).
  ObjectIndex super_root() const { return ObjectIndex(object_count_); }
  const DominatorOptions& options() const { return options_; }

  // Immediate dominator of `v`: an object, super_root() for GC roots (and artificial roots),
  // kNoObject for super_root() and for objects not in the tree. REQUIRES: v.value <=
  // object_count(). O(1).
  ObjectIndex immediate_dominator(ObjectIndex v) const {
    return v.value == object_count_ ? kNoObject : idom_[v.value];
  }
  // The immediate dominators of all objects, indexed by ObjectIndex::value (object_count()
  // entries).
  std::span<const ObjectIndex> immediate_dominators() const { return {idom_.get(), object_count_}; }

  // True if `v` is in the tree: the super root, an object reachable from a GC root, or (with
  // keep_unreachable) any object. REQUIRES: v.value <= object_count(). O(1).
  bool reachable(ObjectIndex v) const {
    return v.value == object_count_ || idom_[v.value] != kNoObject;
  }
  // True if `v` is an object reachable from a GC root through followed references. O(1).
  bool reachable_from_gc_roots(ObjectIndex v) const;
  // Objects in the tree, the super root not included.
  uint32_t tree_object_count() const { return tree_object_count_; }
  // Objects not reachable from any GC root (whether or not keep_unreachable kept them in the tree).
  uint32_t unreachable_count() const { return unreachable_count_; }
  // The artificial roots chosen for keep_unreachable (empty otherwise), in the order they were
  // chosen.
  std::span<const ObjectIndex> artificial_roots() const { return artificial_roots_; }

  // Children of `v` in the dominator tree (the objects it immediately dominates), in increasing
  // ObjectIndex order; empty for objects outside the tree. `v` may be super_root(). O(1).
  std::span<const ObjectIndex> children(ObjectIndex v) const {
    return {children_.get() + ChildOffset(v.value), children_.get() + ChildOffset(v.value + 1)};
  }

  // The super root followed by every object of the tree in dominator-tree preorder (a node before
  // its children, children in children() order). O(n) time, 4 bytes per tree object for the result
  // plus at most as much for the explicit stack.
  std::vector<ObjectIndex> Preorder() const;
  // Every object of the tree in postorder (children before their parent), then the super root.
  // O(n).
  std::vector<ObjectIndex> Postorder() const;
  // Depth in the dominator tree per object: 1 for GC roots, 0 for the super root (last entry,
  // index object_count()) and for objects outside the tree. O(n).
  std::vector<uint32_t> Depths() const;
  // Objects not in the tree, in increasing index order (empty with keep_unreachable). O(n).
  std::vector<ObjectIndex> UnreachableObjects() const;
  // True if `a` dominates `b` or a == b (a is an ancestor-or-self of b in the tree). O(depth of b).
  bool DominatesOrEquals(ObjectIndex a, ObjectIndex b) const;

 private:
  friend StatusOr<DominatorTree> ComputeDominatorTree(const CsrGraph&, std::span<const ObjectIndex>,
                                                      const DominatorOptions&);
  friend class DominatorTreeBuilder;
  DominatorTree() = default;
  // Builds the children CSR (children_, child_blocks_, child_rel_, wide_child_offsets_) from idom_
  // and checks that the idom_ entries form a tree.
  Status BuildChildren();

  // Start of node v's children in children_ (v <= object_count_ + 1).
  uint32_t ChildOffset(uint32_t v) const {
    const ChildBlock& b = child_blocks_[v / kChildBlock];
    if (b.wide == kNarrowBlock) [[likely]]
      return b.base + child_rel_[v];
    return wide_child_offsets_[size_t{b.wide} * kChildBlock + v % kChildBlock];
  }

  uint32_t object_count_ = 0;
  uint32_t tree_object_count_ = 0;
  uint32_t unreachable_count_ = 0;
  DominatorOptions options_;
  // idom_[v]: immediate dominator of object v (object_count_ entries; see immediate_dominator()).
  std::unique_ptr<ObjectIndex[]> idom_;
  // Children CSR: children of node v (object or super root) are children_[ChildOffset(v) ..
  // ChildOffset(v + 1)); object_count_ + 2 offsets and tree_object_count_ children. The offsets
  // are stored in blocks of kChildBlock nodes: a 32-bit base per block plus one byte per node
  // (offset - base) while a block's offsets span at most 255 children; blocks that span more (a
  // node with hundreds of children) keep their offsets in full in wide_child_offsets_. That is
  // about 1.5 bytes per object instead of 4.
  static constexpr uint32_t kChildBlock = 16;
  static constexpr uint32_t kNarrowBlock = 0xffffffffu;
  struct ChildBlock {
    uint32_t base = 0;             // offset of the block's first node
    uint32_t wide = kNarrowBlock;  // else: index of the block's row in wide_child_offsets_
  };
  std::unique_ptr<ChildBlock[]> child_blocks_;
  std::unique_ptr<uint8_t[]> child_rel_;
  std::vector<uint32_t> wide_child_offsets_;
  std::unique_ptr<ObjectIndex[]> children_;
  std::vector<ObjectIndex> artificial_roots_;
  // With keep_unreachable only: bit v set if object v is reachable from a GC root. Empty otherwise
  // (reachable_from_gc_roots() == reachable()).
  std::vector<bool> from_gc_roots_;
};

// Computes the dominator tree of `graph` with a super root whose successors are `gc_roots`
// (duplicates allowed; order matters only for which DFS tree is used internally, never for the
// result). Time O((n + m) log n) worst case, near-linear in practice; memory: see the file comment.
// Never recurses. Errors: InvalidArgument if a GC root is out of range, if a followed reference
// targets an object out of range or if the graph has 2^32 - 2 objects or more (ObjectIndex and the
// super root must fit in 32 bits); ResourceExhausted if the back and cross references number 2^32
// or more.
StatusOr<DominatorTree> ComputeDominatorTree(const CsrGraph& graph,
                                             std::span<const ObjectIndex> gc_roots,
                                             const DominatorOptions& options = {});

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_DOMINATOR_TREE_H_
