// HeapRoots' dump from roots (analysis/root_trees.h): seed 000's example figures, and every field
// against a recursive reference implementation of the definition on thousands of random graphs.
#include "analysis/root_trees.h"

#include <functional>
#include <random>
#include <vector>

#include "analysis/heap_graph.h"
#include "analysis/root_inference.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/analysis/graph_test_util.h"

namespace heapwatch::analysis {
namespace {

using ::testing::ElementsAre;

ObjectIndex O(uint32_t v) { return ObjectIndex(v); }

// A heap graph of n objects (ids 16 x (v + 1), ascending) with the given references and sizes,
// built through the listed-references builder; `roots` become GC roots of `kind`.
HeapGraph MakeHeap(uint32_t n, const std::vector<testing::Edge>& edges,
                   const std::vector<uint64_t>& sizes, const std::vector<ObjectIndex>& roots,
                   GcRootKind kind = GcRootKind::kJavaFrame) {
  DumpInfo info;
  info.format = "test";
  HeapGraphBuilder b(info);
  ClassInfo c;
  c.name = "N";
  c.instance_size = 8;
  c.unnamed_references = true;
  const ClassId cls = b.AddClass(c, 0);
  std::vector<std::vector<uint64_t>> refs(n);
  for (const testing::Edge& e : edges) refs[e.from].push_back(16 * (e.to + 1));
  for (uint32_t v = 0; v < n; ++v) {
    b.AddInstance(16 * (v + 1), cls, refs[v]);
    if (!sizes.empty()) b.SetShallowSize(16 * (v + 1), sizes[v]);
  }
  for (ObjectIndex r : roots) b.AddRoot(16 * (r.value + 1), kind);
  auto g = std::move(b).Build();
  EXPECT_TRUE(g.ok()) << g.status();
  return std::move(g).value();
}

RootTrees Trees(const HeapGraph& g, RootTreeOptions options = {}) {
  auto t = ComputeRootTrees(g, options);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : RootTrees{};
}

TEST(RootTreesTest, HeapRootsExample) {
  // Seed 000: A is the only pure root; the search goes A, B, C, D, E, F, G (F's reference back to
  // C is skipped), H, then B's second child I and its child J; K and L form a cycle that only
  // reaches B, so K becomes an artificial root whose tree is K -> L.
  enum { A, B, C, D, E, F, G, H, I, J, K, L, kN };
  const HeapGraph g = MakeHeap(kN,
                               {{A, B},
                                {B, C},
                                {C, D},
                                {D, E},
                                {E, F},
                                {F, G},
                                {F, C},
                                {E, H},
                                {B, I},
                                {I, J},
                                {K, L},
                                {L, B},
                                {L, K}},
                               std::vector<uint64_t>(kN, 1), {});
  auto inferred = AddInferredRoots(MakeHeap(kN,
                                            {{A, B},
                                             {B, C},
                                             {C, D},
                                             {D, E},
                                             {E, F},
                                             {F, G},
                                             {F, C},
                                             {E, H},
                                             {B, I},
                                             {I, J},
                                             {K, L},
                                             {L, B},
                                             {L, K}},
                                            std::vector<uint64_t>(kN, 1), {}));
  ASSERT_TRUE(inferred.ok());
  for (const HeapGraph* heap :
       {&g, static_cast<const HeapGraph*>(&*inferred)}) {  // inferred here or by a reader
    const RootTrees t = Trees(*heap);
    EXPECT_THAT(t.roots, ElementsAre(O(A), O(K)));
    EXPECT_THAT(t.root_kinds, ElementsAre(GcRootKind::kPureRoot, GcRootKind::kArtificialRoot));
    EXPECT_EQ(t.inferred_roots, heap == &g ? 2u : 0u);
    EXPECT_EQ(t.max_depth[A], 6u);  // B -> C -> D -> E -> F -> G
    EXPECT_EQ(t.descendants[A], 9u);
    EXPECT_EQ(t.descendants[E], 3u);  // F, G, H
    EXPECT_EQ(t.total_bytes[E], 4u);
    EXPECT_EQ(t.total_bytes[F], 2u);  // F + G
    EXPECT_EQ(t.descendants[H], 0u);
    EXPECT_EQ(t.descendants[K], 1u);  // L: B was A's already
    EXPECT_EQ(t.max_depth[K], 1u);
    EXPECT_EQ(t.parent[C], O(B));
    EXPECT_EQ(t.parent[L], O(K));
    EXPECT_THAT(t.children.successors(O(B)), ElementsAre(O(C), O(I)));
    EXPECT_THAT(t.children.successors(O(E)), ElementsAre(O(F), O(H)));
  }
}

TEST(RootTreesTest, GcRootsFirstThenInferredRootsForGarbage) {
  // GC roots 3 and 0 (0 -> 1, 3 -> 1); garbage 4 -> 5 and the garbage cycle 6 <-> 7.
  const HeapGraph g = MakeHeap(8, {{0, 1}, {3, 1}, {4, 5}, {6, 7}, {7, 6}, {3, 0}},
                               {10, 20, 30, 40, 50, 60, 70, 80}, {O(3), O(0)});
  const RootTrees t = Trees(g);
  // The GC roots in ascending order: 0 takes 1, so 3's tree is 3 alone; then the garbage's roots.
  EXPECT_THAT(t.roots, ElementsAre(O(0), O(3), O(2), O(4), O(6)));
  EXPECT_THAT(t.root_kinds,
              ElementsAre(GcRootKind::kJavaFrame, GcRootKind::kJavaFrame, GcRootKind::kPureRoot,
                          GcRootKind::kPureRoot, GcRootKind::kArtificialRoot));
  EXPECT_EQ(t.inferred_roots, 3u);
  EXPECT_EQ(t.total_bytes[0], 30u);
  EXPECT_EQ(t.total_bytes[3], 40u);
  EXPECT_EQ(t.total_bytes[6], 150u);
}

TEST(RootTreesTest, LongChainsDoNotRecurse) {
  const uint32_t n = 1'000'000;
  std::vector<testing::Edge> chain;
  for (uint32_t v = 0; v + 1 < n; ++v) chain.push_back({v, v + 1});
  const RootTrees t = Trees(MakeHeap(n, chain, {}, {O(0)}));
  EXPECT_EQ(t.max_depth[0], n - 1);
  EXPECT_EQ(t.descendants[0], n - 1);
  EXPECT_EQ(t.total_bytes[0], 8ull * n);
}

// The definition, recursively (small graphs only): roots in the documented order, a depth-first
// search per root into objects not reached before, then per object the sums over the objects whose
// chain of parents passes through it.
void CheckAgainstDefinition(const testing::TestGraph& tg, bool follow_weak, std::mt19937_64& rng) {
  const uint32_t n = tg.graph.node_count();
  std::vector<testing::Edge> edges;
  for (uint32_t v = 0; v < n; ++v) {
    for (uint64_t e = tg.graph.offsets[v]; e < tg.graph.offsets[v + 1]; ++e) {
      edges.push_back({v, tg.graph.targets[e].value, tg.graph.is_weak(e)});
    }
  }
  std::vector<uint64_t> sizes(n);
  for (uint64_t& s : sizes) s = std::uniform_int_distribution<uint64_t>(0, 100)(rng);
  // The builder keeps no weak flags for listed references: drop weak edges when not followed.
  std::vector<testing::Edge> followed;
  for (const testing::Edge& e : edges) {
    if (follow_weak || !e.weak) followed.push_back(e);
  }
  const HeapGraph g = MakeHeap(n, followed, sizes, tg.roots);
  const RootTrees t = Trees(g, {.follow_weak_references = follow_weak});

  std::vector<ObjectIndex> order(g.root_objects().begin(), g.root_objects().end());
  auto inferred = InferRoots(g.graph(), g.root_objects());
  ASSERT_TRUE(inferred.ok());
  order.insert(order.end(), inferred->pure_roots.begin(), inferred->pure_roots.end());
  order.insert(order.end(), inferred->artificial_roots.begin(), inferred->artificial_roots.end());
  std::vector<int64_t> parent(n, -2);  // -2: not reached, -1: a root
  std::vector<ObjectIndex> roots;
  std::function<void(uint32_t)> visit = [&](uint32_t v) {
    for (ObjectIndex w : g.graph().successors(ObjectIndex(v))) {
      if (parent[w.value] != -2) continue;
      parent[w.value] = v;
      visit(w.value);
    }
  };
  for (ObjectIndex r : order) {
    if (parent[r.value] != -2) continue;
    parent[r.value] = -1;
    roots.push_back(r);
    visit(r.value);
  }
  EXPECT_EQ(t.roots, roots);
  std::vector<uint64_t> total(n, 0), desc(n, 0), depth(n, 0);
  for (uint32_t u = 0; u < n; ++u) {
    ASSERT_NE(parent[u], -2) << u << " in no tree";
    uint64_t d = 0;
    for (int64_t a = u; a >= 0; a = parent[a], ++d) {
      total[a] += g.shallow_size(ObjectIndex(u));
      if (a != u) ++desc[a];
      depth[a] = std::max(depth[a], d);
    }
  }
  for (uint32_t v = 0; v < n; ++v) {
    EXPECT_EQ(t.parent[v].valid() ? int64_t{t.parent[v].value} : -1, parent[v]) << v;
    EXPECT_EQ(t.total_bytes[v], total[v]) << v;
    EXPECT_EQ(t.descendants[v], desc[v]) << v;
    EXPECT_EQ(t.max_depth[v], depth[v]) << v;
  }
}

TEST(RootTreesTest, MatchesTheDefinitionOnThousandsOfRandomGraphs) {
  std::mt19937_64 rng(testing::PrintedSeed("RootTrees"));
  for (int i = 0; i < 2000; ++i) {
    testing::RandomGraphShape shape;
    shape.max_nodes = i % 10 == 0 ? 150 : 25;
    shape.max_edges_per_node = (i % 4) * 0.7 + 0.3;
    shape.weak_probability = 0.2;
    testing::TestGraph tg = testing::RandomGraph(rng, shape);
    if (i % 3 == 0) tg.roots.clear();
    for (bool follow_weak : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "graph " << i << " weak " << follow_weak);
      CheckAgainstDefinition(tg, follow_weak, rng);
    }
    if (::testing::Test::HasFailure()) break;
  }
}

}  // namespace
}  // namespace heapwatch::analysis
