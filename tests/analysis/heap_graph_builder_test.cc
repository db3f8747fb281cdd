// BulkHeapGraphBuilder (analysis/heap_graph_builder.h): both object orders give the graph the
// convenience HeapGraphBuilder gives for the same objects (thousands of random heaps with cycles,
// dangling references, repeated records, Reference subclasses, arrays), plus golden cases and
// every documented error.
#include "analysis/heap_graph_builder.h"

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "analysis/heap_graph.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

DumpInfo Info() {
  DumpInfo info;
  info.format = "synthetic";
  info.id_size = 8;
  info.size_model = SizeModel::kHotSpot;
  info.layout.reference_size = 4;
  info.layout.object_header = 12;
  info.layout.array_length_offset = 12;
  return info;
}

ClassInfo Class(std::string name, ClassId super, std::vector<FieldInfo> fields,
                uint64_t class_object_id, ObjectKind kind = ObjectKind::kInstance,
                FieldType element = FieldType::kObject) {
  ClassInfo c;
  c.name = std::move(name);
  c.super_class = super;
  c.instance_fields = std::move(fields);
  c.instance_kind = kind;
  c.element_type = element;
  c.class_object_id = class_object_id;
  c.instance_size = 24;
  c.class_object_size = 40;
  return c;
}

// A random heap: classes (with java.lang.Object, java.lang.Class, a Reference subclass, an object
// array and an int array class) and objects, each listed once.
struct RandomHeap {
  struct Cls {
    ClassInfo info;
    uint64_t loader = 0;
    std::vector<uint64_t> statics;  // one per kObject static field
  };
  struct Obj {
    uint64_t id;
    uint32_t cls;
    std::vector<uint64_t> refs;  // instance slots / elements
    uint32_t length = 0;         // primitive arrays
  };
  std::vector<Cls> classes;
  std::vector<Obj> objects;
  std::vector<std::pair<uint64_t, GcRootKind>> roots;

  // Instance reference slots of class c (own fields first, then the superclass's).
  size_t Slots(uint32_t c) const {
    size_t n = 0;
    for (ClassId k{c}; k.valid(); k = classes[k.value].info.super_class) {
      for (const FieldInfo& f : classes[k.value].info.instance_fields)
        n += f.type == FieldType::kObject;
    }
    return n;
  }
};

