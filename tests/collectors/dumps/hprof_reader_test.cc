// The HPROF reader on synthetic dumps written record by record: every record and sub-record kind,
// both id sizes, Android extras, segments and several dumps, gzip, and malformed input (truncation
// at every byte, corruption, foreign formats).
#include "collectors/dumps/hprof/hprof_reader.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "analysis/heap_graph.h"
#include "collectors/dumps/hprof/hprof_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/collectors/dumps/graph_compare.h"
#include "tests/collectors/dumps/hprof_test_writer.h"

namespace heapwatch::hprof {
namespace {

using analysis::ClassId;
using analysis::FieldType;
using analysis::GcRootKind;
using analysis::HeapGraph;
using analysis::ObjectIndex;
using analysis::ObjectKind;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::HprofWriter;
using ::testing::UnorderedElementsAre;

constexpr uint8_t kObj = 2, kBool = 4, kByte = 8, kInt = 10, kLong = 11;

// Class object ids.
constexpr uint64_t kObject = 0x100, kClass = 0x110, kString = 0x120, kReference = 0x130,
                   kWeak = 0x140, kNode = 0x150, kSub = 0x160, kObjArray = 0x170,
                   kByteArray = 0x180;
// Object ids.
constexpr uint64_t kNode1 = 0x2000, kNode2 = 0x2020, kSub1 = 0x2040, kStr1 = 0x2060,
                   kBytes1 = 0x2080, kArr1 = 0x20a0, kWeak1 = 0x20c0;
// Field and static name string ids.
constexpr uint64_t kNameValue = 0x9001, kNameHash = 0x9002, kNameReferent = 0x9003,
                   kNameQueue = 0x9004, kNameNext = 0x9005, kNameLabel = 0x9006,
                   kNameInstance = 0x9007, kNameCount = 0x9008, kNameExtra = 0x9009,
                   kNameNum = 0x900a;

// Writes the strings, class names and class dumps shared by the synthetic heaps.
void WriteClasses(HprofWriter& w) {
  w.String(kNameValue, "value").String(kNameHash, "hash").String(kNameReferent, "referent");
  w.String(kNameQueue, "queue").String(kNameNext, "next").String(kNameLabel, "label");
  w.String(kNameInstance, "INSTANCE").String(kNameCount, "COUNT").String(kNameExtra, "extra");
  w.String(kNameNum, "num");
  w.NamedClass(kObject, "java/lang/Object").NamedClass(kClass, "java/lang/Class");
  w.NamedClass(kString, "java/lang/String").NamedClass(kReference, "java/lang/ref/Reference");
  w.NamedClass(kWeak, "java/lang/ref/WeakReference").NamedClass(kNode, "com/example/Node");
  w.NamedClass(kSub, "com/example/Sub").NamedClass(kObjArray, "[Ljava/lang/Object;");
  w.NamedClass(kByteArray, "[B");
  w.Sub(w.ClassDump(kObject, 0, 0, 0, {}));
  w.Sub(w.ClassDump(kClass, kObject, 0, 0, {}));
  w.Sub(w.ClassDump(kString, kObject, 0, w.id_size() + 4, {{kNameValue, kObj}, {kNameHash, kInt}}));
  w.Sub(w.ClassDump(kReference, kObject, 0, 2 * w.id_size(),
                    {{kNameReferent, kObj}, {kNameQueue, kObj}}));
  w.Sub(w.ClassDump(kWeak, kReference, 0, 2 * w.id_size(), {}));
  w.Sub(w.ClassDump(kNode, kObject, 0, 2 * w.id_size() + 4,
                    {{kNameNext, kObj}, {kNameNum, kInt}, {kNameLabel, kObj}},
                    {{kNameInstance, kObj, kNode1}, {kNameCount, kInt, 7}},
                    {{3, kObj, kStr1}, {4, kLong, 99}}));
  w.Sub(w.ClassDump(kSub, kNode, 0, 3 * w.id_size() + 4, {{kNameExtra, kObj}}));
  w.Sub(w.ClassDump(kObjArray, kObject, 0, 0, {}));
  w.Sub(w.ClassDump(kByteArray, kObject, 0, 0, {}));
}

std::string IntBytes(uint32_t v) {
  std::string s;
  HprofWriter::U4(&s, v);
  return s;
}

// Writes the instances and arrays of the synthetic heap (one reference, 0x9999, points nowhere).
void WriteObjects(HprofWriter& w) {
  w.Sub(w.Instance(kNode1, kNode, w.Ids({kNode2}) + IntBytes(1) + w.Ids({kStr1})));
  w.Sub(w.Instance(kNode2, kNode, w.Ids({0}) + IntBytes(2) + w.Ids({0})));
  w.Sub(w.Instance(kSub1, kSub, w.Ids({kArr1}) + w.Ids({kNode1}) + IntBytes(3) + w.Ids({0x9999})));
  w.Sub(w.Instance(kStr1, kString, w.Ids({kBytes1}) + IntBytes(0)));
  w.Sub(w.PrimitiveArray(kBytes1, kByte, 5));
  w.Sub(w.ObjectArray(kArr1, kObjArray, {kNode1, 0, kStr1, kNode2}));
  w.Sub(w.Instance(kWeak1, kWeak, w.Ids({kNode2, 0})));
}

void WriteRoots(HprofWriter& w) {
  for (uint64_t c :
       {kObject, kClass, kString, kReference, kWeak, kNode, kSub, kObjArray, kByteArray}) {
    w.Sub(w.Root(0x05, c));
  }
  w.Sub(w.Root(0x08, kNode1, 1, 0));  // thread object (a Node stands in for a Thread)
  w.Sub(w.Root(0x03, kNode1, 1, 2));  // Java frame, thread 1, frame 2
  w.Sub(w.Root(0x01, kSub1));
  w.Sub(w.Root(0x02, kStr1, 1, 0));
  w.Sub(w.Root(0x04, kArr1, 1));
  w.Sub(w.Root(0x06, kNode2, 1));
  w.Sub(w.Root(0x07, kNode2));
  w.Sub(w.Root(0xFF, kWeak1));
  w.Sub(w.Root(0xFF, 0x7777));  // an object that is not in the dump
}

std::string StandardDump(uint32_t id_size, bool segments) {
  HprofWriter w(id_size);
  WriteClasses(w);
  if (segments) w.FlushSegment();
  WriteRoots(w);
  WriteObjects(w);
  if (segments) {
    w.FlushSegment().HeapDumpEnd();
  } else {
    w.FlushHeapDump();
  }
  return w.take();
}

ObjectIndex Obj(const HeapGraph& g, uint64_t id) {
  ObjectIndex o = g.FindObject(id);
  EXPECT_TRUE(o.valid()) << std::hex << id;
  return o;
}

std::vector<uint64_t> SuccessorIds(const HeapGraph& g, uint64_t id) {
  std::vector<uint64_t> out;
  for (ObjectIndex t : g.graph().successors(Obj(g, id))) out.push_back(g.object_id(t));
  return out;
}

std::vector<std::string> EdgeNames(const HeapGraph& g, uint64_t id) {
  ObjectIndex v = Obj(g, id);
  std::vector<std::string> out;
  for (uint64_t e = g.graph().first_edge(v); e < g.graph().first_edge(ObjectIndex{v.value + 1});
       ++e) {
    out.push_back(g.DescribeReference(v, e));
  }
  return out;
}

class StandardDumpTest : public ::testing::TestWithParam<std::tuple<uint32_t, bool>> {};

TEST_P(StandardDumpTest, ReadsEveryObjectReferenceAndRoot) {
  auto [id_size, segments] = GetParam();
  std::string dump = StandardDump(id_size, segments);
  auto g = ReadHeapGraphFromBuffer(dump);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->info().id_size, id_size);
  EXPECT_EQ(g->info().format, "JAVA PROFILE 1.0.2");
  EXPECT_EQ(g->info().timestamp_ms, 1700000000000ull);
  EXPECT_EQ(g->info().dump_count, 1u);
  ASSERT_EQ(g->object_count(), 9u + 7u);
  EXPECT_EQ(g->class_count(), 9u);

