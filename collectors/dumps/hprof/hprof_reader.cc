#include "collectors/dumps/hprof/hprof_reader.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <bit>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/heap_graph_internal.h"
#include "collectors/dumps/byte_source.h"
#include "collectors/dumps/class_names.h"
#include "collectors/dumps/hprof/hotspot_layout.h"
#include "collectors/dumps/hprof/hprof_format.h"
#include "collectors/dumps/hprof/hprof_scanner.h"
#include "collectors/dumps/stream_reader.h"

namespace heapwatch::hprof {
namespace {

using analysis::ClassId;
using analysis::ClassInfo;
using analysis::FieldInfo;
using analysis::FieldType;
using analysis::GcRoot;
using analysis::GcRootKind;
using analysis::HeapGraph;
using analysis::kClassObjectBit;
using analysis::kNoClass;
using analysis::kNoObject;
using analysis::ObjectIndex;
using analysis::ObjectKind;
using analysis::SizeModel;
using Rep = analysis::HeapGraph::Rep;
using dumps::ClassName;
using dumps::OpenFileSource;
using dumps::OpenMemorySource;
using dumps::ParseClassName;

constexpr size_t kMaxWarnings = 40;

void Warn(Rep& rep, std::string msg) {
  if (rep.info.warnings.size() < kMaxWarnings) rep.info.warnings.push_back(std::move(msg));
}

// A class dump kept from pass 1 (primitive static values are not kept).
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

struct RawRoot {
  uint64_t id;
  GcRootKind kind;
  uint32_t thread;
  int32_t frame;
};

// Everything a read carries between passes.
struct ReadState {
  HprofHeader header;
  ReadOptions options;
  int64_t dump = -1;  // resolved ordinal
  uint32_t dump_count = 0;
  // Pass 1 results.
  std::vector<RawClass>
      raw_classes;  // ClassId order (CLASS DUMP order), synthetic ones appended empty
  absl::flat_hash_map<uint64_t, uint32_t> class_by_id;  // class object id -> ClassId
  std::vector<RawRoot> roots;
  std::vector<std::pair<uint32_t, uint64_t>>
      heap_infos;  // (heap type, name id) in first-seen order
  // Per class: instance data layout for decoding INSTANCE DUMPs.
  std::vector<uint32_t> data_size;  // expected field bytes (ids at id_size)
  std::vector<std::vector<uint32_t>>
      ref_offsets;                      // byte offset in the instance data of each instance slot
  std::vector<uint32_t> data_mismatch;  // instances whose data length differed
  ClassId primitive_array_class[12];    // by FieldType code
  std::vector<uint64_t> duplicate_offsets;  // records dropped as duplicates (pass 2 -> 3)
  std::vector<uint8_t> heap_of;             // per object, when the dump has several heaps
  uint64_t stream_bytes_hint = 0;           // bytes of the HPROF stream seen in pass 1
  bool objects_ascending = false;           // pass 1: instances and arrays in ascending id order
  uint64_t reference_bytes = 0;             // pass 1: instance data + object array bytes
  uint8_t heap_index_of_type(uint32_t type) const {
    for (size_t i = 0; i < heap_infos.size(); ++i) {
      if (heap_infos[i].first == type) return static_cast<uint8_t>(i + 1);
    }
    return 0;
  }
};

// ---------------------------------------------------------------------------------------------------------
// Pass 1: strings, class names, class dumps, roots, object ids.

class Pass1 : public HandlerBase {
 public:
  static constexpr bool kWantsStrings = true;
  static constexpr bool kWantsObjectArrayElements = false;

  Pass1(ReadState& st, analysis::IdChunks& ids, analysis::IdChunks& class_ids)
      : st_(st), ids_(ids), class_ids_(class_ids) {}

  Status OnString(uint64_t id, std::string_view s) {
    if (arena_.size() + s.size() > UINT32_MAX)
      return absl::OkStatus();  // names beyond 4 GiB: unnamed
    strings_.try_emplace(id, static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(s.size()));
    arena_.append(s);
    return absl::OkStatus();
  }
  Status OnLoadClass(uint64_t class_id, uint64_t name_id) {
    class_names_.try_emplace(class_id, name_id);
    return absl::OkStatus();
  }
  Status OnDumpStart(uint32_t ordinal, uint64_t) {
    // Keep only the dump being read: with "the last one", each new dump replaces the previous.
    st_.raw_classes.clear();
    st_.class_by_id.clear();
    st_.roots.clear();
    st_.heap_infos.clear();
    ids_.clear();
    class_ids_.clear();
    ascending_ = true;
    last_object_ = 0;
    reference_bytes_ = 0;
    dump_seen_ = true;
    return absl::OkStatus();
  }
  Status OnRoot(GcRootKind kind, uint64_t id, uint32_t thread, int32_t frame) {
    st_.roots.push_back({id, kind, thread, frame});
    return absl::OkStatus();
  }
  Status OnClassDump(const RawClassDump& c) {
    if (ids_.size() + class_ids_.size() >= UINT32_MAX - 1) {
      return absl::ResourceExhaustedError("more than 2^32 objects in one dump");
    }
    class_ids_.push_back(c.id);
    if (st_.class_by_id.contains(c.id)) {
      ++duplicate_classes_;
      return absl::OkStatus();
    }
    if (st_.raw_classes.size() >= analysis::kMaxClasses) {
      return absl::ResourceExhaustedError("more than 2^31 classes in one dump");
    }
    st_.class_by_id.emplace(c.id, static_cast<uint32_t>(st_.raw_classes.size()));
    RawClass& r = st_.raw_classes.emplace_back();
    r.heap = heap_;
    r.id = c.id;
    r.super_id = c.super_id;
    r.loader_id = c.loader_id;
    r.signers_id = c.signers_id;
    r.protection_domain_id = c.protection_domain_id;
    r.instance_size = c.instance_size;
    for (const auto& k : c.constants) {
      if (k.type == FieldType::kObject) r.constant_refs.push_back({k.index, k.value});
    }
    r.statics = c.statics;
    r.fields = c.fields;
    return absl::OkStatus();
  }
  Status OnInstance(uint64_t id, uint64_t, const uint8_t*, uint32_t len, uint64_t) {
    reference_bytes_ += len;
    return Add(id);
  }
  Status OnObjectArrayBegin(uint64_t id, uint64_t, uint32_t count, uint64_t) {
    reference_bytes_ += uint64_t{count} * st_.header.id_size;
    return Add(id);
  }
  Status OnPrimitiveArray(uint64_t id, FieldType, uint32_t, uint64_t) { return Add(id); }
  Status OnHeapDumpInfo(uint32_t heap_type, uint64_t name_id) {
    bool known = false;
    for (const auto& [t, n] : st_.heap_infos) known |= t == heap_type;
    if (!known) st_.heap_infos.push_back({heap_type, name_id});
    heap_ = st_.heap_index_of_type(heap_type);
    return absl::OkStatus();
  }

  std::string Name(uint64_t string_id) const {
    auto it = strings_.find(string_id);
    if (it == strings_.end()) return absl::StrFormat("unknown-name@0x%x", string_id);
    return arena_.substr(it->second.first, it->second.second);
  }
  bool HasName(uint64_t string_id) const { return strings_.contains(string_id); }
  // The class name string id of a class object, if a LOAD CLASS record named it.
  bool ClassNameId(uint64_t class_id, uint64_t* name_id) const {
    auto it = class_names_.find(class_id);
    if (it == class_names_.end()) return false;
    *name_id = it->second;
    return true;
  }
  uint64_t duplicate_classes() const { return duplicate_classes_; }
  bool dump_seen() const { return dump_seen_; }

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
  absl::flat_hash_map<uint64_t, std::pair<uint32_t, uint32_t>>
      strings_;  // id -> (arena offset, length)
  std::string arena_;
  absl::flat_hash_map<uint64_t, uint64_t> class_names_;
  uint64_t duplicate_classes_ = 0;
  bool dump_seen_ = false;
  analysis::IdChunks& class_ids_;
  uint8_t heap_ = 0;
  bool ascending_ = true;
  uint64_t last_object_ = 0;
  uint64_t reference_bytes_ = 0;

