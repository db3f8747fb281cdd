// The two-level dominator treemap (analysis/dominator_treemap.h): on the hand-built leak heap (the
// static holder is named, the accumulation point's cells are marked) and on 1,000 random heaps
// against a brute-force oracle (retained size of each top-level object by removing it and
// counting what becomes unreachable; the reachable heap by a plain search from the GC roots).
#include "analysis/dominator_treemap.h"

#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/dominator_tree.h"
#include "analysis/retained_size.h"
#include "gtest/gtest.h"
#include "tests/analysis/graph_test_util.h"
#include "tests/analysis/leak_heap.h"

namespace heapwatch::analysis {
namespace {

struct Analysed {
  HeapGraph graph;
  DominatorTree tree;
  RetainedSizes retained;
};

Analysed Analyse(HeapGraph graph) {
  auto tree = ComputeDominatorTree(graph.graph(), graph.root_objects());
  EXPECT_TRUE(tree.ok()) << tree.status();
  RetainedSizes retained =
      ComputeRetainedSizes(*tree, [&graph](ObjectIndex v) { return graph.shallow_size(v); });
  return {std::move(graph), std::move(*tree), std::move(retained)};
}

// Every cell with children: the children add up to it; the level-1 cells add up to the total.
void ExpectAreasAddUp(const DominatorTreemap& t) {
  uint64_t sum = 0;
  for (const TreemapCell& c : t.cells) {
    sum += c.retained_bytes;
    if (c.kind == TreemapCell::Kind::kOther) {
      EXPECT_TRUE(c.children.empty());
      continue;
    }
    uint64_t children = 0;
    for (const TreemapCell& k : c.children) {
      children += k.retained_bytes;
      EXPECT_TRUE(k.children.empty());
    }
    EXPECT_EQ(children, c.retained_bytes) << c.label;
  }
  EXPECT_EQ(sum, t.total_bytes);
}

TEST(DominatorTreemapTest, LeakHeapNamesTheStaticHolderAndMarksThePoint) {
  auto graph = testing::LeakHeap();
  ASSERT_TRUE(graph.ok()) << graph.status();
  Analysed a = Analyse(std::move(*graph));
  auto treemap = BuildDominatorTreemap(a.graph, a.tree, a.retained);
  ASSERT_TRUE(treemap.ok()) << treemap.status();
  ExpectAreasAddUp(*treemap);
  const TreemapCell* holder = nullptr;
  for (const TreemapCell& c : treemap->cells) {
    if (c.label == "class com.acme.Registry (statics)") holder = &c;
  }
  ASSERT_NE(holder, nullptr) << "the class object holding SESSIONS is named by its class";
  EXPECT_EQ(holder->kind, TreemapCell::Kind::kStatics);
  EXPECT_EQ(treemap->cells.front().label, holder->label) << "it holds most of the heap";
  ASSERT_FALSE(holder->children.empty());
  EXPECT_EQ(holder->children.front().label, "java.util.ArrayList");

  // The accumulation point: the Object[4] under the ArrayList.
  MarkAccumulationPoint(a.graph, a.tree, a.graph.FindObject(0x2000), &*treemap);
  int marked = 0;
  for (const TreemapCell& c : treemap->cells) {
    marked += c.accumulation_point;
    for (const TreemapCell& k : c.children) {
      if (k.accumulation_point) {
        EXPECT_TRUE(c.accumulation_point) << "a marked child lies in a marked parent";
        EXPECT_EQ(k.label, "java.util.ArrayList");
        ++marked;
      }
    }
  }
  EXPECT_TRUE(holder->accumulation_point);
  EXPECT_EQ(marked, 2);
}

TEST(DominatorTreemapTest, RejectsZeroBounds) {
  auto graph = testing::LeakHeap();
  ASSERT_TRUE(graph.ok());
  Analysed a = Analyse(std::move(*graph));
  EXPECT_EQ(BuildDominatorTreemap(a.graph, a.tree, a.retained, {0, 3}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A random heap: a few classes (two pairs share a name, as with two class loaders), class objects
// with static references, instances and arrays referencing each other at random, random roots.
HeapGraph RandomHeap(std::mt19937_64& rng) {
  HeapGraphBuilder b{DumpInfo{}};
  std::uniform_int_distribution<int> pick(0, 1 << 30);
  const int classes = 2 + pick(rng) % 6;
  const int objects = 1 + pick(rng) % 40;
  std::vector<ClassId> ids;
  b.AddClass(testing::Instance("java.lang.Class", {}, 96), 0x10);
  for (int c = 0; c < classes; ++c) {
    ClassInfo info = testing::Instance(absl::StrCat("C", c % 4), {"a", "b"}, 16 + 8 * (c % 3));
    info.static_fields.push_back(FieldInfo{"S", FieldType::kObject});
    ids.push_back(b.AddClass(info, 0x100 + 0x10 * c));
  }
  const auto object_id = [](int i) { return 0x10000 + 16 * static_cast<uint64_t>(i); };
  const auto any = [&]() -> uint64_t {
    const int r = pick(rng) % (objects + 3);
    return r < objects ? object_id(r) : 0;  // some null references
  };
  for (int c = 0; c < classes; ++c) b.SetStaticReferences(ids[c], {any()});
  for (int i = 0; i < objects; ++i)
    b.AddInstance(object_id(i), ids[pick(rng) % classes], {any(), any()});
  for (int c = 0; c < classes; ++c) {
    if (pick(rng) % 2 == 0) b.AddRoot(0x100 + 0x10 * c, GcRootKind::kStickyClass);
  }
  for (int r = pick(rng) % 4; r > 0; --r)
    b.AddRoot(object_id(pick(rng) % objects), GcRootKind::kJniGlobal);
  auto graph = std::move(b).Build();
  EXPECT_TRUE(graph.ok()) << graph.status();
  return std::move(*graph);
}

// Objects reachable from the roots when `removed` is neither started from nor entered.
std::vector<bool> Reachable(const HeapGraph& g, ObjectIndex removed) {
  std::vector<bool> seen(g.object_count(), false);
  std::vector<ObjectIndex> stack;
  for (ObjectIndex r : g.root_objects()) {
    if (r != removed && !seen[r.value]) {
      seen[r.value] = true;
      stack.push_back(r);
    }
  }
  while (!stack.empty()) {
    const ObjectIndex v = stack.back();
    stack.pop_back();
    for (ObjectIndex w : g.graph().successors(v)) {
      if (w != removed && !seen[w.value]) {
        seen[w.value] = true;
        stack.push_back(w);
      }
    }
  }
  return seen;
}

std::string Label(const HeapGraph& g, ObjectIndex v) {
  if (g.kind(v) == ObjectKind::kClass && g.DescribedClass(v).valid()) {
    return absl::StrCat("class ", g.class_info(g.DescribedClass(v)).name, " (statics)");
  }
  return g.class_info(g.class_of(v)).name;
}

TEST(DominatorTreemapTest, MatchesABruteForceOracleOnRandomHeaps) {
  std::mt19937_64 rng(testing::PrintedSeed("DominatorTreemapTest.Random"));
  for (int round = 0; round < 1000; ++round) {
    Analysed a = Analyse(RandomHeap(rng));
    const HeapGraph& g = a.graph;
    // Oracle: the reachable heap, and per label the summed retained size of the top-level objects
    // (each by removing it), with the number of those objects.
    const std::vector<bool> all = Reachable(g, kNoObject);
    uint64_t total = 0;
    for (uint32_t v = 0; v < g.object_count(); ++v) {
      if (all[v]) total += g.shallow_size(ObjectIndex(v));
    }
    std::map<std::string, std::pair<uint64_t, uint64_t>> oracle;  // label -> (objects, bytes)
    for (ObjectIndex t : a.tree.children(a.tree.super_root())) {
      const std::vector<bool> without = Reachable(g, t);
      uint64_t retained = 0;
      for (uint32_t v = 0; v < g.object_count(); ++v) {
        if (all[v] && !without[v]) retained += g.shallow_size(ObjectIndex(v));
      }
      auto& [n, bytes] = oracle[Label(g, t)];
      ++n;
      bytes += retained;
    }
    // Unbounded: one cell per label, exactly the oracle's.
    auto full = BuildDominatorTreemap(g, a.tree, a.retained, {1000, 1000});
    ASSERT_TRUE(full.ok()) << full.status();
    ASSERT_EQ(full->total_bytes, total) << "round " << round;
    ExpectAreasAddUp(*full);
    ASSERT_EQ(full->cells.size(), oracle.size()) << "round " << round;
    for (const TreemapCell& c : full->cells) {
      ASSERT_TRUE(oracle.count(c.label)) << c.label;
      EXPECT_EQ(c.objects, oracle[c.label].first) << c.label;
      EXPECT_EQ(c.retained_bytes, oracle[c.label].second) << c.label << " round " << round;
    }
    // Bounded: at most 2 + other on level 1, 1 + other + self on level 2; still adding up.
    auto small = BuildDominatorTreemap(g, a.tree, a.retained, {2, 1});
    ASSERT_TRUE(small.ok());
    ExpectAreasAddUp(*small);
    EXPECT_LE(small->cells.size(), 3u);
    for (const TreemapCell& c : small->cells) EXPECT_LE(c.children.size(), 3u);
    // Marking any reachable object marks exactly one level-1 cell.
    for (uint32_t v = 0; v < g.object_count(); v += 7) {
      if (!all[v]) continue;
      DominatorTreemap marked = *small;
      MarkAccumulationPoint(g, a.tree, ObjectIndex(v), &marked);
      int level1 = 0;
      for (const TreemapCell& c : marked.cells) level1 += c.accumulation_point;
      EXPECT_EQ(level1, 1);
    }
  }
}

}  // namespace
}  // namespace heapwatch::analysis
