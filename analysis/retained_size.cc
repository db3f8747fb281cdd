#include "analysis/retained_size.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"

namespace heapwatch::analysis {
namespace {

Status CheckObject(ObjectIndex v, uint32_t limit, const char* what) {
  if (v.value <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("retained size: %s %u is out of range (limit %u)", what, v.value, limit));
}

// Marks every object reachable from `gc_roots` without entering objects flagged in `blocked`
// (iterative DFS with a stack of at most one entry per object).
Status Mark(const CsrGraph& graph, std::span<const ObjectIndex> gc_roots,
            const std::vector<bool>& blocked, const SimulatedGcOptions& options,
            std::vector<bool>& marked, std::vector<ObjectIndex>& stack) {
  const uint32_t n = graph.node_count();
  marked.assign(n, false);
  stack.clear();
  for (ObjectIndex r : gc_roots) {
    if (blocked[r.value] || marked[r.value]) continue;
    marked[r.value] = true;
    stack.push_back(r);
  }
  while (!stack.empty()) {
    const ObjectIndex v = stack.back();
    stack.pop_back();
    const uint64_t end = graph.offsets[v.value + 1];
    for (uint64_t e = graph.offsets[v.value]; e < end; ++e) {
      if (!options.follow_weak_references && graph.is_weak(e)) continue;
      const ObjectIndex t = graph.targets[e];
      if (t.value >= n) {
        return absl::InvalidArgumentError(
            absl::StrFormat("retained size: reference %u of object %u targets object %u, but the "
                            "graph has %u objects",
                            e, v.value, t.value, n));
      }
      if (marked[t.value] || blocked[t.value]) continue;
      marked[t.value] = true;
      stack.push_back(t);
    }
  }
  return absl::OkStatus();
}

// Calls fn(v) for every object of the precise retained set of `set`, in increasing index order.
template <typename Fn>
Status ForEachPreciselyRetained(const CsrGraph& graph, std::span<const ObjectIndex> gc_roots,
                                std::span<const ObjectIndex> set, const SimulatedGcOptions& options,
                                Fn fn) {
  if (graph.offsets.empty() || graph.offsets.back() != graph.targets.size()) {
    return absl::InvalidArgumentError("retained size: malformed CSR graph");
  }
  const uint32_t n = graph.node_count();
  if (n == 0) {
    if (!gc_roots.empty() || !set.empty()) {
      return absl::InvalidArgumentError("retained size: objects given for an empty graph");
    }
    return absl::OkStatus();
  }
  for (ObjectIndex r : gc_roots) HW_RETURN_IF_ERROR(CheckObject(r, n - 1, "GC root"));
  std::vector<bool> blocked(n, false);
  for (ObjectIndex v : set) {
    HW_RETURN_IF_ERROR(CheckObject(v, n - 1, "set member"));
    blocked[v.value] = true;
  }
  std::vector<ObjectIndex> stack;
  std::vector<bool> after;
  HW_RETURN_IF_ERROR(Mark(graph, gc_roots, blocked, options, after, stack));
  // "Before": nothing blocked. Reuse `blocked` as the no-block mask only after `after` is done.
  std::vector<bool> before;
  std::fill(blocked.begin(), blocked.end(), false);
  HW_RETURN_IF_ERROR(Mark(graph, gc_roots, blocked, options, before, stack));
  std::vector<ObjectIndex>().swap(stack);
  std::vector<bool>().swap(blocked);
#if defined(__GLIBC__)
  // The mark stack (up to 4 bytes per object) often stays below glibc's trim threshold after it is
  // freed; return it to the kernel rather than keep it in the RSS for the rest of the analysis.
  malloc_trim(0);
#endif
  for (uint32_t v = 0; v < n; ++v) {
    if (before[v] && !after[v]) fn(ObjectIndex(v));
  }
  return absl::OkStatus();
}

}  // namespace

RetainedSizes RetainedSizes::FromBytes(std::vector<uint64_t> bytes) {
  RetainedSizes sizes;
  sizes.wide_ = std::move(bytes);
  return sizes;
}

std::vector<uint64_t> RetainedSizes::ToVector() const {
  std::vector<uint64_t> out(size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = (*this)[i];
  return out;
}

RetainedSizes ComputeRetainedSizes(const DominatorTree& tree, ShallowSizeFn shallow_size) {
  const size_t entries = size_t{tree.object_count()} + 1;
  // The unit (GCD of the shallow sizes) and the total, in units: every entry is a sum of shallow
  // sizes of tree objects, so at most the total.
  uint64_t unit = 0;
  uint64_t total = 0;
  bool total_overflows = false;
  for (uint32_t i = 0; i < tree.object_count(); ++i) {
    if (!tree.reachable(ObjectIndex(i))) continue;
    const uint64_t size = shallow_size(ObjectIndex(i));
    unit = std::gcd(unit, size);
    total_overflows |= __builtin_add_overflow(total, size, &total);
  }
  RetainedSizes out;
  out.unit_ = unit == 0 ? 1 : unit;
  out.compact_ = !total_overflows && total / out.unit_ <= std::numeric_limits<uint32_t>::max();
  if (out.compact_) {
    out.narrow_.assign(entries, 0);
  } else {
    out.unit_ = 1;
    out.wide_.assign(entries, 0);
  }
  // Postorder walk of the dominator tree without a stack (a chain of 10^8 objects would need one
  // entry per level): descend into the first child; when a node is finished, add it to its
  // immediate dominator and continue with its next sibling, found by binary search in the
  // parent's children (they are in increasing ObjectIndex order).
  auto walk = [&](auto& retained, uint64_t divisor) {
    const ObjectIndex super_root = tree.super_root();
    ObjectIndex v = super_root;
    size_t next_child = 0;
    while (true) {
      const auto kids = tree.children(v);
      if (next_child < kids.size()) {
        v = kids[next_child];
        next_child = 0;
        continue;
      }
      if (v == super_root) break;
      const ObjectIndex parent = tree.immediate_dominator(v);
      // Exact: every shallow size is a multiple of the divisor, and no sum exceeds the total.
      retained[v.value] += shallow_size(v) / divisor;
      retained[parent.value] += retained[v.value];
      const auto siblings = tree.children(parent);
      next_child = static_cast<size_t>(std::lower_bound(siblings.begin(), siblings.end(), v) -
                                       siblings.begin()) +
                   1;
      v = parent;
    }
  };
  if (out.compact_) {
    walk(out.narrow_, out.unit_);
  } else {
    walk(out.wide_, 1);
  }
  return out;
}

StatusOr<std::vector<ObjectIndex>> RetainedSet(const DominatorTree& tree, ObjectIndex object) {
  HW_RETURN_IF_ERROR(CheckObject(object, tree.object_count(), "object"));
  std::vector<ObjectIndex> out;
  if (!tree.reachable(object)) return out;
  std::vector<ObjectIndex> stack{object};
  while (!stack.empty()) {
    const ObjectIndex v = stack.back();
    stack.pop_back();
    if (v != tree.super_root()) out.push_back(v);
    const auto kids = tree.children(v);
    for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
  }
  return out;
}

StatusOr<uint64_t> MinimumRetainedSize(const DominatorTree& tree,
                                       const RetainedSizes& retained_sizes,
                                       std::span<const ObjectIndex> set) {
  if (retained_sizes.size() != size_t{tree.object_count()} + 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "minimum retained size: %u retained sizes for %u objects (expected objects + 1)",
        retained_sizes.size(), tree.object_count()));
  }
  absl::flat_hash_set<uint32_t> members;
  members.reserve(set.size());
  for (ObjectIndex v : set) {
    HW_RETURN_IF_ERROR(CheckObject(v, tree.object_count(), "set member"));
    if (tree.reachable(v)) members.insert(v.value);
  }
  // has_member_at_or_above[x]: x or one of its dominator-tree ancestors is a member. Memoised for
  // every non-member examined, so each ancestor is climbed over at most once in total.
  absl::flat_hash_map<uint32_t, bool> has_member_at_or_above;
  std::vector<uint32_t> path;
  uint64_t total = 0;
  for (uint32_t m : members) {
    bool dominated = false;
    path.clear();
    for (ObjectIndex x = tree.immediate_dominator(ObjectIndex(m)); x != kNoObject;
         x = tree.immediate_dominator(x)) {
      if (members.contains(x.value)) {
        dominated = true;
        break;
      }
      if (auto it = has_member_at_or_above.find(x.value); it != has_member_at_or_above.end()) {
        dominated = it->second;
        break;
      }
      path.push_back(x.value);
    }
    for (uint32_t x : path) has_member_at_or_above.emplace(x, dominated);
    if (!dominated) total += retained_sizes[m];
  }
  return total;
}

StatusOr<std::vector<ObjectIndex>> PreciseRetainedSet(const CsrGraph& graph,
                                                      std::span<const ObjectIndex> gc_roots,
                                                      std::span<const ObjectIndex> set,
                                                      const SimulatedGcOptions& options) {
  std::vector<ObjectIndex> out;
  HW_RETURN_IF_ERROR(ForEachPreciselyRetained(graph, gc_roots, set, options,
                                              [&](ObjectIndex v) { out.push_back(v); }));
  return out;
}

StatusOr<RetainedSetSize> PreciseRetainedSize(const CsrGraph& graph,
                                              std::span<const ObjectIndex> gc_roots,
                                              std::span<const ObjectIndex> set,
                                              ShallowSizeFn shallow_size,
                                              const SimulatedGcOptions& options) {
  RetainedSetSize size;
  HW_RETURN_IF_ERROR(ForEachPreciselyRetained(graph, gc_roots, set, options, [&](ObjectIndex v) {
    size.bytes += shallow_size(v);
    ++size.objects;
  }));
  return size;
}

}  // namespace heapwatch::analysis