 public:
  // Instances and arrays (not class dumps) came in strictly ascending id order.
  bool ascending() const { return ascending_; }
  // Bytes of instance field data and object array elements: an upper bound of the references.
  uint64_t reference_bytes() const { return reference_bytes_; }
};

// ---------------------------------------------------------------------------------------------------------
// Between pass 1 and 2: the class table and the object index.

ClassId AddSyntheticClass(Rep& rep, ReadState& st, std::string name, ObjectKind kind,
                          FieldType element) {
  ClassId c{static_cast<uint32_t>(rep.classes.size())};
  ClassInfo& info = rep.classes.emplace_back();
  info.name = std::move(name);
  info.instance_kind = kind;
  info.element_type = element;
  info.synthetic = true;
  rep.slots.emplace_back();
  st.raw_classes.emplace_back();
  st.data_size.push_back(0);
  st.ref_offsets.emplace_back();
  st.data_mismatch.push_back(0);
  return c;
}

Status BuildClassTable(Rep& rep, ReadState& st, const Pass1& p1) {
  const uint32_t id_size = st.header.id_size;
  const size_t nc = st.raw_classes.size();
  rep.classes.resize(nc);
  for (size_t c = 0; c < nc; ++c) {
    const RawClass& r = st.raw_classes[c];
    ClassInfo& info = rep.classes[c];
    uint64_t name_id = 0;
    std::string raw = p1.ClassNameId(r.id, &name_id) ? p1.Name(name_id)
                                                     : absl::StrFormat("unknown-class@0x%x", r.id);
    ClassName cn = ParseClassName(raw);
    info.name = std::move(cn.source_name);
    info.instance_kind = cn.kind;
    info.element_type = cn.element;
    info.class_object_id = r.id;
    info.declared_instance_size = r.instance_size;
    for (const auto& f : r.fields) info.instance_fields.push_back({p1.Name(f.name_id), f.type});
    for (const auto& s : r.statics) info.static_fields.push_back({p1.Name(s.name_id), s.type});
  }
  // Superclasses; a missing one becomes a synthetic class without fields.
  for (size_t c = 0; c < nc; ++c) {
    uint64_t super = st.raw_classes[c].super_id;
    if (super == 0) continue;
    auto it = st.class_by_id.find(super);
    if (it == st.class_by_id.end()) {
      ClassId s = AddSyntheticClass(rep, st, absl::StrFormat("unknown-class@0x%x", super),
                                    ObjectKind::kInstance, FieldType::kObject);
      st.class_by_id.emplace(super, s.value);
      Warn(rep,
           absl::StrFormat("superclass 0x%x of %s has no CLASS DUMP; using a class without fields",
                           super, rep.classes[c].name));
      rep.classes[c].super_class = s;
    } else {
      rep.classes[c].super_class = ClassId{it->second};
    }
  }
  // Work and memory of the layouts below grow with the sum over classes of the fields of their
  // whole hierarchy. Real dumps have a few hundred thousand; a malformed file cannot make it
  // unbounded.
  {
    uint64_t total = 0;
    std::vector<uint64_t> own(rep.classes.size());
    for (size_t c = 0; c < rep.classes.size(); ++c) own[c] = rep.classes[c].instance_fields.size();
    for (size_t c = 0; c < rep.classes.size(); ++c) {
      size_t steps = 0;
      for (ClassId k{static_cast<uint32_t>(c)}; k.valid() && steps <= rep.classes.size();
           k = rep.classes[k.value].super_class, ++steps) {
        total += own[k.value];
      }
      total += steps;
    }
    uint64_t limit = std::max<uint64_t>(64ull << 20, 64 * st.stream_bytes_hint);
    if (total > limit) {
      return absl::DataLossError(absl::StrFormat(
          "corrupt dump: class hierarchies declare %d instance fields in total (more than %d)",
          total, limit));
    }
  }
  std::vector<std::vector<uint32_t>> cp(rep.classes.size());
  for (size_t c = 0; c < nc; ++c) {
    for (const auto& [index, id] : st.raw_classes[c].constant_refs) cp[c].push_back(index);
  }
  rep.slots.clear();
  HW_RETURN_IF_ERROR(analysis::BuildClassSlots(rep, cp));
  // Instance data layout: the offset of each reference slot and the expected data length.
  st.data_size.assign(rep.classes.size(), 0);
  st.ref_offsets.assign(rep.classes.size(), {});
  st.data_mismatch.assign(rep.classes.size(), 0);
  for (size_t c = 0; c < rep.classes.size(); ++c) {
    if (rep.classes[c].instance_kind != ObjectKind::kInstance) continue;
    uint32_t off = 0;
    size_t steps = 0;
    for (ClassId k{static_cast<uint32_t>(c)}; k.valid() && steps <= rep.classes.size();
         k = rep.classes[k.value].super_class, ++steps) {
      for (const FieldInfo& f : rep.classes[k.value].instance_fields) {
        if (f.type == FieldType::kObject) st.ref_offsets[c].push_back(off);
        off += analysis::FieldTypeSize(f.type, id_size);
      }
    }
    st.data_size[c] = off;
  }
  for (ClassId& p : st.primitive_array_class) p = kNoClass;
  for (size_t c = 0; c < rep.classes.size(); ++c) {
    const ClassInfo& info = rep.classes[c];
    if (info.instance_kind == ObjectKind::kPrimitiveArray &&
        !st.primitive_array_class[static_cast<int>(info.element_type)].valid()) {
      st.primitive_array_class[static_cast<int>(info.element_type)] =
          ClassId{static_cast<uint32_t>(c)};
    }
    if (info.name == "java.lang.Class" && !rep.java_lang_class.valid())
      rep.java_lang_class = ClassId{static_cast<uint32_t>(c)};
  }
  for (const auto& [type, name_id] : st.heap_infos) {
    rep.heap_names.push_back(p1.HasName(name_id) ? p1.Name(name_id)
                                                 : absl::StrFormat("heap-%d", type));
  }
  return absl::OkStatus();
}

// Appends the slot table entry of a class created after BuildClassSlots (synthetic classes have no
// fields).
ClassId SyntheticFor(Rep& rep, ReadState& st, uint64_t class_id, ObjectKind kind,
                     FieldType element) {
  std::string name = kind == ObjectKind::kInstance
                         ? absl::StrFormat("unknown-class@0x%x", class_id)
                         : absl::StrFormat("unknown-class@0x%x[]", class_id);
  ClassId c = AddSyntheticClass(rep, st, std::move(name), kind, element);
  // The slots of a synthetic class: none for instances (no fields known); class objects never
  // exist.
  rep.slots.back().class_object_slots = {};
  return c;
}

// Sorts the pass-1 ids into rep.ids (duplicates removed) with its lookup directory.
void BuildObjectIndex(Rep& rep, analysis::IdChunks& ids, analysis::IdChunks& class_ids,
                      bool ascending) {
  rep.ids.BuildFromParts(std::move(ids), ascending, std::move(class_ids),
                         &rep.info.duplicate_objects);
}

// The index of `id` in a Rep under construction, or UINT32_MAX.
inline uint32_t Find(const Rep& r, uint64_t id) { return r.ids.Find(id); }

Status FileChanged(uint64_t offset) {
  return absl::InternalError(absl::StrFormat(
      "the dump changed while it was being read (record at byte %d differs between passes)",
      offset));
}

// More non-null references than a CsrGraph's 32-bit offsets can address (analysis/csr_graph.h).
Status TooManyReferences(uint64_t offset) {
  return absl::ResourceExhaustedError(absl::StrFormat(
      "the dump holds more than %d non-null references (at the record at byte %d); heapwatch's "
      "graph supports at most 2^32 - 1",
      analysis::kMaxCsrEdges, offset));
}

// The ClassId of the class an instance or array record names; unknown class ids, or ids of a class
// of the wrong kind (an instance of an array class), get a synthetic class per (id, kind).
class ClassResolver {
 public:
  uint32_t Of(Rep& rep, ReadState& st, uint64_t class_id, ObjectKind kind, FieldType element) {
    Slot& cached = cache_[(class_id >> 3) & (kCache - 1)];
    if (cached.class_id == class_id && cached.kind == kind) return cached.cls;
    uint32_t cls;
    auto it = st.class_by_id.find(class_id);
    if (it != st.class_by_id.end() && rep.classes[it->second].instance_kind == kind) {
      cls = it->second;
    } else {
      uint64_t key = class_id ^ (kind == ObjectKind::kInstance ? 0 : 0x8000000000000000ull);
      auto sit = synthetic_.find(key);
      if (sit != synthetic_.end()) {
        cls = sit->second;
      } else {
        cls = SyntheticFor(rep, st, class_id, kind, element).value;
        synthetic_.emplace(key, cls);
        Warn(rep, absl::StrFormat("%s of class 0x%x without a matching CLASS DUMP; using %s",
                                  kind == ObjectKind::kInstance ? "instances" : "object arrays",
                                  class_id, rep.classes[cls].name));
      }
    }
    cached = {class_id, kind, cls};
    return cls;
  }

