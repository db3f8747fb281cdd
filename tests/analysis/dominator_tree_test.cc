// Golden tests of ComputeDominatorTree on tiny graphs, its options, errors and tree helpers.
#include "analysis/dominator_tree.h"

#include <map>
#include <string>

#include "analysis/dominator_verifier.h"
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
using ::testing::UnorderedElementsAre;

DominatorTree Compute(const CsrGraph& g, const std::vector<ObjectIndex>& roots,
                      const DominatorOptions& options = {}) {
  auto tree = ComputeDominatorTree(g, roots, options);
  EXPECT_TRUE(tree.ok()) << tree.status();
  EXPECT_TRUE(VerifyDominatorTree(g, roots, *tree, VerificationLevel::kExhaustive).ok());
  return std::move(tree).value();
}

ObjectIndex O(uint32_t v) { return ObjectIndex(v); }

TEST(DominatorTreeTest, EmptyGraph) {
  const CsrGraph g = MakeGraph(0, {});
  DominatorTree tree = Compute(g, {});
  EXPECT_EQ(tree.object_count(), 0u);
  EXPECT_EQ(tree.super_root(), O(0));
  EXPECT_EQ(tree.tree_object_count(), 0u);
  EXPECT_EQ(tree.unreachable_count(), 0u);
  EXPECT_THAT(tree.children(tree.super_root()), IsEmpty());
  EXPECT_THAT(tree.Preorder(), ElementsAre(O(0)));
}

TEST(DominatorTreeTest, OneRoot) {
  const CsrGraph g = MakeGraph(1, {});
  DominatorTree tree = Compute(g, Objects({0}));
  EXPECT_EQ(tree.immediate_dominator(O(0)), tree.super_root());
  EXPECT_EQ(tree.immediate_dominator(tree.super_root()), kNoObject);
  EXPECT_TRUE(tree.reachable(O(0)));
  EXPECT_THAT(tree.children(tree.super_root()), ElementsAre(O(0)));
  EXPECT_EQ(tree.unreachable_count(), 0u);
}

TEST(DominatorTreeTest, OneObjectWithoutRoots) {
  const CsrGraph g = MakeGraph(1, {{0, 0}});
  DominatorTree tree = Compute(g, {});
  EXPECT_EQ(tree.immediate_dominator(O(0)), kNoObject);
  EXPECT_FALSE(tree.reachable(O(0)));
  EXPECT_EQ(tree.unreachable_count(), 1u);
  EXPECT_THAT(tree.UnreachableObjects(), ElementsAre(O(0)));
}

TEST(DominatorTreeTest, Chain) {
  const CsrGraph g = MakeGraph(4, {{0, 1}, {1, 2}, {2, 3}});
  DominatorTree tree = Compute(g, Objects({0}));
  EXPECT_EQ(tree.immediate_dominator(O(0)), tree.super_root());
  EXPECT_EQ(tree.immediate_dominator(O(1)), O(0));
  EXPECT_EQ(tree.immediate_dominator(O(2)), O(1));
  EXPECT_EQ(tree.immediate_dominator(O(3)), O(2));
  EXPECT_THAT(tree.Depths(), ElementsAre(1, 2, 3, 4, 0));
  EXPECT_THAT(tree.Preorder(), ElementsAre(O(4), O(0), O(1), O(2), O(3)));
  EXPECT_THAT(tree.Postorder(), ElementsAre(O(3), O(2), O(1), O(0), O(4)));
}

TEST(DominatorTreeTest, Diamond) {
  // 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3.
  const CsrGraph g = MakeGraph(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}});
  DominatorTree tree = Compute(g, Objects({0}));
  EXPECT_EQ(tree.immediate_dominator(O(1)), O(0));
  EXPECT_EQ(tree.immediate_dominator(O(2)), O(0));
  EXPECT_EQ(tree.immediate_dominator(O(3)), O(0));
  EXPECT_THAT(tree.children(O(0)), ElementsAre(O(1), O(2), O(3)));
  EXPECT_TRUE(tree.DominatesOrEquals(O(0), O(3)));
  EXPECT_FALSE(tree.DominatesOrEquals(O(1), O(3)));
}

