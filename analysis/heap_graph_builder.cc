// BulkHeapGraphBuilder (heap_graph_builder.h): fills HeapGraph::Rep for a dump reader. The two
// object orders are the two strategies of a streaming reader: kIndexOrder appends each object's
// references to the CSR graph as it comes; kTwoRounds counts references in round 1, sizes the CSR
// graph exactly, and writes each object's references at its offset in round 2.
#include "analysis/heap_graph_builder.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/heap_graph_internal.h"

namespace heapwatch::analysis {
namespace {

Status RecordMismatch(std::string_view what) {
  return absl::FailedPreconditionError(
      absl::StrCat("object record does not match the object index: ", std::string(what)));
}

Status TooManyReferences() {
  return absl::ResourceExhaustedError(absl::StrFormat(
      "more than %d non-null references (a CsrGraph holds at most 2^32 - 1)", kMaxCsrEdges));
}

Status TooManySlots(uint64_t slots, uint64_t limit) {
  return absl::DataLossError(absl::StrFormat(
      "%d reference slots or more, above the bound of %d the input allows", slots, limit));
}

}  // namespace

struct BulkHeapGraphBuilder::State {
  enum class Stage : uint8_t { kClasses, kIndex, kObjects, kFinishing, kBuilt };
  // What an Add* call needs to know about a class, kept compact (one cache line holds 2-3).
  struct ClassShape {
    uint64_t class_object_id = 0;
    uint32_t instance_slots = 0;
    int32_t weak_slot = -1;
    ObjectKind kind = ObjectKind::kInstance;
    bool unnamed = false;  // ClassInfo::unnamed_references: any number of values
  };
  static constexpr uint32_t kAbsent = IdIndex::kAbsent;

  Stage stage = Stage::kClasses;
  std::unique_ptr<HeapGraph::Rep> rep = std::make_unique<HeapGraph::Rep>();
  std::vector<ClassObjectRefs> refs;  // parallel to rep->classes
  std::vector<ClassShape> shapes;     // parallel to rep->classes, from FinishClasses() on
  bool ce = false;                    // instance_class_edges
  Status sticky;                      // an error of AddLateClass, returned by the next call
  // Stage 4: sizes the dump records for single objects (SetObjectShallowSize), (index, bytes).
  std::vector<std::pair<uint32_t, uint64_t>> object_sizes;

  // Stage 3.
  ObjectOrder order = ObjectOrder::kIndexOrder;
  ObjectLimits limits;
  uint32_t n = 0;
  bool weak = false;  // some class has a weak slot: keep per-edge weak flags
  std::vector<uint8_t> heap_of;
  uint8_t heap = 0;
  uint64_t slot = 0;  // the next reference slot
  uint64_t dangling = 0;
  // The object array being given (array_v kAbsent: a dropped repeat).
  bool array_open = false;
  uint32_t array_v = kAbsent;
  uint32_t array_length = 0;
  uint64_t array_seen = 0;
  uint64_t array_nonnull = 0;

  // kIndexOrder.
  uint32_t next = 0;                                         // the next index expected
  std::vector<std::pair<uint32_t, uint32_t>> class_objects;  // (index, ClassId), ascending
  size_t next_class = 0;

  // kTwoRounds.
  int round = 1;
  uint64_t record = 0;                      // ordinal of the current record in its round
  uint64_t round1_records = 0;              // records of round 1
  std::vector<uint64_t> claimed;            // round 1: objects that got a record
  std::vector<uint64_t> duplicate_records;  // ordinals of dropped repeats (ascending)
  size_t next_duplicate = 0;
  std::vector<std::pair<uint32_t, uint32_t>> array_lengths;  // round 1: (index, length)
  uint32_t hint = 0;                                         // round 1: the next index expected
  uint32_t last_v = kAbsent;                                 // round 2: the previous object
  uint64_t last_slot_start = 0;
  uint64_t pos = 0;  // round 2: the next edge of the current object, and its end
  uint64_t limit = 0;
  bool overflow = false;
  bool holes = false;  // round 2: some edges are kNoObject (dangling) and must be compacted

  HeapGraph::Rep& r() { return *rep; }

