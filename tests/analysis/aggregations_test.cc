// Tests of analysis/aggregations.h: golden answers on a small hand-built heap (a leak held by a
// static ArrayList, a thread-local object, a shared object, a linked list) and brute-force oracles
// on random heaps (per-class retained size by walking every instance's dominator chain,
// accumulation weights by summing over ancestors, immediate dominators by an unmemoised climb).
#include "analysis/aggregations.h"

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "analysis/dominator_tree.h"
#include "analysis/heap_graph.h"
#include "analysis/retained_size.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

using ::testing::ElementsAre;

ClassInfo InstanceClass(std::string name, std::vector<std::string> reference_fields,
                        uint32_t size) {
  ClassInfo c;
  c.name = std::move(name);
  for (auto& f : reference_fields) c.instance_fields.push_back(FieldInfo{f, FieldType::kObject});
  c.instance_size = size;
  c.class_object_size = 8;
  return c;
}

ClassInfo ArrayClass(std::string name, FieldType element) {
  ClassInfo c;
  c.name = std::move(name);
  c.instance_kind =
      element == FieldType::kObject ? ObjectKind::kObjectArray : ObjectKind::kPrimitiveArray;
  c.element_type = element;
  c.class_object_size = 8;
  return c;
}

// The heap of the golden tests:
//   class com.acme.Holder (sticky root) --static list--> ArrayList A --elementData--> Object[] E
//   E[0..3] -> Leaked L1..L4, E[4] -> Leaked L6; each Leaked -> its byte[] B_i
//   Thread T (thread-object root) --local--> Leaked L5, --shared--> L6, --head--> Node N1 -> N2 ->
//   N3 Leaked L7: unreachable. Every class object is a sticky-class root.
struct GoldenHeap {
  HeapGraph graph;
  DominatorTree tree;
  RetainedSizes retained;
  ObjectIndex Find(uint64_t id) const { return graph.FindObject(id); }
};

constexpr uint64_t kHolderClass = 0x100, kArrayList = 0x2000, kElements = 0x3000, kThread = 0x6000;
constexpr uint64_t kLeaked[] = {0x4000, 0x4010, 0x4020, 0x4030, 0x4040, 0x4050, 0x4060};  // L1..L7
constexpr uint64_t kBytes[] = {0x5000, 0x5010, 0x5020, 0x5030, 0x5040, 0x5050, 0x5060};
constexpr uint64_t kNodes[] = {0x7000, 0x7010, 0x7020};

// Holder-class statics need the class's static field layout; build the heap in one place.
StatusOr<GoldenHeap> BuildGoldenHeap() {
  HeapGraphBuilder b{DumpInfo{}};
  b.AddClass(InstanceClass("java.lang.Object", {}, 16), 0x10);
  b.AddClass(InstanceClass("java.lang.Class", {}, 96), 0x20);
  ClassInfo holder_info = InstanceClass("com.acme.Holder", {}, 16);
  holder_info.static_fields.push_back(FieldInfo{"LIST", FieldType::kObject});
  ClassId holder = b.AddClass(holder_info, kHolderClass);
  ClassId list = b.AddClass(InstanceClass("java.util.ArrayList", {"elementData"}, 24), 0x30);
  ClassId objects = b.AddClass(ArrayClass("java.lang.Object[]", FieldType::kObject), 0x40);
  ClassId leaked = b.AddClass(InstanceClass("com.acme.Leaked", {"data"}, 24), 0x50);
  ClassId bytes = b.AddClass(ArrayClass("byte[]", FieldType::kByte), 0x60);
  ClassId thread =
      b.AddClass(InstanceClass("java.lang.Thread", {"local", "shared", "head"}, 40), 0x70);
  ClassId node = b.AddClass(InstanceClass("com.acme.Node", {"next"}, 24), 0x80);
  b.SetStaticReferences(holder, {kArrayList});
  b.AddInstance(kArrayList, list, {kElements});
  b.AddObjectArray(kElements, objects,
                   {kLeaked[0], kLeaked[1], kLeaked[2], kLeaked[3], kLeaked[5]});
  for (int i = 0; i < 7; ++i) {
    b.AddInstance(kLeaked[i], leaked, {kBytes[i]});
    b.AddPrimitiveArray(kBytes[i], bytes, 100 * (i + 1));
  }
  b.AddInstance(kThread, thread, {kLeaked[4], kLeaked[5], kNodes[0]});
  b.AddInstance(kNodes[0], node, {kNodes[1]});
  b.AddInstance(kNodes[1], node, {kNodes[2]});
  b.AddInstance(kNodes[2], node, {0});
  for (uint64_t c : {0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80})
    b.AddRoot(c, GcRootKind::kStickyClass);
  b.AddRoot(kHolderClass, GcRootKind::kStickyClass);
  b.AddRoot(kThread, GcRootKind::kThreadObject);
  HW_ASSIGN_OR_RETURN(HeapGraph graph, std::move(b).Build());
  HW_ASSIGN_OR_RETURN(DominatorTree tree,
                      ComputeDominatorTree(graph.graph(), graph.root_objects()));
  RetainedSizes retained =
      ComputeRetainedSizes(tree, [&](ObjectIndex v) { return graph.shallow_size(v); });
  return GoldenHeap{std::move(graph), std::move(tree), std::move(retained)};
}

class GoldenHeapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto heap = BuildGoldenHeap();
    ASSERT_TRUE(heap.ok()) << heap.status();
    heap_ = std::make_unique<GoldenHeap>(std::move(*heap));
  }
  const HeapGraph& graph() const { return heap_->graph; }
  const DominatorTree& tree() const { return heap_->tree; }
  const RetainedSizes& retained() const { return heap_->retained; }
  ObjectIndex Find(uint64_t id) const { return heap_->Find(id); }
  uint64_t Shallow(uint64_t id) const { return graph().shallow_size(Find(id)); }
  std::vector<ObjectIndex> Leaked() const {
    std::vector<ObjectIndex> out;
    for (uint64_t id : kLeaked) out.push_back(Find(id));
    return out;
  }
  std::unique_ptr<GoldenHeap> heap_;
};

TEST_F(GoldenHeapTest, ClassRetainedSizeCountsInstancesNotDominatedByTheirOwnClass) {
  auto per_class = ComputeClassRetainedSizes(graph(), tree(), retained());
  ASSERT_TRUE(per_class.ok()) << per_class.status();
  const ClassRetained& leaked = (*per_class)[graph().FindClass("com.acme.Leaked").value];
  // L7 is unreachable: six reachable instances, none dominating another.
  uint64_t expected_shallow = 0, expected_retained = 0;
  for (int i = 0; i < 6; ++i) {
    expected_shallow += Shallow(kLeaked[i]);
    expected_retained += Shallow(kLeaked[i]) + Shallow(kBytes[i]);
  }
  EXPECT_EQ(leaked.instances, 6u);
  EXPECT_EQ(leaked.shallow_bytes, expected_shallow);
  EXPECT_EQ(leaked.retained_bytes, expected_retained);
  // The linked list: N1 dominates N2 which dominates N3, so only N1 counts (and retains all three).
  const ClassRetained& node = (*per_class)[graph().FindClass("com.acme.Node").value];
  EXPECT_EQ(node.instances, 3u);
  EXPECT_EQ(node.retained_bytes, Shallow(kNodes[0]) + Shallow(kNodes[1]) + Shallow(kNodes[2]));
  EXPECT_EQ(node.retained_bytes, retained()[Find(kNodes[0]).value]);
}