  // Dense indices in ascending id order, every id found.
  for (uint32_t v = 1; v < g->object_count(); ++v) {
    EXPECT_LT(g->object_id(ObjectIndex{v - 1}), g->object_id(ObjectIndex{v}));
    EXPECT_EQ(g->FindObject(g->object_id(ObjectIndex{v})), ObjectIndex{v});
  }
  EXPECT_FALSE(g->FindObject(0x9999).valid());
  EXPECT_FALSE(g->FindObject(0).valid());
  EXPECT_FALSE(g->FindObject(~0ull).valid());

  // Kinds and classes.
  EXPECT_EQ(g->kind(Obj(*g, kNode1)), ObjectKind::kInstance);
  EXPECT_EQ(g->kind(Obj(*g, kArr1)), ObjectKind::kObjectArray);
  EXPECT_EQ(g->kind(Obj(*g, kBytes1)), ObjectKind::kPrimitiveArray);
  EXPECT_EQ(g->kind(Obj(*g, kNode)), ObjectKind::kClass);
  EXPECT_EQ(g->class_info(g->class_of(Obj(*g, kSub1))).name, "com.example.Sub");
  EXPECT_EQ(g->class_info(g->class_of(Obj(*g, kArr1))).name, "java.lang.Object[]");
  EXPECT_EQ(g->class_info(g->class_of(Obj(*g, kBytes1))).name, "byte[]");
  EXPECT_EQ(g->class_info(g->class_of(Obj(*g, kNode))).name, "java.lang.Class");
  EXPECT_EQ(g->class_info(g->DescribedClass(Obj(*g, kNode))).name, "com.example.Node");
  EXPECT_FALSE(g->DescribedClass(Obj(*g, kNode1)).valid());
  EXPECT_EQ(g->array_length(Obj(*g, kArr1)), 4u);
  EXPECT_EQ(g->array_length(Obj(*g, kBytes1)), 5u);
  EXPECT_EQ(g->array_length(Obj(*g, kNode1)), 0u);