  uint64_t JavaLangClassObjectId() const {
    return rep->java_lang_class.valid() ? shapes[rep->java_lang_class.value].class_object_id : 0;
  }
  // The "<class>" slot of an object of `cls` (or of a class object): a value, or 0.
  uint64_t ClassEdge(uint32_t cls, bool class_object) const {
    if (!ce) return 0;
    return class_object ? JavaLangClassObjectId() : shapes[cls].class_object_id;
  }
  void AddShape(uint32_t c) {
    const ClassInfo& info = rep->classes[c];
    ClassShape s;
    s.class_object_id = info.class_object_id;
    s.instance_slots = static_cast<uint32_t>(rep->slots[c].instance_slots.size());
    s.weak_slot = rep->slots[c].weak_slot;
    s.kind = info.instance_kind;
    s.unnamed = rep->slots[c].unnamed;
    shapes.push_back(s);
  }
  // `cls` must be a class of objects of `kind`; for instances, with `values` reference slots (any
  // number below 2^32 for a class with unnamed references).
  [[gnu::always_inline]] bool FitsClass(ClassId cls, ObjectKind kind, size_t values = 0) const {
    if (cls.value >= shapes.size()) return false;  // kNoClass included
    const ClassShape& shape = shapes[cls.value];
    if (shape.kind != kind) return false;
    if (kind != ObjectKind::kInstance) return true;
    return shape.unnamed ? values <= std::numeric_limits<uint32_t>::max()
                         : values == shape.instance_slots;
  }
  // The error for a class FitsClass rejects.
  [[gnu::noinline]] Status ClassError(ClassId cls, ObjectKind kind, size_t values = 0) const {
    if (cls.value >= shapes.size() || shapes[cls.value].kind != kind) {
      return absl::InvalidArgumentError(
          absl::StrFormat("class %d is not a class of %ss", cls.value, ObjectKindName(kind)));
    }
    if (shapes[cls.value].unnamed) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%d unnamed references for one instance (at most 2^32 - 1)", values));
    }
    return absl::InvalidArgumentError(
        absl::StrFormat("%d reference values for an instance of %s, which has %d slots", values,
                        rep->classes[cls.value].name, shapes[cls.value].instance_slots));
  }
  // Round 2: the class object `v` got in round 1, which `cls` must be unless it is kNoClass.
  StatusOr<uint32_t> RoundOneClass(uint32_t v, ClassId cls, ObjectKind kind) const {
    uint32_t word = rep->class_words[v];
    if ((word & kClassObjectBit) || shapes[word].kind != kind ||
        (cls.valid() && cls.value != word)) {
      return RecordMismatch("class differs between the rounds");
    }
    return word;
  }
  void SetArray(uint32_t v, uint32_t length) {
    rep->array_bits[v >> 6] |= uint64_t{1} << (v & 63);
    if (order == ObjectOrder::kIndexOrder) {
      rep->array_lengths.push_back(length);
    } else {
      array_lengths.push_back({v, length});
    }
  }

  // ---- kIndexOrder: objects in index order, references appended.

  void Append(uint64_t ref, bool is_weak) {
    bool edge = false;
    if (ref != 0) {
      uint32_t t = rep->ids.Find(ref);
      if (t == kAbsent) {
        ++dangling;
      } else {
        rep->graph.targets.push_back(ObjectIndex{t});
        if (weak) rep->graph.weak.push_back(is_weak);
        edge = true;
      }
    }
    if ((slot & 63) == 0) rep->slot_bits.push_back(0);
    if (edge) rep->slot_bits.back() |= uint64_t{1} << (slot & 63);
    ++slot;
  }
  [[gnu::always_inline]] Status EndAppended() {
    if (rep->graph.targets.size() > kMaxCsrEdges) return TooManyReferences();
    if (slot > limits.max_reference_slots) return TooManySlots(slot, limits.max_reference_slots);
    return absl::OkStatus();
  }
  // Places the class objects with indices below `v`; every index in [next, v) must be one.
  [[gnu::noinline]] Status CatchUp(uint32_t v) {
    while (next < v) {
      if (next_class >= class_objects.size() || class_objects[next_class].first != next) {
        return RecordMismatch(absl::StrFormat("object %d got no record", next));
      }
      uint32_t cls = class_objects[next_class++].second;
      uint32_t u = next++;
      rep->graph.offsets[u] = static_cast<uint32_t>(rep->graph.targets.size());
      rep->class_words.Set(u, kClassObjectBit | cls);
      rep->classes[cls].class_object = ObjectIndex{u};
      const ClassObjectRefs& cr = refs[cls];
      if (!heap_of.empty()) heap_of[u] = cr.heap.value;
      if (ce) Append(JavaLangClassObjectId(), false);
      Append(cr.super_id, false);
      Append(cr.loader_id, false);
      Append(cr.signers_id, false);
      Append(cr.protection_domain_id, false);
      for (uint64_t id : cr.static_refs) Append(id, false);
      for (const auto& k : cr.constant_pool) Append(k.second, false);
      HW_RETURN_IF_ERROR(EndAppended());
    }
    return absl::OkStatus();
  }
  // Sets *v to the record's object.
  [[gnu::always_inline]] Status BeginAppended(uint64_t id, uint32_t* v) {
    *v = rep->ids.FindNear(id, next);
    if (*v == kAbsent || *v < next) [[unlikely]] {
      return RecordMismatch(*v == kAbsent ? absl::StrFormat("id 0x%x is not indexed", id)
                                          : absl::StrFormat("id 0x%x out of order", id));
    }
    if (*v > next) HW_RETURN_IF_ERROR(CatchUp(*v));
    next = *v + 1;
    rep->graph.offsets[*v] = static_cast<uint32_t>(rep->graph.targets.size());
    if (!heap_of.empty()) heap_of[*v] = heap;
    return absl::OkStatus();
  }

