// Shortest paths from GC roots: golden cases and a brute-force comparison on random graphs.
#include "analysis/gc_root_paths.h"

#include <algorithm>
#include <optional>
#include <random>
#include <set>
#include <utility>

#include "gmock/gmock.h"
#include "graph_test_util.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::MakeGraph;
using testing::Objects;

ObjectIndex O(uint32_t v) { return ObjectIndex(v); }

using Cost = std::pair<uint32_t, uint32_t>;  // (weak references, references)

std::vector<uint32_t> Objects(const GraphPath& p) {
  std::vector<uint32_t> out;
  for (const GraphPathStep& s : p.steps) out.push_back(s.object.value);
  return out;
}

// Checks that `p` is a real path in `g` from a root to `target`, with edges and flags as the graph
// says.
void ExpectWellFormed(const CsrGraph& g, const std::vector<ObjectIndex>& roots, ObjectIndex target,
                      const GraphPath& p) {
  ASSERT_FALSE(p.steps.empty());
  EXPECT_NE(std::find(roots.begin(), roots.end(), p.steps.front().object), roots.end());
  EXPECT_EQ(p.steps.back().object, target);
  EXPECT_EQ(p.steps.back().edge, kNoEdge);
  uint32_t weak = 0;
  for (size_t i = 0; i + 1 < p.steps.size(); ++i) {
    const GraphPathStep& s = p.steps[i];
    ASSERT_GE(s.edge, g.offsets[s.object.value]);
    ASSERT_LT(s.edge, g.offsets[s.object.value + 1]);
    EXPECT_EQ(g.targets[s.edge], p.steps[i + 1].object);
    EXPECT_EQ(s.weak, g.is_weak(s.edge));
    EXPECT_NE(s.object, target) << "the path runs through its target";
    weak += s.weak;
  }
  EXPECT_EQ(p.weak_references, weak);
}

TEST(GcRootPathsTest, StrongPathBeatsShorterWeakPath) {
  // 0 -weak-> 2 (1 reference) versus 0 -> 3 -> 4 -> 2 (3 strong references).
  const CsrGraph g = MakeGraph(5, {{0, 2, true}, {0, 3}, {3, 4}, {4, 2}});
  auto paths = ShortestPathsFromGcRoots(g, Objects({0}), O(2), 2);
  ASSERT_TRUE(paths.ok()) << paths.status();
  ASSERT_EQ(paths->size(), 2u);
  EXPECT_THAT(Objects((*paths)[0]), ElementsAre(0, 3, 4, 2));
  EXPECT_EQ((*paths)[0].weak_references, 0u);
  EXPECT_EQ((*paths)[0].length(), 3u);
  EXPECT_THAT(Objects((*paths)[1]), ElementsAre(0, 2));
  EXPECT_EQ((*paths)[1].weak_references, 1u);
  EXPECT_TRUE((*paths)[1].steps[0].weak);
  EXPECT_EQ((*paths)[1].steps[0].edge, 0u);
}