  // The class table.
  ClassId node = g->FindClass("com.example.Node");
  ClassId sub = g->FindClass("com.example.Sub");
  ASSERT_TRUE(node.valid() && sub.valid());
  const auto& ni = g->class_info(node);
  EXPECT_EQ(g->class_info(ni.super_class).name, "java.lang.Object");
  EXPECT_EQ(g->object_id(ni.class_object), kNode);
  EXPECT_EQ(ni.class_object_id, kNode);
  ASSERT_EQ(ni.instance_fields.size(), 3u);
  EXPECT_EQ(ni.instance_fields[0].name, "next");
  EXPECT_EQ(ni.instance_fields[1].type, FieldType::kInt);
  ASSERT_EQ(ni.static_fields.size(), 2u);
  EXPECT_EQ(ni.static_fields[0].name, "INSTANCE");
  EXPECT_EQ(ni.declared_instance_size, 2 * id_size + 4);
  EXPECT_TRUE(g->IsSubclassOf(sub, node));
  EXPECT_FALSE(g->IsSubclassOf(node, sub));
  EXPECT_TRUE(g->class_info(g->FindClass("java.lang.ref.WeakReference")).is_reference);
  EXPECT_FALSE(ni.is_reference);
  EXPECT_EQ(g->class_info(g->FindClass("byte[]")).instance_kind, ObjectKind::kPrimitiveArray);
  EXPECT_EQ(g->class_info(g->FindClass("byte[]")).element_type, FieldType::kByte);

  // References in dump order, nulls and the dangling 0x9999 dropped, named by slot.
  EXPECT_THAT(SuccessorIds(*g, kNode1), ElementsAre(kNode2, kStr1));
  EXPECT_THAT(EdgeNames(*g, kNode1), ElementsAre("next", "label"));
  EXPECT_THAT(SuccessorIds(*g, kNode2), ElementsAre());
  EXPECT_THAT(SuccessorIds(*g, kSub1), ElementsAre(kArr1, kNode1));
  EXPECT_THAT(EdgeNames(*g, kSub1), ElementsAre("extra", "com.example.Node.next"));
  EXPECT_THAT(SuccessorIds(*g, kArr1), ElementsAre(kNode1, kStr1, kNode2));
  EXPECT_THAT(EdgeNames(*g, kArr1), ElementsAre("[0]", "[2]", "[3]"));
  EXPECT_THAT(SuccessorIds(*g, kStr1), ElementsAre(kBytes1));
  EXPECT_THAT(SuccessorIds(*g, kBytes1), ElementsAre());
  // Class objects: super, then statics, then constant pool objects.
  EXPECT_THAT(SuccessorIds(*g, kNode), ElementsAre(kObject, kNode1, kStr1));
  EXPECT_THAT(EdgeNames(*g, kNode),
              ElementsAre("<super>", "static INSTANCE", "<constant pool[3]>"));
  EXPECT_THAT(SuccessorIds(*g, kWeak), ElementsAre(kReference));
  EXPECT_EQ(g->info().dangling_references, 1u);

  // The referent of a Reference subclass is weak; nothing else is.
  ObjectIndex weak = Obj(*g, kWeak1);
  ASSERT_EQ(g->graph().successors(weak).size(), 1u);
  EXPECT_TRUE(g->graph().is_weak(g->graph().first_edge(weak)));
  EXPECT_EQ(g->DescribeReference(weak, g->graph().first_edge(weak)),
            "java.lang.ref.Reference.referent");
  uint64_t weak_edges = 0;
  for (uint64_t e = 0; e < g->graph().edge_count(); ++e) weak_edges += g->graph().is_weak(e);
  EXPECT_EQ(weak_edges, 1u);

  // Roots: every record with its kind, the one naming a missing object dropped.
  EXPECT_EQ(g->gc_roots().size(), 9u + 8u);
  EXPECT_EQ(g->info().unresolved_roots, 1u);
  std::multiset<GcRootKind> kinds;
  for (const auto& r : g->gc_roots()) kinds.insert(r.kind);
  EXPECT_EQ(kinds.count(GcRootKind::kStickyClass), 9u);
  for (GcRootKind k : {GcRootKind::kThreadObject, GcRootKind::kJavaFrame, GcRootKind::kJniGlobal,
                       GcRootKind::kJniLocal, GcRootKind::kNativeStack, GcRootKind::kThreadBlock,
                       GcRootKind::kMonitorUsed, GcRootKind::kUnknown}) {
    EXPECT_EQ(kinds.count(k), 1u) << analysis::GcRootKindName(k);
  }
  for (const auto& r : g->gc_roots()) {
    if (r.kind == GcRootKind::kJavaFrame) {
      EXPECT_EQ(g->object_id(r.object), kNode1);
      EXPECT_EQ(r.thread_serial, 1u);
      EXPECT_EQ(r.frame, 2);
    }
  }
  EXPECT_EQ(g->root_objects().size(),
            9u + 7u - 1u);  // node1 is a root twice; node2 twice (thread block + monitor)
  EXPECT_TRUE(std::is_sorted(g->root_objects().begin(), g->root_objects().end()));