  // ---- kTwoRounds, round 1: class, array length and reference count of each object.

  // The index of the record's object, or kAbsent for a dropped repeat.
  StatusOr<uint32_t> Claim(uint64_t id) {
    uint64_t ordinal = record++;
    uint32_t v = rep->ids.FindNear(id, hint);
    if (v == kAbsent) return RecordMismatch(absl::StrFormat("id 0x%x is not indexed", id));
    uint64_t bit = uint64_t{1} << (v & 63);
    if (claimed[v >> 6] & bit) {
      duplicate_records.push_back(ordinal);
      return kAbsent;
    }
    claimed[v >> 6] |= bit;
    if (!heap_of.empty()) heap_of[v] = heap;
    hint = v + 1;
    return v;
  }
  Status SetCount(uint32_t v, uint64_t count) {
    if (count > kMaxCsrEdges) return TooManyReferences();
    rep->graph.offsets[v + 1] = static_cast<uint32_t>(count);
    return absl::OkStatus();
  }

  // ---- kTwoRounds, round 2: references written at each object's offset.

  StatusOr<uint32_t> BeginFilled(uint64_t id) {
    uint64_t ordinal = record++;
    if (next_duplicate < duplicate_records.size() && duplicate_records[next_duplicate] == ordinal) {
      ++next_duplicate;
      return kAbsent;
    }
    uint32_t v = rep->ids.FindNear(id, last_v + 1);
    if (v == kAbsent) return RecordMismatch(absl::StrFormat("id 0x%x is not indexed", id));
    // Slot numbering: objects come mostly in index order; otherwise start from the sampled prefix.
    if (v == last_v + 1 && last_v != kAbsent) {
      slot = last_slot_start + rep->SlotCount(last_v);
    } else {
      slot = rep->SlotStart(v);
    }
    last_v = v;
    last_slot_start = slot;
    pos = rep->graph.offsets[v];
    limit = rep->graph.offsets[v + 1];
    overflow = false;
    return v;
  }
  void Fill(uint64_t ref, bool is_weak) {
    if (ref != 0) {
      uint32_t t = rep->ids.Find(ref);
      if (pos >= limit) {
        overflow = true;
      } else if (t == kAbsent) {
        ++dangling;
        rep->graph.targets[pos++] = kNoObject;
        holes = true;
      } else if ((slot >> 6) >= rep->slot_bits.size()) {
        overflow = true;
      } else {
        if (is_weak && weak) rep->graph.weak[pos] = true;
        rep->graph.targets[pos++] = ObjectIndex{t};
        rep->slot_bits[slot >> 6] |= uint64_t{1} << (slot & 63);
      }
    }
    ++slot;
  }
  Status EndFilled() {
    if (overflow || pos != limit) return RecordMismatch("references differ between the rounds");
    return absl::OkStatus();
  }

  // Removes the kNoObject entries (references to ids with no object) from the CSR graph.
  void CompactEdges() {
    CsrGraph& g = rep->graph;
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
};

BulkHeapGraphBuilder::BulkHeapGraphBuilder(DumpInfo info, HeapGraphOptions options)
    : s_(std::make_unique<State>()) {
  s_->rep->info = std::move(info);
  s_->rep->info.instance_class_edges = options.instance_class_edges;
  s_->ce = options.instance_class_edges;
}
BulkHeapGraphBuilder::~BulkHeapGraphBuilder() = default;
BulkHeapGraphBuilder::BulkHeapGraphBuilder(BulkHeapGraphBuilder&&) noexcept = default;
BulkHeapGraphBuilder& BulkHeapGraphBuilder::operator=(BulkHeapGraphBuilder&&) noexcept = default;

DumpInfo& BulkHeapGraphBuilder::info() { return s_->rep->info; }
const DumpInfo& BulkHeapGraphBuilder::info() const { return s_->rep->info; }

void BulkHeapGraphBuilder::Warn(std::string message) {
  std::vector<std::string>& w = s_->rep->info.warnings;
  if (w.size() < kMaxWarnings) w.push_back(std::move(message));
}

std::span<const ClassInfo> BulkHeapGraphBuilder::classes() const { return s_->rep->classes; }
ClassId BulkHeapGraphBuilder::java_lang_class() const { return s_->rep->java_lang_class; }

// ---- Stage 1.

ClassId BulkHeapGraphBuilder::AddClass(ClassInfo info, ClassObjectRefs refs) {
  State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kClasses);
  HW_CHECK(s.rep->classes.size() < kMaxClasses);
  ClassId id{static_cast<uint32_t>(s.rep->classes.size())};
  info.class_object = kNoObject;
  info.class_loader = kNoObject;
  s.rep->classes.push_back(std::move(info));
  s.refs.push_back(std::move(refs));
  return id;
}

