#include "analysis/gc_root_paths.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <functional>
#include <queue>
#include <utility>

#include "absl/strings/str_format.h"

namespace heapwatch::analysis {
namespace {

constexpr uint32_t kUnvisited = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kIsRoot = std::numeric_limits<uint32_t>::max() - 1;

// Lexicographic path cost: weak references first, then references.
struct Cost {
  uint32_t weak = 0;
  uint32_t length = 0;
  friend constexpr auto operator<=>(Cost, Cost) = default;
};

struct QueueEntry {
  uint32_t object;
  uint32_t parent;  // object that reached it (kIsRoot for a GC root)
  uint32_t length;  // references from a GC root
};

// An object settled in the current layer's FIFO (its parent is already in `parent`).
struct Settled {
  uint32_t object;
  uint32_t length;  // references from a GC root
};

// BFS parents by object (kUnvisited, kIsRoot or the parent's index), stored as value + 1 so that
// zero means unvisited: the array comes zero-filled from calloc, whose fresh pages the kernel maps
// in only when written, so a search that stops early (the usual case: most targets sit a few
// references below a GC root) adds to the RSS only the pages of the objects it visited.
class ParentArray {
 public:
  explicit ParentArray(uint32_t n)
      : p_(static_cast<uint32_t*>(std::calloc(std::max<size_t>(n, 1), sizeof(uint32_t)))) {
    HW_CHECK(p_ != nullptr);
  }
  ~ParentArray() { std::free(p_); }
  ParentArray(const ParentArray&) = delete;
  ParentArray& operator=(const ParentArray&) = delete;
  uint32_t operator[](uint32_t v) const { return p_[v] - 1; }  // 0 - 1 == kUnvisited
  void Set(uint32_t v, uint32_t parent) { p_[v] = parent + 1; }