  // Reverse graph: one entry per forward edge.
  analysis::CsrGraph rev = g->BuildReverseGraph();
  EXPECT_EQ(rev.edge_count(), g->graph().edge_count());
  std::vector<uint64_t> referrers;
  for (ObjectIndex s : rev.successors(Obj(*g, kNode1))) referrers.push_back(g->object_id(s));
  EXPECT_THAT(referrers, UnorderedElementsAre(kNode, kSub1, kArr1));
  std::vector<uint64_t> node2_referrers;
  ObjectIndex n2 = Obj(*g, kNode2);
  for (uint64_t e = rev.first_edge(n2); e < rev.first_edge(ObjectIndex{n2.value + 1}); ++e) {
    node2_referrers.push_back(g->object_id(rev.targets[e]));
    EXPECT_EQ(rev.is_weak(e), g->object_id(rev.targets[e]) == kWeak1);
  }
  EXPECT_THAT(node2_referrers, UnorderedElementsAre(kNode1, kArr1, kWeak1));

  // Histogram: class objects count under java.lang.Class.
  auto totals = analysis::ComputeClassTotals(*g);
  EXPECT_EQ(totals[node.value].instances, 2u);
  EXPECT_EQ(totals[g->FindClass("java.lang.Class").value].instances, 9u);
  auto h = analysis::ComputeClassHistogram(*g);
  EXPECT_EQ(h.total_instances, 16u);
  uint64_t sum = 0;
  for (uint32_t v = 0; v < g->object_count(); ++v) sum += g->shallow_size(ObjectIndex{v});
  EXPECT_EQ(h.total_bytes, sum);
  EXPECT_GT(g->MemoryUsage(), 0u);
}

INSTANTIATE_TEST_SUITE_P(IdSizesAndSegments, StandardDumpTest,
                         ::testing::Combine(::testing::Values(4u, 8u), ::testing::Bool()));

TEST(HprofReaderTest, NetBeansSizeModel) {
  std::string dump = StandardDump(8, false);
  ReadOptions opt;
  opt.size_model = analysis::SizeModel::kNetBeans;
  auto g = ReadHeapGraphFromBuffer(dump, opt);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->info().size_model, analysis::SizeModel::kNetBeans);
  // Instance: field data + 2 ids, no alignment. Arrays: 2 ids + 8 + length x element size.
  EXPECT_EQ(g->shallow_size(Obj(*g, kNode1)), 8u + 4 + 8 + 16);
  EXPECT_EQ(g->shallow_size(Obj(*g, kSub1)), 8u + 8 + 4 + 8 + 16);
  EXPECT_EQ(g->shallow_size(Obj(*g, kBytes1)), 16u + 8 + 5);
  EXPECT_EQ(g->shallow_size(Obj(*g, kArr1)), 16u + 8 + 4 * 8);
}

TEST(HprofReaderTest, InstanceClassEdgesOption) {
  std::string dump = StandardDump(8, false);
  ReadOptions opt;
  opt.instance_class_edges = true;
  auto g = ReadHeapGraphFromBuffer(dump, opt);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(g->info().instance_class_edges);
  EXPECT_THAT(SuccessorIds(*g, kNode1), ElementsAre(kNode, kNode2, kStr1));
  EXPECT_THAT(EdgeNames(*g, kNode1), ElementsAre("<class>", "next", "label"));
  EXPECT_THAT(SuccessorIds(*g, kBytes1), ElementsAre(kByteArray));
  EXPECT_THAT(SuccessorIds(*g, kNode), ElementsAre(kClass, kObject, kNode1, kStr1));
  ObjectIndex weak = Obj(*g, kWeak1);
  EXPECT_FALSE(g->graph().is_weak(g->graph().first_edge(weak)));
  EXPECT_TRUE(g->graph().is_weak(g->graph().first_edge(weak) + 1));
}

