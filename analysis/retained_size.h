// Retained (GC) sizes and retained sets: of every object from the dominator tree, and of object
// sets both as MAT's minimum retained size (from the dominator tree) and precisely by a simulated
// GC.
//
// Definitions (dynaTrace thesis chapter 4.2; MAT, seeds/002): the retained set of an object x is
// the set of objects that would become unreachable if x were removed (x included): exactly x's
// dominator subtree. Its retained (GC) size is the total shallow size of that set. For a set S of
// objects, the retained set is what becomes unreachable when every member of S is removed. The
// dominator tree gives a lower bound, the minimum retained size: the sum of the retained sizes of
// the members that no other member dominates (their subtrees are disjoint and all retained by S,
// but S may also retain objects that only several members together keep alive). The precise value
// needs a simulated GC, O(n + m) per set.
//
// Sizes are in bytes when `shallow_size` returns bytes; any additive per-object measure works (pass
// a function returning 1 to get object counts). Unless stated otherwise, functions are reentrant
// and read their inputs only.
#ifndef HEAPWATCH_ANALYSIS_RETAINED_SIZE_H_
#define HEAPWATCH_ANALYSIS_RETAINED_SIZE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "analysis/csr_graph.h"
#include "analysis/dominator_tree.h"
#include "common/status.h"

namespace heapwatch::analysis {

// Shallow size of one object in bytes (or any additive measure, see above).
using ShallowSizeFn = absl::FunctionRef<uint64_t(ObjectIndex)>;

// Retained sizes of every object, as ComputeRetainedSizes returns them: object_count() + 1 entries
// (entry v for object v, 0 for objects outside the tree; the last for the super root = the total
// shallow size of the tree), exact. Stored in 4 bytes per entry when that loses nothing: every
// entry is a multiple of unit() = the greatest common divisor of the shallow sizes in the tree (8
// for a HotSpot dump, whose objects are 8-byte aligned; see docs/size-model.md; 1 or 4 under the
// Android and NetBeans models), and when the total is below 2^32 units (32 GiB of reachable heap in
// 8-byte units) no entry can exceed 32 bits; otherwise 8 bytes per entry. Reads are O(1). Plain
// value; const methods are safe to call concurrently.
class RetainedSizes {
 public:
  RetainedSizes() = default;
  // Sizes given in bytes, stored in 8 bytes each (for callers with their own measure and tests).
  static RetainedSizes FromBytes(std::vector<uint64_t> bytes);

  size_t size() const { return compact_ ? narrow_.size() : wide_.size(); }
  bool empty() const { return size() == 0; }
  // Entry i in the unit of the shallow sizes (bytes). REQUIRES: i < size().
  uint64_t operator[](size_t i) const { return compact_ ? narrow_[i] * unit_ : wide_[i]; }
  // The last entry: the super root's retained size. REQUIRES: !empty().
  uint64_t back() const { return (*this)[size() - 1]; }
  // True when the entries are stored in 4 bytes each (multiples of unit()).
  bool compact() const { return compact_; }
  uint64_t unit() const { return unit_; }
  // All entries, 8 bytes each (O(n) memory: for tests and small graphs).
  std::vector<uint64_t> ToVector() const;
  // Bytes held by the entries.
  size_t MemoryUsage() const {
    return narrow_.capacity() * sizeof(uint32_t) + wide_.capacity() * sizeof(uint64_t);
  }

 private:
  friend RetainedSizes ComputeRetainedSizes(const DominatorTree& tree, ShallowSizeFn shallow_size);
  bool compact_ = false;
  uint64_t unit_ = 1;
  std::vector<uint32_t> narrow_;  // when compact_: entries / unit_
  std::vector<uint64_t> wide_;    // otherwise: entries
};

// Retained size of every object in the tree: shallow size plus the retained sizes of its children
// in the dominator tree, computed bottom-up in postorder (iterative). Returns object_count() + 1
// entries (see RetainedSizes). `shallow_size` is called twice per object in the tree (once for the
// unit and the total, once for the sums). O(n) time (plus a binary search among its siblings per
// object); no memory besides the result (4 bytes per object when compact, else 8): the walk climbs
// back through the immediate dominators instead of keeping a stack.
RetainedSizes ComputeRetainedSizes(const DominatorTree& tree, ShallowSizeFn shallow_size);

// The retained set of `object`: its dominator subtree, `object` first, then in preorder. Empty for
// an object outside the tree; super_root() gives the whole tree without the super root itself.
// O(size of the result). Errors: InvalidArgument if object.value > tree.object_count().
StatusOr<std::vector<ObjectIndex>> RetainedSet(const DominatorTree& tree, ObjectIndex object);

struct RetainedSetSize {
  uint64_t bytes = 0;    // total shallow size (in the unit of shallow_size)
  uint64_t objects = 0;  // number of objects
  friend bool operator==(const RetainedSetSize&, const RetainedSetSize&) = default;
};

// MAT's minimum retained size of `set` (seeds/002): the sum of retained_sizes[v] over the members v
// that no other member dominates. Duplicates count once; members outside the tree contribute 0.
// `retained_sizes` is ComputeRetainedSizes(tree, f) for any measure f (object_count() + 1 entries),
// so passing a function returning 1 there gives the minimum retained object count. Cost: O(k + the
// number of distinct dominator-tree ancestors of the members), at most O(k * depth) and never more
// than O(n), with hash sets for k members; independent of the heap size. Every ancestor is examined
// once: the climb from a member stops at a member or at an ancestor already classified. Errors:
// InvalidArgument if a member is out of range (> object_count()) or retained_sizes has the wrong
// size.
StatusOr<uint64_t> MinimumRetainedSize(const DominatorTree& tree,
                                       const RetainedSizes& retained_sizes,
                                       std::span<const ObjectIndex> set);

struct SimulatedGcOptions {
  // Follow references flagged weak (Reference.referent). Use the same value as the dominator tree's
  // DominatorOptions::follow_weak_references to compare with it.
  bool follow_weak_references = true;
};

// The precise retained set of `set` by simulated GC: mark from the GC roots without following into
// any member; every object that was reachable from the GC roots before and is not marked now is
// retained (members that were reachable included). Returned in increasing ObjectIndex order. O(n +
// m) time, 3 bits per object plus a stack of at most 4 bytes per object. Errors: InvalidArgument if
// a GC root, a member or a followed reference is out of range.
StatusOr<std::vector<ObjectIndex>> PreciseRetainedSet(const CsrGraph& graph,
                                                      std::span<const ObjectIndex> gc_roots,
                                                      std::span<const ObjectIndex> set,
                                                      const SimulatedGcOptions& options = {});

// Size and object count of PreciseRetainedSet(graph, gc_roots, set, options), without materialising
// it. `shallow_size` is called once per retained object. Same cost and errors as
// PreciseRetainedSet.
StatusOr<RetainedSetSize> PreciseRetainedSize(const CsrGraph& graph,
                                              std::span<const ObjectIndex> gc_roots,
                                              std::span<const ObjectIndex> set,
                                              ShallowSizeFn shallow_size,
                                              const SimulatedGcOptions& options = {});

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_RETAINED_SIZE_H_
