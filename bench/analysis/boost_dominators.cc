#include "bench/analysis/boost_dominators.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dominator_tree.hpp>
#include <chrono>
#include <iterator>
#include <limits>
#include <utility>

#include "common/status.h"

namespace heapwatch::bench {
namespace {

using BoostGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;
using Vertex = boost::graph_traits<BoostGraph>::vertex_descriptor;

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Job {
  const analysis::CsrGraph* graph;
  std::span<const analysis::ObjectIndex> roots;
  bool reachable_only;
  BoostDominatorResult result;
};

void* RunJob(void* arg) {
  Job& job = *static_cast<Job*>(arg);
  const analysis::CsrGraph& graph = *job.graph;
  const uint32_t n = graph.node_count();
  auto start = std::chrono::steady_clock::now();
  double cpu = ThreadCpuSeconds();
  // Objects reachable from the roots (when only their references are given to Boost).
  std::vector<bool> reachable(n, !job.reachable_only);
  if (job.reachable_only) {
    std::vector<uint32_t> stack;
    for (analysis::ObjectIndex r : job.roots) {
      if (!reachable[r.value]) {
        reachable[r.value] = true;
        stack.push_back(r.value);
      }
    }
    while (!stack.empty()) {
      const uint32_t v = stack.back();
      stack.pop_back();
      for (analysis::ObjectIndex w : graph.successors(analysis::ObjectIndex(v))) {
        if (!reachable[w.value]) {
          reachable[w.value] = true;
          stack.push_back(w.value);
        }
      }
    }
  }
  // The edge list: the CSR order, then the super root's edges (source n).
  std::vector<std::pair<uint32_t, uint32_t>> edges;
  edges.reserve(graph.edge_count() + job.roots.size());
  for (uint32_t v = 0; v < n; ++v) {
    if (!reachable[v]) continue;
    for (analysis::ObjectIndex w : graph.successors(analysis::ObjectIndex(v)))
      edges.emplace_back(v, w.value);
  }
  for (analysis::ObjectIndex r : job.roots) edges.emplace_back(n, r.value);
  BoostGraph g(edges.begin(), edges.end(), n + 1);
  std::vector<std::pair<uint32_t, uint32_t>>().swap(edges);
  job.result.build_seconds = Since(start);
  job.result.build_cpu_seconds = ThreadCpuSeconds() - cpu;

  start = std::chrono::steady_clock::now();
  cpu = ThreadCpuSeconds();
  std::vector<Vertex> idom(n + 1, boost::graph_traits<BoostGraph>::null_vertex());
  boost::lengauer_tarjan_dominator_tree(
      g, Vertex(n),
      boost::make_iterator_property_map(idom.begin(), boost::get(boost::vertex_index, g)));
  job.result.lt_seconds = Since(start);
  job.result.lt_cpu_seconds = ThreadCpuSeconds() - cpu;
  job.result.idom.resize(n);
  for (uint32_t v = 0; v < n; ++v) {
    job.result.idom[v] = idom[v] == boost::graph_traits<BoostGraph>::null_vertex()
                             ? std::numeric_limits<uint32_t>::max()
                             : static_cast<uint32_t>(idom[v]);
  }
  return nullptr;
}

}  // namespace

BoostDominatorResult RunBoostLengauerTarjan(const analysis::CsrGraph& graph,
                                            std::span<const analysis::ObjectIndex> roots,
                                            bool reachable_only) {
  Job job{&graph, roots, reachable_only, {}};
  pthread_attr_t attr;
  HW_CHECK(pthread_attr_init(&attr) == 0);
  // Boost evaluates path compression recursively: a chain of millions of objects needs a deep
  // stack.
  HW_CHECK(pthread_attr_setstacksize(&attr, size_t{4} << 30) == 0);
  pthread_t thread;
  HW_CHECK(pthread_create(&thread, &attr, &RunJob, &job) == 0);
  HW_CHECK(pthread_join(thread, nullptr) == 0);
  pthread_attr_destroy(&attr);
  return std::move(job.result);
}

}  // namespace heapwatch::bench
