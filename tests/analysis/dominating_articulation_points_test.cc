// Dominating articulation points (seeds/001 Definition 11, Listing 4.4) and the thesis's DAP
// dynamic size on DAGs: golden cases, and brute-force oracles on thousands of random DAGs (each
// candidate removed in turn: Definition 10 by undirected connectivity, domination of its reach by
// reachability from the super root; dynamic sizes by one search per node).
#include "analysis/dominating_articulation_points.h"

#include <algorithm>
#include <iostream>
#include <random>
#include <vector>

#include "analysis/dap_dynamic_size.h"
#include "gmock/gmock.h"
#include "graph_test_util.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

using testing::Edge;
using testing::MakeGraph;
using testing::Objects;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

ObjectIndex O(uint32_t v) { return ObjectIndex(v); }

// ---- Brute force, independent of the code under test.

// Nodes reachable from `from` (included) in the DAG.
std::vector<bool> ReachFrom(const CsrGraph& dag, uint32_t from) {
  const std::vector<bool> none(dag.node_count(), false);
  return testing::BruteReachable(dag, {O(from)}, none, true);
}

// Flow roots by their definition: the given root nodes and every node without a predecessor.
std::vector<ObjectIndex> BruteFlowRoots(const CsrGraph& dag, const std::vector<ObjectIndex>& roots) {
  const uint32_t n = dag.node_count();
  std::vector<bool> is_root(n, false), has_pred(n, false);
  for (ObjectIndex r : roots) is_root[r.value] = true;
  for (ObjectIndex t : dag.targets) has_pred[t.value] = true;
  std::vector<ObjectIndex> out;
  for (uint32_t v = 0; v < n; ++v) {
    if (is_root[v] || !has_pred[v]) out.push_back(O(v));
  }
  return out;
}

// Definition 10 on the undirected flow graph (DAG edges both ways, super root n joined to every
// flow root): a is an articulation point iff removing it leaves the other nodes disconnected.
bool IsArticulationPoint(const CsrGraph& dag, const std::vector<ObjectIndex>& flow_roots,
                         uint32_t a) {
  const uint32_t n = dag.node_count();
  std::vector<std::vector<uint32_t>> adj(size_t{n} + 1);
  for (uint32_t v = 0; v < n; ++v) {
    for (ObjectIndex w : dag.successors(O(v))) {
      adj[v].push_back(w.value);
      adj[w.value].push_back(v);
    }
  }
  for (ObjectIndex r : flow_roots) {
    adj[n].push_back(r.value);
    adj[r.value].push_back(n);
  }
  std::vector<bool> seen(size_t{n} + 1, false);
  seen[a] = true;
  const uint32_t start = a == n ? 0 : n;
  std::vector<uint32_t> queue = {start};
  seen[start] = true;
  for (size_t head = 0; head < queue.size(); ++head) {
    for (uint32_t w : adj[queue[head]]) {
      if (!seen[w]) {
        seen[w] = true;
        queue.push_back(w);
      }
    }
  }
  return std::find(seen.begin(), seen.end(), false) != seen.end();
}

// Definition 11 by brute force: a is an articulation point, and removing a makes exactly the nodes
// reachable from a (a excepted) unreachable from the super root.
std::vector<bool> BruteDominatingArticulationPoints(const CsrGraph& dag,
                                                    const std::vector<ObjectIndex>& roots) {
  const uint32_t n = dag.node_count();
  const std::vector<ObjectIndex> flow_roots = BruteFlowRoots(dag, roots);
  std::vector<bool> out(n, false);
  for (uint32_t a = 0; a < n; ++a) {
    std::vector<bool> removed(n, false);
    removed[a] = true;
    const std::vector<bool> after = testing::BruteReachable(dag, flow_roots, removed, true);
    const std::vector<bool> reach = ReachFrom(dag, a);
    bool dominates_reach = true;
    for (uint32_t v = 0; v < n; ++v) {
      if (v == a) continue;
      // Everything is reachable before the removal (every node lies below a source); v becomes
      // unreachable iff a dominates v.
      if (reach[v] != !after[v]) dominates_reach = false;
    }
    out[a] = dominates_reach && IsArticulationPoint(dag, flow_roots, a);
  }
  return out;
}

