// libFuzzer target over the IBM text heap dump reader (collectors/dumps/ibm_text): any byte string
// is read as a text heap dump; the reader must return OK or an error, never crash, hang or allocate
// without bound, and a graph that comes out must satisfy ibm_fuzzers.h's checks. Built and run by
// scripts/fuzz.sh, seeded with the hand-written files of tests/collectors/dumps/data/ibm_text.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "collectors/dumps/fuzz/ibm_fuzzers.h"
#include "collectors/dumps/ibm_text/text_dump_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace heapwatch;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  dumps::ReadOptions options;
  options.instance_class_edges = size % 2 == 1;
  auto graph = dumps::ibm_text::ReadTextDumpGraphFromBuffer(bytes, options);
  if (!graph.ok()) return 0;
  return fuzz::ExerciseGraph(*graph);
}
