// Shortest paths from GC roots to an object, strong references first.
//
// Why is an object alive? A path from a GC root through references to it answers that; the shortest
// one is the easiest to read. As HAHA's ShortestDistanceVisitor (seeds/004) and MAT's "path to GC
// roots excluding weak references" do, references held only by java.lang.ref.Reference.referent
// (CsrGraph weak flags: soft, weak, phantom, finalizer) do not keep an object alive by themselves,
// so a path uses one only when nothing else reaches the object, and says so.
//
// Order: paths are compared lexicographically by (number of weak references, number of references):
// any path of strong references only beats every path with a weak one, however long. The search is
// a breadth-first search in layers: layer k holds the objects whose best path has k weak
// references; each layer is a BFS over strong references, seeded by the weak references out of
// layer k-1 (sorted by distance as they were found; the seeds at distance d join the FIFO before
// anything at distance d is expanded), so it stays O(n + m) without a priority queue.
//
// Several paths: path i ends with the reference from a distinct referrer (the "last hop") of the
// target, through that referrer's own best path that avoids the target; the strong reference is
// used when the referrer holds both kinds. Paths are ordered best first (ties: the order the search
// met the referrers). If the target is itself a GC root, the first path is the target alone. The
// search stops as soon as no unseen referrer can beat the max_paths-th path found.
//
// Each step names an edge index into CsrGraph::targets; HeapGraph::DescribeReference(from, edge)
// turns it into a field, static field or array index (report.h's PathStep/GcRootPath are the named
// form that reports show; these are the index form). Thread-safety: reentrant, reads its inputs
// only.
#ifndef HEAPWATCH_ANALYSIS_GC_ROOT_PATHS_H_
#define HEAPWATCH_ANALYSIS_GC_ROOT_PATHS_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "analysis/csr_graph.h"
#include "common/status.h"

namespace heapwatch::analysis {

// "No reference": the edge of the last step of a path.
inline constexpr uint64_t kNoEdge = std::numeric_limits<uint64_t>::max();

struct GraphPathStep {
  ObjectIndex object;
  // Index into CsrGraph::targets of the reference from `object` to the next step's object; kNoEdge
  // on the last step (the target).
  uint64_t edge = kNoEdge;
  // That reference is weak (held only by Reference.referent); false on the last step.
  bool weak = false;
  friend bool operator==(const GraphPathStep&, const GraphPathStep&) = default;
};

struct GraphPath {
  std::vector<GraphPathStep>
      steps;  // steps.front().object is a GC root, steps.back().object the target
  uint32_t weak_references = 0;                       // number of steps with weak == true
  size_t length() const { return steps.size() - 1; }  // number of references
};

// Up to `max_paths` shortest paths (see the file comment for the order and which paths) from any of
// `gc_roots` to `target`. Empty if the target is unreachable from the roots, or max_paths == 0.
// O(n + m) time, and less: the search stops as soon as the best max_paths paths are known, even in
// the middle of a distance. Memory: a visited bitmap (1 bit per object of the graph), 8 bytes per
// object the search settles (the FIFO, kept as a log with each object's parent position: it
// replaces a 4-byte parent per object of the graph, which a search settling a third of a big heap
// touched almost page by page), and the weak references waiting for the next layer (12 bytes
// each). Errors:
// InvalidArgument if a GC root, the target or a reference on the way is out of range.
StatusOr<std::vector<GraphPath>> ShortestPathsFromGcRoots(const CsrGraph& graph,
                                                          std::span<const ObjectIndex> gc_roots,
                                                          ObjectIndex target, size_t max_paths = 1);

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_GC_ROOT_PATHS_H_
