#include "analysis/strong_components.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "analysis/reference_view_internal.h"

namespace heapwatch::analysis {
namespace {

using internal::ReferenceView;

// One level of the iterative DFS: the object and the next CSR edge of it to examine. Edge numbers
// fit 32 bits (CsrGraph holds at most 2^32 - 1 edges).
struct Frame {
  uint32_t v;
  uint32_t next;
};

inline bool TestBit(const std::vector<uint64_t>& bits, uint32_t i) {
  return (bits[i >> 6] >> (i & 63)) & 1;
}
inline void SetBit(std::vector<uint64_t>& bits, uint32_t i) {
  bits[i >> 6] |= uint64_t{1} << (i & 63);
}
inline void ClearBit(std::vector<uint64_t>& bits, uint32_t i) {
  bits[i >> 6] &= ~(uint64_t{1} << (i & 63));
}

// Pearce's PEA_FIND_SCC2, iterative. On return rindex[v] is the component number of v as Pearce
// assigns them (n, n-1, ... in completion order) and `count` the number of components.
//
// rindex[v] == 0: v not visited yet. While v is on the DFS or SCC stack, rindex[v] is the smallest
// DFS index known to be reachable from v's subtree ("lowlink"), 1-based, and root[v] says whether
// it is still v's own index. When v's component completes, every member gets the component number
// c, counted down from n: assigned numbers are always above every active index (index counts only
// objects still on the stacks), so `rindex[w] < rindex[v]` needs no "on stack" test.
Status Pearce(const ReferenceView& view, std::vector<ComponentId>& rindex, uint32_t& count) {
  const uint32_t n = view.node_count();
  rindex.assign(n, ComponentId(0));
  std::vector<uint64_t> root((size_t{n} + 63) / 64, 0);
  // With implicit class edges: bit v set once v's implicit edge has been examined.
  std::vector<uint64_t> implicit_done;
  if (view.has_implicit_edges()) implicit_done.assign(root.size(), 0);
  std::vector<Frame> frames;
  std::vector<uint32_t> scc_stack;
  uint32_t index = 1;
  uint32_t c = n;

  auto visit = [&](uint32_t v) {
    rindex[v].value = index++;
    SetBit(root, v);
    frames.push_back({v, static_cast<uint32_t>(view.begin(v))});
  };
  // The edge v -> w has been explored (w visited before or just completed).
  auto finish_edge = [&](uint32_t v, uint32_t w) {
    if (rindex[w].value < rindex[v].value) {
      rindex[v].value = rindex[w].value;
      ClearBit(root, v);
    }
  };

  for (uint32_t s = 0; s < n; ++s) {
    if (rindex[s].value != 0) continue;
    visit(s);
    while (!frames.empty()) {
      Frame& f = frames.back();
      const uint32_t v = f.v;
      if (!implicit_done.empty() && !TestBit(implicit_done, v)) {
        const ObjectIndex w = view.Implicit(v);
        if (w.valid() && rindex[w.value].value == 0) {
          visit(w.value);  // comes back here: rindex[w] is then set
          continue;
        }
        if (w.valid()) finish_edge(v, w.value);
        SetBit(implicit_done, v);
        continue;
      }
      if (f.next < view.end(v)) {
        const uint64_t e = f.next;
        if (!view.followed(e)) {
          ++f.next;
          continue;
        }
        const uint32_t w = view.target(e).value;
        if (w >= n) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "strong components: reference %u of object %u targets object %u, but the graph has "
              "%u objects",
              e, v, w, n));
        }
        if (rindex[w].value == 0) {
          visit(w);  // f.next stays: the edge is finished when w's frame is popped
          continue;
        }
        finish_edge(v, w);
        ++f.next;
        continue;
      }
      // All successors of v explored.
      frames.pop_back();
      if (TestBit(root, v)) {
        --index;
        while (!scc_stack.empty() && rindex[v].value <= rindex[scc_stack.back()].value) {
          rindex[scc_stack.back()].value = c;
          scc_stack.pop_back();
          --index;
        }
        rindex[v].value = c;
        --c;
      } else {
        scc_stack.push_back(v);
      }
      // The parent's current edge (to v) is finished on its next iteration.
    }
  }
  count = n - c;
  return absl::OkStatus();
}

