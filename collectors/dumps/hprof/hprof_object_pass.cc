// The object passes of the HPROF reader (hprof_object_pass.h): record decoding into the builder.
#include "collectors/dumps/hprof/hprof_object_pass.h"

#include <algorithm>
#include <span>
#include <vector>

#include "collectors/dumps/stream_reader.h"

namespace heapwatch::hprof {
namespace {

using analysis::BulkHeapGraphBuilder;
using analysis::ClassId;
using analysis::FieldType;
using analysis::kNoClass;
using analysis::ObjectIndex;
using analysis::ObjectKind;

class ObjectPass : public HandlerBase {
 public:
  static constexpr bool kWantsStrings = false;
  static constexpr bool kWantsObjectArrayElements = true;
  // Object array elements go to the builder in batches of at most this many.
  static constexpr uint32_t kBatch = 4096;

  ObjectPass(ReadState& st, BulkHeapGraphBuilder& builder, ObjectPassKind kind)
      : st_(st),
        b_(builder),
        kind_(kind),
        id_(st.header.id_size),
        values_(std::max<uint32_t>(st.max_ref_slots, kBatch)) {}

  Status OnHeapDumpInfo(uint32_t heap_type, uint64_t) {
    b_.SetHeap(analysis::HeapId{st_.heap_index_of_type(heap_type)});
    return absl::OkStatus();
  }

  // Index order: the builder places class objects itself, from the class table.
  Status OnClassDump(const RawClassDump& c) {
    if (kind_ == ObjectPassKind::kSingle) return absl::OkStatus();
    auto it = st_.class_by_id.find(c.id);
    if (it == st_.class_by_id.end()) return FileChanged(c.offset);
    return Check(b_.AddClassObject(ClassId{it->second}), c.offset);
  }

  Status OnInstance(uint64_t id, uint64_t class_id, const uint8_t* data, uint32_t len,
                    uint64_t offset) {
    ClassId cls = Resolve(id, class_id, ObjectKind::kInstance);
    size_t count = 0;
    if (cls.valid()) {
      const std::vector<uint32_t>& offs = st_.ref_offsets[cls.value];
      count = offs.size();
      for (size_t i = 0; i < count; ++i) {
        values_[i] = offs[i] + id_ <= len ? LoadId(data + offs[i], id_) : 0;
      }
    }
    ObjectIndex v;
    HW_RETURN_IF_ERROR(Check(
        b_.AddInstance(id, cls, std::span<const uint64_t>(values_.data(), count), &v), offset));
    if (kind_ != ObjectPassKind::kSecondRound && v.valid() && len != st_.data_size[cls.value]) {
      ++st_.data_mismatch[cls.value];
    }
    return absl::OkStatus();
  }

  Status OnObjectArrayBegin(uint64_t id, uint64_t class_id, uint32_t length, uint64_t offset) {
    ClassId cls = Resolve(id, class_id, ObjectKind::kObjectArray);
    array_offset_ = offset;
    return Check(b_.BeginObjectArray(id, cls, length), offset);
  }
  Status OnObjectArrayElements(const uint8_t* data, uint32_t count) {
    for (uint32_t done = 0; done < count;) {
      uint32_t n = std::min(count - done, kBatch);
      for (uint32_t i = 0; i < n; ++i) values_[i] = LoadId(data + size_t{done + i} * id_, id_);
      HW_RETURN_IF_ERROR(
          Check(b_.AddArrayElements(std::span<const uint64_t>(values_.data(), n)), array_offset_));
      done += n;
    }
    return absl::OkStatus();
  }
  Status OnObjectArrayEnd() { return Check(b_.EndObjectArray(), array_offset_); }

  Status OnPrimitiveArray(uint64_t id, FieldType type, uint32_t length, uint64_t offset) {
    ClassId cls = st_.primitive_array_class[static_cast<int>(type)];
    if (!cls.valid() && MayCreateClassFor(id)) cls = PrimitiveArrayClass(st_, b_, type);
    return Check(b_.AddPrimitiveArray(id, cls, length), offset);
  }

 private:
  static Status Check(Status s, uint64_t offset) {
    if (s.ok()) [[likely]]
      return s;
    return AtRecord(std::move(s), offset);
  }

  // A record's class may be created (with a warning) when it names no class dump, except in
  // round 2 (every class exists since round 1) and for a repeated id in round 1 (the record is
  // dropped; the three-pass reader never made classes for those).
  bool MayCreateClassFor(uint64_t id) const {
    if (kind_ == ObjectPassKind::kSecondRound) return false;
    return kind_ == ObjectPassKind::kSingle || !b_.HasRecord(id);
  }

  ClassId Resolve(uint64_t id, uint64_t class_id, ObjectKind kind) {
    ClassId c = st_.classes.Find(st_, b_, class_id, kind);
    if (c.valid() || !MayCreateClassFor(id)) [[likely]]
      return c;
    return st_.classes.Create(st_, b_, class_id, kind);
  }

  ReadState& st_;
  BulkHeapGraphBuilder& b_;
  const ObjectPassKind kind_;
  const uint32_t id_;
  std::vector<uint64_t> values_;  // reference values of the current record
  uint64_t array_offset_ = 0;
};

}  // namespace

Status RunObjectPass(StreamReader& in, const ScanOptions& scan, ReadState& st,
                     BulkHeapGraphBuilder& builder, ObjectPassKind kind) {
  ObjectPass pass(st, builder, kind);
  HprofScanner<ObjectPass> scanner(in, st.header, scan, pass);
  return scanner.Run();
}

}  // namespace heapwatch::hprof