TEST(DominatorTreeTest, Cycle) {
  // 0 -> 1 -> 2 -> 0, root 1.
  const CsrGraph g = MakeGraph(3, {{0, 1}, {1, 2}, {2, 0}});
  DominatorTree tree = Compute(g, Objects({1}));
  EXPECT_EQ(tree.immediate_dominator(O(1)), tree.super_root());
  EXPECT_EQ(tree.immediate_dominator(O(2)), O(1));
  EXPECT_EQ(tree.immediate_dominator(O(0)), O(2));
}

TEST(DominatorTreeTest, UnreachableObject) {
  // 2 references 1 but nothing reaches 2.
  const CsrGraph g = MakeGraph(3, {{0, 1}, {2, 1}});
  DominatorTree tree = Compute(g, Objects({0}));
  EXPECT_EQ(tree.immediate_dominator(O(1)), O(0));
  EXPECT_FALSE(tree.reachable(O(2)));
  EXPECT_EQ(tree.unreachable_count(), 1u);
  EXPECT_EQ(tree.tree_object_count(), 2u);
  EXPECT_THAT(tree.children(O(2)), IsEmpty());
}

TEST(DominatorTreeTest, SeveralRootsShareADominatedObject) {
  // Roots 0 and 1 both reference 2: only the super root dominates 2.
  const CsrGraph g = MakeGraph(4, {{0, 2}, {1, 2}, {2, 3}});
  DominatorTree tree = Compute(g, Objects({0, 1, 0}));
  EXPECT_EQ(tree.immediate_dominator(O(2)), tree.super_root());
  EXPECT_EQ(tree.immediate_dominator(O(3)), O(2));
  EXPECT_THAT(tree.children(tree.super_root()), ElementsAre(O(0), O(1), O(2)));
}

TEST(DominatorTreeTest, RootReferencedByAnotherObjectIsStillChildOfSuperRoot) {
  const CsrGraph g = MakeGraph(2, {{0, 1}});
  DominatorTree tree = Compute(g, Objects({0, 1}));
  EXPECT_EQ(tree.immediate_dominator(O(1)), tree.super_root());
}

// The flow graph of Lengauer & Tarjan's paper (Fig. 1), which MAT's CreateSampleDump builds as
// DominatorTestData R, A..L; MAT's DominatorTreeTest asserts the facts checked here.
TEST(DominatorTreeTest, LengauerTarjanPaperGraph) {
  const std::vector<std::string> names = {"R", "A", "B", "C", "D", "E", "F",
                                          "G", "H", "I", "J", "K", "L"};
  std::map<std::string, uint32_t> id;
  for (uint32_t i = 0; i < names.size(); ++i) id[names[i]] = i;
  const std::vector<std::pair<std::string, std::string>> refs = {
      {"A", "D"}, {"B", "A"}, {"B", "D"}, {"B", "E"}, {"C", "F"}, {"C", "G"}, {"D", "L"},
      {"E", "H"}, {"F", "I"}, {"G", "I"}, {"G", "J"}, {"H", "E"}, {"H", "K"}, {"I", "K"},
      {"J", "I"}, {"K", "I"}, {"K", "R"}, {"L", "H"}, {"R", "A"}, {"R", "B"}, {"R", "C"}};
  std::vector<Edge> edges;
  for (const auto& [from, to] : refs) edges.push_back({id[from], id[to]});
  const CsrGraph g = MakeGraph(static_cast<uint32_t>(names.size()), edges);
  DominatorTree tree = Compute(g, Objects({id["R"]}));
  auto kids = [&](const std::string& name) {
    std::vector<std::string> out;
    for (ObjectIndex c : tree.children(O(id[name]))) out.push_back(names[c.value]);
    return out;
  };
  EXPECT_THAT(kids("R"), UnorderedElementsAre("A", "B", "C", "D", "E", "H", "I", "K"));
  EXPECT_THAT(kids("C"), UnorderedElementsAre("F", "G"));
  EXPECT_THAT(kids("D"), UnorderedElementsAre("L"));
  EXPECT_THAT(kids("G"), UnorderedElementsAre("J"));
  for (const char* leaf : {"A", "B", "E", "F", "H", "I", "J", "K", "L"}) {
    EXPECT_THAT(kids(leaf), IsEmpty()) << leaf;
  }
  EXPECT_EQ(tree.immediate_dominator(O(id["R"])), tree.super_root());
  EXPECT_EQ(tree.tree_object_count(), 13u);
}

