// Retained sizes and sets against brute-force simulated GCs on small random graphs.
#include "analysis/retained_size.h"

#include <algorithm>
#include <random>
#include <set>

#include "analysis/dominator_tree.h"
#include "gmock/gmock.h"
#include "graph_test_util.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

using testing::BruteReachable;
using ::testing::ElementsAre;
using testing::FlowSources;
using ::testing::IsEmpty;
using testing::MakeGraph;
using testing::Objects;

ObjectIndex O(uint32_t v) { return ObjectIndex(v); }

// What removing every member of `removed` makes unreachable from `sources` (members included when
// they were reachable).
std::vector<ObjectIndex> BruteRetainedSet(const CsrGraph& g,
                                          const std::vector<ObjectIndex>& sources,
                                          const std::vector<ObjectIndex>& removed,
                                          bool follow_weak) {
  const uint32_t n = g.node_count();
  std::vector<bool> none(n, false), cut(n, false);
  for (ObjectIndex r : removed) cut[r.value] = true;
  const std::vector<bool> before = BruteReachable(g, sources, none, follow_weak);
  const std::vector<bool> after = BruteReachable(g, sources, cut, follow_weak);
  std::vector<ObjectIndex> out;
  for (uint32_t v = 0; v < n; ++v) {
    if (before[v] && !after[v]) out.push_back(O(v));
  }
  return out;
}

