#include "analysis/root_inference.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace heapwatch::analysis {
namespace {

Status CheckRow(const CsrGraph& graph, uint32_t v) {
  const uint64_t begin = graph.offsets[v];
  const uint64_t end = graph.offsets[v + 1];
  if (begin <= end && end <= graph.targets.size()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("root inference: malformed CSR row of object %u: references [%u, %u) of %u",
                      v, begin, end, graph.targets.size()));
}

Status BadTarget(uint32_t v, uint64_t e, ObjectIndex t, uint32_t n) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "root inference: reference %u of object %u targets object %u, but the graph has %u objects",
      e, v, t.value, n));
}

// Marks what `roots` reach (iterative DFS; each object is pushed at most once).
StatusOr<std::vector<bool>> Reach(const CsrGraph& graph, std::span<const ObjectIndex> roots,
                                  bool follow_weak) {
  const uint32_t n = graph.node_count();
  std::vector<bool> reached(n, false);
  std::vector<uint32_t> stack;
  for (ObjectIndex r : roots) {
    if (r.value >= n) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "root inference: GC root %u is out of range (the graph has %u objects)", r.value, n));
    }
    if (reached[r.value]) continue;
    reached[r.value] = true;
    stack.push_back(r.value);
    while (!stack.empty()) {
      const uint32_t v = stack.back();
      stack.pop_back();
      HW_RETURN_IF_ERROR(CheckRow(graph, v));
      const uint64_t end = graph.offsets[v + 1];
      for (uint64_t e = graph.offsets[v]; e < end; ++e) {
        if (!follow_weak && graph.is_weak(e)) continue;
        const ObjectIndex t = graph.targets[e];
        if (t.value >= n) return BadTarget(v, e, t, n);
        if (!reached[t.value]) {
          reached[t.value] = true;
          stack.push_back(t.value);
        }
      }
    }
  }
  return reached;
}

}  // namespace

StatusOr<InferredRoots> InferRootsOfUnreached(const CsrGraph& graph,
                                              const std::vector<bool>& reached,
                                              const RootInferenceOptions& options) {
  const uint32_t n = graph.node_count();
  if (reached.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrFormat("root inference: %u reachability flags for %u objects", reached.size(), n));
  }
  InferredRoots result;
  for (uint32_t v = 0; v < n; ++v) result.unreached_objects += reached[v] ? 0 : 1;
  if (result.unreached_objects == 0) return result;

  // Pearce's variant of Tarjan's algorithm over the unreached objects U. rindex[v]: while v is
  // open, the smallest DFS number (from 1) it is known to reach, its own at first; once v's
  // component is complete (done[v]), the component id (from 0). Not visited: 0 and not done.
  std::vector<uint32_t> rindex(n, 0);
  std::vector<bool> done(n, false);
  std::vector<bool> entered(n, false);  // by component id: a reference from outside enters it
  std::vector<bool> multi(n, false);    // by component id: it has two objects or more
  struct Frame {
    uint32_t v;
    uint32_t next_edge;  // absolute edge number of the next reference to scan
    bool root;           // no reference found so far to an open object visited before v
  };
  std::vector<Frame> frames;
  std::vector<uint32_t> tarjan_stack;  // open objects whose frame has finished
  uint32_t next_dfs = 1;
  uint32_t next_component = 0;

  auto open = [&](uint32_t v) -> Status {
    HW_RETURN_IF_ERROR(CheckRow(graph, v));
    rindex[v] = next_dfs++;
    frames.push_back({v, graph.offsets[v], true});
    return absl::OkStatus();
  };
  // The reference from `v` (whose frame is `f`) to the visited object `w` was scanned.
  auto scanned = [&](Frame& f, uint32_t w) {
    if (done[w]) {
      entered[rindex[w]] = true;  // w's component is complete and not v's
    } else if (rindex[w] < rindex[f.v]) {
      rindex[f.v] = rindex[w];
      f.root = false;
    }
  };

  for (uint32_t s = 0; s < n; ++s) {
    if (reached[s] || done[s] || rindex[s] != 0) continue;
    HW_RETURN_IF_ERROR(open(s));
    while (!frames.empty()) {
      Frame& f = frames.back();
      const uint32_t v = f.v;
      if (f.next_edge < graph.offsets[v + 1]) {
        const uint64_t e = f.next_edge++;
        if (!options.follow_weak_references && graph.is_weak(e)) continue;
        const ObjectIndex t = graph.targets[e];
        if (t.value >= n) return BadTarget(v, e, t, n);
        const uint32_t w = t.value;
        if (reached[w]) continue;  // not part of U
        if (!done[w] && rindex[w] == 0) {
          HW_RETURN_IF_ERROR(open(w));  // `f` may dangle from here on
          continue;
        }
        scanned(f, w);
        continue;
      }
      // All references of v scanned.
      const bool root = f.root;
      frames.pop_back();
      if (root) {
        const uint32_t c = next_component++;
        const uint32_t own = rindex[v];
        while (!tarjan_stack.empty() && rindex[tarjan_stack.back()] >= own) {
          const uint32_t w = tarjan_stack.back();
          tarjan_stack.pop_back();
          rindex[w] = c;
          done[w] = true;
          multi[c] = true;
        }
        rindex[v] = c;
        done[v] = true;
      } else {
        tarjan_stack.push_back(v);
      }
      if (!frames.empty()) scanned(frames.back(), v);
    }
  }

  // One root per source component: its lowest index (the first member met in index order).
  for (uint32_t v = 0; v < n; ++v) {
    if (reached[v]) continue;
    const uint32_t c = rindex[v];
    if (entered[c]) continue;
    entered[c] = true;  // chosen: later members of c are skipped
    (multi[c] ? result.artificial_roots : result.pure_roots).push_back(ObjectIndex(v));
  }
  return result;
}

StatusOr<InferredRoots> InferRoots(const CsrGraph& graph, std::span<const ObjectIndex> gc_roots,
                                   const RootInferenceOptions& options) {
  HW_ASSIGN_OR_RETURN(std::vector<bool> reached,
                      Reach(graph, gc_roots, options.follow_weak_references));
  return InferRootsOfUnreached(graph, reached, options);
}

StatusOr<HeapGraph> AddInferredRoots(HeapGraph graph, const RootInferenceOptions& options) {
  HW_ASSIGN_OR_RETURN(InferredRoots inferred,
                      InferRoots(graph.graph(), graph.root_objects(), options));
  if (inferred.pure_roots.empty() && inferred.artificial_roots.empty()) return graph;
  std::vector<GcRoot> roots;
  roots.reserve(inferred.pure_roots.size() + inferred.artificial_roots.size());
  for (ObjectIndex v : inferred.pure_roots) roots.push_back({v, GcRootKind::kPureRoot});
  for (ObjectIndex v : inferred.artificial_roots) roots.push_back({v, GcRootKind::kArtificialRoot});
  const bool had_roots = !graph.gc_roots().empty();
  std::string note = absl::StrFormat(
      "%s: %u pure roots (objects without referrers) and %u artificial roots (one per cycle no "
      "other root reaches) inferred for %u objects (seed 000, HeapRoots)",
      had_roots ? "objects no GC root record reaches" : "no GC root records",
      inferred.pure_roots.size(), inferred.artificial_roots.size(), inferred.unreached_objects);
  return HeapGraph::AddRoots(std::move(graph), roots, std::move(note));
}

}  // namespace heapwatch::analysis