 private:
  // A direct-mapped cache in front of the hash map: a heap has few classes with many instances.
  static constexpr size_t kCache = 1024;
  struct Slot {
    uint64_t class_id = ~0ull;
    ObjectKind kind = ObjectKind::kClass;
    uint32_t cls = 0;
  };
  std::vector<Slot> cache_ = std::vector<Slot>(kCache);
  absl::flat_hash_map<uint64_t, uint32_t> synthetic_;
};

// ---------------------------------------------------------------------------------------------------------
// Pass 2: class of every object, array lengths, number of non-null references.

class Pass2 : public HandlerBase {
 public:
  static constexpr bool kWantsStrings = false;
  static constexpr bool kWantsObjectArrayElements = true;

  Pass2(Rep& rep, ReadState& st) : rep_(rep), st_(st), id_(st.header.id_size) {
    n_ = static_cast<uint32_t>(rep.ids.size());
    claimed_.assign((n_ + 63) / 64, 0);
    rep.class_words.Reset(n_);
    rep.array_bits.assign((n_ + 63) / 64, 0);
    rep.graph.offsets.assign(static_cast<size_t>(n_) + 1, 0);
    if (!st.heap_infos.empty()) st.heap_of.assign(n_, 0);
    ce_ = rep.info.instance_class_edges ? 1 : 0;
  }

  Status OnHeapDumpInfo(uint32_t heap_type, uint64_t) {
    heap_ = st_.heap_index_of_type(heap_type);
    return absl::OkStatus();
  }

  Status OnClassDump(const RawClassDump& c) {
    HW_ASSIGN_OR_RETURN(uint32_t v, Claim(c.id, c.offset));
    if (v == UINT32_MAX) return absl::OkStatus();
    auto it = st_.class_by_id.find(c.id);
    if (it == st_.class_by_id.end()) return FileChanged(c.offset);
    uint32_t cls = it->second;
    rep_.class_words.Set(v, kClassObjectBit | cls);
    rep_.classes[cls].class_object = ObjectIndex{v};
    const RawClass& r = st_.raw_classes[cls];
    uint64_t count = ce_;
    count += (r.super_id != 0) + (r.loader_id != 0) + (r.signers_id != 0) +
             (r.protection_domain_id != 0);
    for (const auto& s : r.statics) count += s.type == FieldType::kObject && s.value != 0;
    for (const auto& k : r.constant_refs) count += k.second != 0;
    rep_.graph.offsets[v + 1] = static_cast<uint32_t>(count);
    return absl::OkStatus();
  }

  Status OnInstance(uint64_t id, uint64_t class_id, const uint8_t* data, uint32_t len,
                    uint64_t offset) {
    HW_ASSIGN_OR_RETURN(uint32_t v, Claim(id, offset));
    if (v == UINT32_MAX) return absl::OkStatus();
    uint32_t cls = ClassOf(class_id, ObjectKind::kInstance, FieldType::kObject);
    rep_.class_words.Set(v, cls);
    if (len != st_.data_size[cls]) ++st_.data_mismatch[cls];
    uint64_t count = ce_;
    for (uint32_t off : st_.ref_offsets[cls]) {
      if (off + id_ <= len && LoadId(data + off, id_) != 0) ++count;
    }
    rep_.graph.offsets[v + 1] = static_cast<uint32_t>(count);
    return absl::OkStatus();
  }

  Status OnObjectArrayBegin(uint64_t id, uint64_t class_id, uint32_t length, uint64_t offset) {
    HW_ASSIGN_OR_RETURN(uint32_t v, Claim(id, offset));
    current_ = v;
    nonnull_ = ce_;
    if (v == UINT32_MAX) return absl::OkStatus();
    uint32_t cls = ClassOf(class_id, ObjectKind::kObjectArray, FieldType::kObject);
    rep_.class_words.Set(v, cls);
    SetArray(v, length);
    return absl::OkStatus();
  }
  Status OnObjectArrayElements(const uint8_t* data, uint32_t count) {
    if (current_ == UINT32_MAX) return absl::OkStatus();
    for (uint32_t i = 0; i < count; ++i) nonnull_ += LoadId(data + size_t{i} * id_, id_) != 0;
    return absl::OkStatus();
  }
  Status OnObjectArrayEnd() {
    if (current_ == UINT32_MAX) return absl::OkStatus();
    if (nonnull_ > analysis::kMaxCsrEdges) return TooManyReferences(0);
    rep_.graph.offsets[current_ + 1] = static_cast<uint32_t>(nonnull_);
    return absl::OkStatus();
  }

  Status OnPrimitiveArray(uint64_t id, FieldType type, uint32_t length, uint64_t offset) {
    HW_ASSIGN_OR_RETURN(uint32_t v, Claim(id, offset));
    if (v == UINT32_MAX) return absl::OkStatus();
    ClassId& c = st_.primitive_array_class[static_cast<int>(type)];
    if (!c.valid()) {
      c = AddSyntheticClass(rep_, st_, std::string(analysis::FieldTypeName(type)) + "[]",
                            ObjectKind::kPrimitiveArray, type);
    }
    rep_.class_words.Set(v, c.value);
    SetArray(v, length);
    rep_.graph.offsets[v + 1] = ce_;
    return absl::OkStatus();
  }

  // After the scan: every object must have been claimed.
  Status Finish() {
    for (uint32_t w = 0; w < claimed_.size(); ++w) {
      uint64_t expect = (w + 1) * 64 <= n_ ? ~0ull : ((1ull << (n_ % 64)) - 1);
      if (claimed_[w] != expect) return FileChanged(0);
    }
    std::sort(array_lengths_.begin(), array_lengths_.end());
    rep_.array_lengths.resize(array_lengths_.size());
    for (size_t i = 0; i < array_lengths_.size(); ++i)
      rep_.array_lengths[i] = array_lengths_[i].second;
    std::vector<std::pair<uint32_t, uint32_t>>().swap(array_lengths_);
    return absl::OkStatus();
  }

 private:
  // The index of the object with `id`, or UINT32_MAX for a duplicate record (remembered for pass
  // 3).
  StatusOr<uint32_t> Claim(uint64_t id, uint64_t offset) {
    uint32_t v = rep_.ids.FindNear(id, hint_);
    if (v == UINT32_MAX) return FileChanged(offset);
    uint64_t bit = 1ull << (v & 63);
    if (claimed_[v >> 6] & bit) {
      st_.duplicate_offsets.push_back(offset);
      return UINT32_MAX;
    }
    claimed_[v >> 6] |= bit;
    if (!st_.heap_of.empty()) st_.heap_of[v] = heap_;
    hint_ = v + 1;
    return v;
  }

  uint32_t ClassOf(uint64_t class_id, ObjectKind kind, FieldType element) {
    return classes_.Of(rep_, st_, class_id, kind, element);
  }

  void SetArray(uint32_t v, uint32_t length) {
    rep_.array_bits[v >> 6] |= 1ull << (v & 63);
    array_lengths_.push_back({v, length});
  }

  Rep& rep_;
  ReadState& st_;
  const uint32_t id_;
  uint32_t n_ = 0;
  uint32_t ce_ = 0;
  std::vector<uint64_t> claimed_;
  std::vector<std::pair<uint32_t, uint32_t>> array_lengths_;
  ClassResolver classes_;
  uint32_t current_ = UINT32_MAX;
  uint64_t nonnull_ = 0;
  uint8_t heap_ = 0;
  uint32_t hint_ = 0;  // objects mostly come in index order
};

// ---------------------------------------------------------------------------------------------------------
// Pass 3: the references.

class Pass3 : public HandlerBase {
 public:
  static constexpr bool kWantsStrings = false;
  static constexpr bool kWantsObjectArrayElements = true;

