// The size-model inference of the HPROF reader: once the objects are in the builder, the shallow
// sizes of every class under the model ReadOptions asks for, the model's notes and, for HotSpot,
// the object layout inferred from the dump's own object addresses. Internal to the HPROF reader;
// docs/size-model.md describes the models and their sources.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_SIZE_MODEL_H_
#define HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_SIZE_MODEL_H_

#include <cstdint>
#include <span>

#include "analysis/heap_graph.h"
#include "analysis/heap_graph_builder.h"

namespace heapwatch::hprof {

struct SizeModelInput {
  analysis::SizeModel requested = analysis::SizeModel::kAuto;  // kAuto: by the HPROF version
  int hprof_minor = 2;   // 1, 2 or 3 of "JAVA PROFILE 1.0.x" (3 = Android)
  uint32_t id_size = 8;  // bytes per HPROF identifier
  // Per ClassId: bytes of instance field data (references at id_size), for the NetBeans model.
  std::span<const uint32_t> field_bytes;
  // Per ClassId: 1 for a class of the boot class loader (HotSpot's layout knobs apply to those).
  std::span<const uint8_t> boot;
};

// Sets builder.info().size_model, layout (HotSpot), size_model_notes and every class's shallow
// sizes (BulkHeapGraphBuilder::SetShallowSizes); warns when the addresses do not reveal the
// layout. REQUIRES: the builder is after FinishObjects(). O(n) for the address samples plus
// O(classes x candidate layouts) for the layouts.
void ComputeSizes(const SizeModelInput& in, analysis::BulkHeapGraphBuilder& builder);

}  // namespace heapwatch::hprof

#endif  // HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_SIZE_MODEL_H_
