#include "analysis/dominator_verifier.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace heapwatch::analysis {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

template <typename... Args>
Status Violation(const absl::FormatSpec<Args...>& format, const Args&... args) {
  return absl::InternalError(
      absl::StrCat("dominator tree verification: ", absl::StrFormat(format, args...)));
}

// Preorder intervals of the tree: a is an ancestor-or-self of b iff pre[a] <= pre[b] < end[a].
// Indexed by ObjectIndex::value, the super root at object_count(); kNone for objects outside the
// tree.
struct Intervals {
  std::vector<uint32_t> pre;
  std::vector<uint32_t> end;
  bool AncestorOrSelf(ObjectIndex a, ObjectIndex b) const {
    return pre[a.value] <= pre[b.value] && pre[b.value] < end[a.value];
  }
};

Intervals ComputeIntervals(const DominatorTree& tree, const std::vector<ObjectIndex>& preorder) {
  Intervals iv;
  const size_t slots = size_t{tree.object_count()} + 1;
  iv.pre.assign(slots, kNone);
  iv.end.assign(slots, kNone);
  for (uint32_t i = 0; i < preorder.size(); ++i) {
    iv.pre[preorder[i].value] = i;
    iv.end[preorder[i].value] = i + 1;
  }
  // Reverse preorder: children before parents; a subtree ends where its last descendant ends.
  for (size_t i = preorder.size(); i-- > 1;) {
    const ObjectIndex v = preorder[i];
    const ObjectIndex d = tree.immediate_dominator(v);
    iv.end[d.value] = std::max(iv.end[d.value], iv.end[v.value]);
  }
  return iv;
}

// The successors of the super root: GC roots then artificial roots.
std::vector<ObjectIndex> SuperRootSuccessors(std::span<const ObjectIndex> gc_roots,
                                             const DominatorTree& tree) {
  std::vector<ObjectIndex> s(gc_roots.begin(), gc_roots.end());
  s.insert(s.end(), tree.artificial_roots().begin(), tree.artificial_roots().end());
  return s;
}

bool Followed(const CsrGraph& graph, const DominatorTree& tree, uint64_t e) {
  return tree.options().follow_weak_references || !graph.is_weak(e);
}

// Marks what `sources` reach without entering `removed` (kNoObject: nothing removed).
std::vector<bool> Reach(const CsrGraph& graph, const DominatorTree& tree,
                        std::span<const ObjectIndex> sources, ObjectIndex removed,
                        std::vector<ObjectIndex>& stack) {
  std::vector<bool> seen(graph.node_count(), false);
  stack.clear();
  for (ObjectIndex s : sources) {
    if (s == removed || seen[s.value]) continue;
    seen[s.value] = true;
    stack.push_back(s);
  }
  while (!stack.empty()) {
    const ObjectIndex v = stack.back();
    stack.pop_back();
    for (uint64_t e = graph.offsets[v.value]; e < graph.offsets[v.value + 1]; ++e) {
      if (!Followed(graph, tree, e)) continue;
      const ObjectIndex t = graph.targets[e];
      if (t == removed || seen[t.value]) continue;
      seen[t.value] = true;
      stack.push_back(t);
    }
  }
  return seen;
}