  Pass3(Rep& rep, ReadState& st, bool weak_flags)
      : rep_(rep), st_(st), id_(st.header.id_size), weak_(weak_flags) {
    ce_ = rep.info.instance_class_edges;
  }

  Status OnClassDump(const RawClassDump& c) {
    HW_ASSIGN_OR_RETURN(uint32_t v, Begin(c.id, c.offset));
    if (v == UINT32_MAX) return absl::OkStatus();
    uint32_t cls = rep_.class_words[v] & ~kClassObjectBit;
    const RawClass& r = st_.raw_classes[cls];
    if (ce_) Emit(JavaLangClassId(), false);
    Emit(r.super_id, false);
    Emit(r.loader_id, false);
    Emit(r.signers_id, false);
    Emit(r.protection_domain_id, false);
    for (const auto& s : r.statics) {
      if (s.type == FieldType::kObject) Emit(s.value, false);
    }
    for (const auto& k : r.constant_refs) Emit(k.second, false);
    return End(c.offset);
  }

  Status OnInstance(uint64_t id, uint64_t, const uint8_t* data, uint32_t len, uint64_t offset) {
    HW_ASSIGN_OR_RETURN(uint32_t v, Begin(id, offset));
    if (v == UINT32_MAX) return absl::OkStatus();
    uint32_t cls = rep_.class_words[v];
    if (ce_) Emit(rep_.classes[cls].class_object_id, false);
    const std::vector<uint32_t>& offs = st_.ref_offsets[cls];
    int32_t weak_slot = rep_.slots[cls].weak_slot;
    for (size_t i = 0; i < offs.size(); ++i) {
      uint64_t ref = offs[i] + id_ <= len ? LoadId(data + offs[i], id_) : 0;
      Emit(ref, static_cast<int32_t>(i) == weak_slot);
    }
    return End(offset);
  }

  Status OnObjectArrayBegin(uint64_t id, uint64_t, uint32_t, uint64_t offset) {
    HW_ASSIGN_OR_RETURN(uint32_t v, Begin(id, offset));
    array_ = v;
    array_offset_ = offset;
    if (v != UINT32_MAX && ce_) Emit(rep_.classes[rep_.class_words[v]].class_object_id, false);
    return absl::OkStatus();
  }
  Status OnObjectArrayElements(const uint8_t* data, uint32_t count) {
    if (array_ == UINT32_MAX) return absl::OkStatus();
    for (uint32_t i = 0; i < count; ++i) {
      uint64_t ref = LoadId(data + size_t{i} * id_, id_);
      if (ref == 0) {
        ++slot_;
        continue;
      }
      Emit(ref, false);
    }
    return absl::OkStatus();
  }
  Status OnObjectArrayEnd() {
    if (array_ == UINT32_MAX) return absl::OkStatus();
    return End(array_offset_);
  }

  Status OnPrimitiveArray(uint64_t id, FieldType, uint32_t, uint64_t offset) {
    HW_ASSIGN_OR_RETURN(uint32_t v, Begin(id, offset));
    if (v == UINT32_MAX) return absl::OkStatus();
    if (ce_) Emit(rep_.classes[rep_.class_words[v]].class_object_id, false);
    return End(offset);
  }

  uint64_t dangling() const { return dangling_; }
  bool needs_compaction() const { return holes_; }

 private:
  uint64_t JavaLangClassId() const {
    return rep_.java_lang_class.valid() ? rep_.classes[rep_.java_lang_class.value].class_object_id
                                        : 0;
  }

  StatusOr<uint32_t> Begin(uint64_t id, uint64_t offset) {
    if (next_dup_ < st_.duplicate_offsets.size() && st_.duplicate_offsets[next_dup_] == offset) {
      ++next_dup_;
      return UINT32_MAX;
    }
    uint32_t v = rep_.ids.FindNear(id, last_v_ + 1);
    if (v == UINT32_MAX) return FileChanged(offset);
    // Slot numbering: objects come mostly in index order; otherwise start from the sampled prefix.
    if (v == last_v_ + 1 && last_v_ != UINT32_MAX) {
      slot_ = last_slot_start_ + rep_.SlotCount(last_v_);
    } else {
      slot_ = rep_.SlotStart(v);
    }
    last_v_ = v;
    last_slot_start_ = slot_;
    pos_ = rep_.graph.offsets[v];
    limit_ = rep_.graph.offsets[v + 1];
    overflow_ = false;
    return v;
  }

  void Emit(uint64_t ref, bool weak) {
    if (ref != 0) {
      uint32_t t = Find(rep_, ref);
      if (pos_ >= limit_) {
        overflow_ = true;
      } else if (t == UINT32_MAX) {
        ++dangling_;
        rep_.graph.targets[pos_++] = kNoObject;
        holes_ = true;
      } else if ((slot_ >> 6) >= rep_.slot_bits.size()) {
        overflow_ = true;
      } else {
        if (weak && weak_) rep_.graph.weak[pos_] = true;
        rep_.graph.targets[pos_++] = ObjectIndex{t};
        rep_.slot_bits[slot_ >> 6] |= 1ull << (slot_ & 63);
      }
    }
    ++slot_;
  }

  Status End(uint64_t offset) {
    if (overflow_ || pos_ != limit_) return FileChanged(offset);
    return absl::OkStatus();
  }

  Rep& rep_;
  ReadState& st_;
  const uint32_t id_;
  const bool weak_;
  bool ce_ = false;
  size_t next_dup_ = 0;
  uint32_t last_v_ = UINT32_MAX;
  uint64_t last_slot_start_ = 0;
  uint64_t slot_ = 0;
  uint64_t pos_ = 0;
  uint64_t limit_ = 0;
  bool overflow_ = false;
  bool holes_ = false;
  uint64_t dangling_ = 0;
  uint32_t array_ = UINT32_MAX;
  uint64_t array_offset_ = 0;
};

// Passes 2 and 3 in one, for dumps whose instances and arrays come in ascending id order (HotSpot,
// NetBeans, Android): objects are met in index order, so each one's class, array length,
// references, weak flags and reference slots are appended; class objects (whose dumps come in any
// order) are filled in from the pass-1 class data when their index comes up. No reference count
// pass and no compaction are needed.
class SinglePass : public HandlerBase {
 public:
  static constexpr bool kWantsStrings = false;
  static constexpr bool kWantsObjectArrayElements = true;
  // Class dumps are not handled here: their class objects are emitted in index order.

  SinglePass(Rep& rep, ReadState& st, bool weak_flags, uint64_t max_refs, uint64_t max_slots)
      : rep_(rep), st_(st), id_(st.header.id_size), weak_(weak_flags), max_slots_(max_slots) {
    n_ = static_cast<uint32_t>(rep.ids.size());
    rep.class_words.Reset(n_);
    rep.array_bits.assign((n_ + 63) / 64, 0);
    rep.graph.offsets.assign(static_cast<size_t>(n_) + 1, 0);
    rep.graph.targets.reserve(max_refs);  // untouched capacity costs address space, not memory
    if (weak_) rep.graph.weak.reserve(max_refs);
    rep.slot_bits.reserve(max_slots / 64 + 1);
    if (!st.heap_infos.empty()) st.heap_of.assign(n_, 0);
    ce_ = rep.info.instance_class_edges;
    for (uint32_t c = 0; c < st.raw_classes.size(); ++c) {
      if (rep.classes[c].synthetic) continue;
      uint32_t v = rep.ids.Find(rep.classes[c].class_object_id);
      if (v != UINT32_MAX) class_objects_.push_back({v, c});
    }
    std::sort(class_objects_.begin(), class_objects_.end());
  }

  Status OnHeapDumpInfo(uint32_t heap_type, uint64_t) {
    heap_ = st_.heap_index_of_type(heap_type);
    return absl::OkStatus();
  }

