// The verifier accepts correct trees and catches wrong ones at the level that should catch them.
#include "analysis/dominator_verifier.h"

#include <random>

#include "analysis/dominator_tree.h"
#include "gmock/gmock.h"
#include "graph_test_util.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

using testing::Idoms;
using testing::MakeGraph;
using testing::Objects;

ObjectIndex O(uint32_t v) { return ObjectIndex(v); }

DominatorTree Rebuild(std::vector<ObjectIndex> idom, const DominatorOptions& options = {}) {
  auto tree = DominatorTree::FromImmediateDominators(std::move(idom), options);
  EXPECT_TRUE(tree.ok()) << tree.status();
  return std::move(tree).value();
}

// 0 -> 1 -> 2 -> 3, 0 -> 4 -> 3: idom(3) = 0, idom(2) = 1, idom(1) = 0, idom(4) = 0.
CsrGraph SmallGraph() { return MakeGraph(5, {{0, 1}, {1, 2}, {2, 3}, {0, 4}, {4, 3}}); }

TEST(DominatorVerifierTest, AcceptsTheComputedTreeAtEveryLevel) {
  const CsrGraph g = SmallGraph();
  auto tree = ComputeDominatorTree(g, Objects({0}));
  ASSERT_TRUE(tree.ok());
  for (auto level : {VerificationLevel::kStructure, VerificationLevel::kProperties,
                     VerificationLevel::kExhaustive}) {
    EXPECT_TRUE(VerifyDominatorTree(g, Objects({0}), *tree, level).ok());
  }
}

TEST(DominatorVerifierTest, TooFlatTreeOnlyFailsTheExhaustiveCheck) {
  const CsrGraph g = SmallGraph();
  auto tree = ComputeDominatorTree(g, Objects({0}));
  ASSERT_TRUE(tree.ok());
  std::vector<ObjectIndex> idom = Idoms(*tree);
  ASSERT_EQ(idom[2], O(1));
  idom[2] = O(0);  // a dominator of 2, but not the immediate one
  const DominatorTree flat = Rebuild(idom);
  EXPECT_TRUE(VerifyDominatorTree(g, Objects({0}), flat, VerificationLevel::kProperties).ok());
  const Status s = VerifyDominatorTree(g, Objects({0}), flat, VerificationLevel::kExhaustive);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("removing 1"));
  EXPECT_EQ(CompareDominatorTrees(*tree, flat).code(), absl::StatusCode::kInternal);
}

TEST(DominatorVerifierTest, TooDeepTreeFailsTheParentProperty) {
  const CsrGraph g = SmallGraph();
  auto tree = ComputeDominatorTree(g, Objects({0}));
  ASSERT_TRUE(tree.ok());
  std::vector<ObjectIndex> idom = Idoms(*tree);
  idom[3] = O(1);  // 1 does not dominate 3 (0 -> 4 -> 3 avoids it)
  const DominatorTree deep = Rebuild(idom);
  EXPECT_TRUE(VerifyDominatorTree(g, Objects({0}), deep, VerificationLevel::kStructure).ok());
  const Status s = VerifyDominatorTree(g, Objects({0}), deep, VerificationLevel::kProperties);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("parent property"));
}

TEST(DominatorVerifierTest, CatchesWrongReachabilityAndRoots) {
  const CsrGraph g = SmallGraph();
  auto tree = ComputeDominatorTree(g, Objects({0}));
  ASSERT_TRUE(tree.ok());
  std::vector<ObjectIndex> idom = Idoms(*tree);
  idom[4] = kNoObject;  // 4 is reachable but left out
  EXPECT_EQ(
      VerifyDominatorTree(g, Objects({0}), Rebuild(idom), VerificationLevel::kProperties).code(),
      absl::StatusCode::kInternal);
  // A GC root hung below another object.
  std::vector<ObjectIndex> idom2 = Idoms(*tree);
  const DominatorTree t2 = Rebuild(idom2);
  EXPECT_EQ(VerifyDominatorTree(g, Objects({0, 2}), t2, VerificationLevel::kProperties).code(),
            absl::StatusCode::kInternal);
  // Sizes that do not match.
  EXPECT_EQ(VerifyDominatorTree(MakeGraph(3, {}), Objects({0}), *tree).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DominatorVerifierTest, CatchesEveryRandomSingleMutationExhaustively) {
  std::mt19937_64 rng(testing::PrintedSeed("CatchesEveryRandomSingleMutationExhaustively"));
  int mutations = 0, caught_by_properties = 0;
  for (int i = 0; i < 400; ++i) {
    testing::RandomGraphShape shape;
    shape.max_nodes = 25;
    shape.max_edges_per_node = 2;
    const testing::TestGraph t = testing::RandomGraph(rng, shape);
    auto tree = ComputeDominatorTree(t.graph, t.roots);
    ASSERT_TRUE(tree.ok());
    const uint32_t n = t.graph.node_count();
    // Re-hang one reachable object below another node of the tree that is not its descendant (so
    // the result is still a tree) and not its current immediate dominator.
    std::vector<uint32_t> movable;
    for (uint32_t v = 0; v < n; ++v) {
      if (tree->reachable(O(v))) movable.push_back(v);
    }
    if (movable.empty()) continue;
    const uint32_t v = movable[std::uniform_int_distribution<size_t>(0, movable.size() - 1)(rng)];
    std::vector<uint32_t> parents;
    for (uint32_t p = 0; p <= n; ++p) {
      if (!tree->reachable(O(p)) || tree->DominatesOrEquals(O(v), O(p))) continue;
      if (O(p) == tree->immediate_dominator(O(v))) continue;
      parents.push_back(p);
    }
    if (parents.empty()) continue;
    std::vector<ObjectIndex> idom = Idoms(*tree);
    idom[v] = O(parents[std::uniform_int_distribution<size_t>(0, parents.size() - 1)(rng)]);
    const DominatorTree wrong = Rebuild(idom);
    ++mutations;
    EXPECT_FALSE(VerifyDominatorTree(t.graph, t.roots, wrong, VerificationLevel::kExhaustive).ok())
        << "graph " << i << ": moving " << v << " below " << idom[v].value << " went unnoticed";
    caught_by_properties +=
        !VerifyDominatorTree(t.graph, t.roots, wrong, VerificationLevel::kProperties).ok();
  }
  std::cout << "[ mutants  ] " << mutations << " wrong trees, all caught exhaustively, "
            << caught_by_properties << " already by the O(n + m) checks" << std::endl;
  EXPECT_GT(mutations, 100);
}

}  // namespace
}  // namespace heapwatch::analysis
