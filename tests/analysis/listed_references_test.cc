// HeapGraph for formats without field layouts (IBM PHD and text dumps): objects whose references are
// listed without slot names (ClassInfo::listed_references) and sizes the dump records
// (HeapGraphBuilder::SetShallowSize).
#include <string>
#include <vector>

#include "analysis/heap_graph.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;


// Node (listed, 24 bytes), Object[] (listed), char[] and a class object with listed references.
StatusOr<HeapGraph> BuildSample(bool class_edges, bool with_sizes) {
  DumpInfo info;
  info.format = "test";
  info.layout.array_length_offset = 12;  // arrays: 16-byte header, 4-byte references
  info.layout.reference_size = 4;
  info.layout.unaligned_array_base = true;
  HeapGraphBuilder b(info, {.instance_class_edges = class_edges});
  ClassInfo node;
  node.name = "Node";
  node.instance_size = 24;
  node.class_object_size = 40;
  node.listed_references = true;
  const ClassId n = b.AddClass(node, 0x1000);
  ClassInfo arr;
  arr.name = "java.lang.Object[]";
  arr.instance_kind = ObjectKind::kObjectArray;
  arr.listed_references = true;
  const ClassId a = b.AddClass(arr, 0);  // no class object
  ClassInfo chars;
  chars.name = "char[]";
  chars.instance_kind = ObjectKind::kPrimitiveArray;
  chars.element_type = FieldType::kChar;
  chars.listed_references = true;
  const ClassId c = b.AddClass(chars, 0x2000);
  b.AddListedObject(0x10, n, {0x20, 0, 0x30, 0x10, 0x999});  // null dropped, 0x999 dangling
  b.AddListedObject(0x20, a, {0x30, 0x30}, /*array_length=*/5);
  b.AddPrimitiveArray(0x30, c, 3);
  b.SetListedClassReferences(n, {0x20});
  if (with_sizes) {
    b.SetShallowSize(0x10, 24);   // what the model says: not stored
    b.SetShallowSize(0x30, 100);  // differs: stored
    b.SetShallowSize(0x30, 104);  // the last one wins
    b.SetShallowSize(0x777, 8);   // no such object: ignored
  }
  return std::move(b).Build();
}

TEST(ListedReferencesTest, EdgesKeepTheListedOrderWithoutNullsOrDanglingIds) {
  auto built = BuildSample(false, false);
  ASSERT_TRUE(built.ok()) << built.status();
  const HeapGraph& g = *built;
  ASSERT_EQ(g.object_count(), 5u);  // 0x10 0x20 0x30 0x1000 0x2000
  const ObjectIndex node = g.FindObject(0x10), arr = g.FindObject(0x20), chars = g.FindObject(0x30);
  const ObjectIndex node_class = g.FindObject(0x1000);
  EXPECT_THAT(g.graph().successors(node), ElementsAre(arr, chars, node));
  EXPECT_THAT(g.graph().successors(arr), ElementsAre(chars, chars));
  EXPECT_THAT(g.graph().successors(node_class), ElementsAre(arr));
  EXPECT_EQ(g.info().dangling_references, 1u);
  EXPECT_EQ(g.kind(arr), ObjectKind::kObjectArray);
  EXPECT_EQ(g.array_length(arr), 5u);
  EXPECT_EQ(g.array_length(chars), 3u);
  const uint64_t e = g.graph().first_edge(node);
  EXPECT_EQ(g.ResolveReference(node, e + 2).kind, ReferenceSlot::Kind::kListed);
  EXPECT_EQ(g.ResolveReference(node, e + 2).array_index, 2u);
  EXPECT_EQ(g.DescribeReference(node, e + 1), "<reference 1>");
  EXPECT_EQ(g.DescribeReference(node_class, g.graph().first_edge(node_class)), "<reference 0>");
}

TEST(ListedReferencesTest, ClassEdgesComeFirstWhenTheClassObjectExists) {
  auto built = BuildSample(true, false);
  ASSERT_TRUE(built.ok()) << built.status();
  const HeapGraph& g = *built;
  const ObjectIndex node = g.FindObject(0x10), arr = g.FindObject(0x20), chars = g.FindObject(0x30);
  const ObjectIndex node_class = g.FindObject(0x1000), char_class = g.FindObject(0x2000);
  EXPECT_THAT(g.graph().successors(node), ElementsAre(node_class, arr, chars, node));
  EXPECT_EQ(g.DescribeReference(node, g.graph().first_edge(node)), "<class>");
  EXPECT_EQ(g.DescribeReference(node, g.graph().first_edge(node) + 1), "<reference 0>");
  // Object[] has no class object: no "<class>" edge, the listed ones start at 0.
  EXPECT_THAT(g.graph().successors(arr), ElementsAre(chars, chars));
  EXPECT_EQ(g.DescribeReference(arr, g.graph().first_edge(arr)), "<reference 0>");
  EXPECT_THAT(g.graph().successors(chars), ElementsAre(char_class));
}

TEST(ListedReferencesTest, RecordedSizesOverrideTheModelOnlyWhereTheyDiffer) {
  auto plain = BuildSample(false, false);
  auto sized = BuildSample(false, true);
  ASSERT_TRUE(plain.ok() && sized.ok());
  const ObjectIndex node = sized->FindObject(0x10), chars = sized->FindObject(0x30);
  const ObjectIndex arr = sized->FindObject(0x20), node_class = sized->FindObject(0x1000);
  EXPECT_EQ(plain->shallow_size(chars), 24u);  // align8(16 + 3 x 2)
  EXPECT_EQ(sized->shallow_size(chars), 104u);
  EXPECT_EQ(sized->shallow_size(node), 24u);
  EXPECT_EQ(sized->shallow_size(arr), 40u);  // align8(16 + 5 x 4)
  EXPECT_EQ(sized->shallow_size(node_class), 40u);
  EXPECT_EQ(sized->MemoryUsage(), plain->MemoryUsage() + 12);  // one override: 4 + 8 bytes
}

TEST(ListedReferencesTest, RejectsMixingListedAndFieldReferences) {
  DumpInfo info;
  {
    HeapGraphBuilder b(info);
    ClassInfo plain;
    plain.name = "Plain";
    const ClassId c = b.AddClass(plain, 0);
    b.AddListedObject(0x10, c, {});
    auto g = std::move(b).Build();
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(std::string(g.status().message()), HasSubstr("without listed_references"));
  }
  {
    HeapGraphBuilder b(info);
    ClassInfo listed;
    listed.name = "Listed";
    listed.listed_references = true;
    const ClassId c = b.AddClass(listed, 0);
    b.AddInstance(0x10, c, {});
    auto g = std::move(b).Build();
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(std::string(g.status().message()), HasSubstr("with listed_references"));
  }
  {
    HeapGraphBuilder b(info);
    ClassInfo plain;
    plain.name = "Plain";
    const ClassId c = b.AddClass(plain, 0x10);
    b.SetListedClassReferences(c, {0x10});
    EXPECT_FALSE(std::move(b).Build().ok());
  }
}

}  // namespace
}  // namespace heapwatch::analysis
