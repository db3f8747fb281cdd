// Field-by-field comparison of two HeapGraphs read from the same dump (e.g. by the single-pass and
// the three-pass paths of the reader).
#ifndef HEAPWATCH_TESTS_COLLECTORS_HPROF_GRAPH_COMPARE_H_
#define HEAPWATCH_TESTS_COLLECTORS_HPROF_GRAPH_COMPARE_H_

#include "analysis/heap_graph.h"
#include "gtest/gtest.h"

namespace heapwatch::hprof::testing {

inline void ExpectSameGraph(const analysis::HeapGraph& a, const analysis::HeapGraph& b) {
  using analysis::ObjectIndex;
  ASSERT_EQ(a.object_count(), b.object_count());
  ASSERT_EQ(a.class_count(), b.class_count());
  for (uint32_t c = 0; c < a.class_count(); ++c) {
    const auto& x = a.class_info(analysis::ClassId{c});
    const auto& y = b.class_info(analysis::ClassId{c});
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.instance_size, y.instance_size) << x.name;
    EXPECT_EQ(x.class_object, y.class_object) << x.name;
    EXPECT_EQ(x.class_loader, y.class_loader) << x.name;
  }
  int mismatches = 0;
  for (uint32_t v = 0; v < a.object_count() && mismatches < 10; ++v) {
    ObjectIndex o{v};
    bool same = a.object_id(o) == b.object_id(o) && a.kind(o) == b.kind(o) &&
                a.class_of(o) == b.class_of(o) && a.shallow_size(o) == b.shallow_size(o) &&
                a.array_length(o) == b.array_length(o) && a.heap(o) == b.heap(o);
    if (!same) {
      ++mismatches;
      ADD_FAILURE() << "object " << v << " differs";
    }
  }
  EXPECT_EQ(a.graph().offsets, b.graph().offsets);
  EXPECT_EQ(a.graph().targets, b.graph().targets);
  EXPECT_EQ(a.graph().weak, b.graph().weak);
  // Reference names (slot bitmaps) on a sample of edges.
  uint64_t step = std::max<uint64_t>(1, a.graph().edge_count() / 5000);
  for (uint32_t v = 0; v < a.object_count(); v += 7) {
    ObjectIndex o{v};
    for (uint64_t e = a.graph().first_edge(o); e < a.graph().first_edge(ObjectIndex{v + 1});
         e += step) {
      ASSERT_EQ(a.DescribeReference(o, e), b.DescribeReference(o, e))
          << "object " << v << " edge " << e;
    }
  }
  ASSERT_EQ(a.gc_roots().size(), b.gc_roots().size());
  for (size_t i = 0; i < a.gc_roots().size(); ++i) {
    EXPECT_EQ(a.gc_roots()[i].object, b.gc_roots()[i].object);
    EXPECT_EQ(a.gc_roots()[i].kind, b.gc_roots()[i].kind);
  }
  EXPECT_EQ(a.info().dangling_references, b.info().dangling_references);
  EXPECT_EQ(a.info().layout, b.info().layout);
}

}  // namespace heapwatch::hprof::testing

#endif  // HEAPWATCH_TESTS_COLLECTORS_HPROF_GRAPH_COMPARE_H_
