// The first two levels of a dump's dominator tree, grouped by class and bounded in size, for the
// treemap of the web report page (docs/web.md "The treemap"; web/html.h SvgNestedTreemap).
//
// Level 1 holds the objects the super root immediately dominates (those the GC roots keep alive
// only together; dynaTrace thesis, seed 001, chapter 4.2: the dominator tree and the retained
// size), grouped: ordinary objects by their class ("java.util.HashMap"), class objects
// (java.lang.Class) by the class they stand for ("class com.example.Foo (statics)"), so that the
// static fields that hold most of a heap are named instead of all landing in one java.lang.Class
// cell. Several classes of one name (several class loaders) share a cell. Level 2, inside each
// level-1 cell: the objects that the cell's objects immediately dominate, grouped the same way,
// plus one "self" cell with the level-1 objects' own shallow bytes. Since an object's retained size
// is its shallow size plus its dominator-tree children's retained sizes, the children of every
// cell add up to it exactly, and the level-1 cells add up to the super root's retained size (the
// reachable heap).
//
// Bounds: at most `top_cells` level-1 cells and `top_children` groups inside each (biggest
// retained size first); the rest of each level is summed into one cell of kind kOther (which has
// no children on level 1). The result is O(top_cells * (top_children + 2)) cells whatever the heap.
//
// Units: bytes. Thread-safety: reentrant; reads its inputs only.
#ifndef HEAPWATCH_ANALYSIS_DOMINATOR_TREEMAP_H_
#define HEAPWATCH_ANALYSIS_DOMINATOR_TREEMAP_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/dominator_tree.h"
#include "analysis/heap_graph.h"
#include "analysis/retained_size.h"
#include "common/status.h"

namespace heapwatch::analysis {

struct TreemapCell {
  enum class Kind {
    kClass,    // objects of the class `label`
    kStatics,  // class objects of the class they stand for; label "class X (statics)"
    kOther,    // the groups beyond the bound, summed; label "other"
    kSelf,     // the parent cell's objects' own shallow bytes; label "self"
  };
  std::string label;
  Kind kind = Kind::kClass;
  uint64_t objects = 0;         // objects of the group (for kSelf: the parent's objects)
  uint64_t retained_bytes = 0;  // sum of their retained sizes (for kSelf: shallow sizes)
  // Set by MarkAccumulationPoint on the cells whose objects include the point or a dominator of it.
  bool accumulation_point = false;
  std::vector<TreemapCell> children;  // level 2; empty on level 2 and for a level-1 kOther cell
};

struct DominatorTreemap {
  uint64_t total_bytes = 0;        // the super root's retained size: the dominator tree's objects
  uint64_t total_objects = 0;      // objects in the dominator tree (the super root not counted)
  std::vector<TreemapCell> cells;  // level 1, biggest first, a kOther cell last when any
};

struct DominatorTreemapOptions {
  size_t top_cells = 12;    // level-1 groups kept (>= 1)
  size_t top_children = 8;  // level-2 groups kept inside each level-1 cell (>= 1)
};

// Builds the two levels (see the file comment). `retained` must be ComputeRetainedSizes(tree, ...)
// with graph.shallow_size (object_count() + 1 entries). Iterative; O(n) time over the tree's first
// two levels plus O(g log g) for the g distinct groups; memory O(C + g) for C classes.
// Errors: InvalidArgument when a bound is 0 or `retained` / `tree` do not match `graph`.
StatusOr<DominatorTreemap> BuildDominatorTreemap(const HeapGraph& graph, const DominatorTree& tree,
                                                 const RetainedSizes& retained,
                                                 const DominatorTreemapOptions& options = {});

// Sets accumulation_point on the level-1 cell holding the top-level dominator of `point` (the
// point itself when the super root immediately dominates it) and on the level-2 cell inside it
// holding the point's ancestor one level below (none when the point is top-level); a group beyond
// the bound is found in its level's kOther cell. Does nothing for kNoObject or an object outside
// the tree. O(depth of the point in the dominator tree + cells).
void MarkAccumulationPoint(const HeapGraph& graph, const DominatorTree& tree, ObjectIndex point,
                           DominatorTreemap* treemap);

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_DOMINATOR_TREEMAP_H_
