// Pass 1 of the HPROF reader: the strings (names), the class names (LOAD CLASS), the class dumps,
// the GC roots, the Android heap names and the id of every object of the chosen heap dump, plus
// whether instances and arrays come in ascending id order. Internal to the HPROF reader.
#ifndef HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_INDEX_PASS_H_
#define HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_INDEX_PASS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "analysis/id_chunks.h"
#include "collectors/dumps/hprof/hprof_read_state.h"
#include "collectors/dumps/hprof/hprof_scanner.h"

namespace heapwatch::hprof {

// A scanner handler (hprof_scanner.h). Fills ReadState's pass-1 fields and two id lists; keeps
// the strings for the class table (Name()).
class IndexPass : public HandlerBase {
 public:
  static constexpr bool kWantsStrings = true;
  static constexpr bool kWantsObjectArrayElements = false;

  // `ids`: instances and arrays in file order; `class_ids`: one per CLASS DUMP record.
  IndexPass(ReadState& st, analysis::IdChunks& ids, analysis::IdChunks& class_ids)
      : st_(st), ids_(ids), class_ids_(class_ids) {}

  // Scans from just after the header to the end of the file; sets st.dump_count (heap dumps in
  // the file; with ScanOptions::dump -1 the last one's records are kept), objects_ascending,
  // reference_bytes and stream_bytes_hint. Errors: those of the scanner (DataLoss for a truncated
  // or corrupt file); ResourceExhausted for more than 2^32 objects or 2^31 classes in one dump.
  Status Run(StreamReader& in, const ScanOptions& scan);

  // The string with id `string_id`, or "unknown-name@0x..." when the file has none.
  std::string Name(uint64_t string_id) const;
  bool HasName(uint64_t string_id) const { return strings_.contains(string_id); }
  // The class name string id of a class object, if a LOAD CLASS record named it.
  bool ClassNameId(uint64_t class_id, uint64_t* name_id) const;
  // CLASS DUMP records that repeated a class id (the first one is used).
  uint64_t duplicate_classes() const { return duplicate_classes_; }

  // Scanner callbacks.
  Status OnString(uint64_t id, std::string_view s);
  Status OnLoadClass(uint64_t class_id, uint64_t name_id);
  Status OnDumpStart(uint32_t ordinal, uint64_t offset);
  Status OnRoot(analysis::GcRootKind kind, uint64_t id, uint32_t thread, int32_t frame);
  Status OnClassDump(const RawClassDump& c);
  Status OnInstance(uint64_t id, uint64_t, const uint8_t*, uint32_t len, uint64_t) {
    reference_bytes_ += len;
    return Add(id);
  }
  Status OnObjectArrayBegin(uint64_t id, uint64_t, uint32_t count, uint64_t) {
    reference_bytes_ += uint64_t{count} * st_.header.id_size;
    return Add(id);
  }
  Status OnPrimitiveArray(uint64_t id, analysis::FieldType, uint32_t, uint64_t) { return Add(id); }
  Status OnHeapDumpInfo(uint32_t heap_type, uint64_t name_id);

 private:
  Status Add(uint64_t id) {
    if (id <= last_object_ && ids_.size() > 0) ascending_ = false;
    last_object_ = id;
    if (ids_.size() + class_ids_.size() >= UINT32_MAX - 1) {
      return absl::ResourceExhaustedError("more than 2^32 objects in one dump");
    }
    ids_.push_back(id);
    return absl::OkStatus();
  }

  ReadState& st_;
  analysis::IdChunks& ids_;
  analysis::IdChunks& class_ids_;
  absl::flat_hash_map<uint64_t, std::pair<uint32_t, uint32_t>>
      strings_;  // id -> (arena offset, length)
  std::string arena_;
  absl::flat_hash_map<uint64_t, uint64_t> class_names_;
  uint64_t duplicate_classes_ = 0;
  uint8_t heap_ = 0;
  bool ascending_ = true;
  uint64_t last_object_ = 0;
  uint64_t reference_bytes_ = 0;
};

}  // namespace heapwatch::hprof

#endif  // HEAPWATCH_COLLECTORS_DUMPS_HPROF_HPROF_INDEX_PASS_H_