RandomHeap MakeHeap(std::mt19937_64& rng, int max_objects) {
  RandomHeap h;
  std::uniform_int_distribution<int> coin(0, 99);
  const int object_count = 1 + static_cast<int>(rng() % max_objects);
  const int class_count = 6 + static_cast<int>(rng() % 6);
  // Distinct ids, multiples of 8: class objects and objects interleaved.
  std::vector<uint64_t> ids;
  uint64_t next = 0x1000;
  for (int i = 0; i < object_count + class_count; ++i) {
    next += 8 * (1 + rng() % 4);
    ids.push_back(next);
  }
  std::shuffle(ids.begin(), ids.end(), rng);
  auto class_id = [&](int c) { return ids[object_count + c]; };
  auto ref = [&]() -> uint64_t {
    int r = coin(rng);
    if (r < 25) return 0;                             // null
    if (r < 30) return 0xdead0000 + 8 * (rng() % 4);  // dangling
    if (r < 36) return class_id(static_cast<int>(rng() % class_count));
    return ids[rng() % object_count];
  };
  auto add = [&](ClassInfo info) { h.classes.push_back({std::move(info), 0, {}}); };
  add(Class("java.lang.Object", kNoClass, {}, class_id(0)));
  add(Class("java.lang.Class", ClassId{0}, {{"name", FieldType::kObject}}, class_id(1)));
  add(Class("java.lang.ref.Reference", ClassId{0},
            {{"referent", FieldType::kObject}, {"queue", FieldType::kObject}}, class_id(2)));
  add(Class("java.lang.Object[]", ClassId{0}, {}, class_id(3), ObjectKind::kObjectArray));
  add(Class("int[]", ClassId{0}, {}, class_id(4), ObjectKind::kPrimitiveArray, FieldType::kInt));
  // As IBM PHD dumps list instances: references without field names.
  add(Class("Unnamed", ClassId{0}, {{"ignored", FieldType::kObject}}, class_id(5)));
  h.classes.back().info.unnamed_references = true;
  for (int c = 6; c < class_count; ++c) {
    std::vector<FieldInfo> fields;
    int nf = static_cast<int>(rng() % 4);
    for (int f = 0; f < nf; ++f) {
      fields.push_back(
          {"f" + std::to_string(f), coin(rng) < 60 ? FieldType::kObject : FieldType::kInt});
    }
    // Superclass: an instance class added before (Reference included: a subclass of it).
    uint32_t super;
    do {
      super = static_cast<uint32_t>(rng() % c);
    } while (super == 3 || super == 4 || super == 5);
    add(Class("C" + std::to_string(c), ClassId{super}, std::move(fields), class_id(c)));
    RandomHeap::Cls& cls = h.classes.back();
    cls.info.static_fields = {{"S", FieldType::kObject}, {"n", FieldType::kLong}};
  }
  for (size_t c = 0; c < h.classes.size(); ++c) {
    RandomHeap::Cls& cls = h.classes[c];
    if (coin(rng) < 30) cls.loader = ids[rng() % object_count];
    for (const FieldInfo& f : cls.info.static_fields) {
      if (f.type == FieldType::kObject) cls.statics.push_back(ref());
    }
  }
  for (int i = 0; i < object_count; ++i) {
    RandomHeap::Obj o;
    o.id = ids[i];
    int r = coin(rng);
    if (r < 15) {
      o.cls = 3;
      int len = static_cast<int>(rng() % 6);
      for (int k = 0; k < len; ++k) o.refs.push_back(ref());
    } else if (r < 25) {
      o.cls = 4;
      o.length = static_cast<uint32_t>(rng() % 100);
    } else {
      do {
        o.cls = static_cast<uint32_t>(rng() % class_count);
      } while (o.cls == 3 || o.cls == 4);
      size_t slots = o.cls == 5 ? rng() % 6 : h.Slots(o.cls);
      for (size_t k = 0; k < slots; ++k) o.refs.push_back(ref());
    }
    h.objects.push_back(std::move(o));
  }
  int roots = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < roots; ++i) h.roots.push_back({ref(), GcRootKind::kJniGlobal});
  return h;
}

StatusOr<HeapGraph> BuildWithConvenienceBuilder(const RandomHeap& h, bool class_edges) {
  HeapGraphBuilder b(Info(), HeapGraphOptions{class_edges});
  for (const RandomHeap::Cls& c : h.classes) {
    ClassId id = b.AddClass(c.info, c.info.class_object_id, c.loader);
    b.SetStaticReferences(id, c.statics);
  }
  for (const RandomHeap::Obj& o : h.objects) {
    ClassId cls{o.cls};
    switch (h.classes[o.cls].info.instance_kind) {
      case ObjectKind::kInstance:
        b.AddInstance(o.id, cls, o.refs);
        break;
      case ObjectKind::kObjectArray:
        b.AddObjectArray(o.id, cls, o.refs);
        break;
      default:
        b.AddPrimitiveArray(o.id, cls, o.length);
    }
  }
  for (const auto& [id, kind] : h.roots) b.AddRoot(id, kind);
  return std::move(b).Build();
}