TEST(DominatorTreeTest, WeakReferencesFollowedByDefault) {
  // 0 -> 1 strong, 0 -> 2 weak, 1 -> 2 strong... 2 is reachable either way; 3 only through a weak
  // one.
  const CsrGraph g = MakeGraph(4, {{0, 1}, {0, 2, true}, {1, 2}, {0, 3, true}});
  DominatorTree all = Compute(g, Objects({0}));
  EXPECT_EQ(all.immediate_dominator(O(2)), O(0));
  EXPECT_EQ(all.immediate_dominator(O(3)), O(0));
  EXPECT_EQ(all.unreachable_count(), 0u);

  DominatorTree strong = Compute(g, Objects({0}), {.follow_weak_references = false});
  EXPECT_EQ(strong.immediate_dominator(O(2)), O(1));
  EXPECT_FALSE(strong.reachable(O(3)));
  EXPECT_EQ(strong.unreachable_count(), 1u);
}

TEST(DominatorTreeTest, KeepUnreachableUsesGarbageSourcesThenCycles) {
  // Reachable: 0 -> 1. Garbage: 2 -> 3 -> 4 (2 is a source), cycle 5 <-> 6 -> 7, and 4 -> 6.
  const CsrGraph g = MakeGraph(8, {{0, 1}, {2, 3}, {3, 4}, {5, 6}, {6, 5}, {6, 7}, {4, 6}});
  DominatorTree tree = Compute(g, Objects({0}), {.keep_unreachable = true});
  EXPECT_THAT(tree.artificial_roots(), ElementsAre(O(2)));  // the cycle is reached from 2
  EXPECT_EQ(tree.unreachable_count(), 6u);
  EXPECT_EQ(tree.tree_object_count(), 8u);
  EXPECT_EQ(tree.immediate_dominator(O(2)), tree.super_root());
  EXPECT_EQ(tree.immediate_dominator(O(6)), O(4));
  EXPECT_EQ(tree.immediate_dominator(O(5)), O(6));
  EXPECT_TRUE(tree.reachable(O(5)));
  EXPECT_FALSE(tree.reachable_from_gc_roots(O(5)));
  EXPECT_TRUE(tree.reachable_from_gc_roots(O(1)));
  EXPECT_THAT(tree.UnreachableObjects(), IsEmpty());

  // Without the 4 -> 6 reference the cycle needs an artificial root of its own: its lowest index.
  const CsrGraph g2 = MakeGraph(8, {{0, 1}, {2, 3}, {3, 4}, {6, 5}, {5, 6}, {6, 7}});
  DominatorTree tree2 = Compute(g2, Objects({0}), {.keep_unreachable = true});
  EXPECT_THAT(tree2.artificial_roots(), ElementsAre(O(2), O(5)));
  EXPECT_EQ(tree2.immediate_dominator(O(7)), O(6));
}

TEST(DominatorTreeTest, KeepUnreachableRootsOnlySourceCyclesOfGarbage) {
  // Garbage cycle 1 <-> 2 has the lowest indices but is entered from the garbage cycle 3 <-> 4: only
  // 3 becomes an artificial root, so 3 (the only way in) dominates 1 and 2.
  const CsrGraph g = MakeGraph(5, {{1, 2}, {2, 1}, {3, 4}, {4, 3}, {3, 1}});
  DominatorTree tree = Compute(g, Objects({0}), {.keep_unreachable = true});
  EXPECT_THAT(tree.artificial_roots(), ElementsAre(O(3)));
  EXPECT_EQ(tree.immediate_dominator(O(1)), O(3));
  EXPECT_EQ(tree.immediate_dominator(O(2)), O(1));
  EXPECT_EQ(tree.immediate_dominator(O(4)), O(3));
}