ClassInfo& BulkHeapGraphBuilder::mutable_class(ClassId c) {
  HW_CHECK(s_->stage == State::Stage::kClasses);
  HW_CHECK(c.value < s_->rep->classes.size());
  return s_->rep->classes[c.value];
}

HeapId BulkHeapGraphBuilder::AddHeapName(std::string name) {
  HW_CHECK(s_->stage == State::Stage::kClasses);
  s_->rep->heap_names.push_back(std::move(name));
  return HeapId{static_cast<uint8_t>(s_->rep->heap_names.size() - 1)};
}

Status BulkHeapGraphBuilder::FinishClasses() {
  State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kClasses);
  HeapGraph::Rep& r = s.r();
  std::vector<std::vector<uint32_t>> cp(r.classes.size());
  for (size_t c = 0; c < r.classes.size(); ++c) {
    for (const auto& [index, id] : s.refs[c].constant_pool) cp[c].push_back(index);
  }
  HW_RETURN_IF_ERROR(BuildClassSlots(r, cp));
  for (size_t c = 0; c < r.classes.size(); ++c) {
    if (r.classes[c].name == "java.lang.Class") {
      r.java_lang_class = ClassId{static_cast<uint32_t>(c)};
      break;
    }
  }
  s.shapes.reserve(r.classes.size());
  for (uint32_t c = 0; c < r.classes.size(); ++c) s.AddShape(c);
  s.stage = State::Stage::kIndex;
  return absl::OkStatus();
}

// ---- Stage 2.

Status BulkHeapGraphBuilder::IndexObjects(IdChunks&& objects, bool objects_ascending,
                                          IdChunks&& class_objects) {
  State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kIndex);
  if (objects.size() + class_objects.size() > kMaxObjects) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("more than %d objects in one heap graph", kMaxObjects));
  }
  uint64_t duplicates = 0;
  s.rep->ids.BuildFromParts(std::move(objects), objects_ascending, std::move(class_objects),
                            &duplicates);
  s.rep->info.duplicate_objects += duplicates;
  s.n = static_cast<uint32_t>(s.rep->ids.size());
  return absl::OkStatus();
}

uint32_t BulkHeapGraphBuilder::object_count() const {
  return static_cast<uint32_t>(s_->rep->ids.size());
}

uint64_t BulkHeapGraphBuilder::object_id(ObjectIndex v) const {
  HW_CHECK(v.value < s_->rep->ids.size());
  return s_->rep->ids.Id(v.value);
}

ObjectIndex BulkHeapGraphBuilder::FindObject(uint64_t id) const {
  uint32_t v = s_->rep->ids.Find(id);
  return v == IdIndex::kAbsent ? kNoObject : ObjectIndex{v};
}

ClassId BulkHeapGraphBuilder::AddLateClass(ClassInfo info) {
  State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kIndex || s.stage == State::Stage::kObjects);
  HW_CHECK(info.instance_fields.empty() && info.static_fields.empty());
  if (s.rep->classes.size() >= kMaxClasses) {
    if (s.sticky.ok()) {
      s.sticky = absl::ResourceExhaustedError(
          absl::StrFormat("more than %d classes in one heap graph", kMaxClasses));
    }
    return kNoClass;
  }
  ClassId c{static_cast<uint32_t>(s.rep->classes.size())};
  info.class_object = kNoObject;
  info.class_loader = kNoObject;
  s.rep->classes.push_back(std::move(info));
  // No fields: no instance slots; no class object: no class object slots.
  s.rep->slots.emplace_back();
  s.refs.emplace_back();
  s.AddShape(c.value);
  return c;
}

// ---- Stage 3.

void BulkHeapGraphBuilder::BeginObjects(ObjectOrder order, const ObjectLimits& limits) {
  State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kIndex);
  HeapGraph::Rep& r = s.r();
  s.stage = State::Stage::kObjects;
  s.order = order;
  s.limits = limits;
  const uint32_t n = s.n;
  r.class_words.Reset(n);
  r.array_bits.assign((n + 63) / 64, 0);
  r.graph.offsets.assign(static_cast<size_t>(n) + 1, 0);
  if (r.heap_names.size() > 1) s.heap_of.assign(n, 0);
  for (const ClassSlots& cs : r.slots) s.weak |= cs.weak_slot >= 0;
  if (order == ObjectOrder::kIndexOrder) {
    if (limits.expected_object_references > 0) {
      uint64_t class_refs = 0;
      for (const ClassObjectRefs& cr : s.refs) {
        class_refs += 4 + cr.static_refs.size() + cr.constant_pool.size();
      }
      uint64_t capacity = limits.expected_object_references + class_refs + (s.ce ? n : 0);
      r.graph.targets.reserve(capacity);  // untouched capacity costs address space, not memory
      if (s.weak) r.graph.weak.reserve(capacity);
    }
    if (limits.max_reference_slots != std::numeric_limits<uint64_t>::max()) {
      r.slot_bits.reserve(limits.max_reference_slots / 64 + 1);
    }
    for (uint32_t c = 0; c < r.classes.size(); ++c) {
      if (s.shapes[c].class_object_id == 0) continue;
      uint32_t v = r.ids.Find(s.shapes[c].class_object_id);
      if (v != IdIndex::kAbsent) s.class_objects.push_back({v, c});
    }
    std::sort(s.class_objects.begin(), s.class_objects.end());
  } else {
    s.claimed.assign((n + 63) / 64, 0);
  }
}

