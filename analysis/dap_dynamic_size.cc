#include "analysis/dap_dynamic_size.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace heapwatch::analysis {

StatusOr<DapDynamicSizes> ComputeDapDynamicSizes(const Condensation& condensation,
                                                 const DominatingArticulationPoints& points,
                                                 const DapDynamicSizeOptions& options) {
  const uint32_t n = condensation.component_count;
  const CsrGraph& dag = condensation.dag;
  if (dag.offsets.size() != size_t{n} + 1 || condensation.component_bytes.size() != n ||
      condensation.component_objects.size() != n || points.is_point.size() != n) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "DAP dynamic size: %u components but %u DAG nodes, %u byte sizes, %u object counts and "
        "%u DAP flags",
        n, dag.offsets.size() - 1, condensation.component_bytes.size(),
        condensation.component_objects.size(), points.is_point.size()));
  }
  // Every edge must go to a lower component (this also keeps every index below in range).
  for (uint32_t v = 0; v < n; ++v) {
    for (ObjectIndex w : dag.successors(ObjectIndex(v))) {
      if (w.value >= v) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "DAP dynamic size: DAG edge %u -> %u does not go to a lower component", v, w.value));
      }
    }
  }
  const std::vector<bool>& is_point = points.is_point;
  const std::vector<uint64_t>& own_bytes = condensation.component_bytes;
  const std::vector<uint32_t>& own_objects = condensation.component_objects;
  DapDynamicSizes result;
  result.of_component.resize(n);
  // mark[v] == c + 1: v was visited by the search from c (0 = never visited), so no array is
  // cleared between searches.
  std::vector<uint32_t> mark(n, 0);
  std::vector<ObjectIndex> stack;
  const uint64_t max_visits = options.max_visits;
  uint64_t visits = 0;
  uint64_t points_used = 0;
  for (uint32_t c = 0; c < n; ++c) {
    const uint32_t stamp = c + 1;
    uint64_t bytes = own_bytes[c];
    uint64_t objects = own_objects[c];
    mark[c] = stamp;
    ++visits;
    stack.clear();
    for (ObjectIndex w : dag.successors(ObjectIndex(c))) {
      if (mark[w.value] == stamp) continue;
      mark[w.value] = stamp;
      stack.push_back(w);
    }
    while (!stack.empty()) {
      const uint32_t v = stack.back().value;
      stack.pop_back();
      ++visits;
      if (is_point[v]) {
        // Reach(v) is entered only through v (v < c, so its size is done): it counts once, whole.
        bytes += result.of_component[v].bytes;
        objects += result.of_component[v].objects;
        ++points_used;
        continue;
      }
      bytes += own_bytes[v];
      objects += own_objects[v];
      for (ObjectIndex w : dag.successors(ObjectIndex(v))) {
        if (mark[w.value] == stamp) continue;
        mark[w.value] = stamp;
        stack.push_back(w);
      }
    }
    if (max_visits != 0 && visits > max_visits) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "DAP dynamic size: more than %u component visits after %u of %u components", max_visits,
          c + 1, n));
    }
    result.of_component[c] = DynamicSize{bytes, objects};
  }
  result.points_used = points_used;
  result.visits = visits;
  return result;
}

}  // namespace heapwatch::analysis
