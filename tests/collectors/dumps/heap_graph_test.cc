// HeapGraph built by hand with HeapGraphBuilder: the representation, reference naming, reverse
// graph, histograms and the builder's errors.
#include "analysis/heap_graph.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

using ::testing::ElementsAre;

DumpInfo Info() {
  DumpInfo info;
  info.format = "synthetic";
  info.id_size = 8;
  info.size_model = SizeModel::kHotSpot;
  info.layout.reference_size = 4;
  info.layout.object_header = 12;
  info.layout.array_length_offset = 12;
  info.layout.word_size = 8;
  return info;
}

ClassInfo Class(std::string name, ClassId super, std::vector<FieldInfo> fields, uint32_t size,
                ObjectKind kind = ObjectKind::kInstance, FieldType element = FieldType::kObject) {
  ClassInfo c;
  c.name = std::move(name);
  c.super_class = super;
  c.instance_fields = std::move(fields);
  c.instance_size = size;
  c.instance_kind = kind;
  c.element_type = element;
  c.class_object_size = 32;
  return c;
}

// object <- node(next, value) ; weak ref ; arrays
struct Fixture {
  ClassId object, node, reference, weak, objects, ints;
  HeapGraphBuilder b{Info()};
  Fixture() {
    object = b.AddClass(Class("java.lang.Object", kNoClass, {}, 16), 0x100);
    node = b.AddClass(
        Class("Node", object, {{"next", FieldType::kObject}, {"value", FieldType::kInt}}, 24),
        0x110);
    reference =
        b.AddClass(Class("java.lang.ref.Reference", object,
                         {{"referent", FieldType::kObject}, {"queue", FieldType::kObject}}, 24),
                   0x120);
    weak = b.AddClass(Class("java.lang.ref.WeakReference", reference, {}, 24), 0x130);
    objects =
        b.AddClass(Class("java.lang.Object[]", object, {}, 0, ObjectKind::kObjectArray), 0x140);
    ints = b.AddClass(Class("int[]", object, {}, 0, ObjectKind::kPrimitiveArray, FieldType::kInt),
                      0x150);
  }
};

TEST(HeapGraphTest, EmptyGraph) {
  HeapGraph g;
  EXPECT_EQ(g.object_count(), 0u);
  EXPECT_EQ(g.class_count(), 0u);
  EXPECT_EQ(g.graph().edge_count(), 0u);
  EXPECT_FALSE(g.FindObject(1).valid());
  EXPECT_TRUE(ComputeClassHistogram(g).rows.empty());
  auto built = HeapGraphBuilder(Info()).Build();
  ASSERT_TRUE(built.ok());
  EXPECT_EQ(built->object_count(), 0u);
}

