// The HPROF reader's class table (hprof_class_table.h) and the classes the object passes resolve
// for their records (ClassResolver, PrimitiveArrayClass in hprof_read_state.h).
#include "collectors/dumps/hprof/hprof_class_table.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "collectors/dumps/class_names.h"

namespace heapwatch::hprof {

using analysis::BulkHeapGraphBuilder;
using analysis::ClassId;
using analysis::ClassInfo;
using analysis::FieldInfo;
using analysis::FieldType;
using analysis::kNoClass;
using analysis::ObjectKind;

namespace {

// A class without fields that no CLASS DUMP describes.
ClassInfo ClassWithoutFields(std::string name, ObjectKind kind, FieldType element) {
  ClassInfo info;
  info.name = std::move(name);
  info.instance_kind = kind;
  info.element_type = element;
  info.synthetic = true;
  return info;
}

// Work and memory of the layouts grow with the sum over classes of the fields of their whole
// hierarchy. Real dumps have a few hundred thousand; a malformed file cannot make it unbounded.
Status CheckHierarchySize(std::span<const ClassInfo> classes, uint64_t stream_bytes) {
  uint64_t total = 0;
  for (size_t c = 0; c < classes.size(); ++c) {
    size_t steps = 0;
    for (ClassId k{static_cast<uint32_t>(c)};
         k.valid() && k.value < classes.size() && steps <= classes.size();
         k = classes[k.value].super_class, ++steps) {
      total += classes[k.value].instance_fields.size();
    }
    total += steps;
  }
  uint64_t limit = std::max<uint64_t>(64ull << 20, 64 * stream_bytes);
  if (total > limit) {
    return absl::DataLossError(absl::StrFormat(
        "corrupt dump: class hierarchies declare %d instance fields in total (more than %d)", total,
        limit));
  }
  return absl::OkStatus();
}

}  // namespace

Status BuildClassTable(ReadState& st, const IndexPass& names, BulkHeapGraphBuilder& builder) {
  const uint32_t id_size = st.header.id_size;
  const size_t nc = st.raw_classes.size();
  for (size_t c = 0; c < nc; ++c) {
    RawClass& r = st.raw_classes[c];
    ClassInfo info;
    uint64_t name_id = 0;
    std::string raw = names.ClassNameId(r.id, &name_id)
                          ? names.Name(name_id)
                          : absl::StrFormat("unknown-class@0x%x", r.id);
    dumps::ClassName cn = dumps::ParseClassName(raw);
    info.name = std::move(cn.source_name);
    info.instance_kind = cn.kind;
    info.element_type = cn.element;
    info.class_object_id = r.id;
    info.declared_instance_size = r.instance_size;
    for (const auto& f : r.fields) info.instance_fields.push_back({names.Name(f.name_id), f.type});
    analysis::ClassObjectRefs refs;
    refs.super_id = r.super_id;
    refs.loader_id = r.loader_id;
    refs.signers_id = r.signers_id;
    refs.protection_domain_id = r.protection_domain_id;
    refs.heap = analysis::HeapId{r.heap};
    for (const auto& s : r.statics) {
      info.static_fields.push_back({names.Name(s.name_id), s.type});
      if (s.type == FieldType::kObject) refs.static_refs.push_back(s.value);
    }
    refs.constant_pool.reserve(r.constant_refs.size());
    for (const auto& [index, id] : r.constant_refs) refs.constant_pool.push_back({index, id});
    builder.AddClass(std::move(info), std::move(refs));
    st.boot.push_back(r.loader_id == 0);
    // The fields and statics now live in the builder.
    std::vector<RawClassDump::Static>().swap(r.statics);
    std::vector<RawClassDump::Field>().swap(r.fields);
    std::vector<std::pair<uint16_t, uint64_t>>().swap(r.constant_refs);
  }
  // Superclasses; a missing one becomes a class without fields.
  for (size_t c = 0; c < nc; ++c) {
    uint64_t super = st.raw_classes[c].super_id;
    if (super == 0) continue;
    auto it = st.class_by_id.find(super);
    ClassId s;
    if (it == st.class_by_id.end()) {
      s = builder.AddClass(ClassWithoutFields(absl::StrFormat("unknown-class@0x%x", super),
                                              ObjectKind::kInstance, FieldType::kObject));
      st.boot.push_back(0);
      st.class_by_id.emplace(super, s.value);
      builder.Warn(
          absl::StrFormat("superclass 0x%x of %s has no CLASS DUMP; using a class without fields",
                          super, builder.classes()[c].name));
    } else {
      s = ClassId{it->second};
    }
    builder.mutable_class(ClassId{static_cast<uint32_t>(c)}).super_class = s;
  }
  std::vector<RawClass>().swap(st.raw_classes);
  HW_RETURN_IF_ERROR(CheckHierarchySize(builder.classes(), st.stream_bytes_hint));
  for (const auto& [type, name_id] : st.heap_infos) {
    builder.AddHeapName(names.HasName(name_id) ? names.Name(name_id)
                                               : absl::StrFormat("heap-%d", type));
  }
  HW_RETURN_IF_ERROR(builder.FinishClasses());

  // Instance data layout: the offset of each reference slot and the expected data length.
  std::span<const ClassInfo> classes = builder.classes();
  st.data_size.assign(classes.size(), 0);
  st.ref_offsets.assign(classes.size(), {});
  st.data_mismatch.assign(classes.size(), 0);
  for (size_t c = 0; c < classes.size(); ++c) {
    if (classes[c].instance_kind != ObjectKind::kInstance) continue;
    uint32_t off = 0;
    size_t steps = 0;
    for (ClassId k{static_cast<uint32_t>(c)}; k.valid() && steps <= classes.size();
         k = classes[k.value].super_class, ++steps) {
      for (const FieldInfo& f : classes[k.value].instance_fields) {
        if (f.type == FieldType::kObject) st.ref_offsets[c].push_back(off);
        off += analysis::FieldTypeSize(f.type, id_size);
      }
    }
    st.data_size[c] = off;
    st.max_ref_slots = std::max(st.max_ref_slots, static_cast<uint32_t>(st.ref_offsets[c].size()));
  }
  for (ClassId& p : st.primitive_array_class) p = kNoClass;
  for (size_t c = 0; c < classes.size(); ++c) {
    const ClassInfo& info = classes[c];
    if (info.instance_kind == ObjectKind::kPrimitiveArray &&
        !st.primitive_array_class[static_cast<int>(info.element_type)].valid()) {
      st.primitive_array_class[static_cast<int>(info.element_type)] =
          ClassId{static_cast<uint32_t>(c)};
    }
  }
  return absl::OkStatus();
}

ClassId ClassResolver::Find(const ReadState& st, const BulkHeapGraphBuilder& builder,
                            uint64_t class_id, ObjectKind kind) {
  Slot& cached = cache_[(class_id >> 3) & (kCache - 1)];
  if (cached.class_id == class_id && cached.kind == kind) return ClassId{cached.cls};
  uint32_t cls;
  auto it = st.class_by_id.find(class_id);
  if (it != st.class_by_id.end() && builder.classes()[it->second].instance_kind == kind) {
    cls = it->second;
  } else {
    uint64_t key = class_id ^ (kind == ObjectKind::kInstance ? 0 : 0x8000000000000000ull);
    auto sit = synthetic_.find(key);
    if (sit == synthetic_.end()) return kNoClass;
    cls = sit->second;
  }
  cached = {class_id, kind, cls};
  return ClassId{cls};
}

ClassId ClassResolver::Create(ReadState& st, BulkHeapGraphBuilder& builder, uint64_t class_id,
                              ObjectKind kind) {
  std::string name = kind == ObjectKind::kInstance
                         ? absl::StrFormat("unknown-class@0x%x", class_id)
                         : absl::StrFormat("unknown-class@0x%x[]", class_id);
  ClassId c = builder.AddLateClass(ClassWithoutFields(std::move(name), kind, FieldType::kObject));
  if (!c.valid()) return c;  // too many classes: the builder fails the next call
  st.AddClassWithoutFields();
  uint64_t key = class_id ^ (kind == ObjectKind::kInstance ? 0 : 0x8000000000000000ull);
  synthetic_.emplace(key, c.value);
  builder.Warn(absl::StrFormat("%s of class 0x%x without a matching CLASS DUMP; using %s",
                               kind == ObjectKind::kInstance ? "instances" : "object arrays",
                               class_id, builder.classes()[c.value].name));
  cache_[(class_id >> 3) & (kCache - 1)] = {class_id, kind, c.value};
  return c;
}

ClassId PrimitiveArrayClass(ReadState& st, BulkHeapGraphBuilder& builder, FieldType type) {
  ClassId& c = st.primitive_array_class[static_cast<int>(type)];
  if (!c.valid()) {
    c = builder.AddLateClass(ClassWithoutFields(std::string(analysis::FieldTypeName(type)) + "[]",
                                                ObjectKind::kPrimitiveArray, type));
    if (c.valid()) st.AddClassWithoutFields();
  }
  return c;
}

}  // namespace heapwatch::hprof