// The class table and ids of `h` into `b` (stages 1 and 2).
void AddClassesAndIds(const RandomHeap& h, BulkHeapGraphBuilder& b, bool repeat_some) {
  for (const RandomHeap::Cls& c : h.classes) {
    ClassObjectRefs refs;
    refs.super_id =
        c.info.super_class.valid() ? h.classes[c.info.super_class.value].info.class_object_id : 0;
    refs.loader_id = c.loader;
    refs.static_refs = c.statics;
    b.AddClass(c.info, std::move(refs));
  }
  ASSERT_TRUE(b.FinishClasses().ok());
  IdChunks ids, class_ids;
  std::vector<uint64_t> sorted;
  for (const RandomHeap::Obj& o : h.objects) sorted.push_back(o.id);
  std::sort(sorted.begin(), sorted.end());
  for (uint64_t id : sorted) ids.push_back(id);
  for (const RandomHeap::Cls& c : h.classes) class_ids.push_back(c.info.class_object_id);
  if (repeat_some && !sorted.empty()) ids.push_back(sorted.front());
  ASSERT_TRUE(b.IndexObjects(std::move(ids), !repeat_some, std::move(class_ids)).ok());
}

Status AddObject(const RandomHeap& h, const RandomHeap::Obj& o, BulkHeapGraphBuilder& b,
                 bool round_two) {
  ClassId cls = round_two ? kNoClass : ClassId{o.cls};
  switch (h.classes[o.cls].info.instance_kind) {
    case ObjectKind::kInstance:
      return b.AddInstance(o.id, cls, o.refs);
    case ObjectKind::kObjectArray: {
      HW_RETURN_IF_ERROR(b.BeginObjectArray(o.id, cls, static_cast<uint32_t>(o.refs.size())));
      // Elements in two pieces.
      std::span<const uint64_t> all(o.refs);
      size_t half = all.size() / 2;
      HW_RETURN_IF_ERROR(b.AddArrayElements(all.subspan(0, half)));
      HW_RETURN_IF_ERROR(b.AddArrayElements(all.subspan(half)));
      return b.EndObjectArray();
    }
    default:
      return b.AddPrimitiveArray(o.id, cls, o.length);
  }
}

StatusOr<HeapGraph> Finish(const RandomHeap& h, BulkHeapGraphBuilder& b) {
  HW_RETURN_IF_ERROR(b.FinishObjects());
  for (const auto& [id, kind] : h.roots) b.AddRoot(id, kind);
  return std::move(b).Build();
}

StatusOr<HeapGraph> BuildInIndexOrder(const RandomHeap& h, bool class_edges) {
  BulkHeapGraphBuilder b(Info(), HeapGraphOptions{class_edges});
  AddClassesAndIds(h, b, false);
  b.BeginObjects(ObjectOrder::kIndexOrder);
  std::vector<const RandomHeap::Obj*> order;
  for (const RandomHeap::Obj& o : h.objects) order.push_back(&o);
  std::sort(order.begin(), order.end(), [](auto* x, auto* y) { return x->id < y->id; });
  for (const RandomHeap::Obj* o : order) HW_RETURN_IF_ERROR(AddObject(h, *o, b, false));
  return Finish(h, b);
}

// Records in a random order, class objects among them, and a repeat of the lowest id after its
// first record (with other references: the first record wins).
StatusOr<HeapGraph> BuildInTwoRounds(const RandomHeap& h, bool class_edges, std::mt19937_64& rng) {
  BulkHeapGraphBuilder b(Info(), HeapGraphOptions{class_edges});
  AddClassesAndIds(h, b, true);
  b.BeginObjects(ObjectOrder::kTwoRounds);
  // Record i < objects: that object; else class object of class i - objects.
  std::vector<size_t> records(h.objects.size() + h.classes.size());
  for (size_t i = 0; i < records.size(); ++i) records[i] = i;
  std::shuffle(records.begin(), records.end(), rng);
  size_t lowest = 0;
  for (size_t i = 0; i < h.objects.size(); ++i) {
    if (h.objects[i].id < h.objects[lowest].id) lowest = i;
  }
  RandomHeap::Obj repeat = h.objects[lowest];
  for (uint64_t& r : repeat.refs) r = h.objects[0].id;
  for (int round = 1; round <= 2; ++round) {
    for (size_t r : records) {
      if (r < h.objects.size()) {
        HW_RETURN_IF_ERROR(AddObject(h, h.objects[r], b, round == 2));
        if (r == lowest) {
          if (round == 1) EXPECT_TRUE(b.HasRecord(repeat.id));
          HW_RETURN_IF_ERROR(AddObject(h, repeat, b, round == 2));
        }
      } else {
        HW_RETURN_IF_ERROR(b.AddClassObject(ClassId{static_cast<uint32_t>(r - h.objects.size())}));
      }
    }
    if (round == 1) HW_RETURN_IF_ERROR(b.EndFirstRound());
  }
  return Finish(h, b);
}