TEST(DominatorTreeTest, KeepUnreachableWithEverythingReachableChangesNothing) {
  const CsrGraph g = MakeGraph(3, {{0, 1}, {1, 2}});
  DominatorTree tree = Compute(g, Objects({0}), {.keep_unreachable = true});
  EXPECT_THAT(tree.artificial_roots(), IsEmpty());
  EXPECT_EQ(tree.unreachable_count(), 0u);
  EXPECT_EQ(tree.immediate_dominator(O(2)), O(1));
}

TEST(DominatorTreeTest, RejectsRootOutOfRange) {
  const CsrGraph g = MakeGraph(2, {{0, 1}});
  auto tree = ComputeDominatorTree(g, Objects({0, 2}));
  ASSERT_FALSE(tree.ok());
  EXPECT_EQ(tree.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(tree.status().message()), ::testing::HasSubstr("GC root"));
}

TEST(DominatorTreeTest, RejectsReferenceOutOfRange) {
  CsrGraph g = MakeGraph(2, {{0, 1}});
  g.targets[0] = ObjectIndex(7);
  auto tree = ComputeDominatorTree(g, Objects({0}));
  ASSERT_FALSE(tree.ok());
  EXPECT_EQ(tree.status().code(), absl::StatusCode::kInvalidArgument);
  // ... also when only the garbage pass of keep_unreachable sees it.
  CsrGraph g2 = MakeGraph(3, {{1, 2}});
  g2.targets[0] = ObjectIndex(9);
  EXPECT_TRUE(ComputeDominatorTree(g2, Objects({0})).ok());
  EXPECT_EQ(ComputeDominatorTree(g2, Objects({0}), {.keep_unreachable = true}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DominatorTreeTest, RejectsMalformedCsr) {
  CsrGraph g = MakeGraph(2, {{0, 1}});
  g.offsets.back() = 5;
  EXPECT_EQ(ComputeDominatorTree(g, Objects({0})).status().code(),
            absl::StatusCode::kInvalidArgument);
  CsrGraph g2 = MakeGraph(2, {{0, 1}});
  g2.weak.assign(3, false);
  EXPECT_EQ(ComputeDominatorTree(g2, Objects({0})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DominatorTreeTest, FromImmediateDominatorsRoundTripsAndRejectsCycles) {
  const CsrGraph g = MakeGraph(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}});
  DominatorTree tree = Compute(g, Objects({0}));
  auto copy = DominatorTree::FromImmediateDominators(testing::Idoms(tree), tree.options());
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_TRUE(CompareDominatorTrees(tree, *copy).ok());

  // 1 and 2 dominate each other: not a tree.
  auto cyclic = DominatorTree::FromImmediateDominators({O(4), O(2), O(1), O(0)}, {});
  EXPECT_EQ(cyclic.status().code(), absl::StatusCode::kInvalidArgument);
  auto out_of_range = DominatorTree::FromImmediateDominators({O(4), O(9), O(0), O(0)}, {});
  EXPECT_EQ(out_of_range.status().code(), absl::StatusCode::kInvalidArgument);
  auto self = DominatorTree::FromImmediateDominators({O(4), O(1), O(0), O(0)}, {});
  EXPECT_EQ(self.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DominatorTreeTest, DeterministicAcrossRuns) {
  const CsrGraph g = MakeGraph(6, {{0, 1}, {1, 2}, {2, 1}, {0, 3}, {3, 2}, {4, 5}, {2, 4}});
  DominatorTree a = Compute(g, Objects({0}));
  DominatorTree b = Compute(g, Objects({0}));
  EXPECT_TRUE(CompareDominatorTrees(a, b).ok());
}

}  // namespace
}  // namespace heapwatch::analysis