// ---- Random DAGs in reverse topological order (every edge to a lower node).

struct RandomDag {
  CsrGraph dag;
  std::vector<ObjectIndex> roots;
  std::vector<uint64_t> bytes;
  std::vector<uint32_t> objects;
};

RandomDag MakeRandomDag(std::mt19937_64& rng, uint32_t max_nodes) {
  auto uniform = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  const uint32_t n = static_cast<uint32_t>(uniform(1, max_nodes));
  std::vector<Edge> edges;
  // A forest (heap-like: most nodes have one owner, which makes DAPs) plus extra edges that share
  // substructures; the density varies from tree to dense DAG.
  const double extra = chance(0.3) ? 0.0 : std::uniform_real_distribution<double>(0, 2.5)(rng);
  for (uint32_t v = 0; v + 1 < n; ++v) {
    if (chance(0.85)) edges.push_back({static_cast<uint32_t>(uniform(v + 1, n - 1)), v});
  }
  const uint64_t m = static_cast<uint64_t>(extra * n);
  for (uint64_t i = 0; i < m && n > 1; ++i) {
    const uint32_t a = static_cast<uint32_t>(uniform(1, n - 1));
    edges.push_back({a, static_cast<uint32_t>(uniform(0, a - 1))});
  }
  if (!edges.empty() && chance(0.3)) edges.push_back(edges[uniform(0, edges.size() - 1)]);
  std::shuffle(edges.begin(), edges.end(), rng);
  RandomDag out;
  out.dag = MakeGraph(n, edges);
  const uint64_t roots = uniform(0, 3);
  for (uint64_t i = 0; i < roots; ++i) out.roots.push_back(O(static_cast<uint32_t>(uniform(0, n - 1))));
  for (uint32_t v = 0; v < n; ++v) {
    out.bytes.push_back(uniform(0, 3) * 8 + 16);
    out.objects.push_back(static_cast<uint32_t>(uniform(1, 4)));
  }
  return out;
}

// ---- Golden cases.

TEST(DominatingArticulationPointsTest, Chain) {
  // 3 -> 2 -> 1 -> 0: every node with a successor dominates its reach.
  const CsrGraph dag = MakeGraph(4, {{3, 2}, {2, 1}, {1, 0}});
  auto points = ComputeDagDominatingArticulationPoints(dag, {});
  ASSERT_TRUE(points.ok()) << points.status();
  EXPECT_THAT(points->flow_roots, ElementsAre(O(3)));
  EXPECT_THAT(points->immediate_dominators, ElementsAre(O(1), O(2), O(3), O(4)));
  EXPECT_THAT(points->points, ElementsAre(O(1), O(2), O(3)));
}

TEST(DominatingArticulationPointsTest, DiamondHasOnlyTheTop) {
  // 3 -> 2, 3 -> 1, 2 -> 0, 1 -> 0: 2 and 1 share 0, so neither dominates its reach.
  const CsrGraph dag = MakeGraph(4, {{3, 2}, {3, 1}, {2, 0}, {1, 0}});
  auto points = ComputeDagDominatingArticulationPoints(dag, {});
  ASSERT_TRUE(points.ok());
  EXPECT_THAT(points->points, ElementsAre(O(3)));
}

TEST(DominatingArticulationPointsTest, SecondRootTakesDominationAway) {
  // 2 -> 1 -> 0, and 1 is also a GC root: 2 no longer dominates 1, 1 still dominates 0.
  const CsrGraph dag = MakeGraph(3, {{2, 1}, {1, 0}});
  auto points = ComputeDagDominatingArticulationPoints(dag, Objects({1}));
  ASSERT_TRUE(points.ok());
  EXPECT_THAT(points->flow_roots, ElementsAre(O(1), O(2)));
  EXPECT_THAT(points->points, ElementsAre(O(1)));
}