void ExpectSameGraph(const HeapGraph& a, const HeapGraph& b) {
  ASSERT_EQ(a.object_count(), b.object_count());
  ASSERT_EQ(a.class_count(), b.class_count());
  for (uint32_t c = 0; c < a.class_count(); ++c) {
    const ClassInfo& x = a.class_info(ClassId{c});
    const ClassInfo& y = b.class_info(ClassId{c});
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.class_object, y.class_object) << x.name;
    EXPECT_EQ(x.class_loader, y.class_loader) << x.name;
    EXPECT_EQ(x.is_reference, y.is_reference) << x.name;
  }
  for (uint32_t v = 0; v < a.object_count(); ++v) {
    ObjectIndex o{v};
    ASSERT_EQ(a.object_id(o), b.object_id(o));
    ASSERT_EQ(a.kind(o), b.kind(o)) << v;
    ASSERT_EQ(a.class_of(o), b.class_of(o)) << v;
    ASSERT_EQ(a.DescribedClass(o), b.DescribedClass(o)) << v;
    ASSERT_EQ(a.shallow_size(o), b.shallow_size(o)) << v;
    ASSERT_EQ(a.array_length(o), b.array_length(o)) << v;
    ASSERT_EQ(a.FindObject(a.object_id(o)), o);
  }
  ASSERT_EQ(a.graph().edge_count(), b.graph().edge_count());
  for (uint32_t v = 0; v < a.object_count(); ++v) {
    ObjectIndex o{v};
    ASSERT_EQ(a.graph().first_edge(o), b.graph().first_edge(o)) << v;
    ASSERT_TRUE(std::ranges::equal(a.graph().successors(o), b.graph().successors(o))) << v;
    for (uint64_t e = a.graph().first_edge(o);
         e < a.graph().first_edge(o) + a.graph().successors(o).size(); ++e) {
      ASSERT_EQ(a.graph().is_weak(e), b.graph().is_weak(e)) << v;
      ASSERT_EQ(a.DescribeReference(o, e), b.DescribeReference(o, e)) << v;
    }
  }
  ASSERT_EQ(a.gc_roots().size(), b.gc_roots().size());
  for (size_t i = 0; i < a.gc_roots().size(); ++i) {
    EXPECT_EQ(a.gc_roots()[i].object, b.gc_roots()[i].object);
  }
  EXPECT_TRUE(std::ranges::equal(a.root_objects(), b.root_objects()));
  EXPECT_EQ(a.info().dangling_references, b.info().dangling_references);
  EXPECT_EQ(a.info().unresolved_roots, b.info().unresolved_roots);
}

TEST(BulkHeapGraphBuilderTest, BothOrdersMatchTheConvenienceBuilderOnRandomHeaps) {
  std::mt19937_64 rng(20240611);
  for (int round = 0; round < 2000; ++round) {
    SCOPED_TRACE(round);
    RandomHeap h = MakeHeap(rng, round < 1000 ? 12 : 200);
    bool class_edges = round % 2 == 1;
    auto expected = BuildWithConvenienceBuilder(h, class_edges);
    ASSERT_TRUE(expected.ok()) << expected.status();
    auto in_order = BuildInIndexOrder(h, class_edges);
    ASSERT_TRUE(in_order.ok()) << in_order.status();
    ExpectSameGraph(*in_order, *expected);
    auto two_rounds = BuildInTwoRounds(h, class_edges, rng);
    ASSERT_TRUE(two_rounds.ok()) << two_rounds.status();
    ExpectSameGraph(*two_rounds, *expected);
    EXPECT_EQ(two_rounds->info().duplicate_objects, 1u);
    if (HasFailure()) return;
  }
}

