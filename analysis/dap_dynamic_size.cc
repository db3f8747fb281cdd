#include "analysis/dap_dynamic_size.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace heapwatch::analysis {

StatusOr<DagDynamicSizes> ComputeDapDynamicSizesOfDag(const CsrGraph& dag,
                                                      const DagDominatingArticulationPoints& points,
                                                      std::span<const uint64_t> node_bytes,
                                                      std::span<const uint32_t> node_objects,
                                                      const DapDynamicSizeOptions& options) {
  const uint32_t n = dag.node_count();
  if (node_bytes.size() != n || node_objects.size() != n || points.is_point.size() != n) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "DAP dynamic size: %u DAG nodes but %u byte sizes, %u object counts and %u DAP flags", n,
        node_bytes.size(), node_objects.size(), points.is_point.size()));
  }
  // Every edge must go to a lower node (this also keeps every index below in range).
  for (uint32_t v = 0; v < n; ++v) {
    for (ObjectIndex w : dag.successors(ObjectIndex(v))) {
      if (w.value >= v) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "DAP dynamic size: DAG edge %u -> %u does not go to a lower node", v, w.value));
      }
    }
  }
  const std::vector<bool>& is_point = points.is_point;
  DagDynamicSizes result;
  result.bytes.assign(n, 0);
  result.objects.assign(n, 0);
  // mark[v] == c + 1: v was visited by the search from c (0 = never visited).
  std::vector<uint32_t> mark(n, 0);
  std::vector<ObjectIndex> stack;
  const uint64_t max_visits = options.max_visits;
  uint64_t visits = 0;
  uint64_t points_used = 0;
  for (uint32_t c = 0; c < n; ++c) {
    const uint32_t stamp = c + 1;
    uint64_t bytes = node_bytes[c];
    uint64_t objects = node_objects[c];
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
        // Reach(v) is entered only through v: its dynamic size covers it exactly once.
        bytes += result.bytes[v];
        objects += result.objects[v];
        ++points_used;
        continue;
      }
      bytes += node_bytes[v];
      objects += node_objects[v];
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
    result.bytes[c] = bytes;
    result.objects[c] = objects;
  }
  result.points_used = points_used;
  result.visits = visits;
  return result;
}

}  // namespace heapwatch::analysis
