// Test helpers for the graph algorithms: building CsrGraphs, random graphs with a printed seed, the
// Boost.Graph Lengauer-Tarjan oracle and brute-force reachability.
#ifndef HEAPWATCH_TESTS_ANALYSIS_GRAPH_TEST_UTIL_H_
#define HEAPWATCH_TESTS_ANALYSIS_GRAPH_TEST_UTIL_H_

#include <pthread.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "analysis/csr_graph.h"
#include "analysis/dominator_tree.h"
#include "boost/graph/adjacency_list.hpp"
#include "boost/graph/dominator_tree.hpp"
#include "gtest/gtest.h"

namespace heapwatch::analysis::testing {

struct Edge {
  uint32_t from;
  uint32_t to;
  bool weak = false;
};

// A reference graph plus its GC roots.
struct TestGraph {
  CsrGraph graph;
  std::vector<ObjectIndex> roots;
};

// CSR from an edge list; the references of each object keep the order of `edges`.
inline CsrGraph MakeGraph(uint32_t n, const std::vector<Edge>& edges) {
  CsrGraph g;
  g.offsets.assign(size_t{n} + 1, 0);
  for (const Edge& e : edges) ++g.offsets[e.from + 1];
  for (uint32_t v = 0; v < n; ++v) g.offsets[v + 1] += g.offsets[v];
  g.targets.resize(edges.size());
  std::vector<uint64_t> cursor(g.offsets.plain().begin(), g.offsets.plain().end() - 1);
  bool any_weak = false;
  for (const Edge& e : edges) any_weak |= e.weak;
  if (any_weak) g.weak.assign(edges.size(), false);
  for (const Edge& e : edges) {
    const uint64_t at = cursor[e.from]++;
    g.targets[at] = ObjectIndex(e.to);
    if (any_weak) g.weak[at] = e.weak;
  }
  return g;
}

inline std::vector<ObjectIndex> Objects(std::initializer_list<uint32_t> values) {
  std::vector<ObjectIndex> out;
  for (uint32_t v : values) out.push_back(ObjectIndex(v));
  return out;
}

// The seed of every randomised test: HEAPWATCH_TEST_SEED if set, else a fixed value. Printed by the
// caller so that a failure can be replayed.
inline uint64_t TestSeed() {
  if (const char* s = std::getenv("HEAPWATCH_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  return 20261122;
}

inline uint64_t PrintedSeed(const std::string& test) {
  const uint64_t seed = TestSeed();
  std::cout << "[ seed     ] " << test << ": HEAPWATCH_TEST_SEED=" << seed << std::endl;
  return seed;
}

struct RandomGraphShape {
  uint32_t max_nodes = 60;
  double max_edges_per_node = 4.0;
  double weak_probability = 0.0;
};

// A random graph with the features heap graphs have: several (sometimes duplicate) roots, cycles,
// self-loops, duplicate references, a part unreachable from the roots, optionally weak references.
inline TestGraph RandomGraph(std::mt19937_64& rng, const RandomGraphShape& shape) {
  auto uniform = [&](uint64_t lo, uint64_t hi) {  // inclusive
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  const uint32_t n = static_cast<uint32_t>(uniform(1, shape.max_nodes));
  // Objects >= reachable_limit only get references among themselves (plus references from them into
  // the rest), so they are unreachable unless a root lands there.
  const uint32_t reachable_limit = chance(0.5) ? static_cast<uint32_t>(uniform(1, n)) : n;
  std::vector<Edge> edges;
  const uint64_t m = uniform(0, static_cast<uint64_t>(shape.max_edges_per_node * n));
  for (uint64_t i = 0; i < m; ++i) {
    uint32_t from = static_cast<uint32_t>(uniform(0, n - 1));
    uint32_t to = static_cast<uint32_t>(uniform(0, n - 1));
    if (from < reachable_limit && to >= reachable_limit)
      to = static_cast<uint32_t>(uniform(0, reachable_limit - 1));
    edges.push_back({from, to, chance(shape.weak_probability)});
  }
  if (chance(0.5)) {  // a cycle through random objects of one part
    const uint32_t lo = chance(0.5) || reachable_limit == n ? 0 : reachable_limit;
    const uint32_t hi = lo == 0 ? reachable_limit - 1 : n - 1;
    const uint32_t len = static_cast<uint32_t>(uniform(1, std::max<uint32_t>(1, (hi - lo + 1))));
    std::vector<uint32_t> ring;
    for (uint32_t i = 0; i < len; ++i) ring.push_back(static_cast<uint32_t>(uniform(lo, hi)));
    for (uint32_t i = 0; i < len; ++i)
      edges.push_back({ring[i], ring[(i + 1) % len], chance(shape.weak_probability)});
  }
  if (chance(0.3)) {  // a long path, for depth
    uint32_t prev = static_cast<uint32_t>(uniform(0, reachable_limit - 1));
    for (uint32_t i = 0; i < n / 2; ++i) {
      const uint32_t next = static_cast<uint32_t>(uniform(0, reachable_limit - 1));
      edges.push_back({prev, next, false});
      prev = next;
    }
  }
  const uint64_t self_loops = uniform(0, 2);
  for (uint64_t i = 0; i < self_loops; ++i) {
    const uint32_t v = static_cast<uint32_t>(uniform(0, n - 1));
    edges.push_back({v, v, false});
  }
  const uint64_t duplicates = edges.empty() ? 0 : uniform(0, 3);
  for (uint64_t i = 0; i < duplicates; ++i) edges.push_back(edges[uniform(0, edges.size() - 1)]);
  std::shuffle(edges.begin(), edges.end(), rng);

  TestGraph t;
  t.graph = MakeGraph(n, edges);
  const uint64_t root_count = uniform(0, 4);
  for (uint64_t i = 0; i < root_count; ++i) {
    t.roots.push_back(ObjectIndex(static_cast<uint32_t>(uniform(0, reachable_limit - 1))));
  }
  if (!t.roots.empty() && chance(0.2)) t.roots.push_back(t.roots.front());  // duplicate root
  return t;
}

// Runs fn() on a thread with a 2 GiB stack (reserved, not committed): Boost's path compression
// recurses once per vertex on the compressed path.
template <typename Fn>
void RunWithLargeStack(Fn fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t{2} << 30);
  pthread_t thread;
  auto trampoline = [](void* arg) -> void* {
    (*static_cast<Fn*>(arg))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, trampoline, &fn), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

// Immediate dominators by Boost.Graph's lengauer_tarjan_dominator_tree on the graph plus a super
// root (vertex n) with an edge to each of `sources`; references flagged weak are left out unless
// follow_weak. Result per object: the immediate dominator (ObjectIndex(n) = the super root) or
// kNoObject.
inline std::vector<ObjectIndex> BoostImmediateDominators(const CsrGraph& graph,
                                                         const std::vector<ObjectIndex>& sources,
                                                         bool follow_weak) {
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
  using Vertex = boost::graph_traits<G>::vertex_descriptor;
  const uint32_t n = graph.node_count();
  G g(size_t{n} + 1);
  for (uint32_t v = 0; v < n; ++v) {
    for (uint64_t e = graph.offsets[v]; e < graph.offsets[v + 1]; ++e) {
      if (!follow_weak && graph.is_weak(e)) continue;
      boost::add_edge(v, graph.targets[e].value, g);
    }
  }
  for (ObjectIndex s : sources) boost::add_edge(n, s.value, g);
  const size_t count = size_t{n} + 1;
  const Vertex null = boost::graph_traits<G>::null_vertex();
  // Unreachable vertices must carry the maximum DFS number (see dominator_tree.hpp), not 0.
  std::vector<size_t> dfnum(count, std::numeric_limits<size_t>::max());
  std::vector<Vertex> parent(count, null);
  std::vector<Vertex> by_dfnum(count, null);
  std::vector<Vertex> idom(count, null);
  auto index = boost::get(boost::vertex_index, g);
  RunWithLargeStack([&] {
    boost::lengauer_tarjan_dominator_tree(
        g, boost::vertex(n, g), index, boost::make_iterator_property_map(dfnum.begin(), index),
        boost::make_iterator_property_map(parent.begin(), index), by_dfnum,
        boost::make_iterator_property_map(idom.begin(), index));
  });
  std::vector<ObjectIndex> out(n, kNoObject);
  for (uint32_t v = 0; v < n; ++v) {
    if (idom[v] != null) out[v] = ObjectIndex(static_cast<uint32_t>(idom[v]));
  }
  return out;
}

// Objects reachable from `sources` when the objects flagged in `removed` are neither started from
// nor entered. Plain BFS over adjacency, independent of the code under test.
inline std::vector<bool> BruteReachable(const CsrGraph& graph,
                                        const std::vector<ObjectIndex>& sources,
                                        const std::vector<bool>& removed, bool follow_weak) {
  const uint32_t n = graph.node_count();
  std::vector<bool> seen(n, false);
  std::vector<uint32_t> queue;
  for (ObjectIndex s : sources) {
    if (!removed[s.value] && !seen[s.value]) {
      seen[s.value] = true;
      queue.push_back(s.value);
    }
  }
  for (size_t head = 0; head < queue.size(); ++head) {
    const uint32_t v = queue[head];
    for (uint64_t e = graph.offsets[v]; e < graph.offsets[v + 1]; ++e) {
      if (!follow_weak && graph.is_weak(e)) continue;
      const uint32_t t = graph.targets[e].value;
      if (removed[t] || seen[t]) continue;
      seen[t] = true;
      queue.push_back(t);
    }
  }
  return seen;
}

// The sources of the flow graph a tree was computed on: GC roots then artificial roots.
inline std::vector<ObjectIndex> FlowSources(const std::vector<ObjectIndex>& roots,
                                            const DominatorTree& tree) {
  std::vector<ObjectIndex> s = roots;
  s.insert(s.end(), tree.artificial_roots().begin(), tree.artificial_roots().end());
  return s;
}

inline std::vector<ObjectIndex> Idoms(const DominatorTree& tree) {
  auto span = tree.immediate_dominators();
  return {span.begin(), span.end()};
}

}  // namespace heapwatch::analysis::testing

#endif  // HEAPWATCH_TESTS_ANALYSIS_GRAPH_TEST_UTIL_H_