void BulkHeapGraphBuilder::SetHeap(HeapId heap) { s_->heap = heap.value; }

Status BulkHeapGraphBuilder::AddInstance(uint64_t id, ClassId cls,
                                         std::span<const uint64_t> reference_values,
                                         ObjectIndex* index) {
  State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kObjects && !s.array_open);
  if (!s.sticky.ok()) [[unlikely]]
    return s.sticky;
  uint32_t v;
  if (s.order == ObjectOrder::kIndexOrder) {
    if (!s.FitsClass(cls, ObjectKind::kInstance, reference_values.size())) [[unlikely]]
      return s.ClassError(cls, ObjectKind::kInstance, reference_values.size());
    const State::ClassShape& shape = s.shapes[cls.value];
    HW_RETURN_IF_ERROR(s.BeginAppended(id, &v));
    s.rep->class_words.Set(v, cls.value);
    if (shape.unnamed) s.SetArray(v, static_cast<uint32_t>(reference_values.size()));
    if (s.ce) s.Append(shape.class_object_id, false);
    for (size_t i = 0; i < reference_values.size(); ++i) {
      s.Append(reference_values[i], static_cast<int32_t>(i) == shape.weak_slot);
    }
    HW_RETURN_IF_ERROR(s.EndAppended());
  } else if (s.round == 1) {
    HW_ASSIGN_OR_RETURN(v, s.Claim(id));
    if (v != State::kAbsent) {
      if (!s.FitsClass(cls, ObjectKind::kInstance, reference_values.size())) [[unlikely]]
        return s.ClassError(cls, ObjectKind::kInstance, reference_values.size());
      s.rep->class_words.Set(v, cls.value);
      if (s.shapes[cls.value].unnamed) {
        s.SetArray(v, static_cast<uint32_t>(reference_values.size()));
      }
      uint64_t count = s.ClassEdge(cls.value, false) != 0;
      for (uint64_t ref : reference_values) count += ref != 0;
      HW_RETURN_IF_ERROR(s.SetCount(v, count));
    }
  } else {
    HW_ASSIGN_OR_RETURN(v, s.BeginFilled(id));
    if (v != State::kAbsent) {
      HW_ASSIGN_OR_RETURN(uint32_t c, s.RoundOneClass(v, cls, ObjectKind::kInstance));
      const uint64_t slots = s.shapes[c].unnamed ? s.rep->array_lengths[s.rep->ArrayRank(v)]
                                                 : s.shapes[c].instance_slots;
      if (reference_values.size() != slots) {
        return RecordMismatch("reference values differ between the rounds");
      }
      const int32_t weak_slot = s.shapes[c].weak_slot;
      if (s.ce) s.Fill(s.ClassEdge(c, false), false);
      for (size_t i = 0; i < reference_values.size(); ++i) {
        s.Fill(reference_values[i], static_cast<int32_t>(i) == weak_slot);
      }
      HW_RETURN_IF_ERROR(s.EndFilled());
    }
  }
  if (index != nullptr) *index = v == State::kAbsent ? kNoObject : ObjectIndex{v};
  return absl::OkStatus();
}