TEST(DominatingArticulationPointsTest, UnbalancedTreeEveryEntryIsAPoint) {
  // The thesis's unbalanced tree (§5.1): list entries 6, 4, 2 each hold a data node (5, 3, 1) and
  // the next entry; the last entry 0 is a leaf. "Each entry node is a dominating articulation
  // point" (the leaf entry has nothing to dominate).
  const CsrGraph dag = MakeGraph(7, {{6, 5}, {6, 4}, {4, 3}, {4, 2}, {2, 1}, {2, 0}});
  auto points = ComputeDagDominatingArticulationPoints(dag, {});
  ASSERT_TRUE(points.ok());
  EXPECT_THAT(points->points, ElementsAre(O(2), O(4), O(6)));
  std::vector<uint64_t> bytes(7, 10);
  std::vector<uint32_t> objects(7, 1);
  auto sizes = ComputeDapDynamicSizesOfDag(dag, *points, bytes, objects);
  ASSERT_TRUE(sizes.ok());
  EXPECT_THAT(sizes->objects, ElementsAre(1, 1, 3, 1, 5, 1, 7));
  EXPECT_THAT(sizes->bytes, ElementsAre(10, 10, 30, 10, 50, 10, 70));
  EXPECT_EQ(sizes->points_used, 2u);  // 4 uses 2, 6 uses 4
}

TEST(DominatingArticulationPointsTest, LeafNodeZeroIsNoPoint) {
  // A single node (id 0, no successors) must not be taken for a DAP by Listing 4.4's "max == i"
  // with max starting at 0.
  const CsrGraph dag = MakeGraph(1, {});
  auto points = ComputeDagDominatingArticulationPoints(dag, {});
  ASSERT_TRUE(points.ok());
  EXPECT_THAT(points->points, IsEmpty());
}

TEST(DominatingArticulationPointsTest, EmptyGraph) {
  const CsrGraph dag = MakeGraph(0, {});
  auto points = ComputeDagDominatingArticulationPoints(dag, {});
  ASSERT_TRUE(points.ok());
  EXPECT_THAT(points->points, IsEmpty());
  auto sizes = ComputeDapDynamicSizesOfDag(dag, *points, {}, {});
  ASSERT_TRUE(sizes.ok());
  EXPECT_THAT(sizes->bytes, IsEmpty());
}

TEST(DominatingArticulationPointsTest, LongChainIsIterative) {
  // 10^6 nodes in a chain: no recursion, and the DAPs make the dynamic sizes linear (each search
  // stops at the next node).
  const uint32_t n = 1000000;
  std::vector<Edge> edges;
  for (uint32_t v = 1; v < n; ++v) edges.push_back({v, v - 1});
  const CsrGraph dag = MakeGraph(n, edges);
  auto points = ComputeDagDominatingArticulationPoints(dag, {});
  ASSERT_TRUE(points.ok());
  EXPECT_EQ(points->points.size(), n - 1);
  std::vector<uint64_t> bytes(n, 16);
  std::vector<uint32_t> objects(n, 1);
  DapDynamicSizeOptions linear;  // fail fast instead of running for hours if the DAPs were lost
  linear.max_visits = uint64_t{2} * n;
  auto sizes = ComputeDapDynamicSizesOfDag(dag, *points, bytes, objects, linear);
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_EQ(sizes->objects[n - 1], n);
  EXPECT_EQ(sizes->bytes[n - 1], uint64_t{16} * n);
  EXPECT_EQ(sizes->visits, uint64_t{2} * n - 1);
}

