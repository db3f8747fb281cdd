// Shallow sizes a dump records for single objects (IBM dumps): kept by both builders where the size
// model computes another size, looked up by HeapGraph::shallow_size.
#include <string>
#include <vector>

#include "analysis/heap_graph.h"
#include "analysis/heap_graph_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

DumpInfo Info() {
  DumpInfo info;
  info.format = "test";
  info.size_model = SizeModel::kIbm;
  info.layout.reference_size = 4;
  info.layout.array_length_offset = 12;  // a 16-byte array header
  info.layout.unaligned_array_base = true;
  return info;
}

ClassInfo Class(std::string name, ObjectKind kind, FieldType element, uint32_t size) {
  ClassInfo c;
  c.name = std::move(name);
  c.instance_kind = kind;
  c.element_type = element;
  c.instance_size = size;
  c.class_object_size = 40;
  c.unnamed_references = kind == ObjectKind::kInstance;
  return c;
}

TEST(RecordedSizesTest, HeapGraphBuilderKeepsSizesTheModelDoesNotGive) {
  HeapGraphBuilder b(Info());
  const ClassId node =
      b.AddClass(Class("Node", ObjectKind::kInstance, FieldType::kObject, 24), 0x1000);
  const ClassId chars =
      b.AddClass(Class("char[]", ObjectKind::kPrimitiveArray, FieldType::kChar, 0), 0);
  b.AddInstance(0x10, node, {0x20});
  b.AddInstance(0x18, node, {});
  b.AddPrimitiveArray(0x20, chars, 3);
  b.SetShallowSize(0x10, 24);  // the model's size: not kept
  b.SetShallowSize(0x18, 32);  // a hashed-and-moved instance: kept
  b.SetShallowSize(0x20, 100);
  b.SetShallowSize(0x20, 104);  // the last one wins
  b.SetShallowSize(0x777, 8);   // no such object: ignored
  auto g = std::move(b).Build();
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->shallow_size(g->FindObject(0x10)), 24u);
  EXPECT_EQ(g->shallow_size(g->FindObject(0x18)), 32u);
  EXPECT_EQ(g->shallow_size(g->FindObject(0x20)), 104u);
  EXPECT_EQ(g->shallow_size(g->FindObject(0x1000)), 40u);
  EXPECT_EQ(g->info().size_model, SizeModel::kIbm);
  EXPECT_EQ(SizeModelName(SizeModel::kIbm), "ibm");
}

TEST(RecordedSizesTest, BulkBuilderKeepsSizesTheModelDoesNotGive) {
  for (bool set_sizes : {false, true}) {
    BulkHeapGraphBuilder b(Info());
    const ClassId node = b.AddClass(Class("Node", ObjectKind::kInstance, FieldType::kObject, 0));
    const ClassId chars =
        b.AddClass(Class("char[]", ObjectKind::kPrimitiveArray, FieldType::kChar, 0));
    ASSERT_TRUE(b.FinishClasses().ok());
    IdChunks ids;
    for (uint64_t id : {0x10, 0x18, 0x20}) ids.push_back(id);
    ASSERT_TRUE(b.IndexObjects(std::move(ids), true, IdChunks{}).ok());
    b.BeginObjects(ObjectOrder::kIndexOrder);
    const uint64_t ref[] = {0x20};
    ASSERT_TRUE(b.AddInstance(0x10, node, ref).ok());
    ASSERT_TRUE(b.AddInstance(0x18, node, {}).ok());
    ASSERT_TRUE(b.AddPrimitiveArray(0x20, chars, 3).ok());
    ASSERT_TRUE(b.FinishObjects().ok());
    b.SetShallowSizes(node, 24, 0);
    if (set_sizes) {
      b.SetObjectShallowSize(b.FindObject(0x10), 24);
      b.SetObjectShallowSize(b.FindObject(0x18), 32);
      b.SetObjectShallowSize(b.FindObject(0x20), 104);
    }
    auto g = std::move(b).Build();
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->shallow_size(g->FindObject(0x10)), 24u);
    EXPECT_EQ(g->shallow_size(g->FindObject(0x18)), set_sizes ? 32u : 24u);
    // The model: a 16-byte header + 3 chars, rounded up to 8.
    EXPECT_EQ(g->shallow_size(g->FindObject(0x20)), set_sizes ? 104u : 24u);
  }
}

}  // namespace
}  // namespace heapwatch::analysis
