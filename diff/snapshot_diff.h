// Diff of two class histograms (snapshots) of one agent: what grew, what shrank, what appeared,
// what went.
//
// This is the "compare simple dumps and sort the entries" step of the dynaTrace thesis (seeds/001,
// section 1.5 "The Memory Diagnosis Process and Dump Types": simple heap dumps "can be compared and
// entries can be sorted"). Trend detection over many snapshots lives in diff/trend_detector.h.
//
// Thread-safety: DiffSnapshots is a pure function; call it from any thread.
#ifndef HEAPWATCH_DIFF_SNAPSHOT_DIFF_H_
#define HEAPWATCH_DIFF_SNAPSHOT_DIFF_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/histogram.h"

namespace heapwatch::diff {

// How one class changed between the two snapshots.
enum class ClassChange : uint8_t {
  kChanged = 0,    // present in both, instances or bytes differ
  kNew = 1,        // absent (no live objects) in `from`, present in `to`
  kVanished = 2,   // present in `from`, absent in `to`
  kUnchanged = 3,  // present in both with equal instances and bytes
};

// Per-class delta. A class absent from a histogram has 0 instances and 0 bytes there (HotSpot
// prints a row only for classes with at least one object). Rows with the same class name (the same
// class loaded by several class loaders, which HotSpot prints as separate rows) are summed into one
// entry.
struct ClassDelta {
  std::string class_name;
  uint64_t instances_before = 0;
  uint64_t instances_after = 0;
  uint64_t bytes_before = 0;  // shallow bytes
  uint64_t bytes_after = 0;
  int64_t instances_delta = 0;  // instances_after - instances_before
  int64_t bytes_delta = 0;      // bytes_after - bytes_before
  ClassChange change = ClassChange::kUnchanged;

  friend bool operator==(const ClassDelta&, const ClassDelta&) = default;
};

struct SnapshotDiff {
  absl::Time from;  // time of the `from` snapshot
  absl::Time to;    // time of the `to` snapshot
  // One entry per class present in either snapshot, sorted by bytes_delta descending (largest
  // growth first), then by class_name ascending; unchanged classes are included (with zero deltas).
  std::vector<ClassDelta> classes;
  // Sums over `classes` (i.e. over the histogram rows, not the histograms' "Total" lines, so that
  // they always agree with the per-class deltas).
  int64_t total_bytes_delta = 0;
  int64_t total_instances_delta = 0;
};

// Computes the per-class difference `to - from`. The two snapshots are meant to be of one agent,
// `from` older than `to`, but neither is required: the diff is computed as given (agent and times
// are the caller's business; `from`/`to` are copied into the result). Deltas saturate at the int64
// range (a histogram row above 2^63 bytes is not a real heap). Never fails. Complexity: O((a + b)
// log(a + b)) for a and b rows; allocates the result and a hash map of class names.
SnapshotDiff DiffSnapshots(const Snapshot& from, const Snapshot& to);

// Human-readable name of a ClassChange ("changed", "new", "vanished", "unchanged").
const char* ClassChangeName(ClassChange change);

}  // namespace heapwatch::diff

#endif  // HEAPWATCH_DIFF_SNAPSHOT_DIFF_H_
