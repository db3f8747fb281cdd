// Typed object indices and the compressed-sparse-row (CSR) reference graph that every heap-graph
// algorithm in analysis/ works on.
//
// Objects of one heap dump are numbered densely 0..n-1 (ObjectIndex). References are stored as CSR:
// the references of object v are targets[offsets[v] .. offsets[v+1]), in the order the dump lists
// them (field order for instances, element order for arrays, static fields for classes), null
// references dropped, duplicates kept. The edge number e (an index into `targets`) is stable and
// can carry per-edge flags.
//
// Memory: 4 bytes per object (offsets) + 4 bytes per reference (targets) + 1 bit per reference
// (weak flags). Offsets are 32-bit, so one graph holds at most kMaxCsrEdges (2^32 - 1) references;
// producers (the HPROF reader, HeapGraphBuilder) reject bigger graphs with ResourceExhausted.
// Objects are limited to 2^32 - 1 by ObjectIndex anyway; a dump with 4 billion non-null references
// is a heap of well over 100 GB. Thread-safety: immutable after construction; concurrent readers
// are safe.
#ifndef HEAPWATCH_ANALYSIS_CSR_GRAPH_H_
#define HEAPWATCH_ANALYSIS_CSR_GRAPH_H_

#include <compare>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace heapwatch::analysis {

// Dense index of an object within one heap graph: 0..object_count-1. Distinct from raw dump ids
// (addresses), DFS numbers and class ids so they cannot be mixed up.
struct ObjectIndex {
  uint32_t value = std::numeric_limits<uint32_t>::max();
  constexpr ObjectIndex() = default;
  constexpr explicit ObjectIndex(uint32_t v) : value(v) {}
  friend constexpr auto operator<=>(ObjectIndex, ObjectIndex) = default;
  constexpr bool valid() const { return value != std::numeric_limits<uint32_t>::max(); }
};
// "No object": the parent of a root in a path, the dominator of an unreachable object, and so on.
inline constexpr ObjectIndex kNoObject{};

// Dense index of a class within one heap graph's class table: 0..class_count-1.
struct ClassId {
  uint32_t value = std::numeric_limits<uint32_t>::max();
  constexpr ClassId() = default;
  constexpr explicit ClassId(uint32_t v) : value(v) {}
  friend constexpr auto operator<=>(ClassId, ClassId) = default;
  constexpr bool valid() const { return value != std::numeric_limits<uint32_t>::max(); }
};
inline constexpr ClassId kNoClass{};

// Largest number of references (edges) a CsrGraph can hold: offsets are 32-bit.
inline constexpr uint64_t kMaxCsrEdges = std::numeric_limits<uint32_t>::max();

// Forward reference graph in CSR form. REQUIRES: offsets.size() == node_count + 1, offsets
// non-decreasing, offsets.front() == 0, offsets.back() == targets.size(), every target <
// node_count; weak.size() is either 0 (no weak references) or targets.size(); targets.size() <=
// kMaxCsrEdges.
struct CsrGraph {
  std::vector<uint32_t> offsets{0};
  std::vector<ObjectIndex> targets;
  // weak[e] is true when reference e is held only by java.lang.ref.Reference.referent (soft, weak,
  // phantom, final references). Algorithms that follow strong references first consult it.
  std::vector<bool> weak;

  uint32_t node_count() const { return static_cast<uint32_t>(offsets.size() - 1); }
  uint64_t edge_count() const { return targets.size(); }
  std::span<const ObjectIndex> successors(ObjectIndex v) const {
    return {targets.data() + offsets[v.value], targets.data() + offsets[v.value + 1]};
  }
  uint64_t first_edge(ObjectIndex v) const { return offsets[v.value]; }
  bool is_weak(uint64_t edge) const { return !weak.empty() && weak[edge]; }
};

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_CSR_GRAPH_H_