Status BulkHeapGraphBuilder::BeginObjectArray(uint64_t id, ClassId cls, uint32_t length,
                                              ObjectIndex* index) {
  State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kObjects && !s.array_open);
  if (!s.sticky.ok()) [[unlikely]]
    return s.sticky;
  uint32_t v;
  if (s.order == ObjectOrder::kIndexOrder) {
    if (!s.FitsClass(cls, ObjectKind::kObjectArray)) [[unlikely]]
      return s.ClassError(cls, ObjectKind::kObjectArray);
    HW_RETURN_IF_ERROR(s.BeginAppended(id, &v));
    s.rep->class_words.Set(v, cls.value);
    s.SetArray(v, length);
    if (s.ce) s.Append(s.shapes[cls.value].class_object_id, false);
  } else if (s.round == 1) {
    HW_ASSIGN_OR_RETURN(v, s.Claim(id));
    if (v != State::kAbsent) {
      if (!s.FitsClass(cls, ObjectKind::kObjectArray)) [[unlikely]]
        return s.ClassError(cls, ObjectKind::kObjectArray);
      s.rep->class_words.Set(v, cls.value);
      s.SetArray(v, length);
      s.array_nonnull = s.ClassEdge(cls.value, false) != 0;
    }
  } else {
    HW_ASSIGN_OR_RETURN(v, s.BeginFilled(id));
    if (v != State::kAbsent) {
      HW_ASSIGN_OR_RETURN(uint32_t c, s.RoundOneClass(v, cls, ObjectKind::kObjectArray));
      if (s.ce) s.Fill(s.ClassEdge(c, false), false);
    }
  }
  s.array_open = true;
  s.array_v = v;
  s.array_length = length;
  s.array_seen = 0;
  if (index != nullptr) *index = v == State::kAbsent ? kNoObject : ObjectIndex{v};
  return absl::OkStatus();
}

Status BulkHeapGraphBuilder::AddArrayElements(std::span<const uint64_t> elements) {
  State& s = *s_;
  HW_CHECK(s.array_open);
  s.array_seen += elements.size();
  if (s.array_v == State::kAbsent) return absl::OkStatus();
  if (s.order == ObjectOrder::kIndexOrder) {
    for (uint64_t ref : elements) s.Append(ref, false);
  } else if (s.round == 1) {
    for (uint64_t ref : elements) s.array_nonnull += ref != 0;
  } else {
    for (uint64_t ref : elements) s.Fill(ref, false);
  }
  return absl::OkStatus();
}

Status BulkHeapGraphBuilder::EndObjectArray() {
  State& s = *s_;
  HW_CHECK(s.array_open);
  s.array_open = false;
  if (s.array_seen != s.array_length) {
    return absl::InvalidArgumentError(
        absl::StrFormat("object array of %d elements given %d", s.array_length, s.array_seen));
  }
  if (s.array_v == State::kAbsent) return absl::OkStatus();
  if (s.order == ObjectOrder::kIndexOrder) return s.EndAppended();
  if (s.round == 1) return s.SetCount(s.array_v, s.array_nonnull);
  return s.EndFilled();
}

Status BulkHeapGraphBuilder::AddPrimitiveArray(uint64_t id, ClassId cls, uint32_t length,
                                               ObjectIndex* index) {
  State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kObjects && !s.array_open);
  if (!s.sticky.ok()) [[unlikely]]
    return s.sticky;
  uint32_t v;
  if (s.order == ObjectOrder::kIndexOrder) {
    if (!s.FitsClass(cls, ObjectKind::kPrimitiveArray)) [[unlikely]]
      return s.ClassError(cls, ObjectKind::kPrimitiveArray);
    HW_RETURN_IF_ERROR(s.BeginAppended(id, &v));
    s.rep->class_words.Set(v, cls.value);
    s.SetArray(v, length);
    if (s.ce) s.Append(s.shapes[cls.value].class_object_id, false);
    HW_RETURN_IF_ERROR(s.EndAppended());
  } else if (s.round == 1) {
    HW_ASSIGN_OR_RETURN(v, s.Claim(id));
    if (v != State::kAbsent) {
      if (!s.FitsClass(cls, ObjectKind::kPrimitiveArray)) [[unlikely]]
        return s.ClassError(cls, ObjectKind::kPrimitiveArray);
      s.rep->class_words.Set(v, cls.value);
      s.SetArray(v, length);
      HW_RETURN_IF_ERROR(s.SetCount(v, s.ClassEdge(cls.value, false) != 0));
    }
  } else {
    HW_ASSIGN_OR_RETURN(v, s.BeginFilled(id));
    if (v != State::kAbsent) {
      HW_ASSIGN_OR_RETURN(uint32_t c, s.RoundOneClass(v, cls, ObjectKind::kPrimitiveArray));
      if (s.ce) s.Fill(s.ClassEdge(c, false), false);
      HW_RETURN_IF_ERROR(s.EndFilled());
    }
  }
  if (index != nullptr) *index = v == State::kAbsent ? kNoObject : ObjectIndex{v};
  return absl::OkStatus();
}

