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
#include "analysis/root_inference.h"
#include "collectors/dumps/byte_source.h"
#include "collectors/dumps/class_names.h"
#include "collectors/dumps/phd/phd_format.h"
#include "collectors/dumps/stream_reader.h"

namespace heapwatch::dumps::phd {
namespace {

using analysis::ClassId;
using analysis::ClassInfo;
using analysis::DumpInfo;
using analysis::FieldType;
using analysis::HeapGraph;
using analysis::HeapGraphBuilder;
using analysis::kNoClass;
using analysis::ObjectKind;

constexpr uint64_t kMaxObjects = 0xfffffffeull;
constexpr size_t kMaxWarnings = 40;
// Array header sizes (bytes, length field included) tried for version 6 dumps, whose arrays carry
// the VM's size: the one that reproduces the most recorded sizes becomes the layout.
constexpr uint32_t kHeaderCandidates[] = {8, 12, 16, 20, 24, 32};

struct ClassRecord {
  uint64_t address = 0;
  int32_t instance_size = 0;
  uint64_t super_address = 0;
  std::string raw_name;  // as written
  ClassName name;        // source form, kind, element type
  std::vector<uint64_t> references;
  ClassId id;
  bool listed_set = false;  // pass 2 gave the builder its references
};

// Everything the first pass learns.
struct FirstPass {
  PhdHeader header;
  std::vector<ClassRecord> classes;                  // file order, duplicates dropped
  absl::flat_hash_map<uint64_t, uint32_t> by_address;  // class address -> index in `classes`
  absl::flat_hash_set<uint64_t> duplicates;          // addresses of more than one record
  absl::flat_hash_map<uint64_t, uint64_t> min_gap;   // instance class -> smallest distance to the
                                                     // next record (sizes of classes without one)
  absl::flat_hash_set<uint64_t> object_array_classes;  // class addresses object arrays name
  uint64_t records = 0;                                // object and array records
  uint64_t header_votes[std::size(kHeaderCandidates)] = {};
  uint64_t recorded_arrays = 0;
};

// Sizes rounded up to 8 bytes, as MAT rounds every object (DTFJIndexBuilder.getObjectSize).
uint64_t Align8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

class PhdReader {
 public:
  PhdReader(ByteSource* source, const ReadOptions& options)
      : source_(source), options_(options), in_(source, StreamReader::WindowFor(*source)) {}