// A tiny heap for the golden and error cases: java.lang.Object, Node(next), an object array class.
struct Tiny {
  BulkHeapGraphBuilder b;
  explicit Tiny(HeapGraphOptions options = {}) : b(Info(), options) {
    b.AddClass(Class("java.lang.Object", kNoClass, {}, 0x100));
    b.AddClass(
        Class("Node", ClassId{0}, {{"next", FieldType::kObject}, {"n", FieldType::kInt}}, 0x110),
        ClassObjectRefs{.super_id = 0x100});
    b.AddClass(Class("java.lang.Object[]", ClassId{0}, {}, 0x120, ObjectKind::kObjectArray),
               ClassObjectRefs{.super_id = 0x100});
  }
  // Classes done and objects 0x1000, 0x1010, 0x1020 indexed (with the three class objects).
  void Index() {
    ASSERT_TRUE(b.FinishClasses().ok());
    IdChunks ids, class_ids;
    for (uint64_t id : {0x1000, 0x1010, 0x1020}) ids.push_back(id);
    for (uint64_t id : {0x100, 0x110, 0x120}) class_ids.push_back(id);
    ASSERT_TRUE(b.IndexObjects(std::move(ids), true, std::move(class_ids)).ok());
  }
};
constexpr ClassId kNode{1}, kArray{2};
const std::vector<uint64_t> kNext = {0x1010};

TEST(BulkHeapGraphBuilderTest, IndexOrderGolden) {
  Tiny t;
  t.Index();
  ASSERT_EQ(t.b.object_count(), 6u);
  EXPECT_EQ(t.b.FindObject(0x1010), ObjectIndex{4});
  EXPECT_EQ(t.b.object_id(ObjectIndex{0}), 0x100u);
  t.b.BeginObjects(ObjectOrder::kIndexOrder);
  ObjectIndex v;
  ASSERT_TRUE(t.b.AddInstance(0x1000, kNode, kNext, &v).ok());
  EXPECT_EQ(v, ObjectIndex{3});
  ASSERT_TRUE(t.b.AddInstance(0x1010, kNode, std::vector<uint64_t>{0xbad}).ok());
  ASSERT_TRUE(t.b.BeginObjectArray(0x1020, kArray, 3).ok());
  ASSERT_TRUE(t.b.AddArrayElements(std::vector<uint64_t>{0, 0x1000}).ok());
  ASSERT_TRUE(t.b.AddArrayElements(std::vector<uint64_t>{0x110}).ok());
  ASSERT_TRUE(t.b.EndObjectArray().ok());
  ASSERT_TRUE(t.b.FinishObjects().ok());
  auto gaps = t.b.SampleAddressGaps(8);
  ASSERT_EQ(gaps.size(), 3u);
  EXPECT_EQ(gaps[1].size(), 2u);  // the two nodes: 0x1000 -> 0x1010 -> 0x1020
  EXPECT_EQ(gaps[1][0].gap, 0x10u);
  EXPECT_TRUE(gaps[2].empty()) << "the last object has no successor";
  t.b.SetShallowSizes(kNode, 32, 48);
  t.b.AddRoot(0x1020, GcRootKind::kJniGlobal);
  t.b.AddRoot(0x7777, GcRootKind::kJniGlobal);
  auto g = std::move(t.b).Build();
  ASSERT_TRUE(g.ok()) << g.status();
  ObjectIndex n0 = g->FindObject(0x1000), n1 = g->FindObject(0x1010), arr = g->FindObject(0x1020);
  EXPECT_THAT(g->graph().successors(n0), ElementsAre(n1));
  EXPECT_TRUE(g->graph().successors(n1).empty());
  EXPECT_THAT(g->graph().successors(arr), ElementsAre(n0, g->FindObject(0x110)));
  EXPECT_EQ(g->DescribeReference(arr, g->graph().first_edge(arr) + 1), "[2]");
  EXPECT_EQ(g->DescribeReference(n0, g->graph().first_edge(n0)), "next");
  ObjectIndex node_class = g->FindObject(0x110);
  EXPECT_EQ(g->kind(node_class), ObjectKind::kClass);
  EXPECT_EQ(g->class_info(kNode).class_object, node_class);
  EXPECT_THAT(g->graph().successors(node_class), ElementsAre(g->FindObject(0x100)));
  EXPECT_EQ(g->shallow_size(n0), 32u);
  EXPECT_EQ(g->shallow_size(node_class), 48u);
  EXPECT_EQ(g->info().dangling_references, 1u);
  EXPECT_EQ(g->info().unresolved_roots, 1u);
  EXPECT_THAT(g->root_objects(), ElementsAre(arr));
}

