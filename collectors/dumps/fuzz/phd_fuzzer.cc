// libFuzzer target over the IBM Portable Heap Dump reader (collectors/dumps/phd): any byte string
// is read as a PHD; the reader must return OK or an error, never crash, hang or allocate without
// bound, and a graph that comes out must satisfy ibm_fuzzers.h's checks. Built and run by
// scripts/fuzz.sh (clang, -fsanitize=fuzzer,address,undefined), seeded with prefixes of the
// corpora's PHD files.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "collectors/dumps/fuzz/ibm_fuzzers.h"
#include "collectors/dumps/phd/phd_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace heapwatch;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  dumps::ReadOptions options;
  options.instance_class_edges = size % 2 == 1;
  auto graph = dumps::phd::ReadPhdGraphFromBuffer(bytes, options);
  if (!graph.ok()) return 0;
  return fuzz::ExerciseGraph(*graph);
}