Status BulkHeapGraphBuilder::AddClassObject(ClassId cls, ObjectIndex* index) {
  State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kObjects && !s.array_open);
  HW_CHECK(s.order == ObjectOrder::kTwoRounds);
  if (!s.sticky.ok()) [[unlikely]]
    return s.sticky;
  if (!cls.valid() || cls.value >= s.shapes.size() || s.shapes[cls.value].class_object_id == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("class %d has no class object id", cls.value));
  }
  const uint64_t id = s.shapes[cls.value].class_object_id;
  const ClassObjectRefs& cr = s.refs[cls.value];
  const uint32_t word = kClassObjectBit | cls.value;
  uint32_t v;
  if (s.round == 1) {
    HW_ASSIGN_OR_RETURN(v, s.Claim(id));
    if (v != State::kAbsent) {
      s.rep->class_words.Set(v, word);
      s.rep->classes[cls.value].class_object = ObjectIndex{v};
      uint64_t count = s.ClassEdge(cls.value, true) != 0;
      count += (cr.super_id != 0) + (cr.loader_id != 0) + (cr.signers_id != 0) +
               (cr.protection_domain_id != 0);
      for (uint64_t ref : cr.static_refs) count += ref != 0;
      for (const auto& k : cr.constant_pool) count += k.second != 0;
      HW_RETURN_IF_ERROR(s.SetCount(v, count));
    }
  } else {
    HW_ASSIGN_OR_RETURN(v, s.BeginFilled(id));
    if (v != State::kAbsent) {
      if (s.rep->class_words[v] != word) {
        return RecordMismatch("class differs between the rounds");
      }
      if (s.ce) s.Fill(s.ClassEdge(cls.value, true), false);
      s.Fill(cr.super_id, false);
      s.Fill(cr.loader_id, false);
      s.Fill(cr.signers_id, false);
      s.Fill(cr.protection_domain_id, false);
      for (uint64_t ref : cr.static_refs) s.Fill(ref, false);
      for (const auto& k : cr.constant_pool) s.Fill(k.second, false);
      HW_RETURN_IF_ERROR(s.EndFilled());
    }
  }
  if (index != nullptr) *index = v == State::kAbsent ? kNoObject : ObjectIndex{v};
  return absl::OkStatus();
}

bool BulkHeapGraphBuilder::HasRecord(uint64_t id) const {
  const State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kObjects && s.order == ObjectOrder::kTwoRounds && s.round == 1);
  uint32_t v = s.rep->ids.FindNear(id, s.hint);
  return v != IdIndex::kAbsent && ((s.claimed[v >> 6] >> (v & 63)) & 1);
}

Status BulkHeapGraphBuilder::EndFirstRound() {
  State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kObjects && !s.array_open);
  HW_CHECK(s.order == ObjectOrder::kTwoRounds && s.round == 1);
  if (!s.sticky.ok()) [[unlikely]]
    return s.sticky;
  HeapGraph::Rep& r = s.r();
  const uint32_t n = s.n;
  for (uint32_t w = 0; w < s.claimed.size(); ++w) {
    uint64_t expect = (uint64_t{w} + 1) * 64 <= n ? ~0ull : ((1ull << (n % 64)) - 1);
    if (s.claimed[w] != expect) return RecordMismatch("an indexed object got no record");
  }
  std::vector<uint64_t>().swap(s.claimed);
  std::sort(s.array_lengths.begin(), s.array_lengths.end());
  r.array_lengths.resize(s.array_lengths.size());
  for (size_t i = 0; i < s.array_lengths.size(); ++i)
    r.array_lengths[i] = s.array_lengths[i].second;
  std::vector<std::pair<uint32_t, uint32_t>>().swap(s.array_lengths);
  r.BuildArrayRank();
  // Size the CSR graph and the slot bitmap exactly.
  CsrGraph& g = r.graph;
  uint64_t edges = 0;
  for (uint32_t v = 0; v < n; ++v) {
    edges += g.offsets[v + 1];
    if (edges > kMaxCsrEdges) return TooManyReferences();
    g.offsets[v + 1] = static_cast<uint32_t>(edges);
  }
  g.targets.assign(g.offsets[n], kNoObject);
  if (s.weak) g.weak.assign(g.offsets[n], false);
  r.BuildSlotSamples();
  uint64_t total_slots = n == 0 ? 0 : r.SlotStart(n - 1) + r.SlotCount(n - 1);
  if (total_slots > s.limits.max_reference_slots) {
    return TooManySlots(total_slots, s.limits.max_reference_slots);
  }
  r.slot_bits.assign((total_slots + 63) / 64, 0);
  s.round = 2;
  s.round1_records = s.record;
  s.record = 0;
  return absl::OkStatus();
}