TEST(HeapGraphTest, BuilderGraph) {
  Fixture f;
  f.b.AddInstance(0x1000, f.node, {0x1010});
  f.b.AddInstance(0x1010, f.node, {0x1000});  // a cycle
  f.b.AddInstance(0x1020, f.weak, {0x1000, 0});
  f.b.AddObjectArray(0x1030, f.objects, {0, 0x1010, 0xdead, 0x1000});
  f.b.AddPrimitiveArray(0x1040, f.ints, 10);
  f.b.SetStaticReferences(f.node, {});
  f.b.AddRoot(0x1030, GcRootKind::kJniGlobal);
  f.b.AddRoot(0x1030, GcRootKind::kJavaFrame, 3, 1);
  f.b.AddRoot(0x9999, GcRootKind::kUnknown);
  auto built = std::move(f.b).Build();
  ASSERT_TRUE(built.ok()) << built.status();
  const HeapGraph& g = *built;
  ASSERT_EQ(g.object_count(), 6u + 5u);
  ObjectIndex n0 = g.FindObject(0x1000), n1 = g.FindObject(0x1010), w = g.FindObject(0x1020),
              arr = g.FindObject(0x1030), ints = g.FindObject(0x1040);
  EXPECT_THAT(g.graph().successors(n0), ElementsAre(n1));
  EXPECT_THAT(g.graph().successors(arr), ElementsAre(n1, n0));
  EXPECT_EQ(g.info().dangling_references, 1u);
  EXPECT_EQ(g.DescribeReference(arr, g.graph().first_edge(arr)), "[1]");
  EXPECT_EQ(g.DescribeReference(arr, g.graph().first_edge(arr) + 1), "[3]");
  EXPECT_EQ(g.DescribeReference(n0, g.graph().first_edge(n0)), "next");
  EXPECT_EQ(g.DescribeReference(w, g.graph().first_edge(w)), "java.lang.ref.Reference.referent");
  EXPECT_TRUE(g.graph().is_weak(g.graph().first_edge(w)));
  EXPECT_FALSE(g.graph().is_weak(g.graph().first_edge(n0)));
  // Sizes: instances by class, arrays by the layout: align(16 + 4 x len, 8).
  EXPECT_EQ(g.shallow_size(n0), 24u);
  EXPECT_EQ(g.shallow_size(ints), 56u);
  EXPECT_EQ(g.shallow_size(arr), 32u);
  EXPECT_EQ(g.shallow_size(g.FindObject(0x110)), 32u);
  EXPECT_EQ(g.kind(g.FindObject(0x110)), ObjectKind::kClass);
  EXPECT_EQ(g.class_info(g.DescribedClass(g.FindObject(0x110))).name, "Node");
  EXPECT_FALSE(g.class_of(g.FindObject(0x110)).valid()) << "no java.lang.Class in this graph";
  EXPECT_EQ(g.gc_roots().size(), 2u);
  EXPECT_EQ(g.info().unresolved_roots, 1u);
  EXPECT_THAT(g.root_objects(), ElementsAre(arr));
  EXPECT_EQ(g.gc_roots()[1].thread_serial, 3u);
  // Class objects reference their superclass object.
  ObjectIndex node_class = g.FindObject(0x110);
  EXPECT_THAT(g.graph().successors(node_class), ElementsAre(g.FindObject(0x100)));
  EXPECT_EQ(g.DescribeReference(node_class, g.graph().first_edge(node_class)), "<super>");
  // Reverse graph.
  CsrGraph rev = g.BuildReverseGraph();
  EXPECT_THAT(rev.successors(n0), ::testing::UnorderedElementsAre(n1, w, arr));
  // Histogram.
  ClassHistogram h = ComputeClassHistogram(g);
  ASSERT_FALSE(h.rows.empty());
  EXPECT_EQ(h.rows[0].class_name, "int[]");  // the biggest by bytes
  std::vector<ClassTotals> t = ComputeClassTotals(g);
  EXPECT_EQ(t[f.node.value].instances, 2u);
  EXPECT_EQ(t[f.node.value].shallow_bytes, 48u);
  EXPECT_THAT(g.FindClasses("Node"), ElementsAre(f.node));
  EXPECT_FALSE(g.FindClass("Nope").valid());
}

TEST(HeapGraphTest, SizeModelsForArrays) {
  DumpInfo info = Info();
  EXPECT_EQ(ArrayShallowSize(info, FieldType::kByte, 0), 16u);
  EXPECT_EQ(ArrayShallowSize(info, FieldType::kLong, 1), 24u);
  info.layout.reference_size = 8;
  info.layout.object_header = 16;
  info.layout.array_length_offset = 16;
  EXPECT_EQ(ArrayShallowSize(info, FieldType::kByte, 0), 24u);  // 16 + 4 -> 24
  EXPECT_EQ(ArrayShallowSize(info, FieldType::kObject, 2), 40u);
  info.layout.unaligned_array_base = true;                      // JDK 22+
  EXPECT_EQ(ArrayShallowSize(info, FieldType::kByte, 4), 24u);  // 20 + 4
  EXPECT_EQ(ArrayShallowSize(info, FieldType::kLong, 1), 32u);  // 24 + 8
  DumpInfo vm32 = Info();
  vm32.id_size = 4;
  vm32.layout.object_header = 8;
  vm32.layout.array_length_offset = 8;
  vm32.layout.word_size = 4;
  EXPECT_EQ(ArrayShallowSize(vm32, FieldType::kInt, 1), 16u);  // 12 + 4
  EXPECT_EQ(ArrayShallowSize(vm32, FieldType::kByte, 4), 16u);
  EXPECT_EQ(ArrayShallowSize(vm32, FieldType::kDouble, 1), 24u);  // 16 + 8
  DumpInfo android = Info();
  android.size_model = SizeModel::kAndroid;
  android.id_size = 4;
  EXPECT_EQ(ArrayShallowSize(android, FieldType::kChar, 10), 20u);
  EXPECT_EQ(ArrayShallowSize(android, FieldType::kObject, 10), 40u);
  DumpInfo netbeans = Info();
  netbeans.size_model = SizeModel::kNetBeans;
  EXPECT_EQ(ArrayShallowSize(netbeans, FieldType::kChar, 10), 16u + 8 + 20);
}

