// Internal to analysis/ (strong_components.cc, dynamic_size.cc): which references of a heap graph
// an algorithm follows. Not part of the public surface.
//
// A ReferenceView presents the successors of each object as a range of CsrGraph edges plus at most
// one implicit edge (an object's reference to its class object when the graph does not store it),
// and filters weak references and stored class-object edges. Reading it is O(1) per edge.
#ifndef HEAPWATCH_ANALYSIS_REFERENCE_VIEW_INTERNAL_H_
#define HEAPWATCH_ANALYSIS_REFERENCE_VIEW_INTERNAL_H_

#include <cstdint>

#include "analysis/csr_graph.h"
#include "analysis/heap_graph.h"

namespace heapwatch::analysis::internal {

class ReferenceView {
 public:
  // Every edge of `graph`, weak ones only if `follow_weak`.
  ReferenceView(const CsrGraph& graph, bool follow_weak)
      : csr_(&graph), follow_weak_(follow_weak) {}

  // The references of `graph`; `follow_class_edges` decides about each object's reference to its
  // class object (see CondenseStrongComponents(const HeapGraph&, ...)).
  ReferenceView(const HeapGraph& graph, bool follow_weak, bool follow_class_edges)
      : csr_(&graph.graph()), heap_(&graph), follow_weak_(follow_weak) {
    if (graph.info().instance_class_edges) {
      skip_stored_class_edge_ = !follow_class_edges;
    } else {
      add_implicit_class_edge_ = follow_class_edges;
    }
  }

  const CsrGraph& csr() const { return *csr_; }
  uint32_t node_count() const { return csr_->node_count(); }

  // The class object of the class of `v`, or kNoObject.
  ObjectIndex ClassObjectOf(uint32_t v) const {
    const ClassId c = heap_->class_of(ObjectIndex(v));
    return c.valid() ? heap_->class_info(c).class_object : kNoObject;
  }
  // First CSR edge of `v` to consider (past a stored class-object edge that is skipped).
  uint64_t begin(uint32_t v) const {
    const uint64_t b = csr_->offsets[v];
    if (skip_stored_class_edge_ && b < csr_->offsets[v + 1]) {
      const ObjectIndex c = ClassObjectOf(v);
      // The reader emits the "<class>" slot first and drops it only when the class object is not
      // in the dump, so the first edge is the class edge exactly when the class object exists.
      if (c.valid() && csr_->targets[b] == c) return b + 1;
    }
    return b;
  }
  uint64_t end(uint32_t v) const { return csr_->offsets[v + 1]; }
  bool followed(uint64_t e) const { return follow_weak_ || !csr_->is_weak(e); }
  ObjectIndex target(uint64_t e) const { return csr_->targets[e]; }
  // True when objects may have an implicit edge (Implicit() must be asked).
  bool has_implicit_edges() const { return add_implicit_class_edge_; }
  // The implicit edge of `v` (to its class object), or kNoObject.
  ObjectIndex Implicit(uint32_t v) const {
    return add_implicit_class_edge_ ? ClassObjectOf(v) : kNoObject;
  }

  // Calls fn(ObjectIndex target) for every followed successor of `v` (duplicates kept).
  template <typename Fn>
  void ForEachSuccessor(uint32_t v, Fn&& fn) const {
    if (add_implicit_class_edge_) {
      const ObjectIndex c = ClassObjectOf(v);
      if (c.valid()) fn(c);
    }
    const uint64_t e_end = end(v);
    for (uint64_t e = begin(v); e < e_end; ++e) {
      if (followed(e)) fn(csr_->targets[e]);
    }
  }

 private:
  const CsrGraph* csr_;
  const HeapGraph* heap_ = nullptr;
  bool follow_weak_;
  bool skip_stored_class_edge_ = false;
  bool add_implicit_class_edge_ = false;
};

}  // namespace heapwatch::analysis::internal

#endif  // HEAPWATCH_ANALYSIS_REFERENCE_VIEW_INTERNAL_H_