Status BulkHeapGraphBuilder::FinishObjects() {
  State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kObjects);
  if (s.array_open) return RecordMismatch("an object array was left open");
  if (!s.sticky.ok()) [[unlikely]]
    return s.sticky;
  HeapGraph::Rep& r = s.r();
  if (s.order == ObjectOrder::kIndexOrder) {
    HW_RETURN_IF_ERROR(s.CatchUp(s.n));
    if (s.next != s.n) return RecordMismatch("an indexed object got no record");
    r.graph.offsets[s.n] = static_cast<uint32_t>(r.graph.targets.size());
    r.BuildArrayRank();
    std::vector<std::pair<uint32_t, uint32_t>>().swap(s.class_objects);
  } else {
    if (s.round != 2 || s.record != s.round1_records) {
      return RecordMismatch("the second round holds other records than the first");
    }
    if (s.holes) s.CompactEdges();
    std::vector<uint64_t>().swap(s.duplicate_records);
  }
  r.info.dangling_references += s.dangling;
  for (size_t c = 0; c < r.classes.size(); ++c) {
    ClassInfo& info = r.classes[c];
    if (!info.synthetic && s.refs[c].loader_id != 0) {
      uint32_t loader = r.ids.Find(s.refs[c].loader_id);
      if (loader != IdIndex::kAbsent) info.class_loader = ObjectIndex{loader};
    }
  }
  std::vector<ClassObjectRefs>().swap(s.refs);  // the class objects' references are in the graph
  s.stage = State::Stage::kFinishing;
  return absl::OkStatus();
}

// ---- Stage 4.

std::vector<std::vector<AddressGap>> BulkHeapGraphBuilder::SampleAddressGaps(
    uint32_t per_class) const {
  const State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kFinishing);
  const HeapGraph::Rep& r = *s.rep;
  const uint32_t n = static_cast<uint32_t>(r.ids.size());
  std::vector<std::vector<AddressGap>> out(r.classes.size());
  if (per_class == 0) return out;
  std::vector<uint32_t> count(r.classes.size(), 0);
  for (uint32_t v = 0; v < n; ++v) {
    if (!(r.class_words[v] & kClassObjectBit)) ++count[r.class_words[v]];
  }
  std::vector<uint32_t> seen(r.classes.size(), 0);
  for (uint32_t v = 0; v + 1 < n; ++v) {
    uint32_t cw = r.class_words[v];
    if (cw & kClassObjectBit) continue;
    uint32_t stride = std::max<uint32_t>(1, count[cw] / per_class);
    if (seen[cw]++ % stride != 0 || out[cw].size() >= per_class) continue;
    bool array = r.classes[cw].instance_kind != ObjectKind::kInstance;
    uint32_t len = array ? r.array_lengths[r.ArrayRank(v)] : 0;
    out[cw].push_back({len, r.ids.Id(v + 1) - r.ids.Id(v)});
  }
  return out;
}

void BulkHeapGraphBuilder::SetShallowSizes(ClassId c, uint32_t instance_size,
                                           uint32_t class_object_size) {
  State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kFinishing);
  HW_CHECK(c.value < s.rep->classes.size());
  ClassInfo& info = s.rep->classes[c.value];
  if (info.instance_kind == ObjectKind::kInstance) info.instance_size = instance_size;
  info.class_object_size = class_object_size;
}

void BulkHeapGraphBuilder::SetObjectShallowSize(ObjectIndex v, uint64_t bytes) {
  State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kFinishing);
  HW_CHECK(v.value < s.rep->ids.size());
  s.object_sizes.push_back({v.value, bytes});
}

void BulkHeapGraphBuilder::AddRoot(uint64_t id, GcRootKind kind, uint32_t thread_serial,
                                   int32_t frame) {
  State& s = *s_;
  HW_CHECK(s.stage == State::Stage::kFinishing);
  uint32_t v = s.rep->ids.Find(id);
  if (v == IdIndex::kAbsent) {
    ++s.rep->info.unresolved_roots;
    return;
  }
  s.rep->roots.push_back({ObjectIndex{v}, kind, thread_serial, frame});
}

StatusOr<HeapGraph> BulkHeapGraphBuilder::Build() && {
  State& s = *s_;
  if (s.stage == State::Stage::kClasses) {
    HW_RETURN_IF_ERROR(FinishClasses());
    HW_RETURN_IF_ERROR(IndexObjects(IdChunks{}, true, IdChunks{}));
    BeginObjects(ObjectOrder::kIndexOrder);
    HW_RETURN_IF_ERROR(FinishObjects());
  }
  if (s.stage != State::Stage::kFinishing) {
    return absl::FailedPreconditionError("BulkHeapGraphBuilder::Build before FinishObjects");
  }
  if (!s.sticky.ok()) [[unlikely]]
    return s.sticky;
  s.stage = State::Stage::kBuilt;
  HeapGraph::Rep& r = s.r();
  if (r.info.size_model == SizeModel::kAuto) r.info.size_model = SizeModel::kHotSpot;
  if (!s.heap_of.empty()) {
    for (uint32_t v = 0; v < s.heap_of.size(); ++v) {
      HeapId h{s.heap_of[v]};
      if (r.heap_runs.empty() || !(r.heap_runs.back().heap == h)) r.heap_runs.push_back({v, h});
    }
    std::vector<uint8_t>().swap(s.heap_of);
  }
  HW_RETURN_IF_ERROR(SetSizeOverrides(r, std::move(s.object_sizes)));
  r.Finish();
  return HeapGraph::FromRep(std::move(s.rep));
}

}  // namespace heapwatch::analysis