// A class created while the objects come (a record naming no class dump) has no class object:
// with MAT's "<class>" edges on, its instances get none, in both orders.
TEST(BulkHeapGraphBuilderTest, LateClassWithClassEdges) {
  for (ObjectOrder order : {ObjectOrder::kIndexOrder, ObjectOrder::kTwoRounds}) {
    Tiny t(HeapGraphOptions{.instance_class_edges = true});
    t.Index();
    t.b.BeginObjects(order);
    ClassInfo unknown;
    unknown.name = "unknown-class@0x999";
    unknown.synthetic = true;
    ClassId late = t.b.AddLateClass(unknown);
    ASSERT_TRUE(late.valid());
    const int rounds = order == ObjectOrder::kTwoRounds ? 2 : 1;
    for (int round = 1; round <= rounds; ++round) {
      if (order == ObjectOrder::kTwoRounds) {
        for (uint32_t c = 0; c < 3; ++c) ASSERT_TRUE(t.b.AddClassObject(ClassId{c}).ok());
      }
      ASSERT_TRUE(t.b.AddInstance(0x1000, late, {}).ok());
      ASSERT_TRUE(t.b.AddInstance(0x1010, kNode, kNext).ok());
      ASSERT_TRUE(t.b.BeginObjectArray(0x1020, kArray, 0).ok());
      ASSERT_TRUE(t.b.EndObjectArray().ok());
      if (round < rounds) ASSERT_TRUE(t.b.EndFirstRound().ok());
    }
    ASSERT_TRUE(t.b.FinishObjects().ok());
    auto g = std::move(t.b).Build();
    ASSERT_TRUE(g.ok()) << g.status();
    ObjectIndex n0 = g->FindObject(0x1000), n1 = g->FindObject(0x1010), arr = g->FindObject(0x1020);
    EXPECT_TRUE(g->graph().successors(n0).empty());
    EXPECT_THAT(g->graph().successors(n1), ElementsAre(g->FindObject(0x110), n1));
    EXPECT_EQ(g->DescribeReference(n1, g->graph().first_edge(n1)), "<class>");
    EXPECT_EQ(g->DescribeReference(n1, g->graph().first_edge(n1) + 1), "next");
    EXPECT_THAT(g->graph().successors(arr), ElementsAre(g->FindObject(0x120)));
  }
}

