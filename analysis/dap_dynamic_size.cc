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
  // One 16-byte record per component holds everything a visit reads: what the visit adds (the
  // component's own size, or its dynamic size once that is known if it is a DAP), whether the
  // search stops there (a DAP whose size is known; the top bit of `bytes`, free since no size
  // reaches 2^63 bytes) and the mark (c + 1: visited by the search from c; 0 = never), so that no
  // array is cleared between searches.
  struct Record {
    uint64_t bytes;    // bit 63: stop here
    uint32_t objects;  // a count of objects, < 2^32
    uint32_t mark;
  };
  constexpr uint64_t kStop = uint64_t{1} << 63;
  uint64_t total_bytes = 0;
  for (uint64_t b : condensation.component_bytes) {
    if (b >= kStop || (total_bytes += b) >= kStop) {
      return absl::InvalidArgumentError(
          "DAP dynamic size: the components' sizes add up to 2^63 bytes or more");
    }
  }
  std::vector<Record> records(n);
  for (uint32_t v = 0; v < n; ++v) {
    records[v] = {condensation.component_bytes[v], condensation.component_objects[v], 0};
  }
  DapDynamicSizes result;
  result.of_component.resize(n);
  std::vector<uint32_t> stack;
  const uint64_t max_visits = options.max_visits;
  const ObjectIndex* targets = dag.targets.data();
  uint64_t visits = 0;
  uint64_t points_used = 0;
  for (uint32_t c = 0; c < n; ++c) {
    const uint32_t stamp = c + 1;
    Record& start = records[c];
    uint64_t bytes = start.bytes;  // not a stop yet: c's own size
    uint64_t objects = start.objects;
    start.mark = stamp;
    ++visits;
    stack.clear();
    for (uint64_t e = dag.offsets[c], end = dag.offsets[c + 1]; e < end; ++e) {
      const uint32_t w = targets[e].value;
      if (records[w].mark == stamp) continue;
      records[w].mark = stamp;
      stack.push_back(w);
    }
    while (!stack.empty()) {
      const uint32_t v = stack.back();
      stack.pop_back();
      ++visits;
      const Record& r = records[v];
      bytes += r.bytes & ~kStop;
      objects += r.objects;
      if (r.bytes & kStop) {
        // A DAP (v < c, so its dynamic size is done): Reach(v) is entered only through v and
        // counts once, whole.
        ++points_used;
        continue;
      }
      for (uint64_t e = dag.offsets[v], end = dag.offsets[v + 1]; e < end; ++e) {
        const uint32_t w = targets[e].value;
        if (records[w].mark == stamp) continue;
        records[w].mark = stamp;
        stack.push_back(w);
      }
    }
    if (max_visits != 0 && visits > max_visits) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "DAP dynamic size: more than %u component visits after %u of %u components", max_visits,
          c + 1, n));
    }
    result.of_component[c] = DynamicSize{bytes, objects};
    if (points.is_point[c]) {
      start.bytes = bytes | kStop;
      start.objects = static_cast<uint32_t>(objects);
    }
  }
  result.points_used = points_used;
  result.visits = visits;
  return result;
}

}  // namespace heapwatch::analysis