Status VerifyStructure(const DominatorTree& tree, const std::vector<ObjectIndex>& preorder) {
  const uint32_t n = tree.object_count();
  uint32_t in_tree = 0;
  for (uint32_t v = 0; v < n; ++v) {
    const ObjectIndex d = tree.immediate_dominator(ObjectIndex(v));
    if (d == kNoObject) continue;
    ++in_tree;
    if (d.value > n || d.value == v) {
      return Violation("object %u has immediate dominator %u (super root %u)", v, d.value, n);
    }
  }
  if (in_tree != tree.tree_object_count()) {
    return Violation("%u objects have an immediate dominator, tree_object_count() is %u", in_tree,
                     tree.tree_object_count());
  }
  if (preorder.size() != size_t{in_tree} + 1) {
    return Violation("%u objects are in the tree but %u hang from the super root (cycle)", in_tree,
                     preorder.size() - 1);
  }
  for (ObjectIndex v : preorder) {
    for (ObjectIndex c : tree.children(v)) {
      if (tree.immediate_dominator(c) != v) {
        return Violation("object %u is a child of %u but its immediate dominator is %u", c.value,
                         v.value, tree.immediate_dominator(c).value);
      }
    }
  }
  if (!tree.options().keep_unreachable) {
    if (tree.unreachable_count() != n - in_tree) {
      return Violation("unreachable_count() is %u but %u objects are outside the tree",
                       tree.unreachable_count(), n - in_tree);
    }
    if (!tree.artificial_roots().empty())
      return Violation("artificial roots without keep_unreachable");
  } else {
    uint32_t unreachable = 0;
    for (uint32_t v = 0; v < n; ++v) unreachable += !tree.reachable_from_gc_roots(ObjectIndex(v));
    if (unreachable != tree.unreachable_count()) {
      return Violation("unreachable_count() is %u but %u objects are not reachable from GC roots",
                       tree.unreachable_count(), unreachable);
    }
  }
  for (ObjectIndex r : tree.artificial_roots()) {
    if (r.value >= n || tree.immediate_dominator(r) != tree.super_root()) {
      return Violation("artificial root %u is not a child of the super root", r.value);
    }
  }
  return absl::OkStatus();
}

Status VerifyProperties(const CsrGraph& graph, std::span<const ObjectIndex> gc_roots,
                        const DominatorTree& tree, const Intervals& intervals) {
  const uint32_t n = tree.object_count();
  const std::vector<ObjectIndex> sources = SuperRootSuccessors(gc_roots, tree);
  for (ObjectIndex s : sources) {
    if (tree.immediate_dominator(s) != tree.super_root()) {
      return Violation("GC or artificial root %u has immediate dominator %u, not the super root",
                       s.value, tree.immediate_dominator(s).value);
    }
  }
  std::vector<ObjectIndex> stack;
  const std::vector<bool> from_roots = Reach(graph, tree, gc_roots, kNoObject, stack);
  const std::vector<bool> from_all = Reach(graph, tree, sources, kNoObject, stack);
  for (uint32_t v = 0; v < n; ++v) {
    const ObjectIndex o(v);
    if (from_roots[v] != tree.reachable_from_gc_roots(o)) {
      return Violation("object %u: reachable from GC roots is %d, the tree says %d", v,
                       static_cast<int>(from_roots[v]),
                       static_cast<int>(tree.reachable_from_gc_roots(o)));
    }
    if (from_all[v] != tree.reachable(o)) {
      return Violation("object %u: reachable is %d, the tree says %d", v,
                       static_cast<int>(from_all[v]), static_cast<int>(tree.reachable(o)));
    }
  }
  // Depth-first preorder of the flow graph (iterative; stack of (object, next reference)).
  std::vector<uint32_t> dfs_pre(size_t{n} + 1, kNone);
  uint32_t counter = 0;
  dfs_pre[n] = counter++;
  std::vector<std::pair<ObjectIndex, uint64_t>> dfs_stack;
  for (ObjectIndex s : sources) {
    if (dfs_pre[s.value] != kNone) continue;
    dfs_pre[s.value] = counter++;
    dfs_stack.push_back({s, graph.offsets[s.value]});
    while (!dfs_stack.empty()) {
      auto& [v, next] = dfs_stack.back();
      bool descended = false;
      while (next < graph.offsets[v.value + 1]) {
        const uint64_t e = next++;
        if (!Followed(graph, tree, e)) continue;
        const ObjectIndex t = graph.targets[e];
        if (dfs_pre[t.value] == kNone) {
          dfs_pre[t.value] = counter++;
          dfs_stack.push_back({t, graph.offsets[t.value]});
          descended = true;
          break;
        }
      }
      if (!descended) dfs_stack.pop_back();
    }
  }
  for (uint32_t v = 0; v < n; ++v) {
    const ObjectIndex d = tree.immediate_dominator(ObjectIndex(v));
    if (d == kNoObject) continue;
    if (dfs_pre[d.value] >= dfs_pre[v]) {
      return Violation("immediate dominator %u of object %u does not precede it in DFS preorder",
                       d.value, v);
    }
  }
  // Parent property.
  for (uint32_t u = 0; u < n; ++u) {
    if (!tree.reachable(ObjectIndex(u))) continue;
    for (uint64_t e = graph.offsets[u]; e < graph.offsets[u + 1]; ++e) {
      if (!Followed(graph, tree, e)) continue;
      const ObjectIndex v = graph.targets[e];
      const ObjectIndex d = tree.immediate_dominator(v);
      if (d == kNoObject || !intervals.AncestorOrSelf(d, ObjectIndex(u))) {
        return Violation(
            "parent property: reference %u from %u to %u, but idom(%u) = %u is not an ancestor of "
            "%u",
            e, u, v.value, v.value, d.value, u);
      }
    }
  }
  return absl::OkStatus();
}