TEST(DominatingArticulationPointsTest, Errors) {
  const CsrGraph up = MakeGraph(2, {{0, 1}});  // edge to a higher node
  EXPECT_EQ(ComputeDagDominatingArticulationPoints(up, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const CsrGraph self = MakeGraph(2, {{1, 1}});
  EXPECT_EQ(ComputeDagDominatingArticulationPoints(self, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const CsrGraph dag = MakeGraph(2, {{1, 0}});
  EXPECT_EQ(ComputeDagDominatingArticulationPoints(dag, Objects({2})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DominatingArticulationPointsOfDag(dag, Objects({1})).status().code(),
            absl::StatusCode::kInvalidArgument);  // one idom for two nodes
  EXPECT_EQ(DominatingArticulationPointsOfDag(dag, Objects({0, 2})).status().code(),
            absl::StatusCode::kInvalidArgument);  // idom not larger than its node
  EXPECT_EQ(DominatingArticulationPointsOfDag(dag, Objects({1, 3})).status().code(),
            absl::StatusCode::kInvalidArgument);  // beyond the super root
  EXPECT_EQ(DominatingArticulationPointsOfDag(dag, std::vector<ObjectIndex>{kNoObject, O(2)}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto points = ComputeDagDominatingArticulationPoints(dag, {});
  ASSERT_TRUE(points.ok());
  const std::vector<uint64_t> bytes = {8, 8};
  const std::vector<uint32_t> objects = {1, 1};
  EXPECT_EQ(ComputeDapDynamicSizesOfDag(dag, *points, std::vector<uint64_t>{8}, objects)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ComputeDapDynamicSizesOfDag(up, *points, bytes, objects).status().code(),
            absl::StatusCode::kInvalidArgument);
  DapDynamicSizeOptions budget;
  budget.max_visits = 2;  // node 0 alone, then node 1 visits 1 and uses 0: 3 visits
  EXPECT_EQ(ComputeDapDynamicSizesOfDag(dag, *points, bytes, objects, budget).status().code(),
            absl::StatusCode::kResourceExhausted);
  budget.max_visits = 3;
  EXPECT_TRUE(ComputeDapDynamicSizesOfDag(dag, *points, bytes, objects, budget).ok());
}

// ---- Oracles on random DAGs.

TEST(DominatingArticulationPointsTest, MatchesDefinition11OnRandomDags) {
  std::mt19937_64 rng(testing::PrintedSeed("MatchesDefinition11OnRandomDags"));
  uint64_t points_seen = 0, non_points_with_successors = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    const RandomDag t = MakeRandomDag(rng, 24);
    auto points = ComputeDagDominatingArticulationPoints(t.dag, t.roots);
    ASSERT_TRUE(points.ok()) << points.status();
    ASSERT_EQ(points->flow_roots, BruteFlowRoots(t.dag, t.roots)) << "iteration " << iteration;
    const std::vector<bool> expected = BruteDominatingArticulationPoints(t.dag, t.roots);
    ASSERT_EQ(points->is_point, expected) << "iteration " << iteration;
    for (uint32_t v = 0; v < t.dag.node_count(); ++v) {
      ASSERT_EQ(points->is_point[v],
                std::find(points->points.begin(), points->points.end(), O(v)) !=
                    points->points.end());
      if (expected[v]) {
        ++points_seen;
      } else if (!t.dag.successors(O(v)).empty()) {
        ++non_points_with_successors;
      }
    }
  }
  // The random DAGs exercise both answers.
  std::cout << "DAPs " << points_seen << ", other inner nodes " << non_points_with_successors
            << std::endl;
  EXPECT_GT(points_seen, 1000u);
  EXPECT_GT(non_points_with_successors, 1000u);
}

TEST(DominatingArticulationPointsTest, DynamicSizesMatchOneSearchPerNode) {
  std::mt19937_64 rng(testing::PrintedSeed("DynamicSizesMatchOneSearchPerNode"));
  uint64_t used = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    const RandomDag t = MakeRandomDag(rng, 40);
    auto points = ComputeDagDominatingArticulationPoints(t.dag, t.roots);
    ASSERT_TRUE(points.ok());
    auto sizes = ComputeDapDynamicSizesOfDag(t.dag, *points, t.bytes, t.objects);
    ASSERT_TRUE(sizes.ok()) << sizes.status();
    used += sizes->points_used;
    for (uint32_t v = 0; v < t.dag.node_count(); ++v) {
      const std::vector<bool> reach = ReachFrom(t.dag, v);
      uint64_t bytes = 0, objects = 0;
      for (uint32_t w = 0; w < t.dag.node_count(); ++w) {
        if (!reach[w]) continue;
        bytes += t.bytes[w];
        objects += t.objects[w];
      }
      ASSERT_EQ(sizes->bytes[v], bytes) << "iteration " << iteration << " node " << v;
      ASSERT_EQ(sizes->objects[v], objects) << "iteration " << iteration << " node " << v;
    }
  }
  std::cout << "DAPs used " << used << std::endl;
  EXPECT_GT(used, 2000u);  // the DAP shortcut was taken, not only plain searches
}

}  // namespace
}  // namespace heapwatch::analysis
