#include "analysis/root_trees.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "analysis/root_inference.h"

namespace heapwatch::analysis {

StatusOr<RootTrees> ComputeRootTrees(const HeapGraph& heap, const RootTreeOptions& options) {
  const CsrGraph& graph = heap.graph();
  const uint32_t n = graph.node_count();
  RootTrees t;
  // Roots: the GC roots (artificial ones last), then inferred roots for what they do not reach.
  std::vector<bool> artificial(n, false);
  std::vector<GcRootKind> first_kind(n, GcRootKind::kUnknown);
  std::vector<bool> has_kind(n, false);
  for (const GcRoot& r : heap.gc_roots()) {
    if (r.object.value >= n) {
      return absl::InvalidArgumentError(
          absl::StrFormat("root trees: GC root %u out of range (%u objects)", r.object.value, n));
    }
    if (r.kind == GcRootKind::kArtificialRoot) artificial[r.object.value] = true;
    if (!has_kind[r.object.value]) first_kind[r.object.value] = r.kind;
    has_kind[r.object.value] = true;
  }
  for (ObjectIndex r : heap.root_objects()) {
    if (!artificial[r.value]) t.roots.push_back(r);
  }
  for (ObjectIndex r : heap.root_objects()) {
    if (artificial[r.value]) t.roots.push_back(r);
  }
  std::vector<bool>().swap(artificial);
  std::vector<bool>().swap(has_kind);
  for (ObjectIndex r : t.roots) t.root_kinds.push_back(first_kind[r.value]);
  std::vector<GcRootKind>().swap(first_kind);
  HW_ASSIGN_OR_RETURN(InferredRoots inferred,
                      InferRoots(graph, heap.root_objects(),
                                 {.follow_weak_references = options.follow_weak_references}));
  t.roots.insert(t.roots.end(), inferred.pure_roots.begin(), inferred.pure_roots.end());
  t.root_kinds.insert(t.root_kinds.end(), inferred.pure_roots.size(), GcRootKind::kPureRoot);
  t.roots.insert(t.roots.end(), inferred.artificial_roots.begin(), inferred.artificial_roots.end());
  t.root_kinds.insert(t.root_kinds.end(), inferred.artificial_roots.size(),
                      GcRootKind::kArtificialRoot);
  t.inferred_roots =
      static_cast<uint32_t>(inferred.pure_roots.size() + inferred.artificial_roots.size());

  // Depth-first searches in root order; `preorder` lists objects as they are reached.
  t.parent.assign(n, kNoObject);
  std::vector<bool> reached(n, false);
  std::vector<uint32_t> preorder;
  preorder.reserve(n);
  struct Frame {
    uint32_t v;
    uint32_t next_edge;
  };
  std::vector<Frame> stack;
  for (ObjectIndex root : t.roots) {
    if (reached[root.value]) continue;  // a GC root listed twice, or reached by an earlier tree
    reached[root.value] = true;
    preorder.push_back(root.value);
    stack.push_back({root.value, graph.offsets[root.value]});
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next_edge == graph.offsets[f.v + 1]) {
        stack.pop_back();
        continue;
      }
      const uint64_t e = f.next_edge++;
      if (!options.follow_weak_references && graph.is_weak(e)) continue;
      const ObjectIndex w = graph.targets[e];
      if (w.value >= n) {
        return absl::InvalidArgumentError(
            absl::StrFormat("root trees: reference %u of object %u targets object %u (%u objects)",
                            e, f.v, w.value, n));
      }
      if (reached[w.value]) continue;
      reached[w.value] = true;
      t.parent[w.value] = ObjectIndex(f.v);
      preorder.push_back(w.value);
      stack.push_back({w.value, graph.offsets[w.value]});  // `f` may dangle from here on
    }
  }
  // A root that an earlier tree took is not a root of its own.
  {
    std::vector<ObjectIndex> roots;
    std::vector<GcRootKind> kinds;
    std::vector<bool> seen(n, false);
    for (size_t i = 0; i < t.roots.size(); ++i) {
      const ObjectIndex r = t.roots[i];
      if (t.parent[r.value].valid() || seen[r.value]) continue;
      seen[r.value] = true;
      roots.push_back(r);
      kinds.push_back(t.root_kinds[i]);
    }
    t.roots.swap(roots);
    t.root_kinds.swap(kinds);
  }

  // Sizes bottom-up: in reverse preorder every object comes after all of its descendants.
  t.total_bytes.assign(n, 0);
  t.descendants.assign(n, 0);
  t.max_depth.assign(n, 0);
  for (uint32_t v = 0; v < n; ++v) t.total_bytes[v] = heap.shallow_size(ObjectIndex(v));
  for (auto it = preorder.rbegin(); it != preorder.rend(); ++it) {
    const ObjectIndex p = t.parent[*it];
    if (!p.valid()) continue;
    t.total_bytes[p.value] += t.total_bytes[*it];
    t.descendants[p.value] += t.descendants[*it] + 1;
    t.max_depth[p.value] = std::max(t.max_depth[p.value], t.max_depth[*it] + 1);
  }

  // Children in the order the searches reached them.
  t.children.offsets.assign(size_t{n} + 1, 0);
  for (uint32_t v : preorder) {
    if (t.parent[v].valid()) ++t.children.offsets[t.parent[v].value + 1];
  }
  for (uint32_t v = 0; v < n; ++v) t.children.offsets[v + 1] += t.children.offsets[v];
  t.children.targets.resize(t.children.offsets[n]);
  {
    std::vector<uint32_t> cursor(t.children.offsets.plain().begin(),
                                 t.children.offsets.plain().end() - 1);
    for (uint32_t v : preorder) {
      if (t.parent[v].valid()) t.children.targets[cursor[t.parent[v].value]++] = ObjectIndex(v);
    }
  }
  return t;
}

}  // namespace heapwatch::analysis