TEST_F(GoldenHeapTest, ImmediateDominatorsClimbPastExcludedClasses) {
  auto patterns = ClassNamePatterns::Compile(DefaultExcludePatterns());
  ASSERT_TRUE(patterns.ok());
  ImmediateDominatorsOptions options;
  options.exclude = &*patterns;
  auto groups = ImmediateDominatorsByClass(graph(), tree(), retained(), Leaked(), options);
  ASSERT_TRUE(groups.ok()) << groups.status();
  // L1..L4 -> Object[] -> ArrayList (both java.*) -> class com.acme.Holder; L5 -> Thread (java.*)
  // -> <ROOT>; L6 is reachable from the Thread and the array: the super root dominates it. L7
  // unreachable.
  ASSERT_EQ(groups->size(), 2u);
  const DominatorClassGroup& holder = (*groups)[0];
  EXPECT_EQ(ClassKeyName(graph(), holder.key), "class com.acme.Holder");
  EXPECT_EQ(holder.dominated, 4u);
  EXPECT_THAT(holder.dominators, ElementsAre(Find(kHolderClass)));
  EXPECT_EQ(holder.dominated_shallow_bytes, 4 * Shallow(kLeaked[0]));
  EXPECT_EQ(holder.dominator_retained_bytes, retained()[Find(kHolderClass).value]);
  const DominatorClassGroup& root = (*groups)[1];
  EXPECT_EQ(ClassKeyName(graph(), root.key), "<ROOT>");
  EXPECT_EQ(root.dominated, 2u);
  EXPECT_TRUE(root.dominators.empty());
}

TEST_F(GoldenHeapTest, ImmediateDominatorsWithoutExcludesAreTheDirectOnes) {
  auto groups = ImmediateDominatorsByClass(graph(), tree(), retained(), Leaked(), {});
  ASSERT_TRUE(groups.ok()) << groups.status();
  std::map<std::string, uint64_t> dominated;
  for (const auto& g : *groups) dominated[ClassKeyName(graph(), g.key)] = g.dominated;
  EXPECT_EQ(dominated, (std::map<std::string, uint64_t>{
                           {"java.lang.Object[]", 4}, {"java.lang.Thread", 1}, {"<ROOT>", 1}}));
}

TEST_F(GoldenHeapTest, SkipSameClassClimbsOutOfALinkedList) {
  std::vector<ObjectIndex> nodes = {Find(kNodes[1]), Find(kNodes[2])};
  auto direct = ImmediateDominatorsByClass(graph(), tree(), retained(), nodes, {});
  ASSERT_TRUE(direct.ok());
  ASSERT_EQ(direct->size(), 1u);
  EXPECT_EQ(ClassKeyName(graph(), (*direct)[0].key), "com.acme.Node");
  EXPECT_EQ((*direct)[0].dominators.size(), 2u);  // N1 and N2
  ImmediateDominatorsOptions options;
  options.skip_same_class = true;
  auto climbed = ImmediateDominatorsByClass(graph(), tree(), retained(), nodes, options);
  ASSERT_TRUE(climbed.ok());
  ASSERT_EQ(climbed->size(), 1u);
  EXPECT_EQ(ClassKeyName(graph(), (*climbed)[0].key), "java.lang.Thread");
  EXPECT_THAT((*climbed)[0].dominators, ElementsAre(Find(kThread)));
}