TEST(BulkHeapGraphBuilderTest, Errors) {
  {  // Out of ascending order: a repeat, and an object skipped.
    Tiny t;
    t.Index();
    t.b.BeginObjects(ObjectOrder::kIndexOrder);
    ASSERT_TRUE(t.b.AddInstance(0x1000, kNode, kNext).ok());
    EXPECT_EQ(t.b.AddInstance(0x1000, kNode, kNext).code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(t.b.AddPrimitiveArray(0x1020, kArray, 0).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(t.b.BeginObjectArray(0x1020, kArray, 0).code(), absl::StatusCode::kFailedPrecondition)
        << "0x1010 got no record";
  }
  {  // An id that was not indexed; a class of the wrong kind; the wrong number of values.
    Tiny t;
    t.Index();
    t.b.BeginObjects(ObjectOrder::kIndexOrder);
    EXPECT_EQ(t.b.AddInstance(0x1008, kNode, kNext).code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(t.b.AddInstance(0x1000, kArray, {}).code(), absl::StatusCode::kInvalidArgument);
    Status s = t.b.AddInstance(0x1000, kNode, {});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr("which has 1 slots"));
  }
  {  // An object without a record; an array given fewer elements than its length.
    Tiny t;
    t.Index();
    t.b.BeginObjects(ObjectOrder::kIndexOrder);
    ASSERT_TRUE(t.b.AddInstance(0x1000, kNode, kNext).ok());
    ASSERT_TRUE(t.b.AddInstance(0x1010, kNode, kNext).ok());
    EXPECT_EQ(t.b.FinishObjects().code(), absl::StatusCode::kFailedPrecondition);
  }
  {
    Tiny t;
    t.Index();
    t.b.BeginObjects(ObjectOrder::kIndexOrder);
    ASSERT_TRUE(t.b.AddInstance(0x1000, kNode, kNext).ok());
    ASSERT_TRUE(t.b.AddInstance(0x1010, kNode, kNext).ok());
    ASSERT_TRUE(t.b.BeginObjectArray(0x1020, kArray, 2).ok());
    ASSERT_TRUE(t.b.AddArrayElements(std::vector<uint64_t>{0}).ok());
    EXPECT_EQ(t.b.EndObjectArray().code(), absl::StatusCode::kInvalidArgument);
  }
  {  // More reference slots than the input allows.
    Tiny t;
    t.Index();
    t.b.BeginObjects(ObjectOrder::kIndexOrder, ObjectLimits{.max_reference_slots = 16});
    ASSERT_TRUE(t.b.AddInstance(0x1000, kNode, kNext).ok());
    ASSERT_TRUE(t.b.AddInstance(0x1010, kNode, kNext).ok());
    ASSERT_TRUE(t.b.BeginObjectArray(0x1020, kArray, 4).ok());
    ASSERT_TRUE(t.b.AddArrayElements(std::vector<uint64_t>(4, 0)).ok());
    EXPECT_EQ(t.b.EndObjectArray().code(), absl::StatusCode::kDataLoss);
  }
  {  // Two rounds: round 2 differs from round 1; too many slots for the bound.
    Tiny t;
    t.Index();
    t.b.BeginObjects(ObjectOrder::kTwoRounds, ObjectLimits{.max_reference_slots = 100});
    for (uint32_t c = 0; c < 3; ++c) ASSERT_TRUE(t.b.AddClassObject(ClassId{c}).ok());
    ASSERT_TRUE(t.b.AddInstance(0x1010, kNode, kNext).ok());
    ASSERT_TRUE(t.b.AddInstance(0x1000, kNode, std::vector<uint64_t>{0}).ok());
    ASSERT_TRUE(t.b.BeginObjectArray(0x1020, kArray, 0).ok());
    ASSERT_TRUE(t.b.EndObjectArray().ok());
    ASSERT_TRUE(t.b.EndFirstRound().ok());
    for (uint32_t c = 0; c < 3; ++c) ASSERT_TRUE(t.b.AddClassObject(ClassId{c}).ok());
    ASSERT_TRUE(t.b.AddInstance(0x1010, kNode, kNext).ok());
    EXPECT_EQ(t.b.AddInstance(0x1000, kNode, kNext).code(), absl::StatusCode::kFailedPrecondition);
  }
  {  // A superclass cycle.
    BulkHeapGraphBuilder b(Info());
    b.AddClass(Class("A", ClassId{1}, {}, 0x100));
    b.AddClass(Class("B", ClassId{0}, {}, 0x110));
    EXPECT_EQ(b.FinishClasses().code(), absl::StatusCode::kInvalidArgument);
  }
  {  // Build in the middle of the objects.
    Tiny t;
    t.Index();
    t.b.BeginObjects(ObjectOrder::kIndexOrder);
    EXPECT_EQ(std::move(t.b).Build().status().code(), absl::StatusCode::kFailedPrecondition);
  }
}

// Instances whose dump lists references without field names (IBM PHD): each has its own count.
TEST(BulkHeapGraphBuilderTest, UnnamedReferences) {
  for (ObjectOrder order : {ObjectOrder::kIndexOrder, ObjectOrder::kTwoRounds}) {
    BulkHeapGraphBuilder b(Info());
    b.AddClass(Class("java.lang.Object", kNoClass, {}, 0x100));
    ClassInfo phd = Class("Holder", ClassId{0}, {}, 0x110);
    phd.unnamed_references = true;
    ClassId holder = b.AddClass(phd, ClassObjectRefs{.super_id = 0x100});
    ClassId ints =
        b.AddClass(Class("int[]", ClassId{0}, {}, 0, ObjectKind::kPrimitiveArray, FieldType::kInt));
    ASSERT_TRUE(b.FinishClasses().ok());
    IdChunks ids, class_ids;
    for (uint64_t id : {0x1000, 0x1010, 0x1020}) ids.push_back(id);
    for (uint64_t id : {0x100, 0x110}) class_ids.push_back(id);
    ASSERT_TRUE(b.IndexObjects(std::move(ids), true, std::move(class_ids)).ok());
    b.BeginObjects(order);
    const int rounds = order == ObjectOrder::kTwoRounds ? 2 : 1;
    for (int round = 1; round <= rounds; ++round) {
      if (order == ObjectOrder::kTwoRounds) {
        ASSERT_TRUE(b.AddClassObject(ClassId{0}).ok());
        ASSERT_TRUE(b.AddClassObject(holder).ok());
      }
      ASSERT_TRUE(b.AddInstance(0x1000, holder, std::vector<uint64_t>{0x1010, 0, 0x1020}).ok());
      ASSERT_TRUE(b.AddPrimitiveArray(0x1010, ints, 7).ok());
      ASSERT_TRUE(b.AddInstance(0x1020, holder, {}).ok());
      if (round < rounds) ASSERT_TRUE(b.EndFirstRound().ok());
    }
    ASSERT_TRUE(b.FinishObjects().ok());
    auto g = std::move(b).Build();
    ASSERT_TRUE(g.ok()) << g.status();
    ObjectIndex h0 = g->FindObject(0x1000), arr = g->FindObject(0x1010);
    EXPECT_EQ(g->kind(h0), ObjectKind::kInstance);
    EXPECT_EQ(g->array_length(h0), 0u);
    EXPECT_EQ(g->array_length(arr), 7u);
    EXPECT_THAT(g->graph().successors(h0), ElementsAre(arr, g->FindObject(0x1020)));
    EXPECT_EQ(g->DescribeReference(h0, g->graph().first_edge(h0)), "<reference[0]>");
    EXPECT_EQ(g->DescribeReference(h0, g->graph().first_edge(h0) + 1), "<reference[2]>");
    EXPECT_TRUE(g->graph().successors(g->FindObject(0x1020)).empty());
  }
}

TEST(BulkHeapGraphBuilderTest, BuildWithoutObjects) {
  Tiny t;
  t.b.Warn("no heap dump");
  auto g = std::move(t.b).Build();
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->object_count(), 0u);
  EXPECT_EQ(g->class_count(), 3u);
  EXPECT_THAT(g->info().warnings, ElementsAre("no heap dump"));
}

}  // namespace
}  // namespace heapwatch::analysis