  StatusOr<HeapGraph> Read() {
    if (options_.dump_ordinal != -1 && options_.dump_ordinal != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "a Portable Heap Dump holds one heap dump: --dump %d does not exist",
          options_.dump_ordinal));
    }
    if (options_.size_model != analysis::SizeModel::kAuto &&
        options_.size_model != analysis::SizeModel::kIbm) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "size model \"%s\" does not apply to a Portable Heap Dump (use auto or ibm)",
          analysis::SizeModelName(options_.size_model)));
    }
    HW_RETURN_IF_ERROR(ScanClasses());
    Progress();
    HW_RETURN_IF_ERROR(in_.Rewind());
    HW_RETURN_IF_ERROR(BuildObjects());
    Progress();
    HW_ASSIGN_OR_RETURN(HeapGraph graph, std::move(*builder_).Build());
    return analysis::AddInferredRoots(std::move(graph));
  }

 private:
  void Progress() {
    ++passes_done_;
    if (options_.progress) {
      options_.progress(passes_done_ * source_->total(), 2 * source_->total());
    }
  }

  void Warn(std::string line) {
    if (info_.warnings.size() < kMaxWarnings) info_.warnings.push_back(std::move(line));
  }

  // Pass 1: the class records, duplicate addresses, the spacing of instances of classes without a
  // record, the evidence for the array layout.
  Status ScanClasses() {
    HW_ASSIGN_OR_RETURN(PhdScanner scanner, PhdScanner::Open(&in_));
    FirstPass& f = first_;
    f.header = scanner.header();
    std::vector<uint64_t> addresses;
    PhdRecord r;
    uint64_t prev_address = 0;
    uint64_t prev_instance_class = 0;
    bool prev_is_instance = false;
    for (;;) {
      HW_ASSIGN_OR_RETURN(bool more, scanner.Next(&r));
      if (!more) break;
      if (prev_is_instance && r.address > prev_address && r.address - prev_address < 0x10000) {
        auto [it, inserted] = f.min_gap.try_emplace(prev_instance_class, r.address - prev_address);
        if (!inserted) it->second = std::min(it->second, r.address - prev_address);
      }
      prev_address = r.address;
      prev_is_instance = r.kind == PhdRecord::Kind::kObject;
      prev_instance_class = r.class_address;
      if (r.kind == PhdRecord::Kind::kClass) {
        if (f.by_address.contains(r.address)) {
          f.duplicates.insert(r.address);
          continue;
        }
        ClassRecord c;
        c.address = r.address;
        c.instance_size = r.instance_size;
        c.super_address = r.super_address;
        c.raw_name = r.class_name;
        c.name = ParseClassName(r.class_name);
        c.references = r.references;
        f.by_address.emplace(r.address, static_cast<uint32_t>(f.classes.size()));
        f.classes.push_back(std::move(c));
        addresses.push_back(r.address);
        continue;
      }
      ++f.records;
      if (f.records + f.classes.size() >= kMaxObjects) {
        return absl::ResourceExhaustedError(
            "Portable Heap Dump with 2^32 - 2 objects or more: more than a HeapGraph holds");
      }
      addresses.push_back(r.address);
      if (r.kind == PhdRecord::Kind::kObjectArray) f.object_array_classes.insert(r.class_address);
      if (r.recorded_size >= 0 && r.kind == PhdRecord::Kind::kPrimitiveArray) {
        // Which header reproduces this size? (Object arrays need the reference size, which the
        // class records decide: primitive arrays alone vote.)
        ++f.recorded_arrays;
        const uint64_t data = r.length * PhdPrimitiveSize(r.primitive_type);
        for (size_t i = 0; i < std::size(kHeaderCandidates); ++i) {
          if (Align8(kHeaderCandidates[i] + data) ==
              Align8(static_cast<uint64_t>(r.recorded_size))) {
            ++f.header_votes[i];
          }
        }
      }
    }
    HW_ASSIGN_OR_RETURN(bool at_end, in_.AtEnd());
    trailing_ = !at_end;
    std::sort(addresses.begin(), addresses.end());
    for (size_t i = 1; i < addresses.size(); ++i) {
      if (addresses[i] == addresses[i - 1]) f.duplicates.insert(addresses[i]);
    }
    return absl::OkStatus();
  }

  // The layout and the class table (supers before subclasses), then the builder.
  Status StartGraph() {
    const FirstPass& f = first_;
    const PhdHeader& h = f.header;
    int64_t min_instance = std::numeric_limits<int64_t>::max();
    for (const ClassRecord& c : f.classes) {
      if (c.name.kind == ObjectKind::kInstance) min_instance = std::min<int64_t>(min_instance, c.instance_size);
    }
    // DTFJ (PHDJavaRuntime.pointerSize): compressed references unless the smallest instance is
    // 0 bytes (Java 1.4.2) or bigger than 16 bytes.
    pointer_size_ = h.is_64bit && (min_instance == 0 || min_instance > 16) ? 8 : 4;
    // Java 1.4.2 dumps give instance sizes without the 3-word object header (PHDJavaClass).
    header_extra_ = min_instance == 0 ? (h.is_64bit ? 24 : 12) : 0;
    uint32_t array_header = 2 * pointer_size_ + 8;  // DTFJ's PHDJavaClass.getArraySize
    bool inferred = false;
    uint64_t best_votes = 0;
    for (size_t i = 0; i < std::size(kHeaderCandidates); ++i) {
      if (f.header_votes[i] > best_votes) {
        best_votes = f.header_votes[i];
        array_header = kHeaderCandidates[i];
        inferred = true;
      }
    }
    info_.format = absl::StrFormat("portable heap dump %d", h.version);
    info_.id_size = h.is_64bit ? 8 : 4;
    info_.dump_count = 1;
    info_.size_model = analysis::SizeModel::kIbm;
    analysis::ObjectLayout& l = info_.layout;
    l.reference_size = pointer_size_;
    l.object_header = 2 * pointer_size_;
    l.array_length_offset = array_header - 4;
    l.word_size = h.is_64bit ? 8 : 4;
    l.alignment = 8;
    l.unaligned_array_base = true;
    l.inferred = inferred;
    info_.size_model_notes = absl::StrFormat(
        "IBM PHD sizes (MAT through DTFJ): instances from the class records%s rounded up to 8 "
        "bytes; arrays %s; %d-byte references (%s). JVM: %s",
        header_extra_ ? " plus a 3-word header (instance sizes start at 0: Java 1.4.2)" : "",
        inferred ? absl::StrFormat("as the version 6 records give them (a %d-byte header "
                                   "reproduces %d of %d primitive arrays)",
                                   array_header, best_votes, f.recorded_arrays)
                 : absl::StrFormat("%d-byte header + length x element size", array_header),
        pointer_size_,
        h.is_64bit ? (pointer_size_ == 4 ? "64-bit VM with compressed references" : "64-bit VM")
                   : "32-bit VM",
        h.full_version.empty() ? "unknown" : h.full_version);
    if (trailing_) Warn("bytes after the END_OF_DUMP record were ignored");

    builder_ = std::make_unique<HeapGraphBuilder>(
        info_, analysis::HeapGraphOptions{.instance_class_edges = options_.instance_class_edges});

    // java.lang.Class's instance size is the size of every class object.
    uint32_t class_object_size = 0;
    for (const ClassRecord& c : f.classes) {
      if (c.raw_name == "java/lang/Class") {
        class_object_size = InstanceSize(c.instance_size);
        break;
      }
    }
    // Supers first: walk each class's super chain up to a placed class, then place the chain top
    // down. A chain that loops (a corrupt dump) is cut where it closes.
    const size_t nc = f.classes.size();
    std::vector<int64_t> super(nc, -1);
    for (size_t i = 0; i < nc; ++i) {
      auto it = f.by_address.find(f.classes[i].super_address);
      if (f.classes[i].super_address != 0 && it != f.by_address.end() && it->second != i) {
        super[i] = it->second;
      }
    }
    std::vector<uint8_t> state(nc, 0);  // 0 unplaced, 1 on the current walk, 2 placed
    std::vector<uint32_t> chain;
    std::vector<uint32_t> order;
    order.reserve(nc);
    for (size_t i = 0; i < nc; ++i) {
      chain.clear();
      int64_t c = static_cast<int64_t>(i);
      while (c >= 0 && state[c] == 0) {
        state[c] = 1;
        chain.push_back(static_cast<uint32_t>(c));
        c = super[c];
      }
      if (c >= 0 && state[c] == 1) {  // the chain closes on itself
        Warn(absl::StrFormat("class 0x%x: superclass chain loops; the link to 0x%x is dropped",
                             f.classes[chain.back()].address, f.classes[c].address));
        super[chain.back()] = -1;
      }
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        state[*it] = 2;
        order.push_back(*it);
      }
    }
    for (uint32_t i : order) {
      ClassRecord& c = first_.classes[i];
      ClassInfo ci;
      ci.name = c.name.source_name;
      ci.instance_kind = c.name.kind;
      ci.element_type = c.name.element;
      ci.super_class = super[i] >= 0 ? first_.classes[super[i]].id : kNoClass;
      ci.declared_instance_size = static_cast<uint32_t>(std::max(0, c.instance_size));
      ci.instance_size = c.name.kind == ObjectKind::kInstance ? InstanceSize(c.instance_size) : 0;
      ci.class_object_size = class_object_size;
      ci.listed_references = true;
      c.id = builder_->AddClass(std::move(ci), c.address);
      if (c.raw_name == "java/lang/Object") object_class_ = c.id;
    }
    // J9 names the element class in object array records; some Java 6 dumps name the array class
    // (DTFJ: "arrayTypeIsArray" when every object array names an array class).
    array_type_is_array_ = true;
    for (uint64_t a : f.object_array_classes) {
      auto it = f.by_address.find(a);
      if (it != f.by_address.end() && f.classes[it->second].name.kind == ObjectKind::kInstance) {
        array_type_is_array_ = false;
      }
    }
    return absl::OkStatus();
  }

  uint32_t InstanceSize(int32_t declared) const {
    const int64_t s = std::max<int64_t>(0, declared) + header_extra_;
    return static_cast<uint32_t>(Align8(static_cast<uint64_t>(s)));
  }

  ClassId AddSyntheticClass(std::string name, ObjectKind kind, FieldType element,
                            uint32_t instance_size) {
    ClassInfo ci;
    ci.name = std::move(name);
    ci.instance_kind = kind;
    ci.element_type = element;
    ci.super_class = kind == ObjectKind::kInstance ? kNoClass : object_class_;
    ci.instance_size = instance_size;
    ci.synthetic = true;
    ci.listed_references = true;
    ++synthetic_classes_;
    return builder_->AddClass(std::move(ci), 0);
  }

  // The class of an instance record.
  ClassId InstanceClass(uint64_t class_address) {
    auto it = first_.by_address.find(class_address);
    if (it != first_.by_address.end()) return first_.classes[it->second].id;
    auto [cached, inserted] = unknown_classes_.try_emplace(class_address, kNoClass);
    if (inserted) {
      auto gap = first_.min_gap.find(class_address);
      const uint32_t size = gap == first_.min_gap.end()
                                ? 0
                                : static_cast<uint32_t>(Align8(gap->second));
      cached->second = AddSyntheticClass(absl::StrFormat("unknown class 0x%x", class_address),
                                         ObjectKind::kInstance, FieldType::kObject, size);
      Warn(absl::StrFormat("objects of class 0x%x, which has no class record (size estimated: %d "
                           "bytes)",
                           class_address, size));
    }
    return cached->second;
  }

  // The array class of an object array record that names `class_address`.
  ClassId ObjectArrayClass(uint64_t class_address) {
    auto cached = array_classes_.find(class_address);
    if (cached != array_classes_.end()) return cached->second;
    ClassId result = kNoClass;
    auto it = first_.by_address.find(class_address);
    const ClassRecord* named = it == first_.by_address.end() ? nullptr : &first_.classes[it->second];
    if (array_type_is_array_ && named != nullptr && named->name.kind == ObjectKind::kObjectArray) {
      result = named->id;
    } else if (named != nullptr) {
      const std::string raw = named->raw_name.starts_with("[")
                                  ? absl::StrCat("[", named->raw_name)
                                  : absl::StrCat("[L", named->raw_name, ";");
      const ClassRecord* first_match = nullptr;
      for (const ClassRecord& c : first_.classes) {  // O(classes), once per element class
        if (c.raw_name != raw) continue;
        if (first_match == nullptr) first_match = &c;
        // Several loaders may define the array class: take the one that references the element
        // class (DTFJ's PHDJavaClass.referencesClass).
        if (std::find(c.references.begin(), c.references.end(), class_address) !=
            c.references.end()) {
          first_match = &c;
          break;
        }
      }
      if (first_match != nullptr) {
        result = first_match->id;
      } else {
        ClassName name = ParseClassName(raw);
        result = AddSyntheticClass(name.source_name, ObjectKind::kObjectArray, FieldType::kObject, 0);
      }
    } else {
      result = AddSyntheticClass(absl::StrFormat("unknown class 0x%x[]", class_address),
                                 ObjectKind::kObjectArray, FieldType::kObject, 0);
    }
    array_classes_.emplace(class_address, result);
    return result;
  }

  ClassId PrimitiveArrayClass(uint32_t type) {
    ClassId& slot = primitive_classes_[type & 7];
    if (slot.valid()) return slot;
    const std::string_view descriptor = PhdPrimitiveDescriptor(type);
    for (const ClassRecord& c : first_.classes) {
      if (c.raw_name == descriptor) {
        slot = c.id;
        return slot;
      }
    }
    ClassName name = ParseClassName(descriptor);
    slot = AddSyntheticClass(name.source_name, ObjectKind::kPrimitiveArray, name.element, 0);
    return slot;
  }

  // Pass 2: the objects into the builder.
  Status BuildObjects() {
    HW_RETURN_IF_ERROR(StartGraph());
    HW_ASSIGN_OR_RETURN(PhdScanner scanner, PhdScanner::Open(&in_));
    PhdRecord r;
    absl::flat_hash_set<uint64_t> seen_duplicates;
    uint64_t dropped = 0;
    uint64_t zero_address = 0;
    for (;;) {
      HW_ASSIGN_OR_RETURN(bool more, scanner.Next(&r));
      if (!more) break;
      if (r.kind == PhdRecord::Kind::kClass) {
        auto it = first_.by_address.find(r.address);
        ClassRecord& c = first_.classes[it->second];
        if (!c.listed_set) {  // the first record of this address
          builder_->SetListedClassReferences(c.id, c.references);
          c.listed_set = true;
        }
        continue;
      }
      if (r.address == 0) {
        ++zero_address;
        continue;
      }
      if (first_.duplicates.contains(r.address)) {
        // The first record of an address wins; class records (added as class objects) always.
        if (first_.by_address.contains(r.address) || !seen_duplicates.insert(r.address).second) {
          ++dropped;
          continue;
        }
      }
      switch (r.kind) {
        case PhdRecord::Kind::kObject:
          builder_->AddListedObject(r.address, InstanceClass(r.class_address),
                                    std::move(r.references));
          r.references = {};
          break;
        case PhdRecord::Kind::kObjectArray:
          builder_->AddListedObject(r.address, ObjectArrayClass(r.class_address),
                                    std::move(r.references), static_cast<uint32_t>(r.length));
          r.references = {};
          break;
        case PhdRecord::Kind::kPrimitiveArray:
          builder_->AddPrimitiveArray(r.address, PrimitiveArrayClass(r.primitive_type),
                                      static_cast<uint32_t>(r.length));
          break;
        case PhdRecord::Kind::kClass:
          break;
      }
      if (r.recorded_size >= 0) {
        builder_->SetShallowSize(r.address,
                                 Align8(static_cast<uint64_t>(r.recorded_size)));
      }
    }
    if (dropped > 0) {
      info_.duplicate_objects = dropped;
      Warn(absl::StrFormat("%d records repeat the address of an earlier object or class record "
                           "and were dropped",
                           dropped));
    }
    if (zero_address > 0) {
      Warn(absl::StrFormat("%d records at address 0 were dropped", zero_address));
    }
    // The builder copied info_ when it was made; hand over what was learnt since.
    DumpInfo& out = builder_->info();
    out.duplicate_objects = info_.duplicate_objects;
    out.warnings = info_.warnings;
    return absl::OkStatus();
  }

  ByteSource* source_;
  ReadOptions options_;
  StreamReader in_;
  FirstPass first_;
  DumpInfo info_;
  bool trailing_ = false;
  uint32_t pointer_size_ = 4;
  uint32_t header_extra_ = 0;
  bool array_type_is_array_ = false;
  ClassId object_class_;
  std::unique_ptr<HeapGraphBuilder> builder_;
  absl::flat_hash_map<uint64_t, ClassId> unknown_classes_;
  absl::flat_hash_map<uint64_t, ClassId> array_classes_;
  ClassId primitive_classes_[8];
  uint64_t synthetic_classes_ = 0;
  uint64_t passes_done_ = 0;
};

StatusOr<HeapGraph> WithPath(std::string_view path, StatusOr<HeapGraph> result) {
  if (result.ok() || path.empty()) return result;
  return absl::Status(result.status().code(), absl::StrCat(std::string(path), ": ", result.status().message()));
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