// Android: "JAVA PROFILE 1.0.3", 4-byte ids, HEAP DUMP INFO, the Android root kinds, primitive
// arrays without data, perflib sizes.
TEST(HprofReaderTest, AndroidExtras) {
  HprofWriter w(4, "JAVA PROFILE 1.0.3");
  WriteClasses(w);
  w.String(0x8001, "zygote").String(0x8002, "app");
  w.FlushSegment();
  w.Sub(w.HeapDumpInfo('Z', 0x8001));
  w.Sub(w.Instance(kNode1, kNode, w.Ids({kNode2}) + IntBytes(1) + w.Ids({0})));
  w.Sub(w.PrimitiveArray(kBytes1, kByte, 5, /*nodata=*/true));
  w.Sub(w.HeapDumpInfo('A', 0x8002));
  w.Sub(w.Instance(kNode2, kNode, w.Ids({0}) + IntBytes(2) + w.Ids({0})));
  w.Sub(w.PrimitiveArray(kArr1, kInt, 3));
  for (uint8_t tag : {0x89, 0x8A, 0x8B, 0x8C, 0x8D, 0x8E, 0x90}) w.Sub(w.Root(tag, kNode2, 4, 5));
  w.FlushSegment();
  auto g = ReadHeapGraphFromBuffer(w.bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->info().size_model, analysis::SizeModel::kAndroid);
  EXPECT_THAT(g->heap_names(), ElementsAre("default", "zygote", "app"));
  EXPECT_EQ(g->heap_names()[g->heap(Obj(*g, kNode1)).value], "zygote");
  EXPECT_EQ(g->heap_names()[g->heap(Obj(*g, kBytes1)).value], "zygote");
  EXPECT_EQ(g->heap_names()[g->heap(Obj(*g, kNode2)).value], "app");
  EXPECT_EQ(g->heap_names()[g->heap(Obj(*g, kArr1)).value], "app");
  EXPECT_EQ(g->heap_names()[g->heap(Obj(*g, kNode)).value], "default");
  // perflib sizes: the CLASS DUMP's instance size; arrays length x element size.
  EXPECT_EQ(g->shallow_size(Obj(*g, kNode1)), 2u * 4 + 4);
  EXPECT_EQ(g->shallow_size(Obj(*g, kBytes1)), 5u);
  EXPECT_EQ(g->shallow_size(Obj(*g, kArr1)), 12u);
  EXPECT_EQ(g->array_length(Obj(*g, kBytes1)), 5u);
  std::multiset<GcRootKind> kinds;
  for (const auto& r : g->gc_roots()) kinds.insert(r.kind);
  for (GcRootKind k : {GcRootKind::kInternedString, GcRootKind::kFinalizing, GcRootKind::kDebugger,
                       GcRootKind::kReferenceCleanup, GcRootKind::kVmInternal,
                       GcRootKind::kJniMonitor, GcRootKind::kUnreachable}) {
    EXPECT_EQ(kinds.count(k), 1u) << analysis::GcRootKindName(k);
  }
  for (const auto& r : g->gc_roots()) {
    if (r.kind == GcRootKind::kJniMonitor) {
      EXPECT_EQ(r.thread_serial, 4u);
      EXPECT_EQ(r.frame, 5);
    }
  }
}

// Several heap dumps in one file: HEAP DUMP records and runs of segments ended by HEAP DUMP END.
std::string MultiDump() {
  HprofWriter w(8);
  WriteClasses(w);
  w.Sub(w.Instance(kNode1, kNode, w.Ids({0}) + IntBytes(1) + w.Ids({0})));
  w.FlushHeapDump();  // dump 0: 9 classes + 1 object
  WriteClasses(w);
  w.FlushSegment();
  w.Sub(w.Instance(kNode1, kNode, w.Ids({kNode2}) + IntBytes(1) + w.Ids({0})));
  w.Sub(w.Instance(kNode2, kNode, w.Ids({0}) + IntBytes(2) + w.Ids({0})));
  w.FlushSegment().HeapDumpEnd();  // dump 1: 9 + 2
  WriteClasses(w);
  WriteObjects(w);
  w.FlushSegment();  // dump 2: 9 + 7, no HEAP DUMP END (ends with the file)
  return w.take();
}

TEST(HprofReaderTest, SeveralDumpsLastByDefaultOrByOrdinal) {
  std::string dump = MultiDump();
  auto last = ReadHeapGraphFromBuffer(dump);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->info().dump_count, 3u);
  EXPECT_EQ(last->info().dump_ordinal, 2u);
  EXPECT_EQ(last->object_count(), 16u);
  for (int ordinal : {0, 1, 2}) {
    ReadOptions opt;
    opt.dump_ordinal = ordinal;
    auto g = ReadHeapGraphFromBuffer(dump, opt);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->info().dump_ordinal, static_cast<uint32_t>(ordinal));
    EXPECT_EQ(g->object_count(), ordinal == 0 ? 10u : ordinal == 1 ? 11u : 16u);
  }
  ReadOptions beyond;
  beyond.dump_ordinal = 3;
  auto bad = ReadHeapGraphFromBuffer(dump, beyond);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("3 heap dump"));

  auto census = ReadRecordCensusFromBuffer(dump);
  ASSERT_TRUE(census.ok()) << census.status();
  EXPECT_EQ(census->heap_dumps, 3u);
  EXPECT_EQ(census->record(kTagHeapDump), 1u);
  EXPECT_EQ(census->record(kTagHeapDumpSegment), 3u);
  EXPECT_EQ(census->record(kTagHeapDumpEnd), 1u);
  EXPECT_EQ(census->sub_record(kSubClassDump), 27u);
  EXPECT_EQ(census->sub_record(kSubInstanceDump), 1u + 2 + 5);
}

