#include "analysis/gc_root_paths.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <queue>
#include <utility>

#include "absl/strings/str_format.h"

namespace heapwatch::analysis {
namespace {

// Log position of "no parent": a GC root.
constexpr uint32_t kIsRoot = std::numeric_limits<uint32_t>::max();

// Lexicographic path cost: weak references first, then references.
struct Cost {
  uint32_t weak = 0;
  uint32_t length = 0;
  friend constexpr auto operator<=>(Cost, Cost) = default;
};

// A weak reference out of the layer before, waiting to be settled in the current layer.
struct Seed {
  uint32_t object;
  uint32_t parent;  // log position of the object that reached it
  uint32_t length;  // references from a GC root
};

// One settled object: the object and the log position of its BFS parent (kIsRoot for a GC root).
struct LogEntry {
  uint32_t object;
  uint32_t parent;
};

// Every object the search settles, in settle order: the BFS FIFO (a read position walks it) and,
// through the parent positions, the BFS tree. 8 bytes per settled object, in fixed blocks so that
// growing never copies (a doubling vector would briefly hold twice as much). Together with a
// visited bitmap (1 bit per object) this replaces a 4-byte parent per object of the heap, which a
// search that settles a third of a big heap touches almost page by page.
class SettleLog {
 public:
  static constexpr size_t kBlockShift = 16;  // 64 Ki entries = 512 KiB per block
  static constexpr size_t kBlockSize = size_t{1} << kBlockShift;

  size_t size() const { return size_; }
  const LogEntry& operator[](size_t i) const {
    return blocks_[i >> kBlockShift][i & (kBlockSize - 1)];
  }
  void push_back(LogEntry e) {
    if ((size_ & (kBlockSize - 1)) == 0)
      blocks_.push_back(std::make_unique<LogEntry[]>(kBlockSize));
    blocks_.back()[size_ & (kBlockSize - 1)] = e;
    ++size_;
  }

 private:
  std::vector<std::unique_ptr<LogEntry[]>> blocks_;
  size_t size_ = 0;
};

// The last hop of a candidate path: referrer -> target through `edge`.
struct Candidate {
  uint32_t referrer;
  uint32_t referrer_position;  // in the SettleLog
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

  // Visited: settled, or the target when it is a GC root.
  std::vector<uint64_t> visited((size_t{n} + 63) / 64, 0);
  auto is_visited = [&](uint32_t v) { return (visited[v >> 6] >> (v & 63)) & 1; };
  auto set_visited = [&](uint32_t v) { visited[v >> 6] |= uint64_t{1} << (v & 63); };
  SettleLog log;
  std::vector<Candidate> candidates;
  bool target_is_root = false;
  // The current layer's FIFO is the part of `log` from `head` on; every entry in it has length
  // `queue_length`. `seeds`: weak references out of the layer before (nondecreasing length);
  // `next_seeds`: those out of this layer.
  size_t head = 0;
  uint32_t queue_length = 0;
  std::vector<Seed> seeds;
  std::vector<Seed> next_seeds;
  for (ObjectIndex r : gc_roots) {
    if (r == target) target_is_root = true;
    if (is_visited(r.value)) continue;
    set_visited(r.value);
    if (r != target) log.push_back({r.value, kIsRoot});
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
  // must win over a strong reference found at distance d + 1 while expanding distance d. (The FIFO
  // only ever holds one distance when a distance starts, and the next seed is never shorter.)
  uint32_t layer = 0;
  bool stop = wanted == 0;
  while (!stop && (head < log.size() || !seeds.empty())) {
    size_t seed_head = 0;
    while (head < log.size() || seed_head < seeds.size()) {
      uint32_t d = std::numeric_limits<uint32_t>::max();
      if (head < log.size()) d = queue_length;
      if (seed_head < seeds.size()) d = std::min(d, seeds[seed_head].length);
      // Every candidate found later costs at least (layer, d + 1).
      if (enough(Cost{layer, d + 1})) {
        stop = true;
        break;
      }
      for (; seed_head < seeds.size() && seeds[seed_head].length == d; ++seed_head) {
        const Seed& seed = seeds[seed_head];
        if (is_visited(seed.object)) continue;
        set_visited(seed.object);
        log.push_back({seed.object, seed.parent});
      }
      const size_t distance_end = log.size();  // [head, distance_end) are at distance d
      while (head < distance_end) {
        const uint32_t u_position = static_cast<uint32_t>(head);
        const uint32_t u = log[head++].object;
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
          if (is_visited(t)) continue;
          if (weak) {
            next_seeds.push_back({t, u_position, d + 1});
          } else {
            set_visited(t);
            log.push_back({t, u_position});
          }
        }
        if (edge_to_target != kNoEdge) {
          candidates.push_back({u, u_position, edge_to_target, weak_to_target,
                                Cost{layer + (weak_to_target ? 1u : 0u), d + 1}});
          uncounted.push(candidates.back().cost);
          // Every candidate found from here on costs at least (layer, d + 1), and one of equal
          // cost sorts after those found before it, so the best `wanted` are known once that
          // many cost at most (layer, d + 1): stop without expanding the rest of distance d.
          if (enough(Cost{layer, d + 1})) {
            stop = true;
            break;
          }
        }
      }
      if (stop) break;
      queue_length = d + 1;
    }
    head = log.size();
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
    for (uint32_t p = c.referrer_position; p != kIsRoot; p = log[p].parent) {
      chain.push_back(log[p].object);
    }
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