TEST_F(GoldenHeapTest, AccumulationPointIsTheArrayHoldingMostInstances) {
  // The Holder class object's subtree holds L1..L4 (`share` of the set's bytes). With a ratio just
  // below that share the walk goes super root -> class Holder -> ArrayList -> Object[] and stops
  // there, because the Object[]'s heaviest child is a member.
  uint64_t total = 0, held = 0;
  for (int i = 0; i < 6; ++i) total += Shallow(kLeaked[i]) + Shallow(kBytes[i]);
  for (int i = 0; i < 4; ++i) held += Shallow(kLeaked[i]) + Shallow(kBytes[i]);
  const double share = static_cast<double>(held) / static_cast<double>(total);
  auto result = FindAccumulationPoints(tree(), retained(), Leaked(), share - 0.01);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->set_members, 6u);
  EXPECT_EQ(result->minimum_retained_bytes, total);
  ASSERT_EQ(result->points.size(), 1u);
  EXPECT_EQ(result->points[0].object, Find(kElements));
  EXPECT_EQ(result->points[0].set_members, 4u);
  EXPECT_EQ(result->points[0].set_bytes, held);

  // Just above that share the super root's heaviest child is not heavy enough: the set is spread
  // over the Holder class (4 instances), the thread (L5) and L6 itself.
  auto spread = FindAccumulationPoints(tree(), retained(), Leaked(), share + 0.01);
  ASSERT_TRUE(spread.ok());
  ASSERT_EQ(spread->points.size(), 3u);
  EXPECT_EQ(spread->points[0].object, Find(kHolderClass));
  std::vector<ObjectIndex> rest = {spread->points[1].object, spread->points[2].object};
  EXPECT_THAT(rest, ::testing::UnorderedElementsAre(Find(kThread), Find(kLeaked[5])));
  uint64_t sum = 0;
  for (const auto& p : spread->points) sum += p.set_bytes;
  EXPECT_EQ(sum, total);
}

// A reference queue as the JDK keeps finalizable objects: class Holder --static QUEUE--> Queue Q
// --head--> Entry E1 --next--> E2 ... --next--> E20, each Entry --referent--> Payload P_i
// --data--> byte[]. Every Entry dominates the rest of the list, so the walk for the payloads
// descends the list until the tail's share drops below the ratio: an arbitrary Entry deep in it.
// With the graph the point is the list's head, the same object the Entry class's own point
// names (the Entry set's top-level member E1, held by Q: the walk ends at Q).
TEST(AccumulationPointTest, LinkedListPointIsItsHeadWithTheGraph) {
  HeapGraphBuilder b{DumpInfo{}};
  b.AddClass(InstanceClass("java.lang.Object", {}, 16), 0x10);
  ClassInfo holder_info = InstanceClass("com.acme.Holder", {}, 16);
  holder_info.static_fields.push_back(FieldInfo{"QUEUE", FieldType::kObject});
  ClassId holder = b.AddClass(holder_info, 0x20);
  ClassId queue = b.AddClass(InstanceClass("com.acme.Queue", {"head"}, 24), 0x30);
  ClassId entry = b.AddClass(InstanceClass("com.acme.Entry", {"next", "referent"}, 32), 0x40);
  ClassId payload = b.AddClass(InstanceClass("com.acme.Payload", {"data"}, 24), 0x50);
  ClassId bytes = b.AddClass(ArrayClass("byte[]", FieldType::kByte), 0x60);
  constexpr int kEntries = 20;
  auto entry_id = [](int i) -> uint64_t { return 0x1000 + 0x10 * i; };
  auto payload_id = [](int i) -> uint64_t { return 0x3000 + 0x10 * i; };
  b.SetStaticReferences(holder, {0x900});
  b.AddInstance(0x900, queue, {entry_id(0)});
  for (int i = 0; i < kEntries; ++i) {
    b.AddInstance(entry_id(i), entry, {i + 1 < kEntries ? entry_id(i + 1) : 0, payload_id(i)});
    b.AddInstance(payload_id(i), payload, {0x5000 + 0x10 * static_cast<uint64_t>(i)});
    b.AddPrimitiveArray(0x5000 + 0x10 * static_cast<uint64_t>(i), bytes, 500);
  }
  for (uint64_t c : {0x10, 0x20, 0x30, 0x40, 0x50, 0x60}) b.AddRoot(c, GcRootKind::kStickyClass);
  auto graph = std::move(b).Build();
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto tree = ComputeDominatorTree(graph->graph(), graph->root_objects());
  ASSERT_TRUE(tree.ok()) << tree.status();
  RetainedSizes retained =
      ComputeRetainedSizes(*tree, [&](ObjectIndex v) { return graph->shallow_size(v); });
  std::vector<ObjectIndex> payloads, entries;
  for (int i = 0; i < kEntries; ++i) {
    payloads.push_back(graph->FindObject(payload_id(i)));
    entries.push_back(graph->FindObject(entry_id(i)));
  }
  auto deep = FindAccumulationPoints(*tree, retained, payloads, 0.7);
  ASSERT_TRUE(deep.ok()) << deep.status();
  ASSERT_EQ(deep->points.size(), 1u);
  EXPECT_EQ(graph->class_of(deep->points[0].object), entry);
  EXPECT_NE(deep->points[0].object, entries[0]);  // somewhere down the list
  EXPECT_LT(deep->points[0].set_members, static_cast<uint64_t>(kEntries));

  auto head = FindAccumulationPoints(*tree, retained, payloads, 0.7, 5, 0.05, &*graph);
  ASSERT_TRUE(head.ok()) << head.status();
  ASSERT_EQ(head->points.size(), 1u);
  EXPECT_EQ(head->points[0].object, entries[0]);
  EXPECT_EQ(head->points[0].set_members, static_cast<uint64_t>(kEntries));
  EXPECT_EQ(head->points[0].set_bytes, head->minimum_retained_bytes);

  // The entries' own point: the holder of the list's first entry.
  auto list = FindAccumulationPoints(*tree, retained, entries, 0.7, 5, 0.05, &*graph);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->points.size(), 1u);
  EXPECT_EQ(list->points[0].object, graph->FindObject(0x900));
  EXPECT_EQ(tree->immediate_dominator(head->points[0].object), list->points[0].object);

  // A graph of another heap is refused.
  HeapGraphBuilder other{DumpInfo{}};
  other.AddClass(InstanceClass("java.lang.Object", {}, 16), 0x10);
  other.AddRoot(0x10, GcRootKind::kStickyClass);
  auto small = std::move(other).Build();
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(FindAccumulationPoints(*tree, retained, payloads, 0.7, 5, 0.05, &*small).ok());
}