StatusOr<Condensation> Condense(const ReferenceView& view, ShallowSizeFn shallow_size) {
  const uint32_t n = view.node_count();
  if (n == std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(
        "strong components: the graph has 2^32 - 1 objects (at most 2^32 - 2 are supported)");
  }
  Condensation out;
  uint32_t count = 0;
  HW_RETURN_IF_ERROR(Pearce(view, out.component_of, count));
  // Pearce numbers components n, n-1, ... in completion order; ours count up from 0 in the same
  // order (sinks first).
  for (ComponentId& id : out.component_of) id.value = n - id.value;
  out.component_count = count;

  // Objects grouped by component (counting sort).
  std::vector<uint32_t> first(size_t{count} + 1, 0);
  for (ComponentId id : out.component_of) ++first[id.value + 1];
  for (uint32_t x = 0; x < count; ++x) first[x + 1] += first[x];
  // Filled from the back, each component's start counted down from its end: afterwards first[x]
  // is the start of component x again (no separate cursor array).
  std::vector<uint32_t> members(n);
  for (uint32_t v = n; v-- > 0;) members[--first[out.component_of[v].value + 1]] = v;
  // Now first[x + 1] is the start of x; shift back by one.
  for (uint32_t x = 0; x < count; ++x) first[x] = first[x + 1];
  first[count] = n;

  // The DAG: each component's edges to other components, each once (last_seen[y] == x when the
  // edge x -> y was emitted already).
  out.component_bytes.assign(count, 0);
  out.component_objects.assign(count, 0);
  out.dag.offsets.assign(size_t{count} + 1, 0);
  std::vector<uint32_t> last_seen(count, std::numeric_limits<uint32_t>::max());
  std::vector<ObjectIndex>& targets = out.dag.targets;
  // At most one DAG edge per followed reference: reserving that avoids the copies of growing.
  targets.reserve(view.csr().edge_count() + (view.has_implicit_edges() ? n : 0));
  for (uint32_t x = 0; x < count; ++x) {
    uint64_t bytes = 0;
    for (uint32_t i = first[x]; i < first[x + 1]; ++i) {
      const uint32_t v = members[i];
      bytes += shallow_size(ObjectIndex(v));
      view.ForEachSuccessor(v, [&](ObjectIndex w) {
        const uint32_t y = out.component_of[w.value].value;
        if (y == x || last_seen[y] == x) return;
        last_seen[y] = x;
        targets.push_back(ObjectIndex(y));
      });
    }
    out.component_bytes[x] = bytes;
    out.component_objects[x] = first[x + 1] - first[x];
    out.dag.offsets[x + 1] = static_cast<uint32_t>(targets.size());
  }
  if (targets.capacity() > targets.size() + targets.size() / 4) targets.shrink_to_fit();
  return out;
}

}  // namespace

uint64_t Condensation::MemoryUsage() const {
  return component_of.capacity() * sizeof(ComponentId) + dag.offsets.MemoryUsage() +
         dag.targets.capacity() * sizeof(ObjectIndex) +
         component_bytes.capacity() * sizeof(uint64_t) +
         component_objects.capacity() * sizeof(uint32_t);
}

StatusOr<Condensation> CondenseStrongComponents(const CsrGraph& graph, ShallowSizeFn shallow_size,
                                                const StrongComponentsOptions& options) {
  if (!options.follow_class_edges) {
    return absl::InvalidArgumentError(
        "strong components: a CsrGraph does not mark class-object edges; use the HeapGraph "
        "overload "
        "to leave them out");
  }
  return Condense(ReferenceView(graph, options.follow_weak_references), shallow_size);
}

StatusOr<Condensation> CondenseStrongComponents(const HeapGraph& graph,
                                                const StrongComponentsOptions& options) {
  return Condense(ReferenceView(graph, options.follow_weak_references, options.follow_class_edges),
                  [&](ObjectIndex v) { return graph.shallow_size(v); });
}

}  // namespace heapwatch::analysis
