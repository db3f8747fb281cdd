// What the IBM dump fuzzers (phd_fuzzer.cc, text_dump_fuzzer.cc) do with a graph a reader returned:
// exercise its accessors and the analyses that run on root-less graphs (the roots the reader
// inferred, HeapRoots' trees), checking invariants that must hold for any input.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_FUZZ_IBM_FUZZERS_H_
#define HEAPWATCH_COLLECTORS_DUMPS_FUZZ_IBM_FUZZERS_H_

#include <cstdint>

#include "analysis/heap_graph.h"
#include "analysis/root_trees.h"

namespace heapwatch::fuzz {

inline int ExerciseGraph(const analysis::HeapGraph& g) {
  uint64_t sum = 0;
  const analysis::CsrGraph& csr = g.graph();
  for (uint32_t v = 0; v < g.object_count(); ++v) {
    analysis::ObjectIndex o{v};
    sum += g.shallow_size(o) + g.array_length(o) + static_cast<uint64_t>(g.kind(o));
    if (g.FindObject(g.object_id(o)) != o) __builtin_trap();
    for (uint64_t e = csr.first_edge(o);
         e < csr.first_edge(analysis::ObjectIndex{v + 1}) && e < csr.first_edge(o) + 4; ++e) {
      sum += g.DescribeReference(o, e).size();
    }
  }
  // Every object is reachable from the GC roots the reader inferred.
  auto trees = analysis::ComputeRootTrees(g);
  if (!trees.ok()) __builtin_trap();
  if (g.object_count() > 0 && g.gc_roots().empty()) __builtin_trap();
  if (trees->inferred_roots != 0) __builtin_trap();
  uint64_t in_trees = 0;
  for (analysis::ObjectIndex r : trees->roots) in_trees += trees->descendants[r.value] + 1;
  if (in_trees != g.object_count()) __builtin_trap();
  sum += analysis::ComputeClassHistogram(g).total_bytes;
  return sum == 0xdeadbeef ? 1 : 0;  // keep `sum` alive
}

}  // namespace heapwatch::fuzz

#endif  // HEAPWATCH_COLLECTORS_DUMPS_FUZZ_IBM_FUZZERS_H_
