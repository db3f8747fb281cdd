// Tests of analysis/dynamic_ranking.h on a hand-built heap: the thesis's Fig. 2.3 (a server's
// buffer and an analysis's list holding the same data objects), an object that is big by retained
// size but shares nothing, and a strongly connected component (listed once, with its size).
// Expected figures come from the construction and a brute-force reachability count.
#include "analysis/dynamic_ranking.h"

#include <set>
#include <string>
#include <vector>

#include "analysis/heap_graph.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

ClassInfo Instance(std::string name, std::vector<std::string> fields, uint32_t size) {
  ClassInfo c;
  c.name = std::move(name);
  for (auto& f : fields) c.instance_fields.push_back(FieldInfo{f, FieldType::kObject});
  c.instance_size = size;
  c.class_object_size = 8;
  return c;
}

constexpr uint64_t kData = 40;  // data objects shared by the buffer and the list

// Java frame roots S (0x100) and A (0x200); S -> B (0x110) -> Object[] (0x120) -> Data 0x1000..;
// A -> L (0x210) -> Object[] (0x220) -> the same Data. Each Data -> its byte[100]. A frame root X
// (0x300) -> byte[5000] (0x310): big by retained size, shares nothing. A frame root P (0x400) ->
// a cycle C1 (0x410) -> C2 (0x420) -> C3 (0x430) -> C1, with C3 -> the first data object.
StatusOr<HeapGraph> SharedDataHeap() {
  HeapGraphBuilder b{DumpInfo{}};
  b.AddClass(Instance("java.lang.Object", {}, 16), 0x10);
  ClassId holder = b.AddClass(Instance("app.Holder", {"next"}, 16), 0x20);
  ClassId data = b.AddClass(Instance("app.Data", {"payload"}, 24), 0x30);
  ClassId node = b.AddClass(Instance("app.Node", {"next", "data"}, 24), 0x40);
  ClassInfo objects;
  objects.name = "java.lang.Object[]";
  objects.instance_kind = ObjectKind::kObjectArray;
  ClassId array = b.AddClass(objects, 0x50);
  ClassInfo bytes;
  bytes.name = "byte[]";
  bytes.instance_kind = ObjectKind::kPrimitiveArray;
  bytes.element_type = FieldType::kByte;
  ClassId byte_array = b.AddClass(bytes, 0x60);
  std::vector<uint64_t> items;
  for (uint64_t i = 0; i < kData; ++i) {
    items.push_back(0x1000 + 16 * i);
    b.AddInstance(0x1000 + 16 * i, data, {0x8000 + 16 * i});
    b.AddPrimitiveArray(0x8000 + 16 * i, byte_array, 100);
  }
  b.AddInstance(0x100, holder, {0x110});
  b.AddInstance(0x110, holder, {0x120});
  b.AddObjectArray(0x120, array, items);
  b.AddInstance(0x200, holder, {0x210});
  b.AddInstance(0x210, holder, {0x220});
  b.AddObjectArray(0x220, array, items);
  b.AddInstance(0x300, holder, {0x310});
  b.AddPrimitiveArray(0x310, byte_array, 5000);
  b.AddInstance(0x400, holder, {0x410});
  b.AddInstance(0x410, node, {0x420, 0});
  b.AddInstance(0x420, node, {0x430, 0});
  b.AddInstance(0x430, node, {0x410, 0x1000});
  for (uint64_t c = 0x10; c <= 0x60; c += 0x10) b.AddRoot(c, GcRootKind::kStickyClass);
  for (uint64_t r : {0x100, 0x200, 0x300, 0x400}) b.AddRoot(r, GcRootKind::kJavaFrame);
  return std::move(b).Build();
}

struct Fixture {
  HeapGraph graph;
  DominatorTree tree;
  RetainedSizes retained;
};

Fixture Analyse() {
  auto graph = SharedDataHeap();
  EXPECT_TRUE(graph.ok()) << graph.status();
  auto tree = ComputeDominatorTree(graph->graph(), graph->root_objects());
  EXPECT_TRUE(tree.ok()) << tree.status();
  RetainedSizes retained =
      ComputeRetainedSizes(*tree, [&](ObjectIndex v) { return graph->shallow_size(v); });
  return Fixture{std::move(*graph), std::move(*tree), std::move(retained)};
}

