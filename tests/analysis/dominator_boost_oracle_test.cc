// ComputeDominatorTree against Boost.Graph's lengauer_tarjan_dominator_tree: thousands of random
// graphs and deep graphs of 10^6 objects. Every computed tree also passes the verifier
// (exhaustively on the small graphs).
#include <random>

#include "analysis/dominator_tree.h"
#include "analysis/dominator_verifier.h"
#include "gmock/gmock.h"
#include "graph_test_util.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

using testing::BoostImmediateDominators;
using testing::Edge;
using testing::FlowSources;
using testing::Idoms;
using testing::MakeGraph;

// Computes the tree, checks it against Boost (on the same flow graph, artificial roots included)
// and the verifier at `level`. Returns the tree.
DominatorTree CheckAgainstBoost(const CsrGraph& g, const std::vector<ObjectIndex>& roots,
                                const DominatorOptions& options, VerificationLevel level) {
  auto tree = ComputeDominatorTree(g, roots, options);
  EXPECT_TRUE(tree.ok()) << tree.status();
  if (!tree.ok()) std::abort();
  const std::vector<ObjectIndex> expected =
      BoostImmediateDominators(g, FlowSources(roots, *tree), options.follow_weak_references);
  const std::vector<ObjectIndex> actual = Idoms(*tree);
  EXPECT_EQ(actual.size(), expected.size());
  size_t mismatches = 0;
  for (size_t v = 0; v < expected.size() && mismatches < 5; ++v) {
    if (actual[v] != expected[v]) {
      ++mismatches;
      ADD_FAILURE() << "object " << v << ": idom " << actual[v].value << ", Boost says "
                    << expected[v].value;
    }
  }
  const Status verified = VerifyDominatorTree(g, roots, *tree, level);
  EXPECT_TRUE(verified.ok()) << verified;
  return std::move(tree).value();
}

// keep_unreachable's artificial roots: unreachable from the GC roots; every unreachable object
// without an unreachable referrer is one; each later one was not reachable from the ones before.
void CheckArtificialRoots(const CsrGraph& g, const std::vector<ObjectIndex>& roots,
                          const DominatorTree& tree, bool follow_weak) {
  const uint32_t n = g.node_count();
  const std::vector<bool> none(n, false);
  const std::vector<bool> live = testing::BruteReachable(g, roots, none, follow_weak);
  std::vector<bool> has_garbage_referrer(n, false);
  for (uint32_t u = 0; u < n; ++u) {
    if (live[u]) continue;
    for (uint64_t e = g.offsets[u]; e < g.offsets[u + 1]; ++e) {
      if (!follow_weak && g.is_weak(e)) continue;
      if (g.targets[e].value != u) has_garbage_referrer[g.targets[e].value] = true;
    }
  }
  std::vector<bool> is_artificial(n, false);
  for (ObjectIndex r : tree.artificial_roots()) {
    EXPECT_FALSE(live[r.value]) << r.value;
    is_artificial[r.value] = true;
  }
  for (uint32_t v = 0; v < n; ++v) {
    EXPECT_EQ(tree.reachable_from_gc_roots(ObjectIndex(v)), static_cast<bool>(live[v])) << v;
    if (!live[v] && !has_garbage_referrer[v]) {
      EXPECT_TRUE(is_artificial[v]) << v;
    }
  }
  std::vector<ObjectIndex> before = roots;
  for (ObjectIndex r : tree.artificial_roots()) {
    EXPECT_FALSE(testing::BruteReachable(g, before, none, follow_weak)[r.value]) << r.value;
    before.push_back(r);
  }
}

TEST(DominatorBoostOracleTest, ThousandsOfRandomGraphs) {
  std::mt19937_64 rng(testing::PrintedSeed("ThousandsOfRandomGraphs"));
  int graphs = 0;
  for (int i = 0; i < 3000; ++i) {
    testing::RandomGraphShape shape;
    shape.max_nodes = i % 10 == 0 ? 400 : 40;
    shape.max_edges_per_node = (i % 4) + 0.5;
    shape.weak_probability = i % 3 == 0 ? 0.0 : 0.25;
    const testing::TestGraph t = testing::RandomGraph(rng, shape);
    const VerificationLevel level = t.graph.node_count() <= 60 ? VerificationLevel::kExhaustive
                                                               : VerificationLevel::kProperties;
    for (bool follow_weak : {true, false}) {
      for (bool keep : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "graph " << i << " nodes " << t.graph.node_count()
                                          << " follow_weak " << follow_weak << " keep " << keep);
        DominatorOptions options{.follow_weak_references = follow_weak, .keep_unreachable = keep};
        const DominatorTree tree = CheckAgainstBoost(t.graph, t.roots, options, level);
        if (keep) CheckArtificialRoots(t.graph, t.roots, tree, follow_weak);
        ++graphs;
      }
    }
    if (::testing::Test::HasFailure()) break;
  }
  std::cout << "[ graphs   ] " << graphs << " dominator trees compared with Boost" << std::endl;
}