TEST(HeapGraphTest, InstanceClassEdges) {
  HeapGraphOptions opt;
  opt.instance_class_edges = true;
  HeapGraphBuilder b(Info(), opt);
  ClassId object = b.AddClass(Class("java.lang.Object", kNoClass, {}, 16), 0x100);
  ClassId clazz = b.AddClass(Class("java.lang.Class", object, {}, 96), 0x108);
  ClassId node = b.AddClass(Class("Node", object, {{"next", FieldType::kObject}}, 16), 0x110);
  b.AddInstance(0x1000, node, {0x1000});
  auto g = std::move(b).Build();
  ASSERT_TRUE(g.ok()) << g.status();
  ObjectIndex n = g->FindObject(0x1000);
  EXPECT_THAT(g->graph().successors(n), ElementsAre(g->FindObject(0x110), n));
  EXPECT_EQ(g->DescribeReference(n, g->graph().first_edge(n)), "<class>");
  EXPECT_EQ(g->DescribeReference(n, g->graph().first_edge(n) + 1), "next");
  ObjectIndex node_class = g->FindObject(0x110);
  EXPECT_EQ(g->class_of(node_class), clazz);
  EXPECT_THAT(g->graph().successors(node_class),
              ElementsAre(g->FindObject(0x108), g->FindObject(0x100)));
}

TEST(HeapGraphTest, BuilderErrors) {
  {
    Fixture f;
    f.b.AddInstance(0x1000, f.node, {0x1010});
    f.b.AddInstance(0x1000, f.node, {0});
    EXPECT_EQ(std::move(f.b).Build().status().code(), absl::StatusCode::kInvalidArgument);
  }
  {
    Fixture f;
    f.b.AddInstance(0x1000, f.node, {1, 2, 3});  // Node has one reference field
    EXPECT_EQ(std::move(f.b).Build().status().code(), absl::StatusCode::kInvalidArgument);
  }
  {
    Fixture f;
    f.b.AddInstance(0x1000, ClassId{99}, {});
    EXPECT_EQ(std::move(f.b).Build().status().code(), absl::StatusCode::kInvalidArgument);
  }
  {
    Fixture f;
    f.b.AddInstance(0x100, f.node, {0});  // collides with the class object of java.lang.Object
    EXPECT_EQ(std::move(f.b).Build().status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(HeapGraphTest, FindObjectOverSparseAndDenseIds) {
  HeapGraphBuilder b(Info());
  ClassId object = b.AddClass(Class("java.lang.Object", kNoClass, {}, 16), 0);
  std::vector<uint64_t> ids;
  for (uint64_t i = 0; i < 5000; ++i) ids.push_back(0x10000 + i * 16);                  // dense run
  for (uint64_t i = 0; i < 100; ++i) ids.push_back(0x7f0000000000ull + i * 4096 * 97);  // sparse
  for (uint64_t id : ids) b.AddInstance(id, object, {});
  auto g = std::move(b).Build();
  ASSERT_TRUE(g.ok());
  for (uint64_t id : ids) {
    ObjectIndex o = g->FindObject(id);
    ASSERT_TRUE(o.valid()) << id;
    EXPECT_EQ(g->object_id(o), id);
    EXPECT_FALSE(g->FindObject(id + 8).valid());
  }
}

// More than 32767 classes: class words no longer fit 16 bits and the storage widens.
TEST(HeapGraphTest, ManyClasses) {
  HeapGraphBuilder b(Info());
  ClassId object = b.AddClass(Class("java.lang.Object", kNoClass, {}, 16), 0x10);
  std::vector<ClassId> classes;
  for (int i = 0; i < 40000; ++i) {
    classes.push_back(
        b.AddClass(Class("C" + std::to_string(i), object, {}, 16), 0x100000 + 16 * i));
  }
  b.AddInstance(0x9000000, classes[5], {});
  b.AddInstance(0x9000010, classes[39999], {});
  auto g = std::move(b).Build();
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->class_info(g->class_of(g->FindObject(0x9000000))).name, "C5");
  EXPECT_EQ(g->class_info(g->class_of(g->FindObject(0x9000010))).name, "C39999");
  ObjectIndex last_class = g->FindObject(0x100000 + 16 * 39999);
  EXPECT_EQ(g->kind(last_class), ObjectKind::kClass);
  EXPECT_EQ(g->class_info(g->DescribedClass(last_class)).name, "C39999");
  EXPECT_EQ(g->class_info(g->DescribedClass(g->FindObject(0x100000))).name, "C0");
}

}  // namespace
}  // namespace heapwatch::analysis
