#include "analysis/root_inference.h"

#include <random>
#include <string>
#include <vector>

#include "analysis/heap_graph.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/analysis/graph_test_util.h"

namespace heapwatch::analysis {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::MakeGraph;
using testing::Objects;

ObjectIndex O(uint32_t v) { return ObjectIndex(v); }

InferredRoots Infer(const CsrGraph& g, const std::vector<ObjectIndex>& roots = {},
                    RootInferenceOptions options = {}) {
  auto r = InferRoots(g, roots, options);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : InferredRoots{};
}

TEST(RootInferenceTest, EmptyGraph) {
  const InferredRoots r = Infer(MakeGraph(0, {}));
  EXPECT_THAT(r.pure_roots, IsEmpty());
  EXPECT_THAT(r.artificial_roots, IsEmpty());
  EXPECT_EQ(r.unreached_objects, 0u);
}

TEST(RootInferenceTest, LoneObjectsAndSelfLoopsArePureRoots) {
  // 0 alone, 1 references itself, 2 references itself and 3.
  const InferredRoots r = Infer(MakeGraph(4, {{1, 1}, {2, 2}, {2, 3}}));
  EXPECT_THAT(r.pure_roots, ElementsAre(O(0), O(1), O(2)));
  EXPECT_THAT(r.artificial_roots, IsEmpty());
  EXPECT_EQ(r.unreached_objects, 4u);
}

TEST(RootInferenceTest, HeapRootsExample) {
  // Seed 000's figure: A is the only pure root and reaches B..J; K and L form a cycle that reaches
  // B but that nothing outside it reaches, so K (the lower id) becomes an artificial root.
  enum { A, B, C, D, E, F, G, H, I, J, K, L, kN };
  const CsrGraph g = MakeGraph(kN, {{A, B},
                                    {B, C},
                                    {C, D},
                                    {D, E},
                                    {E, F},
                                    {F, G},
                                    {E, H},
                                    {F, C},
                                    {B, I},
                                    {I, J},
                                    {K, L},
                                    {L, K},
                                    {L, B}});
  const InferredRoots r = Infer(g);
  EXPECT_THAT(r.pure_roots, ElementsAre(O(A)));
  EXPECT_THAT(r.artificial_roots, ElementsAre(O(K)));
}

TEST(RootInferenceTest, OnlySourceCyclesGetRoots) {
  // The cycle 0 <-> 1 has the lowest ids but is reached from the cycle 2 <-> 3, which is the only
  // one that needs a root (choosing the lowest unreached object first would pick 0 as well).
  const InferredRoots r = Infer(MakeGraph(5, {{0, 1}, {1, 0}, {2, 3}, {3, 2}, {3, 0}, {1, 4}}));
  EXPECT_THAT(r.pure_roots, IsEmpty());
  EXPECT_THAT(r.artificial_roots, ElementsAre(O(2)));
}

TEST(RootInferenceTest, GcRootsLeaveOnlyTheUnreachedPart) {
  // 0 -> 1 is reached from the GC root 0; 2 -> 1 is garbage with a pure root; 3 <-> 4 -> 0 is a
  // garbage cycle that references the live part.
  const CsrGraph g = MakeGraph(5, {{0, 1}, {2, 1}, {3, 4}, {4, 3}, {4, 0}});
  const InferredRoots r = Infer(g, Objects({0}));
  EXPECT_THAT(r.pure_roots, ElementsAre(O(2)));
  EXPECT_THAT(r.artificial_roots, ElementsAre(O(3)));
  EXPECT_EQ(r.unreached_objects, 3u);
  const InferredRoots all = Infer(g, Objects({0, 2, 3, 0}));
  EXPECT_THAT(all.pure_roots, IsEmpty());
  EXPECT_THAT(all.artificial_roots, IsEmpty());
}

TEST(RootInferenceTest, WeakReferencesAreFollowedByDefault) {
  // 0 -weak-> 1: 1 is a pure root only when weak references are not followed.
  const CsrGraph g = MakeGraph(2, {{0, 1, true}});
  EXPECT_THAT(Infer(g).pure_roots, ElementsAre(O(0)));
  EXPECT_THAT(Infer(g, {}, {.follow_weak_references = false}).pure_roots, ElementsAre(O(0), O(1)));
}

TEST(RootInferenceTest, MillionObjectChainsAndCyclesDoNotRecurse) {
  const uint32_t n = 1'000'000;
  std::vector<testing::Edge> chain;
  for (uint32_t v = n - 1; v > 0; --v) chain.push_back({v, v - 1});
  const InferredRoots r = Infer(MakeGraph(n, chain));
  EXPECT_THAT(r.pure_roots, ElementsAre(O(n - 1)));
  EXPECT_THAT(r.artificial_roots, IsEmpty());
  chain.push_back({0, n - 1});  // closes the ring
  const InferredRoots ring = Infer(MakeGraph(n, chain));
  EXPECT_THAT(ring.pure_roots, IsEmpty());
  EXPECT_THAT(ring.artificial_roots, ElementsAre(O(0)));
}

TEST(RootInferenceTest, RejectsBadInput) {
  const CsrGraph g = MakeGraph(2, {{0, 1}});
  EXPECT_EQ(InferRoots(g, Objects({2})).status().code(), absl::StatusCode::kInvalidArgument);
  CsrGraph bad = MakeGraph(2, {{0, 1}});
  bad.targets[0] = ObjectIndex(5);
  EXPECT_EQ(InferRoots(bad, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(InferRootsOfUnreached(g, std::vector<bool>(3)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The definition by brute force: reach[u][v] from a BFS per object; v is inferred iff no GC root
// reaches it, every unreached u that reaches v is reached from v (v's component is a source), and
// v is the lowest index of its component.
void CheckAgainstDefinition(const testing::TestGraph& t, bool follow_weak) {
  const CsrGraph& g = t.graph;
  const uint32_t n = g.node_count();
  const std::vector<bool> none(n, false);
  const std::vector<bool> live = testing::BruteReachable(g, t.roots, none, follow_weak);
  std::vector<std::vector<bool>> reach(n);
  for (uint32_t u = 0; u < n; ++u) reach[u] = testing::BruteReachable(g, {O(u)}, none, follow_weak);
  std::vector<ObjectIndex> pure, artificial;
  uint64_t unreached = 0;
  for (uint32_t v = 0; v < n; ++v) {
    if (live[v]) continue;
    ++unreached;
    bool source = true, lowest = true, alone = true;
    for (uint32_t u = 0; u < n; ++u) {
      if (u == v || live[u] || !reach[u][v]) continue;
      if (!reach[v][u]) source = false;  // u reaches v but is not in v's component
      if (reach[v][u]) {
        alone = false;
        if (u < v) lowest = false;
      }
    }
    if (source && lowest) (alone ? pure : artificial).push_back(O(v));
  }
  const InferredRoots r = Infer(g, t.roots, {.follow_weak_references = follow_weak});
  EXPECT_EQ(r.pure_roots, pure);
  EXPECT_EQ(r.artificial_roots, artificial);
  EXPECT_EQ(r.unreached_objects, unreached);
}

TEST(RootInferenceTest, MatchesTheDefinitionOnThousandsOfRandomGraphs) {
  std::mt19937_64 rng(testing::PrintedSeed("RootInference"));
  for (int i = 0; i < 4000; ++i) {
    testing::RandomGraphShape shape;
    shape.max_nodes = i % 10 == 0 ? 120 : 30;
    shape.max_edges_per_node = (i % 4) * 0.6 + 0.3;
    shape.weak_probability = i % 3 == 0 ? 0.0 : 0.25;
    testing::TestGraph t = testing::RandomGraph(rng, shape);
    if (i % 2 == 0) t.roots.clear();  // a dump without GC root records
    for (bool follow_weak : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "graph " << i << " nodes " << t.graph.node_count()
                                        << " roots " << t.roots.size() << " weak " << follow_weak);
      CheckAgainstDefinition(t, follow_weak);
    }
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(RootInferenceTest, AddInferredRootsMarksTheGraph) {
  DumpInfo info;
  info.format = "test";
  HeapGraphBuilder b(info);
  ClassInfo node;
  node.name = "Node";
  node.instance_fields = {{"next", FieldType::kObject}};
  node.instance_size = 16;
  const ClassId c = b.AddClass(node, 0);
  b.AddInstance(0x10, c, {0x20});  // pure root
  b.AddInstance(0x20, c, {0});
  b.AddInstance(0x30, c, {0x40});  // cycle 0x30 <-> 0x40
  b.AddInstance(0x40, c, {0x30});
  auto graph = std::move(b).Build();
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_FALSE(graph->info().roots_inferred);
  auto with_roots = AddInferredRoots(*std::move(graph));
  ASSERT_TRUE(with_roots.ok()) << with_roots.status();
  const HeapGraph& g = *with_roots;
  EXPECT_TRUE(g.info().roots_inferred);
  ASSERT_EQ(g.gc_roots().size(), 2u);
  EXPECT_EQ(g.object_id(g.gc_roots()[0].object), 0x10u);
  EXPECT_EQ(g.gc_roots()[0].kind, GcRootKind::kPureRoot);
  EXPECT_EQ(g.object_id(g.gc_roots()[1].object), 0x30u);
  EXPECT_EQ(g.gc_roots()[1].kind, GcRootKind::kArtificialRoot);
  EXPECT_EQ(GcRootKindName(GcRootKind::kArtificialRoot), "ARTIFICIAL_ROOT");
  EXPECT_THAT(g.root_objects(), ElementsAre(O(0), O(2)));
  ASSERT_FALSE(g.info().warnings.empty());
  EXPECT_THAT(g.info().warnings.back(), ::testing::HasSubstr("1 pure roots"));
}

}  // namespace
}  // namespace heapwatch::analysis