 private:
  uint32_t* p_;
};

// The last hop of a candidate path: referrer -> target through `edge`.
struct Candidate {
  uint32_t referrer;
  uint64_t edge;
  bool weak;
  Cost cost;  // of the whole path including the last hop
};

// The reference from `from` to `to` a path uses: the first strong one, else the first weak one.
std::pair<uint64_t, bool> PickEdge(const CsrGraph& graph, uint32_t from, uint32_t to) {
  uint64_t weak_edge = kNoEdge;
  for (uint64_t e = graph.offsets[from]; e < graph.offsets[from + 1]; ++e) {
    if (graph.targets[e].value != to) continue;
    if (!graph.is_weak(e)) return {e, false};
    if (weak_edge == kNoEdge) weak_edge = e;
  }
  return {weak_edge, true};
}

}  // namespace

StatusOr<std::vector<GraphPath>> ShortestPathsFromGcRoots(const CsrGraph& graph,
                                                          std::span<const ObjectIndex> gc_roots,
                                                          ObjectIndex target, size_t max_paths) {
  if (graph.offsets.empty() || graph.offsets.back() != graph.targets.size() ||
      (!graph.weak.empty() && graph.weak.size() != graph.targets.size())) {
    return absl::InvalidArgumentError("paths from GC roots: malformed CSR graph");
  }
  if (graph.offsets.size() - 1 >= kIsRoot) {
    return absl::InvalidArgumentError("paths from GC roots: too many objects");
  }
  const uint32_t n = graph.node_count();
  if (target.value >= n) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "paths from GC roots: target %u is out of range (%u objects)", target.value, n));
  }
  for (ObjectIndex r : gc_roots) {
    if (r.value >= n) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "paths from GC roots: GC root %u is out of range (%u objects)", r.value, n));
    }
  }
  std::vector<GraphPath> paths;
  if (max_paths == 0) return paths;

  ParentArray parent(n);
  std::vector<Candidate> candidates;
  bool target_is_root = false;
  // The current layer's FIFO (nondecreasing length), its seeds (weak references out of the layer
  // before, nondecreasing length) and the next layer's seeds. The FIFO is a deque popped from the
  // front, so it holds only the BFS frontier (8 bytes per object), not every object visited.
  std::deque<Settled> queue;
  std::vector<QueueEntry> seeds;
  std::vector<QueueEntry> next_seeds;
  for (ObjectIndex r : gc_roots) {
    if (r == target) target_is_root = true;
    if (parent[r.value] != kUnvisited) continue;
    parent.Set(r.value, kIsRoot);
    if (r != target) queue.push_back({r.value, 0});
  }
  const size_t wanted = target_is_root ? max_paths - 1 : max_paths;

  // True once `wanted` candidates cost at most `bound` (bounds only grow): every later candidate
  // costs at least `bound`. Costs not yet counted wait in a min-heap.
  std::priority_queue<Cost, std::vector<Cost>, std::greater<Cost>> uncounted;
  size_t counted = 0;
  auto enough = [&](Cost bound) {
    while (!uncounted.empty() && uncounted.top() <= bound) {
      uncounted.pop();
      ++counted;
    }
    return counted >= wanted;
  };

  // One layer per number of weak references. Within a layer, distance by distance: first the seeds
  // at distance d (weak references out of the layer before) are settled and join the FIFO, then
  // every object at distance d is expanded. Settling before expanding matters: a seed at distance d
  // must win over a strong reference found at distance d + 1 while expanding distance d.
  uint32_t layer = 0;
  bool stop = wanted == 0;
  while (!stop && (!queue.empty() || !seeds.empty())) {
    size_t seed_head = 0;
    while (!queue.empty() || seed_head < seeds.size()) {
      uint32_t d = std::numeric_limits<uint32_t>::max();
      if (!queue.empty()) d = queue.front().length;
      if (seed_head < seeds.size()) d = std::min(d, seeds[seed_head].length);
      // Every candidate found later costs at least (layer, d + 1).
      if (enough(Cost{layer, d + 1})) {
        stop = true;
        break;
      }
      for (; seed_head < seeds.size() && seeds[seed_head].length == d; ++seed_head) {
        const QueueEntry& seed = seeds[seed_head];
        if (parent[seed.object] != kUnvisited) continue;
        parent.Set(seed.object, seed.parent);
        queue.push_back({seed.object, seed.length});
      }
      while (!queue.empty() && queue.front().length == d) {
        const uint32_t u = queue.front().object;
        queue.pop_front();
        uint64_t edge_to_target = kNoEdge;
        bool weak_to_target = true;
        for (uint64_t e = graph.offsets[u]; e < graph.offsets[u + 1]; ++e) {
          const uint32_t t = graph.targets[e].value;
          if (t >= n) {
            return absl::InvalidArgumentError(absl::StrFormat(
                "paths from GC roots: reference %u of object %u targets object %u (%u objects)", e,
                u, t, n));
          }
          const bool weak = graph.is_weak(e);
          if (t == target.value) {
            if (edge_to_target == kNoEdge || (weak_to_target && !weak)) {
              edge_to_target = e;
              weak_to_target = weak;
            }
            continue;  // the target is never expanded: no candidate path runs through it
          }
          if (parent[t] != kUnvisited) continue;
          if (weak) {
            next_seeds.push_back({t, u, d + 1});
          } else {
            parent.Set(t, u);
            queue.push_back({t, d + 1});
          }
        }
        if (edge_to_target != kNoEdge) {
          candidates.push_back(
              {u, edge_to_target, weak_to_target, Cost{layer + (weak_to_target ? 1u : 0u), d + 1}});
          uncounted.push(candidates.back().cost);
        }
      }
    }
    queue.clear();
    seeds.swap(next_seeds);
    next_seeds.clear();
    ++layer;
  }

  if (target_is_root) paths.push_back(GraphPath{{GraphPathStep{target, kNoEdge, false}}, 0});
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.cost < b.cost; });
  std::vector<uint32_t> chain;
  for (const Candidate& c : candidates) {
    if (paths.size() >= max_paths) break;
    chain.clear();
    for (uint32_t x = c.referrer; x != kIsRoot; x = parent[x]) chain.push_back(x);
    std::reverse(chain.begin(), chain.end());
    GraphPath path;
    path.steps.reserve(chain.size() + 1);
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
      const auto [edge, weak] = PickEdge(graph, chain[i], chain[i + 1]);
      HW_CHECK(edge != kNoEdge);
      path.steps.push_back(GraphPathStep{ObjectIndex(chain[i]), edge, weak});
      path.weak_references += weak;
    }
    path.steps.push_back(GraphPathStep{ObjectIndex(c.referrer), c.edge, c.weak});
    path.weak_references += c.weak;
    path.steps.push_back(GraphPathStep{target, kNoEdge, false});
    HW_CHECK(path.weak_references == c.cost.weak && path.length() == c.cost.length);
    paths.push_back(std::move(path));
  }
  return paths;
}

}  // namespace heapwatch::analysis
