#include "analysis/dominating_articulation_points.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_format.h"
#include "analysis/dominator_tree.h"

namespace heapwatch::analysis {
namespace {

// The DAG must have one node per component, at most 2^32 - 4 of them (the dominator tree needs the
// super root and its own sentinels), and every edge must go to a lower component (reverse
// topological numbering, which also keeps every index in range).
Status CheckCondensation(const Condensation& condensation) {
  const CsrGraph& dag = condensation.dag;
  const uint32_t c = condensation.component_count;
  if (dag.offsets.size() != size_t{c} + 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "dominating articulation points: the condensation has %u components but its DAG %u nodes",
        c, dag.offsets.size() - 1));
  }
  if (c >= std::numeric_limits<uint32_t>::max() - 3) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "dominating articulation points: %u components; at most 2^32 - 4 are supported", c));
  }
  for (uint32_t v = 0; v < c; ++v) {
    for (ObjectIndex w : dag.successors(ObjectIndex(v))) {
      if (w.value >= v) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "dominating articulation points: DAG edge %u -> %u does not go to a lower component "
            "(the condensation must be a DAG numbered in reverse topological order, %u components)",
            v, w.value, c));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<std::vector<ComponentId>> SccRoots(const Condensation& condensation,
                                            std::span<const ObjectIndex> gc_roots) {
  HW_RETURN_IF_ERROR(CheckCondensation(condensation));
  const uint32_t c = condensation.component_count;
  const size_t objects = condensation.component_of.size();
  std::vector<bool> is_root(c, false);
  for (ObjectIndex r : gc_roots) {
    if (r.value >= objects) {
      return absl::InvalidArgumentError(
          absl::StrFormat("dominating articulation points: GC root %u is out of range (%u objects)",
                          r.value, objects));
    }
    const ComponentId component = condensation.component_of[r.value];
    if (component.value >= c) {
      return absl::InvalidArgumentError(
          absl::StrFormat("dominating articulation points: object %u is in component %u of %u",
                          r.value, component.value, c));
    }
    is_root[component.value] = true;
  }
  {
    std::vector<bool> has_predecessor(c, false);
    for (ObjectIndex w : condensation.dag.targets) has_predecessor[w.value] = true;
    for (uint32_t v = 0; v < c; ++v) {
      if (!has_predecessor[v]) is_root[v] = true;
    }
  }
  std::vector<ComponentId> roots;
  for (uint32_t v = 0; v < c; ++v) {
    if (is_root[v]) roots.push_back(ComponentId(v));
  }
  return roots;
}

StatusOr<std::vector<ComponentId>> SccImmediateDominators(const Condensation& condensation,
                                                          std::span<const ComponentId> scc_roots) {
  HW_RETURN_IF_ERROR(CheckCondensation(condensation));
  const uint32_t c = condensation.component_count;
  std::vector<ObjectIndex> sources;
  sources.reserve(scc_roots.size());
  for (ComponentId r : scc_roots) {
    if (r.value >= c) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "dominating articulation points: SCC root %u is out of range (%u components)", r.value,
          c));
    }
    sources.push_back(ObjectIndex(r.value));
  }
  // The SCC graph's nodes are components; ComputeDominatorTree names nodes ObjectIndex and the
  // super root ObjectIndex(c). The DAG has no weak flags.
  HW_ASSIGN_OR_RETURN(DominatorTree tree, ComputeDominatorTree(condensation.dag, sources));
  if (tree.unreachable_count() != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "dominating articulation points: %u of %u components are not reachable from the %u SCC "
        "roots",
        tree.unreachable_count(), c, scc_roots.size()));
  }
  std::vector<ComponentId> idom(c);
  const auto tree_idom = tree.immediate_dominators();
  for (uint32_t v = 0; v < c; ++v) idom[v] = ComponentId(tree_idom[v].value);
  return idom;
}

StatusOr<std::vector<bool>> DominatingArticulationPointsFromDominators(
    const Condensation& condensation, std::span<const ComponentId> immediate_dominators) {
  HW_RETURN_IF_ERROR(CheckCondensation(condensation));
  const uint32_t n = condensation.component_count;
  if (immediate_dominators.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrFormat("dominating articulation points: %u immediate dominators for %u components",
                        immediate_dominators.size(), n));
  }
  for (uint32_t v = 0; v < n; ++v) {
    const ComponentId d = immediate_dominators[v];
    if (!d.valid() || d.value <= v || d.value > n) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "dominating articulation points: component %u has immediate dominator %d; it must be a "
          "larger component or the super root %u",
          v, d.valid() ? static_cast<int64_t>(d.value) : int64_t{-1}, n));
    }
  }
  // Listing 4.4, components in increasing id (sinks first). value[i]: the largest
  // immediate-dominator id over the components reachable from i, i included (the super root n
  // counts as the largest id); always > i.
  const CsrGraph& dag = condensation.dag;
  std::vector<uint32_t> value(n);
  std::vector<bool> is_point(n, false);
  for (uint32_t i = 0; i < n; ++i) {
    const auto successors = dag.successors(ObjectIndex(i));
    uint32_t max = 0;
    for (ObjectIndex s : successors) max = std::max(max, value[s.value]);
    // Without successors max stays 0, which must not make component 0 a DAP: hence the emptiness
    // test (the thesis numbers from 1 and never meets this case).
    if (!successors.empty() && max == i) is_point[i] = true;
    value[i] = std::max(max, immediate_dominators[i].value);
  }
  return is_point;
}

StatusOr<DominatingArticulationPoints> ComputeDominatingArticulationPoints(
    const Condensation& condensation, std::span<const ObjectIndex> gc_roots) {
  DominatingArticulationPoints result;
  HW_ASSIGN_OR_RETURN(result.scc_roots, SccRoots(condensation, gc_roots));
  HW_ASSIGN_OR_RETURN(result.immediate_dominators,
                      SccImmediateDominators(condensation, result.scc_roots));
  HW_ASSIGN_OR_RETURN(result.is_point, DominatingArticulationPointsFromDominators(
                                           condensation, result.immediate_dominators));
  for (uint32_t v = 0; v < condensation.component_count; ++v) {
    if (result.is_point[v]) result.points.push_back(ComponentId(v));
  }
  return result;
}

}  // namespace heapwatch::analysis
