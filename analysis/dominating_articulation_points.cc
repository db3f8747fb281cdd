#include "analysis/dominating_articulation_points.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_format.h"
#include "analysis/dominator_tree.h"

namespace heapwatch::analysis {
namespace {

// Every edge must go to a lower node: the DAG is numbered in reverse topological order.
Status CheckReverseTopological(const CsrGraph& dag) {
  const uint32_t n = dag.node_count();
  for (uint32_t v = 0; v < n; ++v) {
    for (ObjectIndex w : dag.successors(ObjectIndex(v))) {
      if (w.value >= v) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "dominating articulation points: DAG edge %u -> %u does not go to a lower node (the "
            "graph must be a DAG numbered in reverse topological order, %u nodes)",
            v, w.value, n));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<std::vector<bool>> DominatingArticulationPointsOfDag(
    const CsrGraph& dag, std::span<const ObjectIndex> immediate_dominators) {
  const uint32_t n = dag.node_count();
  if (immediate_dominators.size() != n) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "dominating articulation points: %u immediate dominators for %u DAG nodes",
        immediate_dominators.size(), n));
  }
  for (uint32_t v = 0; v < n; ++v) {
    const ObjectIndex d = immediate_dominators[v];
    if (!d.valid() || d.value <= v || d.value > n) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "dominating articulation points: node %u has immediate dominator %d; it must be a "
          "larger node or the super root %u",
          v, d.valid() ? static_cast<int64_t>(d.value) : int64_t{-1}, n));
    }
  }
  HW_RETURN_IF_ERROR(CheckReverseTopological(dag));

  // Listing 4.4. value[i]: the largest immediate-dominator id over the nodes reachable from i, i
  // included (the super root n counts as the largest id). Always > i.
  std::vector<uint32_t> value(n);
  std::vector<bool> is_point(n, false);
  for (uint32_t i = 0; i < n; ++i) {
    const auto successors = dag.successors(ObjectIndex(i));
    uint32_t max = 0;
    for (ObjectIndex c : successors) max = std::max(max, value[c.value]);
    // Without successors max stays 0, which must not make node 0 a DAP: hence the emptiness test
    // (the thesis numbers from 1 and so never meets this case).
    if (!successors.empty() && max == i) is_point[i] = true;
    value[i] = std::max(max, immediate_dominators[i].value);
  }
  return is_point;
}

StatusOr<DagDominatingArticulationPoints> ComputeDagDominatingArticulationPoints(
    const CsrGraph& dag, std::span<const ObjectIndex> root_nodes) {
  const uint32_t n = dag.node_count();
  if (dag.offsets.size() - 1 >= std::numeric_limits<uint32_t>::max() - 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "dominating articulation points: %u DAG nodes; at most 2^32 - 4 are supported", n));
  }
  HW_RETURN_IF_ERROR(CheckReverseTopological(dag));
  // SCC roots: the given root nodes plus the sources (1 bit per node for each).
  std::vector<bool> is_root(n, false);
  for (ObjectIndex r : root_nodes) {
    if (r.value >= n) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "dominating articulation points: root node %u is out of range (%u DAG nodes)", r.value,
          n));
    }
    is_root[r.value] = true;
  }
  {
    std::vector<bool> has_predecessor(n, false);
    for (ObjectIndex w : dag.targets) has_predecessor[w.value] = true;
    for (uint32_t v = 0; v < n; ++v) {
      if (!has_predecessor[v]) is_root[v] = true;
    }
  }
  DagDominatingArticulationPoints result;
  for (uint32_t v = 0; v < n; ++v) {
    if (is_root[v]) result.flow_roots.push_back(ObjectIndex(v));
  }
  std::vector<bool>().swap(is_root);

  // Step 2: the dominator tree of the SCC graph. Every node is reachable (each lies below a source).
  DominatorOptions options;
  options.follow_weak_references = true;  // a DAG has no weak flags that matter here
  HW_ASSIGN_OR_RETURN(DominatorTree tree, ComputeDominatorTree(dag, result.flow_roots, options));
  const auto idom = tree.immediate_dominators();
  result.immediate_dominators.assign(idom.begin(), idom.end());
  if (tree.unreachable_count() != 0) {
    return absl::InternalError(absl::StrFormat(
        "dominating articulation points: %u DAG nodes unreachable from the sources",
        tree.unreachable_count()));
  }
  // Step 3.
  HW_ASSIGN_OR_RETURN(result.is_point,
                      DominatingArticulationPointsOfDag(dag, result.immediate_dominators));
  for (uint32_t v = 0; v < n; ++v) {
    if (result.is_point[v]) result.points.push_back(ObjectIndex(v));
  }
  return result;
}

}  // namespace heapwatch::analysis
