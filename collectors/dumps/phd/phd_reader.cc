#include "collectors/dumps/phd/phd_reader.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/heap_graph_builder.h"
#include "analysis/id_chunks.h"
#include "analysis/root_inference.h"
#include "collectors/dumps/byte_source.h"
#include "collectors/dumps/class_names.h"
#include "collectors/dumps/phd/phd_format.h"
#include "collectors/dumps/stream_reader.h"

namespace heapwatch::dumps::phd {
namespace {

using analysis::BulkHeapGraphBuilder;
using analysis::ClassId;
using analysis::ClassInfo;
using analysis::ClassObjectRefs;
using analysis::DumpInfo;
using analysis::FieldType;
using analysis::HeapGraph;
using analysis::kNoClass;
using analysis::ObjectIndex;
using analysis::ObjectKind;
using analysis::ObjectOrder;

constexpr uint64_t kMaxObjects = BulkHeapGraphBuilder::kMaxObjects;
// Array header sizes (bytes, length field included) tried for version 6 dumps, whose arrays carry
// the VM's size: the one that reproduces the most recorded sizes becomes the layout.
constexpr uint32_t kHeaderCandidates[] = {8, 12, 16, 20, 24, 32};
// Object arrays list only their non-null elements, so their null slots come from the length
// alone. The graph gives them slots while these stay within this many per byte of the file (plus
// kFreeNullSlots): beyond, an array keeps only its listed elements (a warning says how many
// arrays), so that a corrupt length cannot make the reader allocate or loop without bound.
constexpr uint64_t kNullSlotsPerFileByte = 64;
constexpr uint64_t kFreeNullSlots = 16 << 20;

// Sizes rounded up to 8 bytes, as MAT rounds every object (DTFJIndexBuilder.getObjectSize).
uint64_t Align8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

struct ClassRecord {
  uint64_t address = 0;
  int32_t instance_size = 0;
  uint64_t super_address = 0;
  std::string raw_name;  // as written
  ClassName name;        // source form, kind, element type
  std::vector<uint64_t> references;
  ClassId id;
};

class PhdReader {
 public:
  PhdReader(ByteSource* source, const ReadOptions& options)
      : source_(source), options_(options), in_(source, StreamReader::WindowFor(*source)) {}