TEST(HprofReaderTest, GzipWithOneOrManyMembersReadsTheSameGraph) {
  std::string plain = StandardDump(8, true);
  auto expected = ReadHeapGraphFromBuffer(plain);
  ASSERT_TRUE(expected.ok());
  for (int members : {1, 3, 17}) {
    std::string gz = testing::Gzip(plain, members);
    auto g = ReadHeapGraphFromBuffer(gz);
    ASSERT_TRUE(g.ok()) << members << ": " << g.status();
    EXPECT_EQ(g->object_count(), expected->object_count());
    EXPECT_EQ(g->graph().targets, expected->graph().targets);
    EXPECT_EQ(g->graph().offsets, expected->graph().offsets);
    auto census = ReadRecordCensusFromBuffer(gz);
    ASSERT_TRUE(census.ok());
    EXPECT_EQ(census->stream_bytes, plain.size());
  }
  // A gzip stream cut short, or with a corrupted byte, is DataLoss.
  std::string gz = testing::Gzip(plain, 2);
  auto cut = ReadHeapGraphFromBuffer(std::string_view(gz).substr(0, gz.size() / 2));
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kDataLoss) << cut.status();
  std::string flipped = gz;
  flipped[gz.size() / 3] ^= 0x55;
  auto corrupt = ReadHeapGraphFromBuffer(flipped);
  EXPECT_FALSE(corrupt.ok());
}

TEST(HprofReaderTest, DuplicateIdsKeepTheFirstRecord) {
  HprofWriter w(8);
  WriteClasses(w);
  w.Sub(w.Instance(kNode1, kNode, w.Ids({kNode2}) + IntBytes(1) + w.Ids({0})));
  w.Sub(w.Instance(kNode2, kNode, w.Ids({0}) + IntBytes(2) + w.Ids({0})));
  w.Sub(w.PrimitiveArray(kNode1, kByte, 3));  // same id again: dropped
  w.FlushHeapDump();
  auto g = ReadHeapGraphFromBuffer(w.bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->info().duplicate_objects, 1u);
  EXPECT_EQ(g->kind(Obj(*g, kNode1)), ObjectKind::kInstance);
  EXPECT_THAT(SuccessorIds(*g, kNode1), ElementsAre(kNode2));
  EXPECT_FALSE(g->info().warnings.empty());
}

TEST(HprofReaderTest, UnknownClassesBecomeSyntheticClasses) {
  HprofWriter w(8);
  WriteClasses(w);
  w.Sub(w.Instance(kNode1, 0xdead0, "abcd"));               // class never dumped
  w.Sub(w.ObjectArray(kNode2, 0xbeef0, {kNode1, kNode1}));  // array class never dumped
  w.Sub(w.PrimitiveArray(kStr1, kLong, 2));                 // long[] has no CLASS DUMP here
  w.FlushHeapDump();
  auto g = ReadHeapGraphFromBuffer(w.bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->class_info(g->class_of(Obj(*g, kNode1))).name, "unknown-class@0xdead0");
  EXPECT_TRUE(g->class_info(g->class_of(Obj(*g, kNode1))).synthetic);
  EXPECT_EQ(g->class_info(g->class_of(Obj(*g, kNode2))).name, "unknown-class@0xbeef0[]");
  EXPECT_THAT(SuccessorIds(*g, kNode2), ElementsAre(kNode1, kNode1));
  EXPECT_EQ(g->class_info(g->class_of(Obj(*g, kStr1))).name, "long[]");
}

// MAT's "<class>" edges with classes that have no class object: both strategies read the dump
// (the three-pass path used to count a "<class>" edge it never wrote and fail).
TEST(HprofReaderTest, UnknownClassesWithClassEdgesInBothStrategies) {
  HprofWriter w(8);
  WriteClasses(w);
  w.Sub(w.Instance(kNode1, 0xdead0, "abcd"));
  w.Sub(w.ObjectArray(kNode2, 0xbeef0, {kNode1, kNode1}));
  w.Sub(w.PrimitiveArray(kStr1, kLong, 2));
  w.FlushHeapDump();
  ReadOptions opt;
  opt.instance_class_edges = true;
  auto single = ReadHeapGraphFromBuffer(w.bytes(), opt);
  ASSERT_TRUE(single.ok()) << single.status();
  opt.single_pass = false;
  auto three = ReadHeapGraphFromBuffer(w.bytes(), opt);
  ASSERT_TRUE(three.ok()) << three.status();
  testing::ExpectSameGraph(*single, *three);
  EXPECT_TRUE(SuccessorIds(*three, kNode1).empty()) << "no class object, no <class> edge";
  EXPECT_THAT(EdgeNames(*three, kNode2), ElementsAre("[0]", "[1]"));
}