TEST(DynamicRankingTest, BufferAndListAreBigByDynamicAndSharedSizeTheBigByteArrayIsNot) {
  Fixture f = Analyse();
  auto size = [&](uint64_t id) { return f.graph.shallow_size(f.graph.FindObject(id)); };
  const uint64_t items = kData * (size(0x1000) + size(0x8000));
  DynamicRankingOptions options;
  options.rows = 4;
  auto r = RankByDynamicSize(f.graph, f.tree, f.retained, options);
  ASSERT_TRUE(r.ok()) << r.status();

  // By dynamic size: S and A reach their holder, array and the data; the byte[5000] holder X is
  // bigger still only if 5000 + its own bytes beat that; here the data are bigger.
  ASSERT_GE(items, size(0x300) + size(0x310));
  ASSERT_EQ(r->objects_by_dynamic.size(), 4u);
  std::set<uint64_t> top;
  for (const DynamicObjectRow& row : r->objects_by_dynamic) top.insert(row.object.object_id);
  EXPECT_EQ(top, (std::set<uint64_t>{0x100, 0x200, 0x110, 0x210}));
  const DynamicObjectRow& first = r->objects_by_dynamic[0];
  EXPECT_EQ(first.object.dynamic_objects, 2 * kData + 3);
  EXPECT_EQ(first.object.dynamic_bytes, size(0x100) + size(0x110) + size(0x120) + items);
  EXPECT_EQ(first.shared_bytes, static_cast<int64_t>(items));
  EXPECT_TRUE(first.estimate_exact);  // a small graph: every sketch holds the whole set
  EXPECT_EQ(first.estimated_dynamic_bytes, first.object.dynamic_bytes);

  // By shared size: the six objects above the data share exactly the data; X shares nothing. The
  // cycle's row is the member that retains least, C3 (C1 dominates C2, C2 dominates C3): it reaches
  // C1 and C2 and the first data object with its payload without retaining them. (P shares only
  // the data object, less.)
  options.rows = 7;
  r = RankByDynamicSize(f.graph, f.tree, f.retained, options);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->objects_by_shared.size(), 7u);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(r->objects_by_shared[i].shared_bytes, static_cast<int64_t>(items)) << i;
  const DynamicObjectRow& cycle = r->objects_by_shared[6];
  EXPECT_EQ(cycle.object.object_id, 0x430u);
  EXPECT_EQ(cycle.shared_bytes,
            static_cast<int64_t>(size(0x410) + size(0x420) + size(0x1000) + size(0x8000)));
  EXPECT_EQ(cycle.component_objects, 3u);  // C1, C2, C3: one row for the component
  EXPECT_EQ(cycle.object.dynamic_objects, 5u);
  for (const DynamicObjectRow& row : r->objects_by_shared) EXPECT_NE(row.object.object_id, 0x300u);
  // X is in the dynamic list (its byte[] is big) but with no shared size.
  bool x_listed = false;
  for (const DynamicObjectRow& row : r->objects_by_dynamic) {
    if (row.object.object_id == 0x300) {
      x_listed = true;
      EXPECT_EQ(row.shared_bytes, 0);
      EXPECT_EQ(row.object.dynamic_bytes, size(0x300) + size(0x310));
    }
  }
  EXPECT_TRUE(x_listed);

  // Classes: app.Data instances together reach the data; java.lang.Object[] (both arrays) the
  // data once; app.Holder (S, B, A, L, X, P) everything reachable from the frames.
  ASSERT_FALSE(r->classes_by_dynamic.empty());
  EXPECT_EQ(r->classes_by_dynamic[0].class_name, "app.Holder");
  for (const DynamicClassRow& c : r->classes_by_dynamic) {
    if (c.class_name == "java.lang.Object[]") {
      EXPECT_EQ(c.instances, 2u);
      EXPECT_EQ(c.dynamic_objects, 2 + 2 * kData);
      EXPECT_EQ(c.dynamic_bytes, size(0x120) + size(0x220) + items);
      EXPECT_EQ(c.retained_bytes, size(0x120) + size(0x220));  // minimum retained size
      EXPECT_EQ(c.shared_bytes, static_cast<int64_t>(items));
    }
    if (c.class_name == "app.Data") {
      EXPECT_EQ(c.dynamic_bytes, items);
      EXPECT_EQ(c.shared_bytes, 0);
      EXPECT_EQ(c.estimated_sum_bytes, items);  // disjoint instances: the sum is exact
    }
  }

  // The histogram counts every reachable object once.
  uint64_t counted = 0;
  for (const SharedSizeBucket& b : r->shared_histogram) counted += b.objects;
  EXPECT_EQ(counted, r->objects);
  EXPECT_EQ(r->objects, f.tree.tree_object_count());
  EXPECT_EQ(r->shared_histogram.size(), 10u);
  EXPECT_EQ(r->exact_estimates, r->objects);
}

TEST(DynamicRankingTest, ErrorsAreReturned) {
  Fixture f = Analyse();
  DynamicRankingOptions none;
  none.rows = 0;
  EXPECT_EQ(RankByDynamicSize(f.graph, f.tree, f.retained, none).status().code(),
            absl::StatusCode::kInvalidArgument);
  HeapGraph empty;
  EXPECT_EQ(RankByDynamicSize(empty, f.tree, f.retained).status().code(),
            absl::StatusCode::kInvalidArgument);
  DynamicRankingOptions bad_sketch;
  bad_sketch.estimate.sketch_size = 1;
  EXPECT_EQ(RankByDynamicSize(f.graph, f.tree, f.retained, bad_sketch).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace heapwatch::analysis