  StatusOr<HeapGraph> Read() {
    if (options_.dump_ordinal != -1 && options_.dump_ordinal != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("a Portable Heap Dump holds one heap dump: --dump %d does not exist",
                          options_.dump_ordinal));
    }
    if (options_.size_model != analysis::SizeModel::kAuto &&
        options_.size_model != analysis::SizeModel::kIbm) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "size model \"%s\" does not apply to a Portable Heap Dump (use auto or ibm)",
          analysis::SizeModelName(options_.size_model)));
    }
    HW_RETURN_IF_ERROR(ScanFirstPass());
    HW_RETURN_IF_ERROR(AddClasses());
    HW_RETURN_IF_ERROR(
        builder_->IndexObjects(std::move(object_ids_), ascending_, std::move(class_ids_)));
    if (builder_->info().duplicate_objects > 0) {
      builder_->Warn(absl::StrFormat(
          "%d records repeat the address of an earlier object record (the first one is used)",
          builder_->info().duplicate_objects));
    }
    analysis::ObjectLimits limits;
    limits.max_reference_slots = references_ + null_slot_budget_ +
                                 (options_.instance_class_edges ? builder_->object_count() : 0);
    if (ascending_ && builder_->info().duplicate_objects == 0) {
      limits.expected_object_references = references_;
      builder_->BeginObjects(ObjectOrder::kIndexOrder, limits);
      HW_RETURN_IF_ERROR(ObjectPass(/*two_rounds=*/false, /*round=*/2));
    } else {
      builder_->BeginObjects(ObjectOrder::kTwoRounds, limits);
      HW_RETURN_IF_ERROR(ObjectPass(true, 1));
      HW_RETURN_IF_ERROR(builder_->EndFirstRound());
      HW_RETURN_IF_ERROR(ObjectPass(true, 2));
    }
    HW_RETURN_IF_ERROR(builder_->FinishObjects());
    Finishing();
    HW_ASSIGN_OR_RETURN(HeapGraph graph, std::move(*builder_).Build());
    return analysis::AddInferredRoots(std::move(graph));
  }

 private:
  void Progress() {
    ++passes_done_;
    if (options_.progress) {
      const uint64_t passes = ascending_ ? 2 : 3;
      options_.progress(std::min(passes_done_, passes) * source_->total(),
                        passes * source_->total());
    }
  }

  // Pass 1: the class records, the object ids, the spacing of instances of classes without a
  // record, the evidence for the array layout.
  Status ScanFirstPass() {
    HW_ASSIGN_OR_RETURN(PhdScanner scanner, PhdScanner::Open(&in_));
    header_ = scanner.header();
    PhdRecord r;
    uint64_t prev_address = 0, prev_instance_class = 0;
    bool prev_is_instance = false;
    uint64_t last_object = 0;
    bool any_object = false;
    std::vector<uint64_t> object_addresses_to_check;  // for "an object at a class's address"
    for (;;) {
      HW_ASSIGN_OR_RETURN(bool more, scanner.Next(&r));
      if (!more) break;
      if (prev_is_instance && r.address > prev_address && r.address - prev_address < 0x10000) {
        auto [it, inserted] = min_gap_.try_emplace(prev_instance_class, r.address - prev_address);
        if (!inserted) it->second = std::min(it->second, r.address - prev_address);
      }
      prev_address = r.address;
      prev_is_instance = r.kind == PhdRecord::Kind::kObject;
      prev_instance_class = r.class_address;
      if (r.kind == PhdRecord::Kind::kClass) {
        if (r.address == 0 || by_address_.contains(r.address)) {
          ++repeated_classes_;  // a class record without an address, or a repeat: not used
          continue;
        }
        ClassRecord c;
        c.address = r.address;
        c.instance_size = r.instance_size;
        c.super_address = r.super_address;
        c.raw_name = r.class_name;
        c.name = ParseClassName(r.class_name);
        c.references = r.references;
        references_ += c.references.size() + 4;  // + super, loader, signers, protection domain
        by_address_.emplace(r.address, static_cast<uint32_t>(classes_.size()));
        classes_.push_back(std::move(c));
        if (classes_.size() >= BulkHeapGraphBuilder::kMaxClasses) {
          return absl::ResourceExhaustedError("Portable Heap Dump with 2^31 classes or more");
        }
        continue;
      }
      if (r.address == 0) {
        ++zero_addresses_;
        continue;
      }
      if (++records_ + classes_.size() >= kMaxObjects) {
        return absl::ResourceExhaustedError(
            "Portable Heap Dump with 2^32 - 2 objects or more: more than a HeapGraph holds");
      }
      object_addresses_to_check.push_back(r.address);
      references_ += r.references.size();
      if (any_object && r.address <= last_object) ascending_ = false;
      any_object = true;
      last_object = r.address;
      switch (r.kind) {
        case PhdRecord::Kind::kObject:
          instance_classes_.insert(r.class_address);
          break;
        case PhdRecord::Kind::kObjectArray:
          array_classes_.try_emplace(r.class_address, kNoClass);
          break;
        case PhdRecord::Kind::kPrimitiveArray:
          primitive_used_[r.primitive_type & 7] = true;
          if (r.recorded_size >= 0) {
            // Which header reproduces this size? (Object arrays need the reference size, which the
            // class records decide: primitive arrays alone vote.)
            ++recorded_arrays_;
            const uint64_t data = r.length * PhdPrimitiveSize(r.primitive_type);
            for (size_t i = 0; i < std::size(kHeaderCandidates); ++i) {
              if (Align8(kHeaderCandidates[i] + data) ==
                  Align8(static_cast<uint64_t>(r.recorded_size))) {
                ++header_votes_[i];
              }
            }
          }
          break;
        case PhdRecord::Kind::kClass:
          break;
      }
    }
    HW_ASSIGN_OR_RETURN(bool at_end, in_.AtEnd());
    trailing_ = !at_end;
    // Objects at a class record's address are dropped (the class object wins); the rest are the
    // builder's objects.
    for (uint64_t a : object_addresses_to_check) {
      if (by_address_.contains(a)) {
        ++shadowed_;
      } else {
        object_ids_.push_back(a);
      }
    }
    for (const ClassRecord& c : classes_) class_ids_.push_back(c.address);
    null_slot_budget_ = kFreeNullSlots + kNullSlotsPerFileByte * in_.offset();
    Progress();
    return absl::OkStatus();
  }

  // Stage 1: the dump's facts, every class (records, then synthetic ones for what the objects
  // name), FinishClasses().
  Status AddClasses() {
    int64_t min_instance = std::numeric_limits<int64_t>::max();
    for (const ClassRecord& c : classes_) {
      if (c.name.kind == ObjectKind::kInstance) {
        min_instance = std::min<int64_t>(min_instance, c.instance_size);
      }
    }
    // DTFJ (PHDJavaRuntime.pointerSize): compressed references unless the smallest instance is
    // 0 bytes (Java 1.4.2) or bigger than 16 bytes.
    pointer_size_ = header_.is_64bit && (min_instance == 0 || min_instance > 16) ? 8 : 4;
    // Java 1.4.2 dumps give instance sizes without the 3-word object header (PHDJavaClass).
    header_extra_ = min_instance == 0 ? (header_.is_64bit ? 24 : 12) : 0;
    uint32_t array_header = 2 * pointer_size_ + 8;  // DTFJ's PHDJavaClass.getArraySize
    bool inferred = false;
    uint64_t best_votes = 0;
    for (size_t i = 0; i < std::size(kHeaderCandidates); ++i) {
      if (header_votes_[i] > best_votes) {
        best_votes = header_votes_[i];
        array_header = kHeaderCandidates[i];
        inferred = true;
      }
    }
    DumpInfo info;
    info.format = absl::StrFormat("portable heap dump %d", header_.version);
    info.id_size = header_.is_64bit ? 8 : 4;
    info.dump_count = 1;
    info.size_model = analysis::SizeModel::kIbm;
    analysis::ObjectLayout& l = info.layout;
    l.reference_size = pointer_size_;
    l.object_header = 2 * pointer_size_;
    l.array_length_offset = array_header - 4;
    l.word_size = header_.is_64bit ? 8 : 4;
    l.alignment = 8;
    l.unaligned_array_base = true;
    l.inferred = inferred;
    info.size_model_notes = absl::StrFormat(
        "IBM PHD sizes (MAT through DTFJ): instances from the class records%s rounded up to 8 "
        "bytes; arrays %s; %d-byte references (%s). JVM: %s",
        header_extra_ ? " plus a 3-word header (instance sizes start at 0: Java 1.4.2)" : "",
        inferred ? absl::StrFormat("as the version 6 records give them (a %d-byte header "
                                   "reproduces %d of %d primitive arrays)",
                                   array_header, best_votes, recorded_arrays_)
                 : absl::StrFormat("%d-byte header + length x element size", array_header),
        pointer_size_,
        header_.is_64bit
            ? (pointer_size_ == 4 ? "64-bit VM with compressed references" : "64-bit VM")
            : "32-bit VM",
        header_.full_version.empty() ? "unknown" : header_.full_version);
    builder_ = std::make_unique<BulkHeapGraphBuilder>(
        std::move(info),
        analysis::HeapGraphOptions{.instance_class_edges = options_.instance_class_edges});
    if (trailing_) builder_->Warn("bytes after the END_OF_DUMP record were ignored");
    if (repeated_classes_ > 0) {
      builder_->Warn(absl::StrFormat(
          "%d class records repeat an address or have address 0 (not used)", repeated_classes_));
    }
    if (zero_addresses_ > 0) {
      builder_->Warn(absl::StrFormat("%d records at address 0 were dropped", zero_addresses_));
    }
    if (shadowed_ > 0) {
      builder_->Warn(absl::StrFormat(
          "%d object records at a class record's address were dropped (the class object is kept)",
          shadowed_));
    }

    // The class records. A superclass chain that loops (a corrupt dump) is cut where it closes.
    const size_t nc = classes_.size();
    std::vector<int64_t> super(nc, -1);
    for (size_t i = 0; i < nc; ++i) {
      auto it = by_address_.find(classes_[i].super_address);
      if (classes_[i].super_address != 0 && it != by_address_.end()) super[i] = it->second;
    }
    std::vector<uint8_t> state(nc, 0);  // 0 not seen, 1 on the current walk, 2 done
    std::vector<uint32_t> chain;
    for (size_t i = 0; i < nc; ++i) {
      chain.clear();
      int64_t c = static_cast<int64_t>(i);
      while (c >= 0 && state[c] == 0) {
        state[c] = 1;
        chain.push_back(static_cast<uint32_t>(c));
        c = super[c];
      }
      if (c >= 0 && state[c] == 1) {
        builder_->Warn(
            absl::StrFormat("class 0x%x: superclass chain loops; the link to 0x%x is dropped",
                            classes_[chain.back()].address, classes_[c].address));
        super[chain.back()] = -1;
      }
      for (uint32_t x : chain) state[x] = 2;
    }
    for (size_t i = 0; i < nc; ++i) {
      ClassRecord& c = classes_[i];
      ClassInfo ci = NewClass(c.name.source_name, c.name.kind, c.name.element);
      ci.synthetic = false;
      ci.class_object_id = c.address;
      ci.declared_instance_size = static_cast<uint32_t>(std::max(0, c.instance_size));
      // A class record's references (J9: the class loader, the class object's fields, the
      // statics, the constant pool's classes, the superclasses and interfaces) carry no names:
      // they become the class object's unnamed static slots "static <reference[i]>".
      ClassObjectRefs refs;
      refs.super_id = c.super_address;
      refs.static_refs = c.references;  // kept until the array classes are resolved
      for (size_t k = 0; k < refs.static_refs.size(); ++k) {
        ci.static_fields.push_back({absl::StrCat("<reference[", k, "]>"), FieldType::kObject});
      }
      c.id = builder_->AddClass(std::move(ci), std::move(refs));
      if (c.raw_name == "java/lang/Object") object_class_ = c.id;
      if (c.raw_name == "java/lang/Class") class_object_size_ = InstanceSize(c.instance_size);
    }
    for (size_t i = 0; i < nc; ++i) {
      if (super[i] >= 0)
        builder_->mutable_class(classes_[i].id).super_class = classes_[super[i]].id;
    }

    // Synthetic classes: instances of a class without a record, array classes, primitive arrays.
    for (uint64_t a : instance_classes_) {
      auto it = by_address_.find(a);
      if (it != by_address_.end() && classes_[it->second].name.kind == ObjectKind::kInstance) {
        continue;
      }
      auto gap = min_gap_.find(a);
      const uint32_t size = gap == min_gap_.end() ? 0 : static_cast<uint32_t>(Align8(gap->second));
      ClassInfo ci = NewClass(absl::StrFormat("unknown class 0x%x", a), ObjectKind::kInstance,
                              FieldType::kObject);
      unknown_sizes_.push_back({builder_->AddClass(std::move(ci)), size});
      unknown_classes_.emplace(a, unknown_sizes_.back().first);
      builder_->Warn(absl::StrFormat(
          "objects of class 0x%x, which has no class record (size estimated: %d bytes)", a, size));
    }
    // J9 names the element class in object array records; some Java 6 dumps name the array class
    // (DTFJ: "arrayTypeIsArray" when every object array names an array class).
    bool array_type_is_array = true;
    for (const auto& [a, unused] : array_classes_) {
      auto it = by_address_.find(a);
      if (it != by_address_.end() && classes_[it->second].name.kind == ObjectKind::kInstance) {
        array_type_is_array = false;
      }
    }
    absl::flat_hash_map<std::string, ClassId> synthetic_arrays;
    for (auto& [a, cls] : array_classes_)
      cls = ArrayClassOf(a, array_type_is_array, synthetic_arrays);
    for (uint32_t t = 0; t < 8; ++t) {
      if (!primitive_used_[t]) continue;
      const std::string_view descriptor = PhdPrimitiveDescriptor(t);
      for (const ClassRecord& c : classes_) {
        if (c.raw_name == descriptor && c.name.kind == ObjectKind::kPrimitiveArray) {
          primitive_classes_[t] = c.id;
          break;
        }
      }
      if (!primitive_classes_[t].valid()) {
        ClassName name = ParseClassName(descriptor);
        primitive_classes_[t] = builder_->AddClass(
            NewClass(name.source_name, ObjectKind::kPrimitiveArray, name.element));
      }
    }
    for (ClassRecord& c : classes_) std::vector<uint64_t>().swap(c.references);
    return builder_->FinishClasses();
  }

  ClassInfo NewClass(std::string name, ObjectKind kind, FieldType element) const {
    ClassInfo ci;
    ci.name = std::move(name);
    ci.instance_kind = kind;
    ci.element_type = element;
    ci.super_class = kind == ObjectKind::kInstance ? kNoClass : object_class_;
    ci.synthetic = true;
    ci.unnamed_references = kind == ObjectKind::kInstance;
    return ci;
  }

  ClassId ArrayClassOf(uint64_t class_address, bool array_type_is_array,
                       absl::flat_hash_map<std::string, ClassId>& synthetic) {
    auto it = by_address_.find(class_address);
    const ClassRecord* named = it == by_address_.end() ? nullptr : &classes_[it->second];
    if (array_type_is_array && named != nullptr && named->name.kind == ObjectKind::kObjectArray) {
      return named->id;
    }
    std::string raw;
    if (named != nullptr) {
      raw = named->raw_name.starts_with("[") ? absl::StrCat("[", named->raw_name)
                                             : absl::StrCat("[L", named->raw_name, ";");
      const ClassRecord* match = nullptr;
      for (const ClassRecord& c : classes_) {  // O(classes), once per element class
        if (c.raw_name != raw || c.name.kind != ObjectKind::kObjectArray) continue;
        if (match == nullptr) match = &c;
        // Several loaders may define the array class: take the one that references the element
        // class (DTFJ's PHDJavaClass.referencesClass).
        if (std::find(c.references.begin(), c.references.end(), class_address) !=
            c.references.end()) {
          match = &c;
          break;
        }
      }
      if (match != nullptr) return match->id;
    }
    const std::string name = named != nullptr
                                 ? ParseClassName(raw).source_name
                                 : absl::StrFormat("unknown class 0x%x[]", class_address);
    auto [cached, inserted] = synthetic.try_emplace(name, kNoClass);
    if (inserted) {
      cached->second =
          builder_->AddClass(NewClass(name, ObjectKind::kObjectArray, FieldType::kObject));
    }
    return cached->second;
  }

  uint32_t InstanceSize(int32_t declared) const {
    const int64_t s = std::max<int64_t>(0, declared) + header_extra_;
    return static_cast<uint32_t>(Align8(static_cast<uint64_t>(s)));
  }

  Status Check(Status s, const PhdRecord& r) {
    if (s.ok()) return s;
    return absl::Status(s.code(),
                        absl::StrFormat("record at offset %d: %s", r.offset, s.message()));
  }

  // An object pass: round 1 or 2 of kTwoRounds, or (round 2) the single pass of kIndexOrder.
  Status ObjectPass(bool two_rounds, int round) {
    HW_RETURN_IF_ERROR(in_.Rewind());
    HW_ASSIGN_OR_RETURN(PhdScanner scanner, PhdScanner::Open(&in_));
    PhdRecord r;
    uint64_t null_slots = 0;
    uint64_t short_arrays = 0;
    std::vector<uint64_t> zeros;
    for (;;) {
      HW_ASSIGN_OR_RETURN(bool more, scanner.Next(&r));
      if (!more) break;
      if (r.kind == PhdRecord::Kind::kClass) {
        auto it = by_address_.find(r.address);
        if (two_rounds && it != by_address_.end() && classes_[it->second].address == r.address &&
            !seen_class_.contains(r.address)) {
          seen_class_.insert(r.address);
          HW_RETURN_IF_ERROR(Check(builder_->AddClassObject(classes_[it->second].id), r));
        }
        continue;
      }
      if (r.address == 0 || by_address_.contains(r.address)) continue;
      switch (r.kind) {
        case PhdRecord::Kind::kObject: {
          auto it = by_address_.find(r.class_address);
          const ClassId cls =
              it != by_address_.end() && classes_[it->second].name.kind == ObjectKind::kInstance
                  ? classes_[it->second].id
                  : unknown_classes_.at(r.class_address);
          HW_RETURN_IF_ERROR(Check(builder_->AddInstance(r.address, cls, r.references), r));
          break;
        }
        case PhdRecord::Kind::kObjectArray: {
          // The null elements are not listed: pad to the length while the budget allows.
          const uint64_t nulls =
              r.length > r.references.size() ? r.length - r.references.size() : 0;
          uint64_t length = r.references.size();
          if (null_slots + nulls <= null_slot_budget_) {
            null_slots += nulls;
            length += nulls;
          } else {
            ++short_arrays;
          }
          HW_RETURN_IF_ERROR(
              Check(builder_->BeginObjectArray(r.address, array_classes_.at(r.class_address),
                                               static_cast<uint32_t>(length)),
                    r));
          HW_RETURN_IF_ERROR(Check(builder_->AddArrayElements(r.references), r));
          for (uint64_t left = length - r.references.size(); left > 0;) {
            const uint64_t step = std::min<uint64_t>(left, 4096);
            zeros.assign(step, 0);
            HW_RETURN_IF_ERROR(Check(builder_->AddArrayElements(zeros), r));
            left -= step;
          }
          HW_RETURN_IF_ERROR(Check(builder_->EndObjectArray(), r));
          if (round == 2 && r.recorded_size < 0 && length != r.length) {
            // Version 4/5 sizes come from the length: give the true one.
            sizes_.push_back(
                {r.address, Align8(2ull * pointer_size_ + 8 + r.length * pointer_size_)});
          }
          break;
        }
        case PhdRecord::Kind::kPrimitiveArray:
          HW_RETURN_IF_ERROR(
              Check(builder_->AddPrimitiveArray(r.address, primitive_classes_[r.primitive_type & 7],
                                                static_cast<uint32_t>(r.length)),
                    r));
          break;
        case PhdRecord::Kind::kClass:
          break;
      }
      if (round == 2 && r.recorded_size >= 0) {
        sizes_.push_back({r.address, Align8(static_cast<uint64_t>(r.recorded_size))});
      }
    }
    if (round == 2 && short_arrays > 0) {
      builder_->Warn(absl::StrFormat(
          "%d object arrays keep only their listed (non-null) elements: their lengths exceed %d "
          "null slots per byte of the file",
          short_arrays, kNullSlotsPerFileByte));
    }
    seen_class_.clear();
    Progress();
    return absl::OkStatus();
  }

  // Stage 4: sizes.
  void Finishing() {
    for (const ClassRecord& c : classes_) {
      const uint32_t size =
          c.name.kind == ObjectKind::kInstance ? InstanceSize(c.instance_size) : 0;
      builder_->SetShallowSizes(c.id, size, class_object_size_);
    }
    for (const auto& [c, size] : unknown_sizes_) builder_->SetShallowSizes(c, size, 0);
    for (const auto& [id, bytes] : sizes_) {
      const ObjectIndex v = builder_->FindObject(id);
      if (v.valid()) builder_->SetObjectShallowSize(v, bytes);
    }
    std::vector<std::pair<uint64_t, uint64_t>>().swap(sizes_);
  }

  ByteSource* source_;
  ReadOptions options_;
  StreamReader in_;
  PhdHeader header_;
  // Pass 1.
  std::vector<ClassRecord> classes_;
  absl::flat_hash_map<uint64_t, uint32_t> by_address_;    // class address -> index in classes_
  absl::flat_hash_map<uint64_t, uint64_t> min_gap_;       // instance class -> smallest distance
  absl::flat_hash_set<uint64_t> instance_classes_;        // class addresses instances name
  absl::flat_hash_map<uint64_t, ClassId> array_classes_;  // object array record's class -> class
  bool primitive_used_[8] = {};
  analysis::IdChunks object_ids_, class_ids_;
  bool ascending_ = true;
  bool trailing_ = false;
  uint64_t records_ = 0, references_ = 0, zero_addresses_ = 0, repeated_classes_ = 0;
  uint64_t shadowed_ = 0;
  uint64_t header_votes_[std::size(kHeaderCandidates)] = {};
  uint64_t recorded_arrays_ = 0;
  uint64_t null_slot_budget_ = 0;
  // Classes.
  std::unique_ptr<BulkHeapGraphBuilder> builder_;
  uint32_t pointer_size_ = 4;
  uint32_t header_extra_ = 0;
  uint32_t class_object_size_ = 0;
  ClassId object_class_;
  absl::flat_hash_map<uint64_t, ClassId> unknown_classes_;
  std::vector<std::pair<ClassId, uint32_t>> unknown_sizes_;
  ClassId primitive_classes_[8];
  // Object passes.
  absl::flat_hash_set<uint64_t> seen_class_;
  std::vector<std::pair<uint64_t, uint64_t>> sizes_;  // (address, bytes) recorded or computed
  uint64_t passes_done_ = 0;
};

StatusOr<HeapGraph> WithPath(std::string_view path, StatusOr<HeapGraph> result) {
  if (result.ok() || path.empty()) return result;
  return absl::Status(result.status().code(),
                      absl::StrCat(std::string(path), ": ", result.status().message()));
}

}  // namespace

bool LooksLikePhd(std::string_view prefix) { return prefix.starts_with(kPhdMagic); }

StatusOr<HeapGraph> ReadPhdGraph(const std::string& path, const ReadOptions& options) {
  auto source = OpenFileSource(path);
  if (!source.ok()) return WithPath(path, source.status());
  PhdReader reader(source->get(), options);
  return WithPath(path, reader.Read());
}

StatusOr<HeapGraph> ReadPhdGraphFromBuffer(std::string_view data, const ReadOptions& options) {
  std::unique_ptr<ByteSource> source = OpenMemorySource(data);
  PhdReader reader(source.get(), options);
  return reader.Read();
}

}  // namespace heapwatch::dumps::phd
