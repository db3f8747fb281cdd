// Dominating articulation points (seeds/001 Definition 11, Listing 4.4) and the thesis's DAP
// dynamic size: golden cases, brute-force oracles on thousands of random DAGs and random heap-like
// graphs (each candidate removed in turn: Definition 10 by undirected connectivity, domination of
// its reach by reachability from the super root; dynamic sizes by one search per object), and the
// corpus dumps against the exact dynamic sizes of dynamic_size.h.
#include "analysis/dominating_articulation_points.h"

#include <algorithm>
#include <iostream>
#include <random>
#include <vector>

#include "analysis/dap_dynamic_size.h"
#include "analysis/dynamic_size.h"
#include "analysis/strong_components.h"
#include "collectors/dumps/hprof/hprof_reader.h"
#include "gmock/gmock.h"
#include "graph_test_util.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

using testing::Edge;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::MakeGraph;
using testing::Objects;

#ifndef HEAPWATCH_CORPORA_DIR
#error HEAPWATCH_CORPORA_DIR must be defined by the build
#endif

ObjectIndex O(uint32_t v) { return ObjectIndex(v); }

// ---- Brute force, independent of the code under test.

// Nodes reachable from `from` (included) in the DAG.
std::vector<bool> ReachFrom(const CsrGraph& dag, uint32_t from) {
  const std::vector<bool> none(dag.node_count(), false);
  return testing::BruteReachable(dag, {O(from)}, none, true);
}