  Status OnInstance(uint64_t id, uint64_t class_id, const uint8_t* data, uint32_t len,
                    uint64_t offset) {
    HW_ASSIGN_OR_RETURN(uint32_t v, Begin(id, offset));
    uint32_t cls = classes_.Of(rep_, st_, class_id, ObjectKind::kInstance, FieldType::kObject);
    rep_.class_words.Set(v, cls);
    if (len != st_.data_size[cls]) ++st_.data_mismatch[cls];
    if (ce_) Emit(rep_.classes[cls].class_object_id, false);
    const std::vector<uint32_t>& offs = st_.ref_offsets[cls];
    int32_t weak_slot = rep_.slots[cls].weak_slot;
    for (size_t i = 0; i < offs.size(); ++i) {
      uint64_t ref = offs[i] + id_ <= len ? LoadId(data + offs[i], id_) : 0;
      Emit(ref, static_cast<int32_t>(i) == weak_slot);
    }
    return End(offset);
  }

  Status OnObjectArrayBegin(uint64_t id, uint64_t class_id, uint32_t length, uint64_t offset) {
    HW_ASSIGN_OR_RETURN(uint32_t v, Begin(id, offset));
    uint32_t cls = classes_.Of(rep_, st_, class_id, ObjectKind::kObjectArray, FieldType::kObject);
    rep_.class_words.Set(v, cls);
    SetArray(v, length);
    if (ce_) Emit(rep_.classes[cls].class_object_id, false);
    array_offset_ = offset;
    return absl::OkStatus();
  }
  Status OnObjectArrayElements(const uint8_t* data, uint32_t count) {
    for (uint32_t i = 0; i < count; ++i) Emit(LoadId(data + size_t{i} * id_, id_), false);
    return absl::OkStatus();
  }
  Status OnObjectArrayEnd() { return End(array_offset_); }

  Status OnPrimitiveArray(uint64_t id, FieldType type, uint32_t length, uint64_t offset) {
    HW_ASSIGN_OR_RETURN(uint32_t v, Begin(id, offset));
    ClassId& c = st_.primitive_array_class[static_cast<int>(type)];
    if (!c.valid()) {
      c = AddSyntheticClass(rep_, st_, std::string(analysis::FieldTypeName(type)) + "[]",
                            ObjectKind::kPrimitiveArray, type);
    }
    rep_.class_words.Set(v, c.value);
    SetArray(v, length);
    if (ce_) Emit(rep_.classes[c.value].class_object_id, false);
    return End(offset);
  }

  // After the scan: the class objects after the last instance, then the end of the CSR graph.
  Status Finish() {
    HW_RETURN_IF_ERROR(CatchUp(n_, 0));
    if (next_ != n_) return FileChanged(0);
    rep_.graph.offsets[n_] = static_cast<uint32_t>(rep_.graph.targets.size());
    return absl::OkStatus();
  }
  uint64_t dangling() const { return dangling_; }

 private:
  // Emits the class objects with indices below `v`; every index in [next_, v) must be one.
  Status CatchUp(uint32_t v, uint64_t offset) {
    while (next_ < v) {
      if (next_class_ >= class_objects_.size() || class_objects_[next_class_].first != next_) {
        return FileChanged(offset);
      }
      uint32_t cls = class_objects_[next_class_++].second;
      uint32_t u = next_++;
      rep_.graph.offsets[u] = static_cast<uint32_t>(rep_.graph.targets.size());
      rep_.class_words.Set(u, kClassObjectBit | cls);
      rep_.classes[cls].class_object = ObjectIndex{u};
      const RawClass& r = st_.raw_classes[cls];
      if (!st_.heap_of.empty()) st_.heap_of[u] = r.heap;
      if (ce_) {
        Emit(rep_.java_lang_class.valid() ? rep_.classes[rep_.java_lang_class.value].class_object_id
                                          : 0,
             false);
      }
      Emit(r.super_id, false);
      Emit(r.loader_id, false);
      Emit(r.signers_id, false);
      Emit(r.protection_domain_id, false);
      for (const auto& st : r.statics) {
        if (st.type == FieldType::kObject) Emit(st.value, false);
      }
      for (const auto& k : r.constant_refs) Emit(k.second, false);
      HW_RETURN_IF_ERROR(End(offset));
    }
    return absl::OkStatus();
  }

  StatusOr<uint32_t> Begin(uint64_t id, uint64_t offset) {
    uint32_t v = rep_.ids.FindNear(id, next_);
    if (v == UINT32_MAX || v < next_) return FileChanged(offset);
    HW_RETURN_IF_ERROR(CatchUp(v, offset));
    next_ = v + 1;
    rep_.graph.offsets[v] = static_cast<uint32_t>(rep_.graph.targets.size());
    if (!st_.heap_of.empty()) st_.heap_of[v] = heap_;
    return v;
  }

  void Emit(uint64_t ref, bool weak) {
    bool edge = false;
    if (ref != 0) {
      uint32_t t = rep_.ids.Find(ref);
      if (t == UINT32_MAX) {
        ++dangling_;
      } else {
        rep_.graph.targets.push_back(ObjectIndex{t});
        if (weak_) rep_.graph.weak.push_back(weak);
        edge = true;
      }
    }
    if ((slot_ & 63) == 0) rep_.slot_bits.push_back(0);
    if (edge) rep_.slot_bits.back() |= uint64_t{1} << (slot_ & 63);
    ++slot_;
  }

  Status End(uint64_t offset) {
    if (rep_.graph.targets.size() > analysis::kMaxCsrEdges) return TooManyReferences(offset);
    if (slot_ > max_slots_) {
      return absl::DataLossError(
          absl::StrFormat("corrupt dump: more reference slots than ids in the dump at the record "
                          "at byte %d; instance records "
                          "are shorter than their CLASS DUMP layouts",
                          offset));
    }
    return absl::OkStatus();
  }

  void SetArray(uint32_t v, uint32_t length) {
    rep_.array_bits[v >> 6] |= uint64_t{1} << (v & 63);
    rep_.array_lengths.push_back(length);
  }