TEST(RetainedSizeTest, GoldenDiamondWithTail) {
  // 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3, 3 -> 4; sizes 10, 20, 30, 40, 50; 5 is unreachable.
  const CsrGraph g = MakeGraph(6, {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}, {5, 0}});
  const std::vector<uint64_t> size = {10, 20, 30, 40, 50, 60};
  auto tree = ComputeDominatorTree(g, Objects({0}));
  ASSERT_TRUE(tree.ok());
  const auto retained = ComputeRetainedSizes(*tree, [&](ObjectIndex v) { return size[v.value]; });
  EXPECT_THAT(retained.ToVector(), ElementsAre(150, 20, 30, 90, 50, 0, 150));
  EXPECT_THAT(*RetainedSet(*tree, O(3)), ElementsAre(O(3), O(4)));
  EXPECT_THAT(*RetainedSet(*tree, O(5)), IsEmpty());
  EXPECT_THAT(*RetainedSet(*tree, tree->super_root()), ElementsAre(O(0), O(1), O(2), O(3), O(4)));
  EXPECT_EQ(RetainedSet(*tree, O(7)).status().code(), absl::StatusCode::kInvalidArgument);

  // {1, 2}: neither dominates the other, so the minimum is 20 + 30; together they also retain 3
  // and 4.
  const std::vector<ObjectIndex> pair = Objects({1, 2});
  EXPECT_EQ(*MinimumRetainedSize(*tree, retained, pair), 50u);
  auto precise =
      PreciseRetainedSize(g, Objects({0}), pair, [&](ObjectIndex v) { return size[v.value]; });
  ASSERT_TRUE(precise.ok());
  EXPECT_EQ(*precise, (RetainedSetSize{140, 4}));
  EXPECT_THAT(*PreciseRetainedSet(g, Objects({0}), pair), ElementsAre(O(1), O(2), O(3), O(4)));
  // {0, 3, 3}: 0 dominates 3; duplicates count once.
  EXPECT_EQ(*MinimumRetainedSize(*tree, retained, Objects({0, 3, 3})), 150u);
  // Unreachable members add nothing.
  EXPECT_EQ(*MinimumRetainedSize(*tree, retained, Objects({5, 4})), 50u);
  EXPECT_EQ(MinimumRetainedSize(*tree, retained, Objects({9})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      MinimumRetainedSize(*tree, RetainedSizes::FromBytes({150, 20, 30}), pair).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PreciseRetainedSet(g, Objects({0}), Objects({6})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RetainedSizeTest, EveryObjectMatchesBruteForceSimulatedGc) {
  std::mt19937_64 rng(testing::PrintedSeed("EveryObjectMatchesBruteForceSimulatedGc"));
  int objects_checked = 0;
  for (int i = 0; i < 600; ++i) {
    testing::RandomGraphShape shape;
    shape.max_nodes = 30;
    shape.max_edges_per_node = 1 + i % 3;
    shape.weak_probability = 0.2;
    const testing::TestGraph t = testing::RandomGraph(rng, shape);
    const uint32_t n = t.graph.node_count();
    // Shallow sizes of three kinds, for the three ways RetainedSizes stores the sums: any size
    // (4 bytes per entry, unit 1), multiples of 8 as HotSpot's (4 bytes, in 8-byte units, some
    // sums above 2^32 bytes), and sizes whose total needs 64 bits (8 bytes per entry).
    std::vector<uint64_t> size(n);
    for (auto& s : size) {
      switch (i % 3) {
        case 0:
          s = std::uniform_int_distribution<uint64_t>(8, 1000)(rng);
          break;
        case 1:
          s = 8 * std::uniform_int_distribution<uint64_t>(1, uint64_t{1} << 27)(rng);
          break;
        default:
          s = std::uniform_int_distribution<uint64_t>(1, uint64_t{1} << 34)(rng);
          break;
      }
    }
    auto shallow = [&](ObjectIndex v) { return size[v.value]; };
    for (bool follow_weak : {true, false}) {
      for (bool keep : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << "graph " << i << " follow_weak " << follow_weak << " keep " << keep);
        auto tree = ComputeDominatorTree(
            t.graph, t.roots, {.follow_weak_references = follow_weak, .keep_unreachable = keep});
        ASSERT_TRUE(tree.ok());
        const auto retained = ComputeRetainedSizes(*tree, shallow);
        const auto counts = ComputeRetainedSizes(*tree, [](ObjectIndex) { return uint64_t{1}; });
        EXPECT_TRUE(counts.compact());
        if (i % 3 == 1 && tree->tree_object_count() > 0) {  // (an empty tree has unit 1)
          EXPECT_TRUE(retained.compact());
          EXPECT_EQ(retained.unit() % 8, 0u);
        }
        const std::vector<ObjectIndex> sources = FlowSources(t.roots, *tree);
        uint64_t total = 0;
        for (uint32_t v = 0; v < n; ++v) {
          if (!tree->reachable(O(v))) {
            EXPECT_EQ(retained[v], 0u);
            continue;
          }
          total += size[v];
          const std::vector<ObjectIndex> brute =
              BruteRetainedSet(t.graph, sources, {O(v)}, follow_weak);
          uint64_t bytes = 0;
          for (ObjectIndex o : brute) bytes += size[o.value];
          ASSERT_EQ(retained[v], bytes) << "object " << v;
          ASSERT_EQ(counts[v], brute.size()) << "object " << v;
          auto set = RetainedSet(*tree, O(v));
          ASSERT_TRUE(set.ok());
          std::vector<ObjectIndex> sorted = *set;
          std::sort(sorted.begin(), sorted.end());
          ASSERT_EQ(sorted, brute) << "object " << v;
          EXPECT_EQ(set->front(), O(v));
          ++objects_checked;
        }
        EXPECT_EQ(retained[n], total);
      }
    }
  }
  std::cout << "[ objects  ] " << objects_checked << " retained sizes compared with brute force"
            << std::endl;
}

TEST(RetainedSizeTest, SetsMatchBruteForceAndBoundEachOther) {
  std::mt19937_64 rng(testing::PrintedSeed("SetsMatchBruteForceAndBoundEachOther"));
  int sets_checked = 0, sets_with_gap = 0;
  for (int i = 0; i < 1500; ++i) {
    testing::RandomGraphShape shape;
    shape.max_nodes = 30;
    shape.max_edges_per_node = 1 + i % 3;
    shape.weak_probability = 0.2;
    const testing::TestGraph t = testing::RandomGraph(rng, shape);
    const uint32_t n = t.graph.node_count();
    std::vector<uint64_t> size(n);
    for (auto& s : size) s = std::uniform_int_distribution<uint64_t>(8, 1000)(rng);
    auto shallow = [&](ObjectIndex v) { return size[v.value]; };
    const bool follow_weak = i % 2 == 0;
    auto tree = ComputeDominatorTree(t.graph, t.roots, {.follow_weak_references = follow_weak});
    ASSERT_TRUE(tree.ok());
    const auto retained = ComputeRetainedSizes(*tree, shallow);
    std::vector<ObjectIndex> set;
    const int k = std::uniform_int_distribution<int>(1, 5)(rng);
    for (int j = 0; j < k; ++j)
      set.push_back(O(std::uniform_int_distribution<uint32_t>(0, n - 1)(rng)));
    SCOPED_TRACE(::testing::Message() << "graph " << i << " set size " << k);

    // Precise: equals a brute-force simulated GC.
    const std::vector<ObjectIndex> brute = BruteRetainedSet(t.graph, t.roots, set, follow_weak);
    uint64_t brute_bytes = 0;
    for (ObjectIndex o : brute) brute_bytes += size[o.value];
    const SimulatedGcOptions gc{.follow_weak_references = follow_weak};
    auto precise_set = PreciseRetainedSet(t.graph, t.roots, set, gc);
    ASSERT_TRUE(precise_set.ok());
    ASSERT_EQ(*precise_set, brute);
    auto precise = PreciseRetainedSize(t.graph, t.roots, set, shallow, gc);
    ASSERT_TRUE(precise.ok());
    ASSERT_EQ(*precise, (RetainedSetSize{brute_bytes, brute.size()}));

    // Minimum: the members that no other member dominates (brute-force dominance: removing the
    // other member makes this one unreachable), summed with brute-force retained sizes.
    std::set<uint32_t> members;
    for (ObjectIndex v : set) members.insert(v.value);
    uint64_t expected_min = 0;
    for (uint32_t m : members) {
      if (!tree->reachable(O(m))) continue;
      bool dominated = false;
      for (uint32_t other : members) {
        if (other == m) continue;
        const auto cut = BruteRetainedSet(t.graph, t.roots, {O(other)}, follow_weak);
        dominated |= std::binary_search(cut.begin(), cut.end(), O(m));
      }
      if (dominated) continue;
      for (ObjectIndex o : BruteRetainedSet(t.graph, t.roots, {O(m)}, follow_weak)) {
        expected_min += size[o.value];
      }
    }
    auto minimum = MinimumRetainedSize(*tree, retained, set);
    ASSERT_TRUE(minimum.ok());
    ASSERT_EQ(*minimum, expected_min);
    ASSERT_LE(*minimum, precise->bytes);
    if (members.size() == 1) {
      ASSERT_EQ(*minimum, precise->bytes);
    }
    sets_with_gap += *minimum < precise->bytes;
    ++sets_checked;
  }
  std::cout << "[ sets     ] " << sets_checked << " object sets, " << sets_with_gap
            << " with minimum < precise" << std::endl;
  EXPECT_GT(sets_with_gap, 0);  // the generator does produce sets that retain more together
}

// The precise retained set of a set S, cross-checked with the dominator tree: merge the reachable
// members of S into one new object X (references to them go to X, X references each of them, member
// roots become X) and the retained set of X is S's precise retained set plus X. (Unreachable
// members retain nothing; merged, X could make them reachable.)
TEST(RetainedSizeTest, PreciseSetEqualsDominatorSubtreeOfMergedSet) {
  std::mt19937_64 rng(testing::PrintedSeed("PreciseSetEqualsDominatorSubtreeOfMergedSet"));
  for (int i = 0; i < 1000; ++i) {
    testing::RandomGraphShape shape;
    shape.max_nodes = 200;
    shape.max_edges_per_node = 1 + i % 3;
    const testing::TestGraph t = testing::RandomGraph(rng, shape);
    const uint32_t n = t.graph.node_count();
    const std::vector<bool> live = BruteReachable(t.graph, t.roots, std::vector<bool>(n), true);
    std::vector<bool> member(n, false);
    std::vector<ObjectIndex> set;
    const int k = std::uniform_int_distribution<int>(1, 8)(rng);
    for (int j = 0; j < k; ++j) {
      const uint32_t v = std::uniform_int_distribution<uint32_t>(0, n - 1)(rng);
      member[v] = live[v];
      set.push_back(O(v));
    }
    const uint32_t x = n;
    std::vector<testing::Edge> edges;
    for (uint32_t u = 0; u < n; ++u) {
      for (uint64_t e = t.graph.offsets[u]; e < t.graph.offsets[u + 1]; ++e) {
        const uint32_t v = t.graph.targets[e].value;
        edges.push_back({u, member[v] ? x : v});
      }
    }
    for (ObjectIndex m : set) {
      if (member[m.value]) edges.push_back({x, m.value});
    }
    std::vector<ObjectIndex> roots;
    for (ObjectIndex r : t.roots) roots.push_back(member[r.value] ? O(x) : r);
    const CsrGraph merged = MakeGraph(n + 1, edges);
    auto tree = ComputeDominatorTree(merged, roots);
    ASSERT_TRUE(tree.ok());
    auto subtree = RetainedSet(*tree, O(x));
    ASSERT_TRUE(subtree.ok());
    std::vector<ObjectIndex> expected;
    for (ObjectIndex o : *subtree) {
      if (o != O(x)) expected.push_back(o);
    }
    std::sort(expected.begin(), expected.end());
    auto precise = PreciseRetainedSet(t.graph, t.roots, set);
    ASSERT_TRUE(precise.ok());
    ASSERT_EQ(*precise, expected) << "graph " << i;
  }
}

TEST(RetainedSizeTest, CompactInUnitsOfTheShallowSizesAndWideWhenTheTotalNeedsIt) {
  // 0 -> 1 -> 2, 0 -> 3; 4 is unreachable.
  const CsrGraph g = MakeGraph(5, {{0, 1}, {1, 2}, {0, 3}, {4, 0}});
  auto tree = ComputeDominatorTree(g, Objects({0}));
  ASSERT_TRUE(tree.ok());
  const uint64_t big = uint64_t{1} << 34;  // 16 GiB: beyond 32 bits in bytes, not in 8-byte units
  {
    const std::vector<uint64_t> size = {16, 24, big, 40, 8};
    const auto retained = ComputeRetainedSizes(*tree, [&](ObjectIndex v) { return size[v.value]; });
    EXPECT_TRUE(retained.compact());
    EXPECT_EQ(retained.unit(), 8u);
    const uint64_t total = 16 + 24 + big + 40;
    EXPECT_THAT(retained.ToVector(), ElementsAre(total, 24 + big, big, 40, 0, total));
    EXPECT_EQ(retained.back(), total);
    EXPECT_EQ(retained.MemoryUsage(), 6 * sizeof(uint32_t));
  }
  {
    // One size not a multiple of 8: the unit becomes 1 and the total no longer fits 32 bits.
    const std::vector<uint64_t> size = {16, 24, big, 41, 8};
    const auto retained = ComputeRetainedSizes(*tree, [&](ObjectIndex v) { return size[v.value]; });
    EXPECT_FALSE(retained.compact());
    const uint64_t total = 16 + 24 + big + 41;
    EXPECT_THAT(retained.ToVector(), ElementsAre(total, 24 + big, big, 41, 0, total));
    EXPECT_EQ(*MinimumRetainedSize(*tree, retained, Objects({1, 3})), 24 + big + 41);
  }
  {
    // Odd sizes with a small total: 4 bytes per entry in 1-byte units (Android, NetBeans models).
    const std::vector<uint64_t> size = {3, 5, 7, 11, 13};
    const auto retained = ComputeRetainedSizes(*tree, [&](ObjectIndex v) { return size[v.value]; });
    EXPECT_TRUE(retained.compact());
    EXPECT_EQ(retained.unit(), 1u);
    EXPECT_THAT(retained.ToVector(), ElementsAre(26, 12, 7, 11, 0, 26));
  }
  // Every size 0: unit 1, all zero.
  const auto zero = ComputeRetainedSizes(*tree, [](ObjectIndex) { return uint64_t{0}; });
  EXPECT_TRUE(zero.compact());
  EXPECT_THAT(zero.ToVector(), ElementsAre(0, 0, 0, 0, 0, 0));
}

TEST(RetainedSizeTest, SuperRootInSetRetainsEverything) {
  const CsrGraph g = MakeGraph(3, {{0, 1}});
  auto tree = ComputeDominatorTree(g, Objects({0}));
  ASSERT_TRUE(tree.ok());
  const auto retained = ComputeRetainedSizes(*tree, [](ObjectIndex) { return uint64_t{5}; });
  const std::vector<ObjectIndex> set = {tree->super_root(), O(1)};
  EXPECT_EQ(*MinimumRetainedSize(*tree, retained, set), 10u);
}

}  // namespace
}  // namespace heapwatch::analysis