// Flow roots by their definition: the given root nodes and every node without a predecessor.
std::vector<ObjectIndex> BruteFlowRoots(const CsrGraph& dag,
                                        const std::vector<ObjectIndex>& roots) {
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

// ---- Condensations made by hand: a DAG in reverse topological order is its own condensation.

Condensation FromDag(CsrGraph dag, std::vector<uint64_t> bytes = {},
                     std::vector<uint32_t> objects = {}) {
  Condensation c;
  c.component_count = dag.node_count();
  for (uint32_t v = 0; v < c.component_count; ++v) c.component_of.push_back(ComponentId(v));
  c.dag = std::move(dag);
  c.component_bytes = bytes.empty() ? std::vector<uint64_t>(c.component_count, 8) : bytes;
  c.component_objects = objects.empty() ? std::vector<uint32_t>(c.component_count, 1) : objects;
  return c;
}

std::vector<ComponentId> C(std::initializer_list<uint32_t> values) {
  std::vector<ComponentId> out;
  for (uint32_t v : values) out.push_back(ComponentId(v));
  return out;
}

std::vector<ObjectIndex> AsNodes(const std::vector<ComponentId>& components) {
  std::vector<ObjectIndex> out;
  for (ComponentId c : components) out.push_back(O(c.value));
  return out;
}

// ---- Random DAGs in reverse topological order (every edge to a lower node).

struct RandomDag {
  Condensation condensation;
  std::vector<ObjectIndex> roots;
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
  std::shuffle(edges.begin(), edges.end(), rng);
  std::vector<uint64_t> bytes;
  std::vector<uint32_t> objects;
  for (uint32_t v = 0; v < n; ++v) {
    bytes.push_back(uniform(0, 3) * 8 + 16);
    objects.push_back(static_cast<uint32_t>(uniform(1, 4)));
  }
  RandomDag out;
  out.condensation = FromDag(MakeGraph(n, edges), bytes, objects);
  const uint64_t roots = uniform(0, 3);
  for (uint64_t i = 0; i < roots; ++i)
    out.roots.push_back(O(static_cast<uint32_t>(uniform(0, n - 1))));
  return out;
}

// ---- Golden cases.

TEST(DominatingArticulationPointsTest, Chain) {
  // 3 -> 2 -> 1 -> 0: every node with a successor dominates its reach.
  const Condensation c = FromDag(MakeGraph(4, {{3, 2}, {2, 1}, {1, 0}}));
  auto points = ComputeDominatingArticulationPoints(c, {});
  ASSERT_TRUE(points.ok()) << points.status();
  EXPECT_EQ(points->scc_roots, C({3}));
  EXPECT_EQ(points->immediate_dominators, C({1, 2, 3, 4}));
  EXPECT_EQ(points->points, C({1, 2, 3}));
}

TEST(DominatingArticulationPointsTest, DiamondHasOnlyTheTop) {
  // 3 -> 2, 3 -> 1, 2 -> 0, 1 -> 0: 2 and 1 share 0, so neither dominates its reach.
  const Condensation c = FromDag(MakeGraph(4, {{3, 2}, {3, 1}, {2, 0}, {1, 0}}));
  auto points = ComputeDominatingArticulationPoints(c, {});
  ASSERT_TRUE(points.ok());
  EXPECT_EQ(points->points, C({3}));
}

TEST(DominatingArticulationPointsTest, SecondRootTakesDominationAway) {
  // 2 -> 1 -> 0, and 1 is also a GC root: 2 no longer dominates 1, 1 still dominates 0.
  const Condensation c = FromDag(MakeGraph(3, {{2, 1}, {1, 0}}));
  auto points = ComputeDominatingArticulationPoints(c, Objects({1}));
  ASSERT_TRUE(points.ok());
  EXPECT_EQ(points->scc_roots, C({1, 2}));
  EXPECT_EQ(points->points, C({1}));
}

TEST(DominatingArticulationPointsTest, UnbalancedTreeEveryEntryIsAPoint) {
  // The thesis's unbalanced tree (§5.1): list entries 6, 4, 2 each hold a data node (5, 3, 1) and
  // the next entry; the last entry 0 is a leaf. "Each entry node is a dominating articulation
  // point" (the leaf entry has nothing to dominate).
  const Condensation c = FromDag(MakeGraph(7, {{6, 5}, {6, 4}, {4, 3}, {4, 2}, {2, 1}, {2, 0}}),
                                 std::vector<uint64_t>(7, 10));
  auto points = ComputeDominatingArticulationPoints(c, {});
  ASSERT_TRUE(points.ok());
  EXPECT_EQ(points->points, C({2, 4, 6}));
  auto sizes = ComputeDapDynamicSizes(c, *points);
  ASSERT_TRUE(sizes.ok());
  std::vector<uint64_t> objects, bytes;
  for (const DynamicSize& d : sizes->of_component) {
    objects.push_back(d.objects);
    bytes.push_back(d.bytes);
  }
  EXPECT_THAT(objects, ElementsAre(1, 1, 3, 1, 5, 1, 7));
  EXPECT_THAT(bytes, ElementsAre(10, 10, 30, 10, 50, 10, 70));
  EXPECT_EQ(sizes->points_used, 2u);  // 4 uses 2, 6 uses 4
}

TEST(DominatingArticulationPointsTest, LeafComponentZeroIsNoPoint) {
  // A single component (id 0, no successors) must not be taken for a DAP by Listing 4.4's
  // "max == i" with max starting at 0.
  const Condensation c = FromDag(MakeGraph(1, {}));
  auto points = ComputeDominatingArticulationPoints(c, {});
  ASSERT_TRUE(points.ok());
  EXPECT_THAT(points->points, IsEmpty());
}

TEST(DominatingArticulationPointsTest, EmptyGraph) {
  const Condensation c = FromDag(MakeGraph(0, {}));
  auto points = ComputeDominatingArticulationPoints(c, {});
  ASSERT_TRUE(points.ok());
  EXPECT_THAT(points->points, IsEmpty());
  auto sizes = ComputeDapDynamicSizes(c, *points);
  ASSERT_TRUE(sizes.ok());
  EXPECT_THAT(sizes->of_component, IsEmpty());
}

TEST(DominatingArticulationPointsTest, LongChainIsIterative) {
  // 10^6 components in a chain: no recursion, and the DAPs make the dynamic sizes linear (each
  // search stops at the next component).
  const uint32_t n = 1000000;
  std::vector<Edge> edges;
  for (uint32_t v = 1; v < n; ++v) edges.push_back({v, v - 1});
  const Condensation c = FromDag(MakeGraph(n, edges), std::vector<uint64_t>(n, 16));
  auto points = ComputeDominatingArticulationPoints(c, {});
  ASSERT_TRUE(points.ok());
  EXPECT_EQ(points->points.size(), n - 1);
  DapDynamicSizeOptions linear;  // fail fast instead of running for hours if the DAPs were lost
  linear.max_visits = uint64_t{2} * n;
  auto sizes = ComputeDapDynamicSizes(c, *points, linear);
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_EQ(sizes->of_component[n - 1].objects, n);
  EXPECT_EQ(sizes->of_component[n - 1].bytes, uint64_t{16} * n);
  EXPECT_EQ(sizes->visits, uint64_t{2} * n - 1);
}

TEST(DominatingArticulationPointsTest, Errors) {
  const Condensation up = FromDag(MakeGraph(2, {{0, 1}}));  // edge to a higher component
  EXPECT_EQ(ComputeDominatingArticulationPoints(up, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const Condensation self = FromDag(MakeGraph(2, {{1, 1}}));
  EXPECT_EQ(ComputeDominatingArticulationPoints(self, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const Condensation c = FromDag(MakeGraph(2, {{1, 0}}));
  EXPECT_EQ(ComputeDominatingArticulationPoints(c, Objects({2})).status().code(),
            absl::StatusCode::kInvalidArgument);  // GC root out of range
  Condensation mismatched = c;
  mismatched.component_count = 3;
  EXPECT_EQ(ComputeDominatingArticulationPoints(mismatched, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SccImmediateDominators(c, C({5})).status().code(),
            absl::StatusCode::kInvalidArgument);  // SCC root out of range
  EXPECT_EQ(SccImmediateDominators(c, C({0})).status().code(),
            absl::StatusCode::kInvalidArgument);  // component 1 unreachable
  EXPECT_EQ(DominatingArticulationPointsFromDominators(c, C({1})).status().code(),
            absl::StatusCode::kInvalidArgument);  // one idom for two components
  EXPECT_EQ(DominatingArticulationPointsFromDominators(c, C({0, 2})).status().code(),
            absl::StatusCode::kInvalidArgument);  // idom not larger than its component
  EXPECT_EQ(DominatingArticulationPointsFromDominators(c, C({1, 3})).status().code(),
            absl::StatusCode::kInvalidArgument);  // beyond the super root
  EXPECT_EQ(DominatingArticulationPointsFromDominators(
                c, std::vector<ComponentId>{kNoComponent, ComponentId(2)})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  auto points = ComputeDominatingArticulationPoints(c, {});
  ASSERT_TRUE(points.ok());
  Condensation short_sizes = c;
  short_sizes.component_bytes.pop_back();
  EXPECT_EQ(ComputeDapDynamicSizes(short_sizes, *points).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ComputeDapDynamicSizes(up, *points).status().code(),
            absl::StatusCode::kInvalidArgument);
  Condensation huge = c;
  huge.component_bytes = {uint64_t{1} << 62, uint64_t{1} << 62};  // adds up to 2^63
  EXPECT_EQ(ComputeDapDynamicSizes(huge, *points).status().code(),
            absl::StatusCode::kInvalidArgument);
  DapDynamicSizeOptions budget;
  budget.max_visits = 2;  // component 0 alone, then 1 visits itself and uses 0: 3 visits
  EXPECT_EQ(ComputeDapDynamicSizes(c, *points, budget).status().code(),
            absl::StatusCode::kResourceExhausted);
  budget.max_visits = 3;
  EXPECT_TRUE(ComputeDapDynamicSizes(c, *points, budget).ok());
}

// ---- Oracles on random DAGs.

TEST(DominatingArticulationPointsTest, MatchesDefinition11OnRandomDags) {
  std::mt19937_64 rng(testing::PrintedSeed("MatchesDefinition11OnRandomDags"));
  uint64_t points_seen = 0, non_points_with_successors = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    const RandomDag t = MakeRandomDag(rng, 24);
    const CsrGraph& dag = t.condensation.dag;
    auto points = ComputeDominatingArticulationPoints(t.condensation, t.roots);
    ASSERT_TRUE(points.ok()) << points.status();
    ASSERT_EQ(AsNodes(points->scc_roots), BruteFlowRoots(dag, t.roots))
        << "iteration " << iteration;
    const std::vector<bool> expected = BruteDominatingArticulationPoints(dag, t.roots);
    ASSERT_EQ(points->is_point, expected) << "iteration " << iteration;
    for (uint32_t v = 0; v < dag.node_count(); ++v) {
      ASSERT_EQ(points->is_point[v], std::find(points->points.begin(), points->points.end(),
                                               ComponentId(v)) != points->points.end());
      if (expected[v]) {
        ++points_seen;
      } else if (!dag.successors(O(v)).empty()) {
        ++non_points_with_successors;
      }
    }
  }
  // The random DAGs exercise both answers.
  std::cout << "DAPs " << points_seen << ", other inner components " << non_points_with_successors
            << std::endl;
  EXPECT_GT(points_seen, 1000u);
  EXPECT_GT(non_points_with_successors, 1000u);
}

TEST(DominatingArticulationPointsTest, DynamicSizesMatchOneSearchPerComponent) {
  std::mt19937_64 rng(testing::PrintedSeed("DynamicSizesMatchOneSearchPerComponent"));
  uint64_t used = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    const RandomDag t = MakeRandomDag(rng, 40);
    const Condensation& c = t.condensation;
    auto points = ComputeDominatingArticulationPoints(c, t.roots);
    ASSERT_TRUE(points.ok());
    auto sizes = ComputeDapDynamicSizes(c, *points);
    ASSERT_TRUE(sizes.ok()) << sizes.status();
    used += sizes->points_used;
    for (uint32_t v = 0; v < c.component_count; ++v) {
      const std::vector<bool> reach = ReachFrom(c.dag, v);
      DynamicSize expected;
      for (uint32_t w = 0; w < c.component_count; ++w) {
        if (!reach[w]) continue;
        expected.bytes += c.component_bytes[w];
        expected.objects += c.component_objects[w];
      }
      ASSERT_EQ(sizes->of_component[v], expected) << "iteration " << iteration << " node " << v;
    }
  }
  std::cout << "DAPs used " << used << std::endl;
  EXPECT_GT(used, 2000u);  // the DAP shortcut was taken, not only plain searches
}

// ---- Heap-like graphs: cycles, self-loops, duplicate and weak references, garbage.

uint64_t SizeOf(ObjectIndex v) { return 8 * (v.value % 7) + 16; }

TEST(DominatingArticulationPointsTest, HeapGraphsMatchBruteForcePerObject) {
  std::mt19937_64 rng(testing::PrintedSeed("HeapGraphsMatchBruteForcePerObject"));
  testing::RandomGraphShape shape;
  shape.max_nodes = 40;
  shape.max_edges_per_node = 2.0;
  shape.weak_probability = 0.1;
  uint64_t used = 0, points_seen = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    const testing::TestGraph t = testing::RandomGraph(rng, shape);
    auto condensation = CondenseStrongComponents(t.graph, SizeOf);  // strong references only
    ASSERT_TRUE(condensation.ok()) << condensation.status();
    auto points = ComputeDominatingArticulationPoints(*condensation, t.roots);
    ASSERT_TRUE(points.ok()) << points.status();
    // Definition 11 on the SCC graph, with the GC roots' components as root nodes.
    std::vector<ObjectIndex> root_components;
    for (ObjectIndex r : t.roots)
      root_components.push_back(O(condensation->component_of[r.value].value));
    ASSERT_EQ(points->is_point,
              BruteDominatingArticulationPoints(condensation->dag, root_components))
        << "iteration " << iteration;
    points_seen += points->points.size();
    auto sizes = ComputeDapDynamicSizes(*condensation, *points);
    ASSERT_TRUE(sizes.ok()) << sizes.status();
    used += sizes->points_used;
    const uint32_t n = t.graph.node_count();
    const std::vector<bool> none(n, false);
    for (uint32_t v = 0; v < n; ++v) {
      const std::vector<bool> reach = testing::BruteReachable(t.graph, {O(v)}, none, false);
      DynamicSize expected;
      for (uint32_t w = 0; w < n; ++w) {
        if (!reach[w]) continue;
        expected.bytes += SizeOf(O(w));
        ++expected.objects;
      }
      const DynamicSize got = sizes->of_component[condensation->component_of[v].value];
      ASSERT_EQ(got, expected) << "iteration " << iteration << " object " << v;
    }
  }
  std::cout << "DAPs " << points_seen << ", used " << used << std::endl;
  EXPECT_GT(points_seen, 1000u);
  EXPECT_GT(used, 1000u);
}

// ---- Corpus dumps: the DAP dynamic size of every object equals dynamic_size.h's exact sizes.

TEST(DominatingArticulationPointsTest, CorpusDumpsEqualExactDynamicSizes) {
  const std::vector<std::string> files = {
      "eclipse-mat/sun_jdk6_32bit.hprof",
      "eclipse-mat/sun_jdk6_30_x64_compressedOops.hprof",
      "eclipse-mat/openjdk_jdk11_04_x64.hprof.gz",
      "adt-tools-base-perflib/dialer.android-hprof",
      "netbeans/heap_dump.bin",
      "openjdk-jhat/jmap.bin",
  };
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    auto graph = hprof::ReadHeapGraph(std::string(HEAPWATCH_CORPORA_DIR) + "/" + file);
    ASSERT_TRUE(graph.ok()) << graph.status();
    for (bool all : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "all_references " << all);
      DynamicSizeOptions references;
      references.all_references = all;
      auto condensation = CondenseStrongComponents(*graph, ReferencesFor(references));
      ASSERT_TRUE(condensation.ok()) << condensation.status();
      auto points = ComputeDominatingArticulationPoints(*condensation, graph->root_objects());
      ASSERT_TRUE(points.ok()) << points.status();
      auto sizes = ComputeDapDynamicSizes(*condensation, *points);
      ASSERT_TRUE(sizes.ok()) << sizes.status();
      auto exact = ComputeExactDynamicSizes(*condensation);
      ASSERT_TRUE(exact.ok()) << exact.status();
      if (!all) {
        // With every object's reference to its class followed, every object reaches the class
        // objects, which the many GC roots' components share: no component dominates its reach
        // and the algorithm falls back to plain searches. With strong references there are DAPs.
        EXPECT_FALSE(points->points.empty());
        EXPECT_GT(sizes->points_used, 0u);
      }
      for (uint32_t v = 0; v < condensation->component_count; ++v) {
        const DynamicSize want{exact->component_bytes(ComponentId(v)),
                               exact->component_objects(ComponentId(v))};
        ASSERT_EQ(sizes->of_component[v], want) << "component " << v;
      }
    }
  }
}

}  // namespace
}  // namespace heapwatch::analysis