  Rep& rep_;
  ReadState& st_;
  const uint32_t id_;
  const bool weak_;
  const uint64_t max_slots_;
  bool ce_ = false;
  uint32_t n_ = 0;
  uint32_t next_ = 0;                                         // the next index expected
  std::vector<std::pair<uint32_t, uint32_t>> class_objects_;  // (index, ClassId), ascending
  size_t next_class_ = 0;
  ClassResolver classes_;
  uint64_t slot_ = 0;
  uint64_t dangling_ = 0;
  uint64_t array_offset_ = 0;
  uint8_t heap_ = 0;
};

// Removes the kNoObject entries (references to ids not in the dump) from the CSR graph.
void CompactEdges(Rep& rep) {
  analysis::CsrGraph& g = rep.graph;
  const uint32_t n = static_cast<uint32_t>(rep.ids.size());
  bool has_weak = !g.weak.empty();
  uint64_t out = 0;
  uint64_t begin = 0;
  for (uint32_t v = 0; v < n; ++v) {
    uint64_t end = g.offsets[v + 1];
    g.offsets[v] = static_cast<uint32_t>(out);
    for (uint64_t e = begin; e < end; ++e) {
      if (!g.targets[e].valid()) continue;
      g.targets[out] = g.targets[e];
      if (has_weak) g.weak[out] = g.weak[e];
      ++out;
    }
    begin = end;
  }
  g.offsets[n] = static_cast<uint32_t>(out);
  g.targets.resize(out);
  if (has_weak) g.weak.resize(out);
}

// ---------------------------------------------------------------------------------------------------------
// Sizes.

std::vector<LayoutClass> LayoutTable(const Rep& rep, const ReadState& st) {
  std::vector<LayoutClass> out(rep.classes.size());
  for (size_t c = 0; c < rep.classes.size(); ++c) {
    const ClassInfo& info = rep.classes[c];
    LayoutClass& l = out[c];
    l.name = info.name;
    l.super = info.super_class.valid() ? static_cast<int32_t>(info.super_class.value) : -1;
    for (const FieldInfo& f : info.instance_fields) {
      l.fields.push_back(f.type);
      l.field_names.push_back(f.name);
    }
    for (const FieldInfo& f : info.static_fields) {
      // HotSpot writes pseudo statics ("<resolved_references>", "<init_lock>") that are not in the
      // mirror.
      if (!f.name.starts_with("<")) l.statics.push_back(f.type);
    }
    l.boot = !info.synthetic && st.raw_classes[c].loader_id == 0;
    l.is_array = info.instance_kind != ObjectKind::kInstance;
  }
  return out;
}

// Address evidence: for a sample of the objects of each class, the distance to the next object (and
// the array length). With a compacted heap (a heap dump is taken after a full GC, and the JVM
// allocates contiguously) the distance equals the object's size for most objects.
struct GapSamples {
  static constexpr uint32_t kPerClass = 256;
  std::vector<std::vector<std::pair<uint32_t, uint64_t>>> by_class;  // (array length, gap)
  uint64_t total = 0;
};

GapSamples CollectGaps(const Rep& rep) {
  GapSamples out;
  const uint32_t n = static_cast<uint32_t>(rep.ids.size());
  std::vector<uint32_t> count(rep.classes.size(), 0);
  for (uint32_t v = 0; v < n; ++v) {
    if (!(rep.class_words[v] & kClassObjectBit)) ++count[rep.class_words[v]];
  }
  std::vector<uint32_t> seen(rep.classes.size(), 0);
  out.by_class.resize(rep.classes.size());
  for (uint32_t v = 0; v + 1 < n; ++v) {
    uint32_t cw = rep.class_words[v];
    if (cw & kClassObjectBit) continue;
    uint32_t stride = std::max<uint32_t>(1, count[cw] / GapSamples::kPerClass);
    if (seen[cw]++ % stride != 0 || out.by_class[cw].size() >= GapSamples::kPerClass) continue;
    uint32_t len = rep.IsArray(v) ? rep.array_lengths[rep.ArrayRank(v)] : 0;
    out.by_class[cw].push_back({len, rep.ids.Id(v + 1) - rep.ids.Id(v)});
    ++out.total;
  }
  return out;
}

struct Score {
  uint64_t exact = 0;
  uint64_t violations = 0;
  int64_t value() const {
    return static_cast<int64_t>(exact) - 4 * static_cast<int64_t>(violations);
  }
};

void ScoreClass(const Rep& rep, const analysis::DumpInfo& info, const GapSamples& gaps, uint32_t c,
                uint32_t size, Score* score) {
  const ClassInfo& ci = rep.classes[c];
  if (ci.synthetic && ci.instance_kind == ObjectKind::kInstance) return;
  for (const auto& [len, gap] : gaps.by_class[c]) {
    uint64_t s = ci.instance_kind == ObjectKind::kInstance
                     ? size
                     : analysis::ArrayShallowSize(info, ci.element_type, len);
    if (s > gap) ++score->violations;
    if (s == gap) ++score->exact;
  }
}

Score ScoreAll(const Rep& rep, const analysis::ObjectLayout& layout, const GapSamples& gaps,
               const std::vector<uint32_t>& sizes) {
  analysis::DumpInfo info;
  info.size_model = SizeModel::kHotSpot;
  info.layout = layout;
  Score score;
  for (uint32_t c = 0; c < rep.classes.size(); ++c)
    ScoreClass(rep, info, gaps, c, sizes[c], &score);
  return score;
}

// The knobs a JVM of that layout generation most likely has, used when the dump holds no evidence.
uint32_t DefaultKnobs(const analysis::ObjectLayout& l) {
  uint32_t k = (1u << kContendedThread) | (1u << kContendedCounterCell) |
               (1u << kContendedStriped64Cell) | (1u << kContendedExchangerNode) |
               (1u << kInjectedClassLoader) | (1u << kInjectedMemberName) | (1u << kInjectedClass);
  if (l.jdk15_field_layout) {
    k |= (1u << kInjectedString) | (1u << kInjectedResolvedMethodName) |
         (1u << kInjectedCallSiteContext) | (1u << kInjectedStackFrameInfo) |
         (1u << kInjectedModule) | (1u << kInjectedInternalError);
  }
  return k;
}

uint32_t AddressAlignment(const Rep& rep) {
  // The GCD of address differences (as Eclipse MAT's calculateAlignment), clamped to [8, 256].
  uint64_t g = 0;
  for (uint32_t i = 1; i < rep.ids.size() && (g == 0 || g > 8); ++i)
    g = std::gcd(g, rep.ids.Id(i) - rep.ids.Id(i - 1));
  if (g < 8) return 8;
  return static_cast<uint32_t>(std::min<uint64_t>(g, 256) & ~7ull);
}

void ComputeSizes(Rep& rep, const ReadState& st) {
  SizeModel model = st.options.size_model;
  if (model == SizeModel::kAuto)
    model = st.header.minor == 3 ? SizeModel::kAndroid : SizeModel::kHotSpot;
  rep.info.size_model = model;
  const uint32_t id_size = st.header.id_size;
  if (model == SizeModel::kAndroid || model == SizeModel::kNetBeans) {
    uint32_t class_base = 0;
    if (rep.java_lang_class.valid()) {
      class_base = model == SizeModel::kAndroid
                       ? rep.classes[rep.java_lang_class.value].declared_instance_size
                       : st.data_size[rep.java_lang_class.value] + 2 * id_size;
    }
    for (size_t c = 0; c < rep.classes.size(); ++c) {
      ClassInfo& info = rep.classes[c];
      if (info.instance_kind == ObjectKind::kInstance) {
        info.instance_size = model == SizeModel::kAndroid ? info.declared_instance_size
                                                          : st.data_size[c] + 2 * id_size;
      }
      if (model == SizeModel::kAndroid) {
        // perflib: java.lang.Class instance size + the static fields' sizes.
        uint32_t statics = 0;
        for (const FieldInfo& f : info.static_fields)
          statics += analysis::FieldTypeSize(f.type, id_size);
        info.class_object_size = class_base + statics;
      } else {
        info.class_object_size = 0;  // NetBeans' heap summary counts instances and arrays only
      }
    }
    rep.info.size_model_notes =
        model == SizeModel::kAndroid
            ? "Android (perflib): CLASS DUMP instance size; arrays length x element size"
            : "NetBeans: field data + 2 ids; arrays 2 ids + 8 + length x element size";
    return;
  }

  std::vector<LayoutClass> table = LayoutTable(rep, st);
  GapSamples gaps = CollectGaps(rep);
  const uint32_t alignment = AddressAlignment(rep);
  // 1. The layout generation: references, header, field packing, array base.
  std::string candidate_notes;
  analysis::ObjectLayout best;
  std::vector<uint32_t> best_sizes;
  Score best_score;
  bool have = false;
  // Classes whose size depends on a knob do not vote here (the knobs are settled in step 2).
  for (analysis::ObjectLayout cand : CandidateLayouts(id_size)) {
    cand.alignment = alignment;
    LayoutExtras all_on, all_off;
    all_on.knobs = (1u << kKnobCount) - 1;
    all_off.knobs = 0;
    std::vector<uint32_t> sizes = HotSpotInstanceSizes(table, cand, all_off);
    std::vector<uint32_t> with_knobs = HotSpotInstanceSizes(table, cand, all_on);
    analysis::DumpInfo info;
    info.size_model = SizeModel::kHotSpot;
    info.layout = cand;
    Score score;
    for (uint32_t c = 0; c < rep.classes.size(); ++c) {
      if (sizes[c] == with_knobs[c]) ScoreClass(rep, info, gaps, c, sizes[c], &score);
    }
    absl::StrAppendFormat(&candidate_notes, "%s%d/%d/%s%s: %d/%d",
                          candidate_notes.empty() ? "" : ", ", cand.reference_size,
                          cand.object_header, cand.jdk15_field_layout ? "jdk15" : "classic",
                          cand.unaligned_array_base ? "/jdk22" : "", score.exact, score.violations);
    // Ties (no object tells the two field layouts apart) go to the classic layout for 1.0.1 files
    // (JDK <= 8).
    if (!have || score.value() > best_score.value() ||
        (score.value() == best_score.value() && !cand.jdk15_field_layout && st.header.minor == 1)) {
      best = cand;
      best_score = score;
      have = true;
    }
  }
  // 2. The knobs, one at a time, by the evidence of the classes whose size they change.
  LayoutExtras extras;
  extras.knobs = DefaultKnobs(best);
  best_sizes = HotSpotInstanceSizes(table, best, extras);
  std::string knob_notes;
  {
    analysis::DumpInfo info;
    info.size_model = SizeModel::kHotSpot;
    info.layout = best;
    // Two rounds, so that knobs acting on the same class (java.lang.Thread) settle.
    std::vector<std::string> notes(kKnobCount);
    for (int round = 0; round < 2; ++round) {
      for (uint32_t k = 0; k < kKnobCount; ++k) {
        LayoutExtras flipped = extras;
        flipped.knobs ^= 1u << k;
        std::vector<uint32_t> other = HotSpotInstanceSizes(table, best, flipped);
        Score now, then;
        for (uint32_t c = 0; c < rep.classes.size(); ++c) {
          if (other[c] == best_sizes[c]) continue;
          ScoreClass(rep, info, gaps, c, best_sizes[c], &now);
          ScoreClass(rep, info, gaps, c, other[c], &then);
        }
        bool flip = then.value() > now.value();
        if (flip) {
          extras = flipped;
          best_sizes = std::move(other);
        }
        const Score& current = flip ? then : now;
        const Score& other_score = flip ? now : then;
        const bool is_on = extras.on(static_cast<LayoutKnob>(k));
        const Score& on = is_on ? current : other_score;
        const Score& off = is_on ? other_score : current;
        notes[k].clear();
        if (now.exact + now.violations + then.exact + then.violations > 0) {
          notes[k] =
              absl::StrFormat("; %s %s (exact/overlapping objects: on %d/%d, off %d/%d)",
                              LayoutKnobName(static_cast<LayoutKnob>(k)), is_on ? "on" : "off",
                              on.exact, on.violations, off.exact, off.violations);
        }
      }
    }
    for (const std::string& n : notes) knob_notes += n;
  }
  // 3. Addresses are evidence only if objects are packed: most sizes match the distance to the next
  // object and (almost) none overlaps it.
  Score checked = ScoreAll(rep, best, gaps, best_sizes);
  best.inferred =
      gaps.total > 0 && checked.exact * 4 >= gaps.total && checked.violations * 100 <= gaps.total;
  if (!best.inferred) {
    // No usable addresses (e.g. the hprof agent's serial ids): a 32-bit VM for 4-byte ids, else
    // 64-bit without compressed oops, classic field layout.
    best = CandidateLayouts(id_size)[id_size == 4 ? 0 : 2];
    best.alignment = 8;
    extras.knobs = DefaultKnobs(best);
    best_sizes = HotSpotInstanceSizes(table, best, extras);
    knob_notes.clear();
    Warn(rep, std::string("object addresses do not reveal the VM's object layout; assuming ") +
                  (id_size == 4 ? "a 32-bit VM" : "a 64-bit VM without compressed oops"));
  }
  Score final_score = ScoreAll(rep, best, gaps, best_sizes);
  best.gap_exact = final_score.exact;
  best.gap_violations = final_score.violations;
  rep.info.layout = best;
  rep.info.size_model_notes = absl::StrFormat(
      "HotSpot: %d-byte references, %d-byte object header, %s field layout, %d-byte alignment, %s; "
      "address "
      "evidence: %d of %d sampled objects end exactly at the next object, %d overlap it%s",
      best.reference_size, best.object_header, best.jdk15_field_layout ? "JDK 15+" : "JDK 6-14",
      best.alignment,
      best.inferred ? "inferred from object addresses" : "assumed (addresses are not usable)",
      final_score.exact, gaps.total, final_score.violations, knob_notes);
  rep.info.size_model_notes +=
      "; candidates (references/header/layout: exact/overlapping): " + candidate_notes;
  std::vector<uint32_t> mirrors = HotSpotMirrorSizes(
      table, best, best_sizes,
      rep.java_lang_class.valid() ? static_cast<int32_t>(rep.java_lang_class.value) : -1);
  for (size_t c = 0; c < rep.classes.size(); ++c) {
    ClassInfo& info = rep.classes[c];
    if (info.instance_kind == ObjectKind::kInstance) info.instance_size = best_sizes[c];
    info.class_object_size = mirrors[c];
  }
}

// ---------------------------------------------------------------------------------------------------------
// The read.

Status RestartAfterHeader(StreamReader& in, const HprofHeader& h) {
  HW_RETURN_IF_ERROR(in.Rewind());
  HW_ASSIGN_OR_RETURN(HprofHeader again, ReadHprofHeader(in));
  if (again.length != h.length || again.id_size != h.id_size) return FileChanged(0);
  return absl::OkStatus();
}

void ResolveRootsAndHeaps(Rep& rep, ReadState& st) {
  for (const RawRoot& r : st.roots) {
    uint32_t v = Find(rep, r.id);
    if (v == UINT32_MAX) {
      ++rep.info.unresolved_roots;
      continue;
    }
    rep.roots.push_back({ObjectIndex{v}, r.kind, r.thread, r.frame});
  }
  std::vector<RawRoot>().swap(st.roots);
  if (rep.info.unresolved_roots > 0) {
    Warn(rep, absl::StrFormat("%d GC root records name objects that are not in the dump (dropped)",
                              rep.info.unresolved_roots));
  }
  if (!st.heap_of.empty()) {
    for (uint32_t v = 0; v < st.heap_of.size(); ++v) {
      analysis::HeapId h{st.heap_of[v]};
      if (rep.heap_runs.empty() || !(rep.heap_runs.back().heap == h))
        rep.heap_runs.push_back({v, h});
    }
    std::vector<uint8_t>().swap(st.heap_of);
  }
}

StatusOr<HeapGraph> ReadImpl(ByteSource* source, const ReadOptions& options) {
  StreamReader in(source, StreamReader::WindowFor(*source));
  HW_ASSIGN_OR_RETURN(HprofHeader header, ReadHprofHeader(in));
  ReadState st;
  st.header = header;
  st.options = options;
  auto rep = std::make_unique<Rep>();
  rep->info.format = header.format;
  rep->info.id_size = header.id_size;
  rep->info.timestamp_ms = header.timestamp_ms;
  rep->info.instance_class_edges = options.instance_class_edges;
  if (options.dump_ordinal < -1)
    return absl::InvalidArgumentError("dump ordinal must be >= 0 or -1 (last)");

  int pass = 0;
  int passes = 2;  // becomes 3 when the dump's order needs the three-pass path
  ScanOptions scan;
  if (options.progress) {
    scan.progress = [&options, &pass, &passes](uint64_t consumed, uint64_t total) {
      options.progress(uint64_t(pass) * total + consumed, uint64_t(passes) * total);
    };
  }

  // Pass 1.
  analysis::IdChunks ids;
  analysis::IdChunks class_ids;
  {
    Pass1 p1(st, ids, class_ids);
    scan.dump = options.dump_ordinal;
    HprofScanner<Pass1> scanner(in, header, scan, p1);
    HW_RETURN_IF_ERROR(scanner.Run());
    st.dump_count = scanner.dumps();
    st.objects_ascending = p1.ascending();
    st.reference_bytes = p1.reference_bytes();
    st.stream_bytes_hint = in.offset();
    rep->info.dump_count = st.dump_count;
    if (options.dump_ordinal >= 0 && static_cast<uint32_t>(options.dump_ordinal) >= st.dump_count) {
      return absl::InvalidArgumentError(
          absl::StrFormat("heap dump #%d requested but the file holds %d heap dump(s)",
                          options.dump_ordinal, st.dump_count));
    }
    if (st.dump_count == 0) {
      Warn(*rep, "the file holds no heap dump (no HEAP DUMP or HEAP DUMP SEGMENT record)");
      rep->Finish();
      return HeapGraph::FromRep(std::move(rep));
    }
    st.dump = options.dump_ordinal >= 0 ? options.dump_ordinal : st.dump_count - 1;
    rep->info.dump_ordinal = static_cast<uint32_t>(st.dump);
    if (p1.duplicate_classes() > 0) {
      Warn(*rep, absl::StrFormat("%d CLASS DUMP records repeat a class id (the first one is used)",
                                 p1.duplicate_classes()));
    }
    HW_RETURN_IF_ERROR(BuildClassTable(*rep, st, p1));
  }
  BuildObjectIndex(*rep, ids, class_ids, st.objects_ascending);
  if (rep->info.duplicate_objects > 0) {
    Warn(*rep,
         absl::StrFormat("%d records repeat an object id (the first record in file order is used)",
                         rep->info.duplicate_objects));
  }

  const uint32_t n = static_cast<uint32_t>(rep->ids.size());
  analysis::CsrGraph& g = rep->graph;
  bool any_weak = false;
  for (const auto& s : rep->slots) any_weak |= s.weak_slot >= 0;
  scan.dump = st.dump;
  // Every reference slot of a well-formed dump is backed by an id in the file (a field value, an
  // array element), so more slots than ids in the stream means instances shorter than their class
  // layouts.
  const uint64_t max_slots =
      st.stream_bytes_hint / header.id_size + (rep->info.instance_class_edges ? n : 0);
  const bool single =
      options.single_pass && st.objects_ascending && rep->info.duplicate_objects == 0;
  passes = single ? 2 : 3;

  if (single) {
    // Passes 2 and 3 at once.
    ++pass;
    HW_RETURN_IF_ERROR(RestartAfterHeader(in, header));
    uint64_t class_refs = 0;
    for (const RawClass& r : st.raw_classes)
      class_refs += 4 + r.statics.size() + r.constant_refs.size();
    uint64_t max_refs =
        st.reference_bytes / header.id_size + class_refs + (rep->info.instance_class_edges ? n : 0);
    SinglePass p(*rep, st, any_weak, max_refs, max_slots);
    HprofScanner<SinglePass> scanner(in, header, scan, p);
    HW_RETURN_IF_ERROR(scanner.Run());
    HW_RETURN_IF_ERROR(p.Finish());
    rep->info.dangling_references = p.dangling();
    rep->BuildArrayRank();
  } else {
    // Pass 2.
    ++pass;
    HW_RETURN_IF_ERROR(RestartAfterHeader(in, header));
    {
      Pass2 p2(*rep, st);
      HprofScanner<Pass2> scanner(in, header, scan, p2);
      HW_RETURN_IF_ERROR(scanner.Run());
      HW_RETURN_IF_ERROR(p2.Finish());
    }
    rep->BuildArrayRank();
    // Size the CSR graph and the slot bitmap exactly.
    uint64_t edges = 0;
    for (uint32_t v = 0; v < n; ++v) {
      edges += g.offsets[v + 1];
      if (edges > analysis::kMaxCsrEdges) return TooManyReferences(0);
      g.offsets[v + 1] = static_cast<uint32_t>(edges);
    }
    g.targets.assign(g.offsets[n], kNoObject);
    if (any_weak) g.weak.assign(g.offsets[n], false);
    rep->BuildSlotSamples();
    uint64_t total_slots = n == 0 ? 0 : rep->SlotStart(n - 1) + rep->SlotCount(n - 1);
    if (total_slots > max_slots) {
      return absl::DataLossError(
          absl::StrFormat("corrupt dump: %d reference slots but only %d bytes of dump; instance "
                          "records are shorter than "
                          "their CLASS DUMP layouts",
                          total_slots, st.stream_bytes_hint));
    }
    rep->slot_bits.assign((total_slots + 63) / 64, 0);
    // Pass 3.
    ++pass;
    HW_RETURN_IF_ERROR(RestartAfterHeader(in, header));
    {
      Pass3 p3(*rep, st, any_weak);
      HprofScanner<Pass3> scanner(in, header, scan, p3);
      HW_RETURN_IF_ERROR(scanner.Run());
      rep->info.dangling_references = p3.dangling();
      if (p3.needs_compaction()) CompactEdges(*rep);
    }
  }
  for (size_t c = 0; c < rep->classes.size(); ++c) {
    if (st.data_mismatch[c] > 0) {
      Warn(*rep,
           absl::StrFormat(
               "%d instances of %s have a field data length other than its CLASS DUMP's %d bytes",
               st.data_mismatch[c], rep->classes[c].name, st.data_size[c]));
    }
    if (!rep->classes[c].synthetic && st.raw_classes[c].loader_id != 0) {
      uint32_t loader = Find(*rep, st.raw_classes[c].loader_id);
      if (loader != UINT32_MAX) rep->classes[c].class_loader = ObjectIndex{loader};
    }
  }
  if (rep->info.dangling_references > 0) {
    Warn(*rep, absl::StrFormat("%d references point to ids with no object in the dump (dropped)",
                               rep->info.dangling_references));
  }
  ComputeSizes(*rep, st);
  ResolveRootsAndHeaps(*rep, st);
  rep->Finish();
  return HeapGraph::FromRep(std::move(rep));
}

// Census: counts every record and sub-record.
class CensusPass : public HandlerBase {
 public:
  static constexpr bool kWantsStrings = false;
  static constexpr bool kWantsObjectArrayElements = false;
  explicit CensusPass(RecordCensus& c) : c_(c) {}
  Status OnRecord(uint8_t tag, uint64_t, uint32_t) {
    ++c_.records[tag];
    return absl::OkStatus();
  }
  Status OnSubRecord(uint8_t tag, uint64_t) {
    ++c_.sub_records[tag];
    return absl::OkStatus();
  }

