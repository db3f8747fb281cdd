// libFuzzer target over the HPROF reader: any byte string is read as a heap graph and as a record
// census; both must return OK or an error, never crash, hang or allocate without bound. When a
// graph comes out, its accessors are exercised too. Built and run by scripts/fuzz.sh (clang,
// -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "analysis/heap_graph.h"
#include "collectors/dumps/hprof/hprof_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace heapwatch;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)hprof::ReadRecordCensusFromBuffer(bytes);
  hprof::ReadOptions options;
  options.instance_class_edges = size % 2 == 1;
  options.single_pass = size % 3 != 0;  // both paths of the reader
  auto graph = hprof::ReadHeapGraphFromBuffer(bytes, options);
  if (!graph.ok()) return 0;
  const analysis::HeapGraph& g = *graph;
  uint64_t sum = 0;
  for (uint32_t v = 0; v < g.object_count(); ++v) {
    analysis::ObjectIndex o{v};
    sum += g.shallow_size(o) + g.array_length(o) + static_cast<uint64_t>(g.kind(o));
    if (g.FindObject(g.object_id(o)) != o) __builtin_trap();
    const analysis::CsrGraph& csr = g.graph();
    for (uint64_t e = csr.first_edge(o);
         e < csr.first_edge(analysis::ObjectIndex{v + 1}) && e < csr.first_edge(o) + 4; ++e) {
      sum += g.DescribeReference(o, e).size();
    }
    sum += g.heap(o).value;
  }
  analysis::CsrGraph reverse = g.BuildReverseGraph();
  if (reverse.edge_count() != g.graph().edge_count()) __builtin_trap();
  sum += analysis::ComputeClassHistogram(g).total_bytes;
  for (uint32_t c = 0; c < g.class_count(); ++c)
    sum += g.class_info(analysis::ClassId{c}).name.size();
  return sum == 0xdeadbeef ? 1 : 0;  // keep `sum` alive
}
