#include "analysis/heap_graph.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/heap_graph_internal.h"

namespace heapwatch::analysis {

// ---------------------------------------------------------------------------------------------------------
// Names and sizes of HPROF types.

std::string_view ObjectKindName(ObjectKind kind) {
  switch (kind) {
    case ObjectKind::kInstance:
      return "instance";
    case ObjectKind::kClass:
      return "class";
    case ObjectKind::kObjectArray:
      return "object array";
    case ObjectKind::kPrimitiveArray:
      return "primitive array";
  }
  return "?";
}

bool IsValidFieldType(uint8_t code) { return code == 2 || (code >= 4 && code <= 11); }

uint32_t FieldTypeSize(FieldType type, uint32_t reference_size) {
  switch (type) {
    case FieldType::kObject:
      return reference_size;
    case FieldType::kBoolean:
    case FieldType::kByte:
      return 1;
    case FieldType::kChar:
    case FieldType::kShort:
      return 2;
    case FieldType::kFloat:
    case FieldType::kInt:
      return 4;
    case FieldType::kDouble:
    case FieldType::kLong:
      return 8;
  }
  return 0;
}

std::string_view FieldTypeName(FieldType type) {
  switch (type) {
    case FieldType::kObject:
      return "java.lang.Object";
    case FieldType::kBoolean:
      return "boolean";
    case FieldType::kChar:
      return "char";
    case FieldType::kFloat:
      return "float";
    case FieldType::kDouble:
      return "double";
    case FieldType::kByte:
      return "byte";
    case FieldType::kShort:
      return "short";
    case FieldType::kInt:
      return "int";
    case FieldType::kLong:
      return "long";
  }
  return "?";
}

std::string_view GcRootKindName(GcRootKind kind) {
  static constexpr std::string_view kNames[kGcRootKindCount] = {
      "UNKNOWN",           "JNI_GLOBAL",      "JNI_LOCAL",    "JAVA_FRAME",
      "NATIVE_STACK",      "STICKY_CLASS",    "THREAD_BLOCK", "MONITOR_USED",
      "THREAD_OBJECT",     "INTERNED_STRING", "FINALIZING",   "DEBUGGER",
      "REFERENCE_CLEANUP", "VM_INTERNAL",     "JNI_MONITOR",  "UNREACHABLE",
      "PURE_ROOT",         "ARTIFICIAL_ROOT"};
  auto i = static_cast<size_t>(kind);
  return i < kGcRootKindCount ? kNames[i] : "?";
}

std::string_view SizeModelName(SizeModel model) {
  switch (model) {
    case SizeModel::kAuto:
      return "auto";
    case SizeModel::kHotSpot:
      return "hotspot";
    case SizeModel::kAndroid:
      return "android";
    case SizeModel::kNetBeans:
      return "netbeans";
    case SizeModel::kIbm:
      return "ibm";
  }
  return "?";
}

uint64_t ArrayShallowSize(const DumpInfo& info, FieldType element, uint64_t length) {
  switch (info.size_model) {
    case SizeModel::kAndroid:
      // perflib ArrayInstance.getSize(): length x element size, no header (references count id
      // size).
      return length * FieldTypeSize(element, info.id_size);
    case SizeModel::kNetBeans:
      // NetBeans lib.profiler.heap: 2 ids + 8 + length x element size, not aligned.
      return 2ull * info.id_size + 8 + length * FieldTypeSize(element, info.id_size);
    case SizeModel::kAuto:
    case SizeModel::kHotSpot:
    case SizeModel::kIbm:
      break;
  }
  const ObjectLayout& l = info.layout;
  uint32_t elem = FieldTypeSize(element, l.reference_size);
  // HotSpot arrayOopDesc: the elements start after the 32-bit length, aligned to the machine word
  // (JDK <= 21) and always to 8 bytes for 8-byte elements.
  uint64_t base = l.array_length_offset + 4;
  if (!l.unaligned_array_base) base = AlignUp(base, l.word_size);
  if (elem == 8) base = AlignUp(base, 8);
  return AlignUp(base + length * elem, l.alignment);
}

// ---------------------------------------------------------------------------------------------------------
// Rep helpers.

uint32_t HeapGraph::Rep::ArrayRank(uint32_t v) const {
  uint64_t word = array_bits[v >> 6];
  uint64_t below = (v & 63) == 0 ? 0 : (word & (~0ull >> (64 - (v & 63))));
  return array_rank[v >> 6] + static_cast<uint32_t>(std::popcount(below));
}

uint32_t HeapGraph::Rep::SlotCount(uint32_t v) const {
  uint32_t ce = info.instance_class_edges ? 1 : 0;
  uint32_t cw = class_words[v];
  if (cw & kClassObjectBit) {
    return static_cast<uint32_t>(slots[cw & ~kClassObjectBit].class_object_slots.size()) + ce;
  }
  const ClassInfo& c = classes[cw];
  switch (c.instance_kind) {
    case ObjectKind::kInstance:
      if (slots[cw].unnamed) return array_lengths[ArrayRank(v)] + ce;
      return static_cast<uint32_t>(slots[cw].instance_slots.size()) + ce;
    case ObjectKind::kObjectArray:
      return array_lengths[ArrayRank(v)] + ce;
    default:
      return ce;
  }
}

uint64_t HeapGraph::Rep::SlotStart(uint32_t v) const {
  uint64_t s = slot_samples[v >> 6];
  for (uint32_t u = v & ~63u; u < v; ++u) s += SlotCount(u);
  return s;
}

void HeapGraph::Rep::BuildArrayRank() {
  array_bits.resize((ids.size() + 63) / 64, 0);
  array_rank.assign(array_bits.size() + 1, 0);
  uint32_t acc = 0;
  for (size_t w = 0; w < array_bits.size(); ++w) {
    array_rank[w] = acc;
    acc += static_cast<uint32_t>(std::popcount(array_bits[w]));
  }
  array_rank[array_bits.size()] = acc;
}

void HeapGraph::Rep::BuildSlotSamples() {
  size_t n = ids.size();
  slot_samples.assign(n / 64 + 1, 0);
  uint64_t s = 0;
  for (uint32_t v = 0; v < n; ++v) {
    if ((v & 63) == 0) slot_samples[v >> 6] = s;
    s += SlotCount(v);
  }
}

void HeapGraph::Rep::Finish() {
  if (array_rank.size() != array_bits.size() + 1 || array_bits.size() != (ids.size() + 63) / 64) {
    BuildArrayRank();
  }
  BuildSlotSamples();
  classes_by_name.resize(classes.size());
  std::iota(classes_by_name.begin(), classes_by_name.end(), 0u);
  std::sort(classes_by_name.begin(), classes_by_name.end(), [this](uint32_t a, uint32_t b) {
    return std::tie(classes[a].name, a) < std::tie(classes[b].name, b);
  });
  root_objects.clear();
  root_objects.reserve(roots.size());
  for (const GcRoot& r : roots) root_objects.push_back(r.object);
  std::sort(root_objects.begin(), root_objects.end());
  root_objects.erase(std::unique(root_objects.begin(), root_objects.end()), root_objects.end());
  root_objects.shrink_to_fit();
  // Producers are done with bulk id lookups: keep the ids packed (analysis/id_index.h).
  ids.Pack();
}

Status BuildClassSlots(HeapGraph::Rep& rep,
                       const std::vector<std::vector<uint32_t>>& constant_pool_refs) {
  const size_t count = rep.classes.size();
  rep.slots.assign(count, ClassSlots{});
  for (uint32_t c = 0; c < count; ++c) {
    ClassInfo& info = rep.classes[c];
    ClassSlots& s = rep.slots[c];
    info.is_reference = false;
    size_t steps = 0;
    for (ClassId k{c}; k.valid(); k = rep.classes[k.value].super_class) {
      if (k.value >= count)
        return absl::InvalidArgumentError(absl::StrFormat("class %s: bad superclass", info.name));
      if (++steps > count) {
        return absl::InvalidArgumentError(
            absl::StrFormat("class hierarchy of %s (class object 0x%x) has a cycle", info.name,
                            info.class_object_id));
      }
      const ClassInfo& kc = rep.classes[k.value];
      bool is_ref_class = kc.name == "java.lang.ref.Reference";
      if (is_ref_class) info.is_reference = true;
      if (info.instance_kind != ObjectKind::kInstance || info.unnamed_references) continue;
      for (uint32_t i = 0; i < kc.instance_fields.size(); ++i) {
        if (kc.instance_fields[i].type != FieldType::kObject) continue;
        if (is_ref_class && kc.instance_fields[i].name == "referent" && s.weak_slot < 0) {
          s.weak_slot = static_cast<int32_t>(s.instance_slots.size());
        }
        s.instance_slots.push_back({ReferenceSlot::Kind::kField, k, i, 0});
      }
    }
    s.unnamed = info.instance_kind == ObjectKind::kInstance && info.unnamed_references;
    s.class_object_slots.push_back({ReferenceSlot::Kind::kSuperClass, ClassId{c}, 0, 0});
    s.class_object_slots.push_back({ReferenceSlot::Kind::kClassLoader, ClassId{c}, 0, 0});
    s.class_object_slots.push_back({ReferenceSlot::Kind::kSigners, ClassId{c}, 0, 0});
    s.class_object_slots.push_back({ReferenceSlot::Kind::kProtectionDomain, ClassId{c}, 0, 0});
    for (uint32_t i = 0; i < info.static_fields.size(); ++i) {
      if (info.static_fields[i].type == FieldType::kObject) {
        s.class_object_slots.push_back({ReferenceSlot::Kind::kStaticField, ClassId{c}, i, 0});
      }
    }
    if (c < constant_pool_refs.size()) {
      for (uint32_t cp : constant_pool_refs[c]) {
        s.class_object_slots.push_back({ReferenceSlot::Kind::kConstantPool, ClassId{c}, cp, 0});
      }
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------------------
// HeapGraph.

HeapGraph::HeapGraph() : rep_(std::make_unique<Rep>()) { rep_->Finish(); }
HeapGraph::HeapGraph(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
HeapGraph::~HeapGraph() = default;
HeapGraph::HeapGraph(HeapGraph&&) noexcept = default;
HeapGraph& HeapGraph::operator=(HeapGraph&&) noexcept = default;

StatusOr<HeapGraph> HeapGraph::FromRep(std::unique_ptr<Rep> rep) {
  auto bad = [](std::string what) { return absl::InternalError("HeapGraph invariant: " + what); };
  const Rep& r = *rep;
  const uint64_t n = r.ids.size();
  if (n >= std::numeric_limits<uint32_t>::max()) return bad("too many objects");
  if (r.class_words.size() != n) return bad("class_words size");
  if (r.slots.size() != r.classes.size()) return bad("slots size");
  if (r.classes.size() > kMaxClasses) return bad("too many classes");
  for (uint64_t i = 1; i < n; ++i) {
    if (r.ids.Id(static_cast<uint32_t>(i - 1)) >= r.ids.Id(static_cast<uint32_t>(i))) {
      return bad(absl::StrFormat("ids not ascending at %d", i));
    }
  }
  if (r.array_bits.size() != (n + 63) / 64 || r.array_rank.size() != r.array_bits.size() + 1) {
    return bad("array bitmap size");
  }
  uint64_t arrays = 0;
  for (uint64_t w : r.array_bits) arrays += std::popcount(w);
  if (arrays != r.array_lengths.size()) return bad("array_lengths size");
  for (uint64_t v = 0; v < n; ++v) {
    uint32_t cw = r.class_words[v];
    uint32_t c = cw & ~kClassObjectBit;
    if (c >= r.classes.size()) return bad(absl::StrFormat("class of object %d", v));
    bool is_array = r.IsArray(static_cast<uint32_t>(v));
    bool counted = r.classes[c].instance_kind != ObjectKind::kInstance || r.slots[c].unnamed;
    if ((cw & kClassObjectBit) ? is_array : (is_array != counted)) {
      return bad(absl::StrFormat("array bit of object %d", v));
    }
  }
  const CsrGraph& g = r.graph;
  if (g.offsets.size() != n + 1 || g.offsets.front() != 0 || g.offsets.back() != g.targets.size()) {
    return bad("CSR offsets shape");
  }
  for (uint64_t v = 0; v < n; ++v) {
    if (g.offsets[v] > g.offsets[v + 1]) return bad("CSR offsets decreasing");
  }
  for (ObjectIndex t : g.targets) {
    if (t.value >= n) return bad("CSR target out of range");
  }
  if (!g.weak.empty() && g.weak.size() != g.targets.size()) return bad("weak flags size");
  for (const GcRoot& root : r.roots) {
    if (root.object.value >= n) return bad("root out of range");
  }
  for (const ClassInfo& c : r.classes) {
    if (c.super_class.valid() && c.super_class.value >= r.classes.size())
      return bad("super class id");
    if (c.class_object.valid() && c.class_object.value >= n) return bad("class object index");
    if (c.class_loader.valid() && c.class_loader.value >= n) return bad("class loader index");
  }
  if (r.size_override_objects.size() != r.size_override_bytes.size()) {
    return bad("size override arrays differ in length");
  }
  for (size_t i = 0; i < r.size_override_objects.size(); ++i) {
    if (r.size_override_objects[i] >= n ||
        (i > 0 && r.size_override_objects[i - 1] >= r.size_override_objects[i])) {
      return bad("size overrides not ascending object indices");
    }
  }
  if (r.slot_samples.size() != n / 64 + 1 || r.root_objects.size() > r.roots.size() ||
      r.classes_by_name.size() != r.classes.size()) {
    return bad("derived indexes missing (call Rep::Finish)");
  }
  // Every object's edges must fit its slots.
  uint64_t total_slots = n == 0 ? 0
                                : r.SlotStart(static_cast<uint32_t>(n - 1)) +
                                      r.SlotCount(static_cast<uint32_t>(n - 1));
  if (r.slot_bits.size() != (total_slots + 63) / 64) return bad("slot bitmap size");
  // The graph is final: its offsets take about 1.1 bytes per object instead of 4 from here on.
  rep->graph.offsets.Compact();
  return HeapGraph(std::move(rep));
}

StatusOr<HeapGraph> HeapGraph::AddRoots(HeapGraph graph, std::span<const GcRoot> roots,
                                        std::string note) {
  Rep& r = *graph.rep_;
  for (const GcRoot& root : roots) {
    if (root.object.value >= r.ids.size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "AddRoots: root object %u out of range (%u objects)", root.object.value, r.ids.size()));
    }
  }
  for (const GcRoot& root : roots) {
    r.roots.push_back(root);
    r.root_objects.push_back(root.object);
    if (root.kind == GcRootKind::kPureRoot || root.kind == GcRootKind::kArtificialRoot) {
      r.info.roots_inferred = true;
    }
  }
  std::sort(r.root_objects.begin(), r.root_objects.end());
  r.root_objects.erase(std::unique(r.root_objects.begin(), r.root_objects.end()),
                       r.root_objects.end());
  if (!note.empty()) r.info.warnings.push_back(std::move(note));
  return graph;
}

const DumpInfo& HeapGraph::info() const { return rep_->info; }
uint32_t HeapGraph::object_count() const { return static_cast<uint32_t>(rep_->ids.size()); }

ObjectKind HeapGraph::kind(ObjectIndex v) const {
  uint32_t cw = rep_->class_words[v.value];
  if (cw & kClassObjectBit) return ObjectKind::kClass;
  return rep_->classes[cw].instance_kind;
}

ClassId HeapGraph::class_of(ObjectIndex v) const {
  uint32_t cw = rep_->class_words[v.value];
  if (cw & kClassObjectBit) return rep_->java_lang_class;
  return ClassId{cw};
}

ClassId HeapGraph::DescribedClass(ObjectIndex v) const {
  uint32_t cw = rep_->class_words[v.value];
  return (cw & kClassObjectBit) ? ClassId{cw & ~kClassObjectBit} : kNoClass;
}

uint64_t ModelShallowSize(const HeapGraph::Rep& r, uint32_t v) {
  uint32_t cw = r.class_words[v];
  if (cw & kClassObjectBit) return r.classes[cw & ~kClassObjectBit].class_object_size;
  const ClassInfo& c = r.classes[cw];
  if (c.instance_kind == ObjectKind::kInstance) return c.instance_size;
  return ArrayShallowSize(r.info, c.element_type, r.array_lengths[r.ArrayRank(v)]);
}

Status SetSizeOverrides(HeapGraph::Rep& r, std::vector<std::pair<uint32_t, uint64_t>> sizes) {
  std::stable_sort(sizes.begin(), sizes.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  r.size_override_objects.clear();
  r.size_override_bytes.clear();
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i + 1 < sizes.size() && sizes[i + 1].first == sizes[i].first) continue;  // last one wins
    if (sizes[i].first >= r.ids.size()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("shallow size for object %u, out of range", sizes[i].first));
    }
    if (ModelShallowSize(r, sizes[i].first) == sizes[i].second) continue;
    r.size_override_objects.push_back(sizes[i].first);
    r.size_override_bytes.push_back(sizes[i].second);
  }
  return absl::OkStatus();
}

uint64_t HeapGraph::shallow_size(ObjectIndex v) const {
  const Rep& r = *rep_;
  if (!r.size_override_objects.empty()) [[unlikely]] {
    auto it = std::lower_bound(r.size_override_objects.begin(), r.size_override_objects.end(),
                               v.value);
    if (it != r.size_override_objects.end() && *it == v.value) {
      return r.size_override_bytes[it - r.size_override_objects.begin()];
    }
  }
  return ModelShallowSize(r, v.value);
}

uint64_t HeapGraph::object_id(ObjectIndex v) const { return rep_->ids.Id(v.value); }

uint32_t HeapGraph::array_length(ObjectIndex v) const {
  const Rep& r = *rep_;
  if (!r.IsArray(v.value) || kind(v) == ObjectKind::kInstance) return 0;
  return r.array_lengths[r.ArrayRank(v.value)];
}

HeapId HeapGraph::heap(ObjectIndex v) const {
  const auto& runs = rep_->heap_runs;
  auto it = std::upper_bound(runs.begin(), runs.end(), v.value,
                             [](uint32_t x, const HeapRun& run) { return x < run.first; });
  if (it == runs.begin()) return HeapId{0};
  return std::prev(it)->heap;
}

std::span<const std::string> HeapGraph::heap_names() const { return rep_->heap_names; }

ObjectIndex HeapGraph::FindObject(uint64_t id) const {
  uint32_t v = rep_->ids.Find(id);
  return v == IdIndex::kAbsent ? kNoObject : ObjectIndex{v};
}

const CsrGraph& HeapGraph::graph() const { return rep_->graph; }

CsrGraph HeapGraph::BuildReverseGraph() const {
  const CsrGraph& g = rep_->graph;
  const uint32_t n = g.node_count();
  CsrGraph rev;
  rev.offsets.assign(static_cast<size_t>(n) + 1, 0);
  for (ObjectIndex t : g.targets) ++rev.offsets[t.value + 1];
  for (uint32_t v = 0; v < n; ++v) rev.offsets[v + 1] += rev.offsets[v];
  rev.targets.resize(g.targets.size());
  bool has_weak = !g.weak.empty();
  if (has_weak) rev.weak.assign(g.targets.size(), false);
  std::vector<uint32_t> cursor(rev.offsets.plain().begin(), rev.offsets.plain().end() - 1);
  for (uint32_t v = 0; v < n; ++v) {
    for (uint64_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e) {
      uint64_t pos = cursor[g.targets[e].value]++;
      rev.targets[pos] = ObjectIndex{v};
      if (has_weak && g.weak[e]) rev.weak[pos] = true;
    }
  }
  return rev;
}

ReferenceSlot HeapGraph::ResolveReference(ObjectIndex from, uint64_t edge) const {
  const Rep& r = *rep_;
  HW_CHECK(from.value < r.ids.size());
  uint64_t first = r.graph.offsets[from.value];
  HW_CHECK(edge >= first && edge < r.graph.offsets[from.value + 1]);
  uint64_t k = edge - first;
  uint64_t start = r.SlotStart(from.value);
  uint64_t count = r.SlotCount(from.value);
  // Select the k-th set bit in [start, start + count).
  uint64_t slot = count;
  for (uint64_t pos = start; pos < start + count;) {
    uint64_t word = r.slot_bits[pos >> 6] >> (pos & 63);
    uint64_t width = std::min<uint64_t>(64 - (pos & 63), start + count - pos);
    if (width < 64) word &= (1ull << width) - 1;
    uint64_t ones = std::popcount(word);
    if (k < ones) {
      for (uint64_t i = 0; i < k; ++i) word &= word - 1;
      slot = pos + std::countr_zero(word) - start;
      break;
    }
    k -= ones;
    pos += width;
  }
  HW_CHECK(slot < count);
  if (r.info.instance_class_edges) {
    if (slot == 0) return {ReferenceSlot::Kind::kClassObject, kNoClass, 0, 0};
    --slot;
  }
  uint32_t cw = r.class_words[from.value];
  if (cw & kClassObjectBit) return r.slots[cw & ~kClassObjectBit].class_object_slots[slot];
  if (r.classes[cw].instance_kind == ObjectKind::kObjectArray) {
    return {ReferenceSlot::Kind::kArrayElement, kNoClass, 0, slot};
  }
  if (r.slots[cw].unnamed) return {ReferenceSlot::Kind::kUnnamed, kNoClass, 0, slot};
  return r.slots[cw].instance_slots[slot];
}

std::string HeapGraph::DescribeSlot(ObjectIndex from, const ReferenceSlot& slot) const {
  const Rep& r = *rep_;
  switch (slot.kind) {
    case ReferenceSlot::Kind::kField: {
      const ClassInfo& decl = r.classes[slot.declaring_class.value];
      const std::string& name = decl.instance_fields[slot.field].name;
      if (class_of(from) == slot.declaring_class) return name;
      return absl::StrCat(decl.name, ".", name);
    }
    case ReferenceSlot::Kind::kStaticField:
      return absl::StrCat("static ",
                          r.classes[slot.declaring_class.value].static_fields[slot.field].name);
    case ReferenceSlot::Kind::kArrayElement:
      return absl::StrCat("[", slot.array_index, "]");
    case ReferenceSlot::Kind::kClassObject:
      return "<class>";
    case ReferenceSlot::Kind::kSuperClass:
      return "<super>";
    case ReferenceSlot::Kind::kClassLoader:
      return "<classloader>";
    case ReferenceSlot::Kind::kSigners:
      return "<signers>";
    case ReferenceSlot::Kind::kProtectionDomain:
      return "<protection domain>";
    case ReferenceSlot::Kind::kConstantPool:
      return absl::StrCat("<constant pool[", slot.field, "]>");
    case ReferenceSlot::Kind::kUnnamed:
      return absl::StrCat("<reference[", slot.array_index, "]>");
  }
  return "?";
}

std::string HeapGraph::DescribeReference(ObjectIndex from, uint64_t edge) const {
  return DescribeSlot(from, ResolveReference(from, edge));
}

uint32_t HeapGraph::class_count() const { return static_cast<uint32_t>(rep_->classes.size()); }
const ClassInfo& HeapGraph::class_info(ClassId c) const { return rep_->classes[c.value]; }

std::vector<ClassId> HeapGraph::FindClasses(std::string_view name) const {
  const Rep& r = *rep_;
  auto lo =
      std::lower_bound(r.classes_by_name.begin(), r.classes_by_name.end(), name,
                       [&r](uint32_t c, std::string_view n) { return r.classes[c].name < n; });
  std::vector<ClassId> out;
  for (auto it = lo; it != r.classes_by_name.end() && r.classes[*it].name == name; ++it)
    out.push_back(ClassId{*it});
  return out;
}

ClassId HeapGraph::FindClass(std::string_view name) const {
  std::vector<ClassId> all = FindClasses(name);
  return all.empty() ? kNoClass : all.front();
}

bool HeapGraph::IsSubclassOf(ClassId c, ClassId ancestor) const {
  size_t steps = 0;
  for (ClassId k = c; k.valid() && steps <= rep_->classes.size();
       k = rep_->classes[k.value].super_class, ++steps) {
    if (k == ancestor) return true;
  }
  return false;
}

std::span<const GcRoot> HeapGraph::gc_roots() const { return rep_->roots; }
std::span<const ObjectIndex> HeapGraph::root_objects() const { return rep_->root_objects; }

uint64_t HeapGraph::MemoryUsage() const {
  const Rep& r = *rep_;
  // Used sizes: capacity reserved but never written (the reader reserves an upper bound for the
  // edges) is address space, not memory.
  auto bytes = [](const auto& v) -> uint64_t { return v.size() * sizeof(v[0]); };
  uint64_t total = sizeof(Rep);
  total += r.ids.MemoryUsage() + r.class_words.MemoryUsage() + bytes(r.array_bits) +
           bytes(r.array_rank) + bytes(r.array_lengths) + r.graph.offsets.MemoryUsage() +
           bytes(r.graph.targets) + r.graph.weak.size() / 8 + bytes(r.slot_bits) +
           bytes(r.slot_samples) + bytes(r.roots) + bytes(r.root_objects) + bytes(r.heap_runs) +
           bytes(r.classes_by_name) + bytes(r.size_override_objects) +
           bytes(r.size_override_bytes);
  for (const ClassInfo& c : r.classes) {
    total += sizeof(ClassInfo) + c.name.capacity();
    for (const FieldInfo& f : c.instance_fields) total += sizeof(FieldInfo) + f.name.capacity();
    for (const FieldInfo& f : c.static_fields) total += sizeof(FieldInfo) + f.name.capacity();
  }
  for (const ClassSlots& s : r.slots) {
    total += sizeof(ClassSlots) + bytes(s.instance_slots) + bytes(s.class_object_slots);
  }
  return total;
}

// ---------------------------------------------------------------------------------------------------------
// Histograms.

std::vector<ClassTotals> ComputeClassTotals(const HeapGraph& graph) {
  std::vector<ClassTotals> totals(graph.class_count());
  for (uint32_t v = 0; v < graph.object_count(); ++v) {
    ObjectIndex o{v};
    ClassId c = graph.class_of(o);
    if (!c.valid()) continue;
    totals[c.value].instances += 1;
    totals[c.value].shallow_bytes += graph.shallow_size(o);
  }
  return totals;
}

ClassHistogram ComputeClassHistogram(const HeapGraph& graph) {
  std::vector<ClassTotals> totals = ComputeClassTotals(graph);
  ClassHistogram h;
  for (uint32_t c = 0; c < totals.size(); ++c) {
    if (totals[c].instances == 0) continue;
    h.rows.push_back(
        {graph.class_info(ClassId{c}).name, "", totals[c].instances, totals[c].shallow_bytes});
    h.total_instances += totals[c].instances;
    h.total_bytes += totals[c].shallow_bytes;
  }
  std::sort(h.rows.begin(), h.rows.end(),
            [](const ClassHistogramRow& a, const ClassHistogramRow& b) {
              return std::tie(b.bytes, a.class_name) < std::tie(a.bytes, b.class_name);
            });
  return h;
}

// ---------------------------------------------------------------------------------------------------------
// HeapGraphBuilder.

struct HeapGraphBuilder::Pending {
  DumpInfo info;
  HeapGraphOptions options;
  struct Class {
    ClassInfo info;
    uint64_t object_id = 0;
    uint64_t loader_id = 0;
    std::vector<uint64_t> statics;
  };
  std::vector<Class> classes;
  struct Object {
    uint64_t id;
    ClassId cls;
    uint32_t length;
    std::vector<uint64_t> refs;
  };
  std::vector<Object> objects;
  struct Root {
    uint64_t id;
    GcRootKind kind;
    uint32_t thread_serial;
    int32_t frame;
  };
  std::vector<Root> roots;
  std::vector<std::pair<uint64_t, uint64_t>> sizes;  // SetShallowSize: (id, bytes)
  std::string error;
};

HeapGraphBuilder::HeapGraphBuilder(DumpInfo info, HeapGraphOptions options)
    : pending_(std::make_unique<Pending>()) {
  pending_->info = std::move(info);
  pending_->options = options;
  pending_->info.instance_class_edges = options.instance_class_edges;
  if (pending_->info.size_model == SizeModel::kAuto)
    pending_->info.size_model = SizeModel::kHotSpot;
}
HeapGraphBuilder::~HeapGraphBuilder() = default;
DumpInfo& HeapGraphBuilder::info() { return pending_->info; }

ClassId HeapGraphBuilder::AddClass(ClassInfo info, uint64_t class_object_id,
                                   uint64_t class_loader_id) {
  ClassId id{static_cast<uint32_t>(pending_->classes.size())};
  if (info.super_class.valid() && info.super_class.value >= id.value && pending_->error.empty()) {
    pending_->error = absl::StrFormat("class %s: superclass must be added first", info.name);
  }
  info.class_object = kNoObject;
  info.class_loader = kNoObject;
  info.class_object_id = class_object_id;
  pending_->classes.push_back({std::move(info), class_object_id, class_loader_id, {}});
  return id;
}

void HeapGraphBuilder::AddInstance(uint64_t id, ClassId cls,
                                   std::vector<uint64_t> reference_values) {
  pending_->objects.push_back({id, cls, 0, std::move(reference_values)});
}

void HeapGraphBuilder::AddObjectArray(uint64_t id, ClassId array_class,
                                      std::vector<uint64_t> elements) {
  uint32_t len = static_cast<uint32_t>(elements.size());
  pending_->objects.push_back({id, array_class, len, std::move(elements)});
}

void HeapGraphBuilder::AddPrimitiveArray(uint64_t id, ClassId array_class, uint32_t length) {
  pending_->objects.push_back({id, array_class, length, {}});
}

void HeapGraphBuilder::SetStaticReferences(ClassId cls, std::vector<uint64_t> values) {
  if (cls.value >= pending_->classes.size()) {
    if (pending_->error.empty()) pending_->error = "SetStaticReferences: unknown class";
    return;
  }
  pending_->classes[cls.value].statics = std::move(values);
}

void HeapGraphBuilder::SetShallowSize(uint64_t id, uint64_t bytes) {
  pending_->sizes.push_back({id, bytes});
}

void HeapGraphBuilder::AddRoot(uint64_t id, GcRootKind kind, uint32_t thread_serial,
                               int32_t frame) {
  pending_->roots.push_back({id, kind, thread_serial, frame});
}

StatusOr<HeapGraph> HeapGraphBuilder::Build() && {
  Pending& p = *pending_;
  if (!p.error.empty()) return absl::InvalidArgumentError(p.error);
  auto rep = std::make_unique<HeapGraph::Rep>();
  HeapGraph::Rep& r = *rep;
  r.info = p.info;
  for (auto& c : p.classes) r.classes.push_back(c.info);
  HW_RETURN_IF_ERROR(BuildClassSlots(r, {}));
  for (uint32_t c = 0; c < r.classes.size(); ++c) {
    if (r.classes[c].name == "java.lang.Class") {
      r.java_lang_class = ClassId{c};
      break;
    }
  }

  // Objects: class objects and added objects, sorted by id.
  struct Entry {
    uint64_t id;
    uint32_t
        source;  // < classes.size(): class object of that class; else objects[source - classes]
  };
  std::vector<Entry> entries;
  const uint32_t nc = static_cast<uint32_t>(p.classes.size());
  for (uint32_t c = 0; c < nc; ++c) {
    if (p.classes[c].object_id != 0) entries.push_back({p.classes[c].object_id, c});
  }
  for (uint32_t i = 0; i < p.objects.size(); ++i) {
    const auto& o = p.objects[i];
    if (o.cls.value >= nc)
      return absl::InvalidArgumentError(absl::StrFormat("object 0x%x: unknown class", o.id));
    const ClassInfo& ci = r.classes[o.cls.value];
    size_t expected = ci.instance_kind == ObjectKind::kInstance && !ci.unnamed_references
                          ? r.slots[o.cls.value].instance_slots.size()
                          : o.refs.size();
    if (o.refs.size() != expected) {
      return absl::InvalidArgumentError(
          absl::StrFormat("object 0x%x of %s: %d reference values, class has %d", o.id, ci.name,
                          o.refs.size(), expected));
    }
    if (o.id == 0) return absl::InvalidArgumentError("object id 0 is the null reference");
    entries.push_back({o.id, nc + i});
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.id < b.id; });
  for (size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].id == entries[i - 1].id) {
      return absl::InvalidArgumentError(
          absl::StrFormat("object id 0x%x added twice", entries[i].id));
    }
  }
  const uint32_t n = static_cast<uint32_t>(entries.size());
  {
    std::vector<uint64_t> sorted;
    sorted.reserve(n);
    for (const Entry& e : entries) sorted.push_back(e.id);
    r.ids.BuildSorted(sorted);
  }
  r.class_words.Reset(n);
  r.array_bits.assign((n + 63) / 64, 0);
  for (uint32_t v = 0; v < n; ++v) {
    const Entry& e = entries[v];
    if (e.source < nc) {
      r.class_words.Set(v, kClassObjectBit | e.source);
    } else {
      const auto& o = p.objects[e.source - nc];
      r.class_words.Set(v, o.cls.value);
      if (r.classes[o.cls.value].instance_kind != ObjectKind::kInstance) {
        r.array_bits[v >> 6] |= 1ull << (v & 63);
        r.array_lengths.push_back(o.length);
      } else if (r.slots[o.cls.value].unnamed) {
        r.array_bits[v >> 6] |= 1ull << (v & 63);
        r.array_lengths.push_back(static_cast<uint32_t>(o.refs.size()));
      }
    }
  }
  r.BuildArrayRank();
  r.BuildSlotSamples();
  auto find = [&r](uint64_t id) -> ObjectIndex {
    if (id == 0) return kNoObject;
    uint32_t v = r.ids.Find(id);
    return v == IdIndex::kAbsent ? kNoObject : ObjectIndex{v};
  };
  for (uint32_t c = 0; c < nc; ++c) {
    r.classes[c].class_object = find(p.classes[c].object_id);
    r.classes[c].class_loader = find(p.classes[c].loader_id);
  }

  // Edges, slot by slot.
  uint64_t total_slots = n == 0 ? 0 : r.SlotStart(n - 1) + r.SlotCount(n - 1);
  r.slot_bits.assign((total_slots + 63) / 64, 0);
  r.graph.offsets.assign(static_cast<size_t>(n) + 1, 0);
  std::vector<bool> weak;
  bool any_weak = false;
  uint64_t slot = 0;
  auto emit = [&](uint64_t id, bool is_weak) {
    ObjectIndex t = find(id);
    if (id != 0 && !t.valid()) ++r.info.dangling_references;
    HW_CHECK((slot >> 6) < r.slot_bits.size());
    if (t.valid()) {
      r.graph.targets.push_back(t);
      weak.push_back(is_weak);
      any_weak |= is_weak;
      r.slot_bits[slot >> 6] |= 1ull << (slot & 63);
    }
    ++slot;
  };
  for (uint32_t v = 0; v < n; ++v) {
    const Entry& e = entries[v];
    uint32_t cls = e.source < nc ? e.source : p.objects[e.source - nc].cls.value;
    if (r.info.instance_class_edges) {
      if (e.source < nc) {
        emit(r.java_lang_class.valid() ? p.classes[r.java_lang_class.value].object_id : 0, false);
      } else {
        emit(p.classes[cls].object_id, false);
      }
    }
    if (e.source < nc) {
      const auto& pc = p.classes[cls];
      uint64_t super_id = r.classes[cls].super_class.valid()
                              ? p.classes[r.classes[cls].super_class.value].object_id
                              : 0;
      size_t si = 0;
      for (const ReferenceSlot& s : r.slots[cls].class_object_slots) {
        switch (s.kind) {
          case ReferenceSlot::Kind::kSuperClass:
            emit(super_id, false);
            break;
          case ReferenceSlot::Kind::kClassLoader:
            emit(pc.loader_id, false);
            break;
          case ReferenceSlot::Kind::kStaticField:
            emit(si < pc.statics.size() ? pc.statics[si] : 0, false);
            ++si;
            break;
          default:
            emit(0, false);
        }
      }
    } else {
      const auto& o = p.objects[e.source - nc];
      int32_t weak_slot = r.slots[cls].weak_slot;
      for (size_t i = 0; i < o.refs.size(); ++i)
        emit(o.refs[i], static_cast<int32_t>(i) == weak_slot);
    }
    if (r.graph.targets.size() > kMaxCsrEdges) {
      return absl::ResourceExhaustedError("HeapGraphBuilder: more than 2^32 - 1 references");
    }
    r.graph.offsets[v + 1] = static_cast<uint32_t>(r.graph.targets.size());
  }
  if (any_weak) r.graph.weak = std::move(weak);
  {
    std::vector<std::pair<uint32_t, uint64_t>> sizes;
    for (const auto& [id, bytes] : p.sizes) {
      const ObjectIndex v = find(id);
      if (v.valid()) sizes.push_back({v.value, bytes});
    }
    HW_RETURN_IF_ERROR(SetSizeOverrides(r, std::move(sizes)));
  }
  for (const auto& root : p.roots) {
    ObjectIndex o = find(root.id);
    if (!o.valid()) {
      ++r.info.unresolved_roots;
      continue;
    }
    r.roots.push_back({o, root.kind, root.thread_serial, root.frame});
  }
  r.Finish();
  return HeapGraph::FromRep(std::move(rep));
}

}  // namespace heapwatch::analysis