 private:
  RecordCensus& c_;
};

StatusOr<RecordCensus> CensusImpl(ByteSource* source) {
  StreamReader in(source, StreamReader::WindowFor(*source));
  HW_ASSIGN_OR_RETURN(HprofHeader header, ReadHprofHeader(in));
  RecordCensus census;
  census.format = header.format;
  census.id_size = header.id_size;
  census.timestamp_ms = header.timestamp_ms;
  CensusPass pass(census);
  ScanOptions scan;
  HprofScanner<CensusPass> scanner(in, header, scan, pass);
  HW_RETURN_IF_ERROR(scanner.Run());
  census.heap_dumps = scanner.dumps();
  census.stream_bytes = in.offset();
  return census;
}

}  // namespace

// Returns the reader's freed scratch (id chunks, per-pass tables: tens of MB for a 1 GB dump, much
// of it below glibc's mmap threshold) to the kernel, so that it does not stay in the RSS next to
// the graph for the rest of the analysis.
void ReleaseFreedMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

StatusOr<HeapGraph> ReadHeapGraph(const std::string& path, const ReadOptions& options) {
  HW_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, OpenFileSource(path));
  StatusOr<HeapGraph> g = ReadImpl(source.get(), options);
  source.reset();
  ReleaseFreedMemory();
  if (!g.ok())
    return absl::Status(g.status().code(), absl::StrCat(path, ": ", g.status().message()));
  return g;
}