TEST(GcRootPathsTest, WeakOnlyPathIsFollowedAndMarked) {
  // 0 -> 1 -weak-> 2 -> 3: nothing else reaches 3.
  const CsrGraph g = MakeGraph(4, {{0, 1}, {1, 2, true}, {2, 3}});
  auto paths = ShortestPathsFromGcRoots(g, Objects({0}), O(3));
  ASSERT_TRUE(paths.ok());
  ASSERT_EQ(paths->size(), 1u);
  const GraphPath& p = (*paths)[0];
  EXPECT_THAT(Objects(p), ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(p.weak_references, 1u);
  EXPECT_FALSE(p.steps[0].weak);
  EXPECT_TRUE(p.steps[1].weak);
  EXPECT_FALSE(p.steps[2].weak);
}

TEST(GcRootPathsTest, PrefersTheStrongOneOfTwoReferencesFromTheSameReferrer) {
  const CsrGraph g = MakeGraph(2, {{0, 1, true}, {0, 1}});
  auto paths = ShortestPathsFromGcRoots(g, Objects({0}), O(1), 5);
  ASSERT_TRUE(paths.ok());
  ASSERT_EQ(paths->size(), 1u);  // one referrer, one path
  EXPECT_EQ((*paths)[0].steps[0].edge, 1u);
  EXPECT_FALSE((*paths)[0].steps[0].weak);
}

TEST(GcRootPathsTest, RootTargetUnreachableTargetAndErrors) {
  const CsrGraph g = MakeGraph(4, {{0, 1}, {1, 0}, {3, 1}, {1, 1}});
  auto self = ShortestPathsFromGcRoots(g, Objects({0}), O(0), 3);
  ASSERT_TRUE(self.ok());
  // The root itself; its referrer 1 is reachable only through 0, and paths never run through their
  // target, so 0 -> 1 -> 0 is not offered.
  ASSERT_EQ(self->size(), 1u);
  EXPECT_THAT(Objects((*self)[0]), ElementsAre(0));
  // The self-loop 1 -> 1 is not a last hop: paths never run through their target.
  auto one = ShortestPathsFromGcRoots(g, Objects({0}), O(1), 3);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_THAT(Objects((*one)[0]), ElementsAre(0, 1));
  EXPECT_THAT(*ShortestPathsFromGcRoots(g, Objects({0}), O(3)), IsEmpty());
  EXPECT_THAT(*ShortestPathsFromGcRoots(g, Objects({0}), O(1), 0), IsEmpty());
  EXPECT_EQ(ShortestPathsFromGcRoots(g, Objects({0}), O(4)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ShortestPathsFromGcRoots(g, Objects({8}), O(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Lexicographic shortest costs from the roots by Bellman-Ford, never passing through `avoid`.
std::vector<std::optional<Cost>> BruteCosts(const CsrGraph& g,
                                            const std::vector<ObjectIndex>& roots, uint32_t avoid) {
  const uint32_t n = g.node_count();
  std::vector<std::optional<Cost>> cost(n);
  for (ObjectIndex r : roots) cost[r.value] = Cost{0, 0};
  for (uint32_t round = 0; round < n; ++round) {
    bool changed = false;
    for (uint32_t u = 0; u < n; ++u) {
      if (!cost[u] || u == avoid) continue;
      for (uint64_t e = g.offsets[u]; e < g.offsets[u + 1]; ++e) {
        const uint32_t v = g.targets[e].value;
        const Cost c{cost[u]->first + (g.is_weak(e) ? 1 : 0), cost[u]->second + 1};
        if (!cost[v] || c < *cost[v]) {
          cost[v] = c;
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  return cost;
}

TEST(GcRootPathsTest, MatchesBruteForceOnRandomGraphs) {
  std::mt19937_64 rng(testing::PrintedSeed("MatchesBruteForceOnRandomGraphs"));
  int queries = 0, weak_paths = 0, multi = 0;
  for (int i = 0; i < 1500; ++i) {
    testing::RandomGraphShape shape;
    shape.max_nodes = 40;
    shape.max_edges_per_node = 1 + i % 4;
    shape.weak_probability = i % 5 == 0 ? 0.0 : 0.3;
    const testing::TestGraph t = testing::RandomGraph(rng, shape);
    const CsrGraph& g = t.graph;
    const uint32_t n = g.node_count();
    const size_t k = 1 + i % 4;
    const auto full = BruteCosts(g, t.roots, n);
    for (uint32_t target = 0; target < n; ++target) {
      SCOPED_TRACE(::testing::Message() << "graph " << i << " target " << target << " k " << k);
      auto paths = ShortestPathsFromGcRoots(g, t.roots, O(target), k);
      ASSERT_TRUE(paths.ok()) << paths.status();
      ++queries;
      if (!full[target]) {
        EXPECT_THAT(*paths, IsEmpty());
        continue;
      }
      // Expected: the root itself, then one candidate per referrer, costed through paths avoiding
      // the target.
      const auto avoiding = BruteCosts(g, t.roots, target);
      std::vector<Cost> expected;
      if (std::find(t.roots.begin(), t.roots.end(), O(target)) != t.roots.end()) {
        expected.push_back({0, 0});
      }
      std::vector<Cost> by_referrer(n, Cost{UINT32_MAX, UINT32_MAX});
      for (uint32_t u = 0; u < n; ++u) {
        if (u == target || !avoiding[u]) continue;
        for (uint64_t e = g.offsets[u]; e < g.offsets[u + 1]; ++e) {
          if (g.targets[e].value != target) continue;
          by_referrer[u] =
              std::min(by_referrer[u],
                       Cost{avoiding[u]->first + (g.is_weak(e) ? 1 : 0), avoiding[u]->second + 1});
        }
      }
      std::vector<Cost> referrer_costs;
      for (const Cost& c : by_referrer) {
        if (c.first != UINT32_MAX) referrer_costs.push_back(c);
      }
      std::sort(referrer_costs.begin(), referrer_costs.end());
      expected.insert(expected.end(), referrer_costs.begin(), referrer_costs.end());
      ASSERT_EQ(expected.front(), *full[target]);  // sanity of the brute force itself
      expected.resize(std::min(expected.size(), k));

      ASSERT_EQ(paths->size(), expected.size());
      std::set<uint32_t> last_hops;
      for (size_t p = 0; p < paths->size(); ++p) {
        const GraphPath& path = (*paths)[p];
        ExpectWellFormed(g, t.roots, O(target), path);
        EXPECT_EQ((Cost{path.weak_references, static_cast<uint32_t>(path.length())}), expected[p])
            << "path " << p;
        if (path.steps.size() >= 2) {
          EXPECT_TRUE(last_hops.insert(path.steps[path.steps.size() - 2].object.value).second)
              << "two paths share their last hop";
        }
      }
      weak_paths += (*paths)[0].weak_references > 0;
      multi += paths->size() > 1;
    }
  }
  std::cout << "[ queries  ] " << queries << " path queries, " << weak_paths
            << " whose best path needs a weak reference, " << multi << " with several paths"
            << std::endl;
  EXPECT_GT(weak_paths, 0);
  EXPECT_GT(multi, 0);
}

TEST(GcRootPathsTest, WithoutWeakReferencesTheLengthIsThePlainBfsDistance) {
  std::mt19937_64 rng(testing::PrintedSeed("WithoutWeakReferencesTheLengthIsThePlainBfsDistance"));
  const uint32_t n = 50000;
  std::vector<testing::Edge> edges;
  std::uniform_int_distribution<uint32_t> any(0, n - 1);
  for (uint32_t i = 0; i < 2 * n; ++i) edges.push_back({any(rng), any(rng)});
  const CsrGraph g = MakeGraph(n, edges);
  const std::vector<ObjectIndex> roots = Objects({1, 2, 3});
  // Plain BFS distances.
  std::vector<uint32_t> dist(n, UINT32_MAX);
  std::vector<uint32_t> queue;
  for (ObjectIndex r : roots) {
    dist[r.value] = 0;
    queue.push_back(r.value);
  }
  for (size_t h = 0; h < queue.size(); ++h) {
    const uint32_t u = queue[h];
    for (uint64_t e = g.offsets[u]; e < g.offsets[u + 1]; ++e) {
      const uint32_t v = g.targets[e].value;
      if (dist[v] == UINT32_MAX) {
        dist[v] = dist[u] + 1;
        queue.push_back(v);
      }
    }
  }
  for (uint32_t target = 0; target < n; target += 997) {
    auto paths = ShortestPathsFromGcRoots(g, roots, O(target));
    ASSERT_TRUE(paths.ok());
    if (dist[target] == UINT32_MAX) {
      EXPECT_THAT(*paths, IsEmpty());
      continue;
    }
    ASSERT_EQ(paths->size(), 1u);
    EXPECT_EQ((*paths)[0].length(), dist[target]) << target;
    ExpectWellFormed(g, roots, O(target), (*paths)[0]);
  }
}

}  // namespace
}  // namespace heapwatch::analysis