TEST_F(GoldenHeapTest, MinimumRetainedOfAccumulationEqualsLibraryFunction) {
  auto result = FindAccumulationPoints(tree(), retained(), Leaked());
  ASSERT_TRUE(result.ok());
  auto minimum = MinimumRetainedSize(tree(), retained(), Leaked());
  ASSERT_TRUE(minimum.ok());
  EXPECT_EQ(result->minimum_retained_bytes, *minimum);
}

TEST_F(GoldenHeapTest, GroupedTopLevelAndBiggestObjects) {
  const ObjectIndex super_root[] = {tree().super_root()};
  auto groups = GroupDominatedByClass(graph(), tree(), retained(), super_root);
  ASSERT_TRUE(groups.ok());
  std::map<std::string, uint64_t> objects;
  uint64_t retained_sum = 0;
  for (const auto& g : *groups) {
    objects[graph().class_info(g.class_id).name] = g.objects;
    retained_sum += g.retained_bytes;
  }
  // 9 class objects (java.lang.Class), the thread, and L6 (reachable from two roots).
  EXPECT_EQ(objects, (std::map<std::string, uint64_t>{
                         {"java.lang.Class", 9}, {"java.lang.Thread", 1}, {"com.acme.Leaked", 1}}));
  EXPECT_EQ(retained_sum, retained()[tree().super_root().value]);

  std::vector<ObjectIndex> top = TopObjectsByRetainedSize(tree(), retained(), 3);
  ASSERT_EQ(top.size(), 3u);
  // Holder class object retains list + array + L1..L4 with their arrays; then the ArrayList; then
  // E.
  EXPECT_EQ(top[0], Find(kHolderClass));
  EXPECT_EQ(top[1], Find(kArrayList));
  EXPECT_EQ(top[2], Find(kElements));
  EXPECT_TRUE(TopObjectsByRetainedSize(tree(), retained(), 0).empty());
}