// A repeated record is dropped before its class is looked at: no class is made for it.
TEST(HprofReaderTest, RepeatedRecordOfAnUnknownClassMakesNoClass) {
  HprofWriter w(8);
  WriteClasses(w);
  w.Sub(w.Instance(kNode1, kNode, w.Ids({kNode2}) + IntBytes(1) + w.Ids({0})));
  w.Sub(w.Instance(kNode2, kNode, w.Ids({0}) + IntBytes(2) + w.Ids({0})));
  w.Sub(w.Instance(kNode1, 0xdead0, "abcd"));               // repeat, class never dumped
  w.Sub(w.ObjectArray(kNode2, 0xbeef0, {kNode1, kNode1}));  // repeat, array class never dumped
  w.Sub(w.PrimitiveArray(kNode1, kLong, 2));                // repeat, long[] never dumped
  w.FlushHeapDump();
  auto g = ReadHeapGraphFromBuffer(w.bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->info().duplicate_objects, 3u);
  EXPECT_EQ(g->class_count(), 9u);
  EXPECT_THAT(SuccessorIds(*g, kNode1), ElementsAre(kNode2));
  EXPECT_THAT(SuccessorIds(*g, kNode2), ElementsAre());
}

TEST(HprofReaderTest, FileWithoutHeapDumpIsAnEmptyGraph) {
  HprofWriter w(4, "JAVA PROFILE 1.0.1");
  w.String(1, "hello").NamedClass(0x100, "java/lang/Object");
  auto g = ReadHeapGraphFromBuffer(w.bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->object_count(), 0u);
  EXPECT_EQ(g->info().dump_count, 0u);
  EXPECT_THAT(g->info().warnings, ::testing::Contains(HasSubstr("no heap dump")));
}

// Every prefix of a dump is either a valid shorter file (the cut falls between records) or a
// DataLoss error naming a byte offset; never a crash.
TEST(HprofReaderTest, TruncationAtEveryByte) {
  for (uint32_t id_size : {4u, 8u}) {
    std::string dump = StandardDump(id_size, true);
    int ok = 0, data_loss = 0;
    for (size_t n = 0; n < dump.size(); ++n) {
      auto g = ReadHeapGraphFromBuffer(std::string_view(dump).substr(0, n));
      if (g.ok()) {
        ++ok;
        continue;
      }
      std::string msg(g.status().message());
      if (n < 31) {  // inside the header
        EXPECT_NE(g.status().code(), absl::StatusCode::kOk);
        continue;
      }
      EXPECT_EQ(g.status().code(), absl::StatusCode::kDataLoss) << n << ": " << g.status();
      EXPECT_THAT(msg, HasSubstr("byte")) << n;
      ++data_loss;
    }
    EXPECT_GT(data_loss, 0);
    EXPECT_GT(ok, 0);
  }
}

