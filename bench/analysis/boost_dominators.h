// Baseline for the analysis benchmark: Boost.Graph's lengauer_tarjan_dominator_tree (Debian
// libboost-graph-dev) run on the same reference graph heapwatch's dominator tree runs on.
//
// The CsrGraph plus a super root (vertex n, with one edge to every GC root) is copied into a
// boost::adjacency_list<vecS, vecS, bidirectionalS> (the algorithm needs in-edges; Boost 1.74's
// bidirectional compressed_sparse_row_graph lacks degree() for the concept check). Boost's
// implementation keeps one std::deque per vertex (buckets) and evaluates path compression
// recursively, so it runs on a thread with a large stack and needs several hundred bytes per
// vertex.
#ifndef HEAPWATCH_BENCH_ANALYSIS_BOOST_DOMINATORS_H_
#define HEAPWATCH_BENCH_ANALYSIS_BOOST_DOMINATORS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/csr_graph.h"

namespace heapwatch::bench {

struct BoostDominatorResult {
  double build_seconds = 0;      // copying the CsrGraph into Boost's bidirectional CSR graph
  double lt_seconds = 0;         // lengauer_tarjan_dominator_tree itself (DFS included)
  double build_cpu_seconds = 0;  // CPU time (user + system) of the thread for the same two steps
  double lt_cpu_seconds = 0;
  // idom[v] for v < n: the immediate dominator, n for "the super root", UINT32_MAX for unreachable.
  std::vector<uint32_t> idom;
};

// Runs Boost's Lengauer-Tarjan on `graph` with a super root over `roots`. O((V+E) log(V+E)) time
// (Boost's bound), memory dominated by one std::deque per vertex. Runs the algorithm on a thread
// with a 4 GiB stack.
//
// reachable_only (the default): the references of objects that the roots do not reach are left
// out (the vertices stay, isolated). Dominators are only defined on the reachable part, and Boost
// 1.74 mishandles references from unreachable vertices: lengauer_tarjan_dominator_tree numbers
// vertices from 0 with the entry at 0 and leaves unvisited vertices at their initial number, also
// 0, so its "unreachable predecessor" test (dfnum < 0 || dfnum >= num_vertices) never fires; an
// unreachable referrer then looks like the entry, becomes the semidominator candidate with the
// smallest number, and the object waits in the bucket of a vertex the algorithm never processes:
// its immediate dominator stays null_vertex. The bogus semidominator also spreads: EVAL hands it
// to objects whose candidates pass through such an object, and step 4 copies null immediate
// dominators along. With the full graph (reachable_only = false) Boost leaves 365 reachable
// objects of the 64 MiB benchmark dump without an immediate dominator (404 of the 247 MiB one):
// on the 64 MiB dump 42 are directly referenced by one of the 319 unreachable objects, 323 get it
// through them; with reachable_only every immediate dominator equals heapwatch's.
BoostDominatorResult RunBoostLengauerTarjan(const analysis::CsrGraph& graph,
                                            std::span<const analysis::ObjectIndex> roots,
                                            bool reachable_only = true);

}  // namespace heapwatch::bench

#endif  // HEAPWATCH_BENCH_ANALYSIS_BOOST_DOMINATORS_H_