TEST(ClassNamePatternsTest, MatchesWholeNamesAsMat) {
  auto p = ClassNamePatterns::Compile(DefaultExcludePatterns());
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->Matches("java.lang.String"));
  EXPECT_TRUE(p->Matches("java.lang.Object[]"));
  EXPECT_TRUE(p->Matches("javax.swing.JFrame"));
  EXPECT_TRUE(p->Matches("sun.misc.Launcher"));
  EXPECT_TRUE(p->Matches("jdk.internal.loader.ClassLoaders"));
  EXPECT_TRUE(p->Matches("com.sun.jmx.mbeanserver.JmxMBeanServer"));
  EXPECT_FALSE(p->Matches("com.sunny.Thing"));
  EXPECT_FALSE(p->Matches("char[]"));
  EXPECT_FALSE(p->Matches("com.acme.java.Thing"));
  EXPECT_FALSE(ClassNamePatterns().Matches("java.lang.String"));
  std::vector<std::string> bad = {"java.(*"};
  auto error = ClassNamePatterns::Compile(bad);
  EXPECT_EQ(error.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(error.status().message()), ::testing::HasSubstr("java.(*"));
}

TEST_F(GoldenHeapTest, BadInputIsAnError) {
  const RetainedSizes short_sizes = RetainedSizes::FromBytes(std::vector<uint64_t>(3));
  EXPECT_FALSE(ComputeClassRetainedSizes(graph(), tree(), short_sizes).ok());
  const ObjectIndex out_of_range[] = {ObjectIndex(tree().object_count() + 5)};
  EXPECT_EQ(
      ImmediateDominatorsByClass(graph(), tree(), retained(), out_of_range, {}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(FindAccumulationPoints(tree(), retained(), Leaked(), 0).ok());
  EXPECT_FALSE(FindAccumulationPoints(tree(), retained(), Leaked(), 1.5).ok());
  EXPECT_FALSE(GroupDominatedByClass(graph(), tree(), retained(), out_of_range).ok());
}

// ---- Random heaps against brute force.

struct RandomHeap {
  HeapGraph graph;
  DominatorTree tree;
  RetainedSizes retained;
};

// `classes` instance classes with 2 reference fields each, n instances with random references
// (cycles, self references, nulls), random roots; some objects stay unreachable.
StatusOr<RandomHeap> MakeRandomHeap(std::mt19937& rng, int classes, int n) {
  HeapGraphBuilder b{DumpInfo{}};
  std::vector<ClassId> ids;
  for (int c = 0; c < classes; ++c) {
    ids.push_back(b.AddClass(
        InstanceClass(c % 2 ? "java.util.C" + std::to_string(c) : "app.C" + std::to_string(c),
                      {"a", "b"}, 16 + 8 * c),
        0));
  }
  std::uniform_int_distribution<int> pick(0, n - 1);
  std::uniform_int_distribution<int> pick_class(0, classes - 1);
  for (int i = 0; i < n; ++i) {
    auto ref = [&]() -> uint64_t { return rng() % 4 == 0 ? 0 : 0x1000 + 16 * pick(rng); };
    b.AddInstance(0x1000 + 16 * i, ids[pick_class(rng)], {ref(), ref()});
  }
  int roots = 1 + static_cast<int>(rng() % 4);
  for (int r = 0; r < roots; ++r) b.AddRoot(0x1000 + 16 * pick(rng), GcRootKind::kJniGlobal);
  HW_ASSIGN_OR_RETURN(HeapGraph graph, std::move(b).Build());
  HW_ASSIGN_OR_RETURN(DominatorTree tree,
                      ComputeDominatorTree(graph.graph(), graph.root_objects()));
  RetainedSizes retained =
      ComputeRetainedSizes(tree, [&](ObjectIndex v) { return graph.shallow_size(v); });
  return RandomHeap{std::move(graph), std::move(tree), std::move(retained)};
}

bool ProperAncestorOfClass(const RandomHeap& h, ObjectIndex v, ClassId c) {
  for (ObjectIndex d = h.tree.immediate_dominator(v); d.valid() && d != h.tree.super_root();
       d = h.tree.immediate_dominator(d)) {
    if (h.graph.class_of(d) == c) return true;
  }
  return false;
}

TEST(AggregationsRandomTest, ClassRetainedSizesMatchBruteForce) {
  std::mt19937 rng(20240611);
  for (int round = 0; round < 300; ++round) {
    auto heap = MakeRandomHeap(rng, 1 + round % 5, 1 + round % 60);
    ASSERT_TRUE(heap.ok()) << heap.status();
    auto per_class = ComputeClassRetainedSizes(heap->graph, heap->tree, heap->retained);
    ASSERT_TRUE(per_class.ok());
    std::vector<ClassRetained> expected(heap->graph.class_count());
    std::vector<std::vector<ObjectIndex>> members(heap->graph.class_count());
    for (uint32_t i = 0; i < heap->graph.object_count(); ++i) {
      ObjectIndex v(i);
      if (!heap->tree.reachable(v)) continue;
      ClassId c = heap->graph.class_of(v);
      if (!c.valid()) continue;
      members[c.value].push_back(v);
      ++expected[c.value].instances;
      expected[c.value].shallow_bytes += heap->graph.shallow_size(v);
      if (!ProperAncestorOfClass(*heap, v, c))
        expected[c.value].retained_bytes += heap->retained[i];
    }
    for (uint32_t c = 0; c < expected.size(); ++c) {
      SCOPED_TRACE(testing::Message() << "round " << round << " class " << c);
      EXPECT_EQ((*per_class)[c].instances, expected[c].instances);
      EXPECT_EQ((*per_class)[c].shallow_bytes, expected[c].shallow_bytes);
      EXPECT_EQ((*per_class)[c].retained_bytes, expected[c].retained_bytes);
      auto minimum = MinimumRetainedSize(heap->tree, heap->retained, members[c]);
      ASSERT_TRUE(minimum.ok());
      EXPECT_EQ((*per_class)[c].retained_bytes, *minimum);
    }
  }
}

TEST(AggregationsRandomTest, AccumulationWalkMatchesBruteForceWeights) {
  std::mt19937 rng(77);
  for (int round = 0; round < 300; ++round) {
    auto heap = MakeRandomHeap(rng, 2 + round % 3, 2 + round % 70);
    ASSERT_TRUE(heap.ok()) << heap.status();
    const DominatorTree& tree = heap->tree;
    // The set: every reachable instance of class 0.
    std::vector<ObjectIndex> set;
    for (uint32_t i = 0; i < heap->graph.object_count(); ++i) {
      if (tree.reachable(ObjectIndex(i)) && heap->graph.class_of(ObjectIndex(i)) == ClassId(0)) {
        set.push_back(ObjectIndex(i));
      }
    }
    // Brute-force weights: each top-level member adds its retained size to itself and every
    // ancestor.
    std::vector<uint64_t> w(tree.object_count() + 1, 0);
    std::vector<bool> member(tree.object_count() + 1, false);
    for (ObjectIndex m : set) member[m.value] = true;
    for (ObjectIndex m : set) {
      if (ProperAncestorOfClass(*heap, m, ClassId(0))) continue;
      for (ObjectIndex d = m; d.valid(); d = tree.immediate_dominator(d))
        w[d.value] += heap->retained[m.value];
    }
    const double ratio = 0.5 + 0.1 * (round % 5);
    // Brute-force walk with the documented rule.
    ObjectIndex current = tree.super_root();
    ObjectIndex best;
    while (true) {
      best = kNoObject;
      for (ObjectIndex c : tree.children(current)) {
        if (w[c.value] > 0 && (!best.valid() || w[c.value] > w[best.value])) best = c;
      }
      if (!best.valid() ||
          static_cast<double>(w[best.value]) < ratio * static_cast<double>(w[current.value]) ||
          member[best.value]) {
        break;
      }
      current = best;
    }
    auto result = FindAccumulationPoints(tree, heap->retained, set, ratio);
    ASSERT_TRUE(result.ok()) << result.status();
    SCOPED_TRACE(testing::Message() << "round " << round);
    EXPECT_EQ(result->minimum_retained_bytes, w[tree.super_root().value]);
    if (set.empty()) {
      EXPECT_TRUE(result->points.empty());
      continue;
    }
    ASSERT_FALSE(result->points.empty());
    // With the graph, a single point climbs its run of one class (linked structures).
    auto linked = FindAccumulationPoints(tree, heap->retained, set, ratio, 5, 0.05, &heap->graph);
    ASSERT_TRUE(linked.ok()) << linked.status();
    if (current != tree.super_root()) {
      ASSERT_EQ(result->points.size(), 1u);
      EXPECT_EQ(result->points[0].object, current);
      EXPECT_EQ(result->points[0].set_bytes, w[current.value]);
      ObjectIndex head = current;
      while (tree.immediate_dominator(head) != tree.super_root() &&
             heap->graph.class_of(tree.immediate_dominator(head)) == heap->graph.class_of(head)) {
        head = tree.immediate_dominator(head);
      }
      ASSERT_EQ(linked->points.size(), 1u);
      EXPECT_EQ(linked->points[0].object, head);
      EXPECT_EQ(linked->points[0].set_bytes, w[head.value]);
    } else {
      ASSERT_EQ(linked->points.size(), result->points.size());
      for (size_t i = 0; i < linked->points.size(); ++i) {
        EXPECT_EQ(linked->points[i].object, result->points[i].object);
      }
      for (const auto& p : result->points) {
        EXPECT_EQ(tree.immediate_dominator(p.object), tree.super_root());
        EXPECT_EQ(p.set_bytes, w[p.object.value]);
      }
    }
  }
}

TEST(AggregationsRandomTest, ImmediateDominatorsMatchUnmemoisedClimb) {
  std::mt19937 rng(4242);
  auto patterns = ClassNamePatterns::Compile(std::vector<std::string>{"java.*"});
  ASSERT_TRUE(patterns.ok());
  for (int round = 0; round < 200; ++round) {
    auto heap = MakeRandomHeap(rng, 4, 5 + round % 80);
    ASSERT_TRUE(heap.ok());
    const DominatorTree& tree = heap->tree;
    std::vector<ObjectIndex> all;
    for (uint32_t i = 0; i < heap->graph.object_count(); ++i) all.push_back(ObjectIndex(i));
    for (bool skip_same : {false, true}) {
      ImmediateDominatorsOptions options;
      options.exclude = &*patterns;
      options.skip_same_class = skip_same;
      auto groups = ImmediateDominatorsByClass(heap->graph, tree, heap->retained, all, options);
      ASSERT_TRUE(groups.ok());
      std::map<std::string, uint64_t> got, expected;
      for (const auto& g : *groups) got[ClassKeyName(heap->graph, g.key)] = g.dominated;
      for (ObjectIndex v : all) {
        if (!tree.reachable(v)) continue;
        ObjectIndex d = tree.immediate_dominator(v);
        while (d != tree.super_root()) {
          const std::string& name = heap->graph.class_info(heap->graph.class_of(d)).name;
          bool climb = name.rfind("java", 0) == 0 ||
                       (skip_same && heap->graph.class_of(d) == heap->graph.class_of(v));
          if (!climb) break;
          d = tree.immediate_dominator(d);
        }
        ++expected[d == tree.super_root() ? "<ROOT>"
                                          : heap->graph.class_info(heap->graph.class_of(d)).name];
      }
      EXPECT_EQ(got, expected) << "round " << round << " skip_same_class " << skip_same;
    }
  }
}

}  // namespace
}  // namespace heapwatch::analysis