StatusOr<HeapGraph> ReadHeapGraphFromBuffer(std::string_view data, const ReadOptions& options) {
  std::unique_ptr<ByteSource> source = OpenMemorySource(data);
  StatusOr<HeapGraph> g = ReadImpl(source.get(), options);
  ReleaseFreedMemory();
  return g;
}

uint64_t RecordCensus::record(uint8_t tag) const {
  auto it = records.find(tag);
  return it == records.end() ? 0 : it->second;
}
uint64_t RecordCensus::sub_record(uint8_t tag) const {
  auto it = sub_records.find(tag);
  return it == sub_records.end() ? 0 : it->second;
}
uint64_t RecordCensus::total_sub_records() const {
  uint64_t t = 0;
  for (const auto& [tag, n] : sub_records) t += n;
  return t;
}
uint64_t RecordCensus::heap_dump_records() const {
  return record(kTagHeapDump) + record(kTagHeapDumpSegment);
}

StatusOr<RecordCensus> ReadRecordCensus(const std::string& path) {
  HW_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, OpenFileSource(path));
  StatusOr<RecordCensus> c = CensusImpl(source.get());
  if (!c.ok())
    return absl::Status(c.status().code(), absl::StrCat(path, ": ", c.status().message()));
  return c;
}

StatusOr<RecordCensus> ReadRecordCensusFromBuffer(std::string_view data) {
  std::unique_ptr<ByteSource> source = OpenMemorySource(data);
  return CensusImpl(source.get());
}

Status ProbeHeapDump(const std::string& path) {
  HW_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, OpenFileSource(path));
  StreamReader in(source.get(), 64 * 1024);
  HW_ASSIGN_OR_RETURN(bool full, in.Ensure(4096));
  (void)full;
  Status s = CheckHprofSignature(
      std::string_view(reinterpret_cast<const char*>(in.data()), in.available()));
  if (!s.ok()) return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  return absl::OkStatus();
}

}  // namespace heapwatch::hprof