TEST(HprofReaderTest, CorruptionIsReportedWithOffsetAndRecord) {
  // Unknown sub-record tag.
  {
    HprofWriter w(8);
    WriteClasses(w);
    w.Sub(std::string("\x42", 1) + w.Ids({1}));
    w.FlushHeapDump();
    auto g = ReadHeapGraphFromBuffer(w.bytes());
    EXPECT_EQ(g.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(g.status().message()),
                HasSubstr("unknown heap dump sub-record tag 0x42 at byte"));
    EXPECT_THAT(std::string(g.status().message()), HasSubstr("HEAP DUMP record"));
  }
  // A record longer than the file.
  {
    HprofWriter w(8);
    w.Record(0x01, std::string(16, 'x'));
    std::string bytes = w.take();
    bytes[bytes.size() - 17] = 0x7f;  // low byte of the u4 length: 127 > 16 bytes left
    auto g = ReadHeapGraphFromBuffer(bytes);
    EXPECT_EQ(g.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(g.status().message()), HasSubstr("STRING IN UTF8 record at byte 31"));
  }
  // A sub-record that runs past its segment.
  {
    HprofWriter w(8);
    w.Sub(w.Instance(kNode1, kNode, "0123456789"));
    w.FlushSegment();
    std::string bytes = w.take();
    bytes[31 + 8] = 5;  // shrink the segment length to 5 bytes (low byte of the u4 length)
    bytes[31 + 7] = 0;
    bytes[31 + 6] = 0;
    bytes[31 + 5] = 0;
    bytes.resize(31 + 9 + 5);
    auto g = ReadHeapGraphFromBuffer(bytes);
    EXPECT_EQ(g.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(g.status().message()),
                HasSubstr("runs past the end of its HEAP DUMP SEGMENT"));
  }
  // A primitive array with an invalid element type.
  {
    HprofWriter w(8);
    w.Sub(w.PrimitiveArray(kBytes1, 3, 2));
    w.FlushHeapDump();
    auto g = ReadHeapGraphFromBuffer(w.bytes());
    EXPECT_EQ(g.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(std::string(g.status().message()), HasSubstr("invalid type 3"));
  }
  // An object array claiming 4 billion elements: rejected before anything is allocated.
  {
    HprofWriter w(8);
    std::string arr = w.ObjectArray(kArr1, kObjArray, {});
    arr[1 + 8 + 4] = '\xff';
    arr[1 + 8 + 5] = '\xff';
    w.Sub(arr);
    w.FlushHeapDump();
    auto g = ReadHeapGraphFromBuffer(w.bytes());
    EXPECT_EQ(g.status().code(), absl::StatusCode::kDataLoss);
  }
  // Identifier size 3.
  {
    HprofWriter w(3);
    auto g = ReadHeapGraphFromBuffer(w.bytes());
    EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(std::string(g.status().message()), HasSubstr("identifier size 3"));
  }
  // Unknown HPROF version.
  {
    HprofWriter w(8, "JAVA PROFILE 1.0.9");
    auto g = ReadHeapGraphFromBuffer(w.bytes());
    EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_THAT(std::string(g.status().message()), HasSubstr("1.0.9"));
  }
}

TEST(HprofReaderTest, ForeignFormatsAreNamed) {
  struct Case {
    std::string bytes;
    absl::StatusCode code;
    std::string says;
  };
  std::string phd("\x00\x12portable heap dump\x00\x00\x00\x05", 24);
  std::vector<Case> cases = {
      {phd, absl::StatusCode::kUnimplemented, "IBM Portable Heap Dump"},
      {"NULL           ------------------------------------------\n0SECTION       TITLE "
       "subcomponent dump routine\n",
       absl::StatusCode::kUnimplemented, "javacore"},
      {" num     #instances         #bytes  class name (module)\n-------\n   1:   10   100  [B\n",
       absl::StatusCode::kUnimplemented, "class histogram"},
      {"   171       44312  [C\r\n    16       43536  [B\r\n", absl::StatusCode::kUnimplemented,
       "class histogram"},
      {std::string("\x7f"
                   "ELF\x02\x01\x01",
                   7),
       absl::StatusCode::kUnimplemented, "ELF core"},
      {std::string("PK\x03\x04\x14\x00", 6), absl::StatusCode::kUnimplemented, "zip archive"},
      {"# hello\nsome notes\n", absl::StatusCode::kInvalidArgument, "text file"},
      {std::string("\x01\x02\x03\x00\xff", 5), absl::StatusCode::kInvalidArgument,
       "unrecognised binary"},
      {"", absl::StatusCode::kInvalidArgument, "empty file"},
  };
  for (const Case& c : cases) {
    auto g = ReadHeapGraphFromBuffer(c.bytes);
    EXPECT_EQ(g.status().code(), c.code) << c.says << ": " << g.status();
    EXPECT_THAT(std::string(g.status().message()), HasSubstr(c.says));
    auto census = ReadRecordCensusFromBuffer(c.bytes);
    EXPECT_EQ(census.status().code(), c.code) << c.says;
    // The same rejection through gzip.
    auto gz = ReadHeapGraphFromBuffer(testing::Gzip(c.bytes));
    EXPECT_EQ(gz.status().code(), c.code) << c.says << " (gzip): " << gz.status();
  }
}

TEST(HprofReaderTest, ProgressReportsEveryPass) {
  std::string dump = StandardDump(8, true);
  ReadOptions opt;
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  opt.progress = [&calls](uint64_t done, uint64_t total) { calls.push_back({done, total}); };
  ASSERT_TRUE(ReadHeapGraphFromBuffer(dump, opt).ok());
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back().first, calls.back().second);
  EXPECT_EQ(calls.back().second, 2 * dump.size()) << "objects in address order: two passes";
  for (size_t i = 1; i < calls.size(); ++i) EXPECT_LE(calls[i - 1].first, calls[i].first);
}

TEST(HprofReaderTest, ReadFromFileAndProbe) {
  std::string dir = ::testing::TempDir();
  std::string path = dir + "/hprof_reader_test.hprof.gz";
  {
    FILE* f = fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::string gz = testing::Gzip(StandardDump(4, false), 2);
    fwrite(gz.data(), 1, gz.size(), f);
    fclose(f);
  }
  EXPECT_TRUE(ProbeHeapDump(path).ok());
  auto g = ReadHeapGraph(path);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->object_count(), 16u);
  auto missing = ReadHeapGraph(dir + "/does-not-exist.hprof");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadHeapGraph(dir).status().code(), absl::StatusCode::kInvalidArgument);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace heapwatch::hprof
