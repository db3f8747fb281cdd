// The object passes of the HPROF reader: every INSTANCE, OBJECT ARRAY and PRIMITIVE ARRAY DUMP of
// the chosen heap dump (and, when the builder places them by the file's order, every CLASS DUMP)
// decoded and given to the graph builder: the record's class (ClassResolver), its reference
// values in slot order, array lengths, the Android heap. Internal to the HPROF reader.
//
// The two strategies (analysis::ObjectOrder) are two ways to run this pass:
//   kSingle                       instances and arrays in ascending address order and no repeated
//                                 ids (HotSpot, Android, NetBeans): one pass, references appended;
//   kFirstRound then kSecondRound any order, repeats allowed: round 1 counts each object's
//                                 references, round 2 fills them.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_OBJECT_PASS_H_
#define HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_OBJECT_PASS_H_

#include <cstdint>

#include "analysis/heap_graph_builder.h"
#include "collectors/dumps/hprof/hprof_read_state.h"
#include "collectors/dumps/hprof/hprof_scanner.h"
#include "common/status.h"

namespace heapwatch::hprof {

enum class ObjectPassKind : uint8_t {
  kSingle,       // ObjectOrder::kIndexOrder
  kFirstRound,   // ObjectOrder::kTwoRounds, round 1 (classes resolved, data lengths checked)
  kSecondRound,  // ObjectOrder::kTwoRounds, round 2 (classes as in round 1)
};

// Scans `in` from just after the header and gives every object record of dump st.dump (set in
// `scan`) to `builder`, which must be in stage 3 with the matching ObjectOrder (and round).
// Errors: those of the scanner; FileChanged when a record does not match pass 1 (the file changed
// between the passes); DataLoss when instances are shorter than their class layouts;
// ResourceExhausted beyond 2^32 - 1 references or 2^31 classes (each naming the record's offset).
Status RunObjectPass(StreamReader& in, const ScanOptions& scan, ReadState& st,
                     analysis::BulkHeapGraphBuilder& builder, ObjectPassKind kind);

}  // namespace heapwatch::hprof

#endif  // HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_OBJECT_PASS_H_
