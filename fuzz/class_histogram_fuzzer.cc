// libFuzzer target over the class-histogram text of GC.class_histogram
// (collectors/class_histogram.h), every JDK format (JDK 8 without the module column, JDK 9+ with
// it, jcmd's "<pid>:" line). Any byte string is parsed; an accepted histogram must satisfy what
// ParseClassHistogram promises (totals equal the sums over the rows, rows in source-form names).
// The name and version helpers run on the input too.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "collectors/class_histogram.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace heapwatch;
  using namespace heapwatch::collectors;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // A JVM's names and version strings are short; bound the helpers' input to a line's worth.
  std::string_view head = text.substr(0, 4096);
  std::string normalized = NormalizeClassName(head);
  if (normalized.size() > 3 * head.size() + 16) __builtin_trap();
  int version = JavaFeatureVersion(head);
  if (version < 0) __builtin_trap();
  (void)ClassHistogramCommand(size % 2 == 0, version, static_cast<int>(size % 5));

  auto histogram = ParseClassHistogram(text);
  if (!histogram.ok()) return 0;
  uint64_t instances = 0, bytes = 0;
  for (const auto& row : histogram->rows) {
    instances += row.instances;
    bytes += row.bytes;
    if (row.class_name.empty() || row.class_name.size() > size) __builtin_trap();
  }
  if (instances != histogram->total_instances || bytes != histogram->total_bytes) __builtin_trap();
  return 0;
}
