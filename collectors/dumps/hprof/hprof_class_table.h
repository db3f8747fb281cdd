// Between pass 1 and the object passes of the HPROF reader: the class table made from the CLASS
// DUMP and LOAD CLASS records and handed to the builder (names in source form, superclasses, a
// class without fields for each missing superclass, fields, statics, the class objects'
// references), the Android heap names, and how each class's INSTANCE DUMP data decodes (offsets of
// its reference fields, expected length). Internal to the HPROF reader.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_CLASS_TABLE_H_
#define HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_CLASS_TABLE_H_

#include "analysis/heap_graph_builder.h"
#include "collectors/dumps/hprof/hprof_index_pass.h"
#include "collectors/dumps/hprof/hprof_read_state.h"
#include "common/status.h"

namespace heapwatch::hprof {

// Adds every class of st.raw_classes to `builder` (ClassId = CLASS DUMP order, missing
// superclasses appended), names the heaps, calls builder.FinishClasses() and fills st's per-class
// decoding data; frees st.raw_classes. `names` is the finished pass 1.
// Errors: DataLoss when the class hierarchies declare more instance fields than the file could
// hold (a corrupt file); InvalidArgument from FinishClasses (a superclass cycle).
Status BuildClassTable(ReadState& st, const IndexPass& names,
                       analysis::BulkHeapGraphBuilder& builder);

}  // namespace heapwatch::hprof

#endif  // HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_CLASS_TABLE_H_
