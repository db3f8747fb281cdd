// The class histogram ("simple dump") and the snapshot that carries it.
//
// A class histogram is what HotSpot's `GC.class_histogram` diagnostic command prints: for every loaded class
// with at least one object on the heap, the number of instances and their total shallow size. A snapshot is
// one histogram of one agent at one point in time. Source: dynaTrace thesis (seeds/001), section "simple dump";
// HotSpot `HeapInspection::heap_inspection` (src/hotspot/share/memory/heapInspection.cpp) for the fields.
#ifndef HEAPWATCH_COMMON_HISTOGRAM_H_
#define HEAPWATCH_COMMON_HISTOGRAM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/agent.h"
#include "common/gc.h"

namespace heapwatch {

// One row of a class histogram.
struct ClassHistogramRow {
  // Java class name in source form as the JVM prints it: "java.lang.String", "byte[]", "java.lang.Object[]",
  // "java.util.HashMap$Node". Never empty.
  std::string class_name;
  // Module the class belongs to as printed by JDK 9+ ("java.base@17.0.15"); empty when the JVM does not print
  // one (JDK 8, classes in the unnamed module).
  std::string module;
  uint64_t instances = 0;  // number of objects
  uint64_t bytes = 0;      // total shallow size of those objects, in bytes

  friend bool operator==(const ClassHistogramRow&, const ClassHistogramRow&) = default;
};

// A whole class histogram. Rows are in the order the JVM printed them (descending bytes for HotSpot).
struct ClassHistogram {
  std::vector<ClassHistogramRow> rows;
  uint64_t total_instances = 0;  // the "Total" line; equals the sum over rows for a well-formed histogram
  uint64_t total_bytes = 0;      // in bytes

  friend bool operator==(const ClassHistogram&, const ClassHistogram&) = default;
};

// One class histogram of one agent at one time.
struct Snapshot {
  AgentId agent;
  absl::Time time;  // when the histogram was taken (wall clock of the daemon), microsecond precision when stored
  ClassHistogram histogram;
  // How the histogram was taken and what it cost the JVM; mode kUnknown when not recorded.
  CollectionCost cost;
};

}  // namespace heapwatch

#endif  // HEAPWATCH_COMMON_HISTOGRAM_H_