TEST(DominatorBoostOracleTest, LargerRandomGraph) {
  std::mt19937_64 rng(testing::PrintedSeed("LargerRandomGraph"));
  const uint32_t n = 200000;
  std::vector<Edge> edges;
  std::uniform_int_distribution<uint32_t> any(0, n - 1);
  for (uint32_t i = 0; i < 3 * n; ++i) edges.push_back({any(rng), any(rng), i % 7 == 0});
  // A spine so that much of the graph is deep.
  for (uint32_t v = 0; v + 2 < n; v += 2) edges.push_back({v, v + 2});
  std::shuffle(edges.begin(), edges.end(), rng);
  const CsrGraph g = MakeGraph(n, edges);
  const std::vector<ObjectIndex> roots = testing::Objects({0, 17, 4242});
  for (bool follow_weak : {true, false}) {
    CheckAgainstBoost(g, roots, {.follow_weak_references = follow_weak},
                      VerificationLevel::kProperties);
  }
}

constexpr uint32_t kDeep = 1000000;

TEST(DominatorBoostOracleTest, DeepChain) {
  std::vector<Edge> edges;
  for (uint32_t v = 0; v + 1 < kDeep; ++v) edges.push_back({v, v + 1});
  const CsrGraph g = MakeGraph(kDeep, edges);
  const DominatorTree tree =
      CheckAgainstBoost(g, testing::Objects({0}), {}, VerificationLevel::kProperties);
  for (uint32_t v = 1; v < kDeep; ++v)
    ASSERT_EQ(tree.immediate_dominator(ObjectIndex(v)).value, v - 1);
  EXPECT_EQ(tree.Depths()[kDeep - 1], kDeep);
}

TEST(DominatorBoostOracleTest, DeepLadder) {
  // Diamonds in a row: a_i -> b_i, a_i -> c_i, b_i -> a_{i+1}, c_i -> a_{i+1}; a_i = 3i, b_i =
  // 3i+1, c_i = 3i+2. Each a_{i+1} is dominated by a_i, never by b_i or c_i.
  const uint32_t rungs = kDeep / 3;
  std::vector<Edge> edges;
  for (uint32_t i = 0; i < rungs; ++i) {
    const uint32_t a = 3 * i;
    edges.push_back({a, a + 1});
    edges.push_back({a, a + 2});
    if (i + 1 < rungs) {
      edges.push_back({a + 1, a + 3});
      edges.push_back({a + 2, a + 3});
    }
  }
  const CsrGraph g = MakeGraph(3 * rungs, edges);
  const DominatorTree tree =
      CheckAgainstBoost(g, testing::Objects({0}), {}, VerificationLevel::kProperties);
  for (uint32_t i = 1; i < rungs; ++i) {
    ASSERT_EQ(tree.immediate_dominator(ObjectIndex(3 * i)).value, 3 * (i - 1));
    ASSERT_EQ(tree.immediate_dominator(ObjectIndex(3 * i + 1)).value, 3 * i);
  }
}

TEST(DominatorBoostOracleTest, LongCycleWithBackReferences) {
  // 0 -> 1 -> ... -> n-1 -> 0, and every 1000th object also references object 1: path compression
  // runs over paths of up to 10^6 forest links.
  std::vector<Edge> edges;
  for (uint32_t v = 0; v < kDeep; ++v) edges.push_back({v, (v + 1) % kDeep});
  for (uint32_t v = 999; v < kDeep; v += 1000) edges.push_back({v, 1});
  const CsrGraph g = MakeGraph(kDeep, edges);
  const DominatorTree tree =
      CheckAgainstBoost(g, testing::Objects({0}), {}, VerificationLevel::kProperties);
  EXPECT_EQ(tree.immediate_dominator(ObjectIndex(kDeep - 1)).value, kDeep - 2);
}

TEST(DominatorBoostOracleTest, ItemsBelowALongListAlsoHeldByAMap) {
  // root -> list_0 -> list_1 -> ... (a linked list), list_i -> item_i, and root -> map -> every
  // item. The DFS meets the items deep below the list; their immediate dominator is the root (the
  // pattern that makes Semi-NCA quadratic).
  const uint32_t items = kDeep / 2 - 1;
  const uint32_t root = 0, map = 1;
  auto list = [](uint32_t i) { return 2 + 2 * i; };
  auto item = [](uint32_t i) { return 3 + 2 * i; };
  std::vector<Edge> edges;
  edges.push_back({root, list(0)});
  edges.push_back({root, map});
  for (uint32_t i = 0; i < items; ++i) {
    if (i + 1 < items) edges.push_back({list(i), list(i + 1)});
    edges.push_back({list(i), item(i)});
  }
  for (uint32_t i = 0; i < items; ++i) edges.push_back({map, item(i)});
  const CsrGraph g = MakeGraph(2 + 2 * items, edges);
  const DominatorTree tree =
      CheckAgainstBoost(g, testing::Objects({root}), {}, VerificationLevel::kProperties);
  for (uint32_t i = 0; i < items; i += 9973) {
    EXPECT_EQ(tree.immediate_dominator(ObjectIndex(item(i))).value, root);
  }
}

}  // namespace
}  // namespace heapwatch::analysis