Status VerifyExhaustively(const CsrGraph& graph, std::span<const ObjectIndex> gc_roots,
                          const DominatorTree& tree, const Intervals& intervals) {
  const uint32_t n = tree.object_count();
  const std::vector<ObjectIndex> sources = SuperRootSuccessors(gc_roots, tree);
  std::vector<ObjectIndex> stack;
  for (uint32_t x = 0; x < n; ++x) {
    const ObjectIndex removed(x);
    if (!tree.reachable(removed)) continue;
    const std::vector<bool> seen = Reach(graph, tree, sources, removed, stack);
    for (uint32_t v = 0; v < n; ++v) {
      const ObjectIndex o(v);
      if (v == x || !tree.reachable(o)) continue;
      const bool dominated = !seen[v];
      const bool descendant = intervals.AncestorOrSelf(removed, o);
      if (dominated != descendant) {
        return Violation("removing %u %s %u unreachable, but in the tree %u is %s descendant of %u",
                         x, dominated ? "makes" : "leaves", v, v, descendant ? "a" : "not a", x);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

Status VerifyDominatorTree(const CsrGraph& graph, std::span<const ObjectIndex> gc_roots,
                           const DominatorTree& tree, VerificationLevel level) {
  if (graph.offsets.empty() || graph.offsets.back() != graph.targets.size() ||
      graph.node_count() != tree.object_count()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("dominator tree verification: graph of %u objects, tree of %u",
                        graph.offsets.size() - 1, tree.object_count()));
  }
  const uint32_t n = tree.object_count();
  for (ObjectIndex r : gc_roots) {
    if (r.value >= n) {
      return absl::InvalidArgumentError(
          absl::StrFormat("dominator tree verification: GC root %u out of range", r.value));
    }
  }
  for (ObjectIndex t : graph.targets) {
    if (t.value >= n) {
      return absl::InvalidArgumentError(
          absl::StrFormat("dominator tree verification: reference to %u out of range", t.value));
    }
  }
  const std::vector<ObjectIndex> preorder = tree.Preorder();
  HW_RETURN_IF_ERROR(VerifyStructure(tree, preorder));
  if (level == VerificationLevel::kStructure) return absl::OkStatus();
  const Intervals intervals = ComputeIntervals(tree, preorder);
  HW_RETURN_IF_ERROR(VerifyProperties(graph, gc_roots, tree, intervals));
  if (level == VerificationLevel::kProperties) return absl::OkStatus();
  return VerifyExhaustively(graph, gc_roots, tree, intervals);
}

Status CompareDominatorTrees(const DominatorTree& expected, const DominatorTree& actual) {
  if (expected.object_count() != actual.object_count()) {
    return Violation("trees of %u and %u objects", expected.object_count(), actual.object_count());
  }
  for (uint32_t v = 0; v < expected.object_count(); ++v) {
    const ObjectIndex o(v);
    if (expected.immediate_dominator(o) != actual.immediate_dominator(o)) {
      return Violation("object %u: immediate dominator %u expected, %u found", v,
                       expected.immediate_dominator(o).value, actual.immediate_dominator(o).value);
    }
    if (expected.reachable_from_gc_roots(o) != actual.reachable_from_gc_roots(o)) {
      return Violation("object %u: reachability from GC roots differs", v);
    }
  }
  if (!std::equal(expected.artificial_roots().begin(), expected.artificial_roots().end(),
                  actual.artificial_roots().begin(), actual.artificial_roots().end())) {
    return Violation("artificial roots differ");
  }
  if (expected.unreachable_count() != actual.unreachable_count()) {
    return Violation("unreachable counts %u and %u", expected.unreachable_count(),
                     actual.unreachable_count());
  }
  return absl::OkStatus();
}

}  // namespace heapwatch::analysis
