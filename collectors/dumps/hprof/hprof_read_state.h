// What one read of an HPROF file carries from pass to pass: the raw class dumps and GC roots of
// pass 1, the per-class layout of instance data, the classes the object passes resolve, and the
// errors every pass reports the same way. Internal to the HPROF reader (collectors/dumps/hprof).
//
// The passes (hprof_reader.cc runs them):
//   hprof_index_pass    pass 1: strings, class names, class dumps, GC roots, every object's id;
//   hprof_class_table   between the passes: the class table handed to the builder, the layout of
//                       instance data, classes for records that name no class dump;
//   hprof_object_pass   the object records given to the builder, once (index order) or twice;
//   hprof_size_model    after the objects: the size model and its inference from addresses.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_READ_STATE_H_
#define HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_READ_STATE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analysis/heap_graph.h"
#include "analysis/heap_graph_builder.h"
#include "collectors/dumps/hprof/hprof_format.h"
#include "collectors/dumps/hprof/hprof_reader.h"
#include "collectors/dumps/hprof/hprof_scanner.h"
#include "common/status.h"

namespace heapwatch::hprof {

// A CLASS DUMP kept from pass 1 until the class table is built (primitive static values are not
// kept).
struct RawClass {
  uint8_t heap = 0;  // Android heap (index into heap_names) of the CLASS DUMP
  uint64_t id = 0;
  uint64_t super_id = 0;
  uint64_t loader_id = 0;
  uint64_t signers_id = 0;
  uint64_t protection_domain_id = 0;
  uint32_t instance_size = 0;
  std::vector<std::pair<uint16_t, uint64_t>> constant_refs;  // (constant pool index, object id)
  std::vector<RawClassDump::Static> statics;
  std::vector<RawClassDump::Field> fields;
};

// A GC root record of pass 1, resolved once the objects are indexed.
struct RawRoot {
  uint64_t id;
  analysis::GcRootKind kind;
  uint32_t thread;
  int32_t frame;
};

class ReadState;

// The ClassId of the class an instance or array record names. Find() has no side effects;
// Create() adds a class without fields (with a warning) for a class id with no CLASS DUMP of that
// kind (an instance of an array class), one per (id, kind).
class ClassResolver {
 public:
  analysis::ClassId Find(const ReadState& st, const analysis::BulkHeapGraphBuilder& builder,
                         uint64_t class_id, analysis::ObjectKind kind);
  analysis::ClassId Create(ReadState& st, analysis::BulkHeapGraphBuilder& builder,
                           uint64_t class_id, analysis::ObjectKind kind);

 private:
  // A direct-mapped cache in front of the hash maps: a heap has few classes with many instances.
  static constexpr size_t kCache = 1024;
  struct Slot {
    uint64_t class_id = ~0ull;
    analysis::ObjectKind kind = analysis::ObjectKind::kClass;
    uint32_t cls = 0;
  };
  std::vector<Slot> cache_ = std::vector<Slot>(kCache);
  absl::flat_hash_map<uint64_t, uint32_t> synthetic_;  // class id (| top bit for arrays) -> class
};

class ReadState {
 public:
  HprofHeader header;
  ReadOptions options;
  int64_t dump = -1;  // resolved ordinal
  uint32_t dump_count = 0;

  // Pass 1 results.
  std::vector<RawClass> raw_classes;  // CLASS DUMP order = ClassId order; freed with the table
  absl::flat_hash_map<uint64_t, uint32_t> class_by_id;  // class object id -> ClassId
  std::vector<RawRoot> roots;
  std::vector<std::pair<uint32_t, uint64_t>> heap_infos;  // (heap type, name id), first seen first
  uint64_t stream_bytes_hint = 0;  // bytes of the HPROF stream seen in pass 1
  bool objects_ascending = false;  // instances and arrays in ascending id order
  uint64_t reference_bytes = 0;    // instance data + object array bytes (bounds the references)

  // Per class (ClassId order, classes created by the object passes included): how INSTANCE DUMP
  // data decodes.
  std::vector<uint32_t> data_size;                 // expected field bytes (ids at id_size)
  std::vector<std::vector<uint32_t>> ref_offsets;  // byte offset of each instance reference slot
  std::vector<uint32_t> data_mismatch;             // instances whose data length differed
  std::vector<uint8_t> boot;                       // 1: a class dump of the boot class loader
  uint32_t max_ref_slots = 0;                      // largest ref_offsets[c].size()
  analysis::ClassId primitive_array_class[12];     // by FieldType code
  ClassResolver classes;

  // The Android heap (HeapId value) of a HEAP DUMP INFO heap type; 0 when unknown.
  uint8_t heap_index_of_type(uint32_t type) const {
    for (size_t i = 0; i < heap_infos.size(); ++i) {
      if (heap_infos[i].first == type) return static_cast<uint8_t>(i + 1);
    }
    return 0;
  }
  // Registers the per-class decoding data of a class the builder just added (no fields).
  void AddClassWithoutFields() {
    data_size.push_back(0);
    ref_offsets.emplace_back();
    data_mismatch.push_back(0);
    boot.push_back(0);
  }
};

// The class of primitive arrays of `type`, created (without a class dump) on first use.
analysis::ClassId PrimitiveArrayClass(ReadState& st, analysis::BulkHeapGraphBuilder& builder,
                                      analysis::FieldType type);

// "the dump changed while it was being read": a record of a later pass does not match pass 1.
Status FileChanged(uint64_t offset);

// A builder error for the record at byte `offset`, in the reader's terms: FailedPrecondition (the
// record does not fit the index made by pass 1) becomes FileChanged; DataLoss (more reference
// slots than the file holds ids) names the cause; other errors get the offset appended.
Status AtRecord(Status status, uint64_t offset);

}  // namespace heapwatch::hprof

#endif  // HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_READ_STATE_H_
