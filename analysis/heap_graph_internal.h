// Internal representation of HeapGraph, shared by analysis/heap_graph.cc and the two producers
// that fill it, both in analysis/: HeapGraphBuilder (heap_graph.h) and BulkHeapGraphBuilder
// (heap_graph_builder.h, which the dump readers use). Not part of the public surface: nothing
// outside analysis/ includes it (scripts/check_internal_headers.sh, a ctest, checks that).
//
// Per-object storage (n objects, ascending raw id = ObjectIndex order):
//   ids           raw ids, strictly ascending (IdIndex: 4n bytes as 32-bit keys + n for the lookup
//                 directory while building; Finish() packs them to about 2.2n)
//   class_words   ClassId of the object, or kClassObjectBit | ClassId for the class object of that
//                 class (2 bytes per object up to 32767 classes, else 4)
//   array_bits    1 bit per object: set for arrays and for instances of a class with
//                 unnamed_references; array_rank[w] = such objects before 64-bit word w
//   array_lengths per such object in index order: the array's length, or the instance's number of
//                 unnamed references
//   slot_bits     1 bit per reference slot (see below): set when the slot holds an edge of `graph`
//   slot_samples  slot_samples[k] = first slot number of object 64k
// Reference slots of an object, in edge order: the "<class>" pseudo slot when instance_class_edges,
// then instance: ClassSlots::instance_slots of its class (unnamed_references: its own count);
// object array: one per element; primitive array: none; class object: ClassSlots::class_object_slots of the class it describes. Edge e of
// object v corresponds to the k-th set bit of v's slot range, k = e - graph.first_edge(v).
#ifndef HEAPWATCH_ANALYSIS_HEAP_GRAPH_INTERNAL_H_
#define HEAPWATCH_ANALYSIS_HEAP_GRAPH_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/heap_graph.h"
#include "analysis/id_index.h"

namespace heapwatch::analysis {

inline constexpr uint32_t kClassObjectBit = 0x80000000u;
// Largest number of classes a graph can hold (ClassIds must leave kClassObjectBit free).
inline constexpr uint32_t kMaxClasses = 0x7fffffffu;

// The reference slots of one class.
struct ClassSlots {
  std::vector<ReferenceSlot> instance_slots;  // reference fields of the hierarchy, dump order
  std::vector<ReferenceSlot>
      class_object_slots;  // super, loader, signers, protection domain, statics, cp
  int32_t weak_slot = -1;  // index in instance_slots of java.lang.ref.Reference.referent, or -1
  bool unnamed = false;    // ClassInfo::unnamed_references: instances count their own slots
};

// The class word of every object: ClassId, or kClassObjectBit | ClassId for a class object. Two
// bytes per object while the graph has at most 32767 classes (bit 15 is then the class-object
// flag), four otherwise; Set() widens the storage when a bigger ClassId arrives.
class ClassWords {
 public:
  void Reset(size_t n) {
    narrow_.assign(n, 0);
    wide_.clear();
  }
  size_t size() const { return wide_.empty() ? narrow_.size() : wide_.size(); }
  uint32_t operator[](size_t v) const {
    if (!wide_.empty()) return wide_[v];
    uint16_t w = narrow_[v];
    return (w & 0x8000u) ? (kClassObjectBitValue | (w & 0x7fffu)) : w;
  }
  void Set(size_t v, uint32_t word) {
    uint32_t cls = word & ~kClassObjectBitValue;
    if (wide_.empty() && cls > 0x7fffu) Widen();
    if (!wide_.empty()) {
      wide_[v] = word;
    } else {
      narrow_[v] = static_cast<uint16_t>(cls | ((word & kClassObjectBitValue) ? 0x8000u : 0u));
    }
  }
  uint64_t MemoryUsage() const { return narrow_.size() * 2 + wide_.size() * 4; }

 private:
  static constexpr uint32_t kClassObjectBitValue = 0x80000000u;
  void Widen() {
    std::vector<uint32_t> wide(narrow_.size());
    for (size_t v = 0; v < narrow_.size(); ++v) {
      uint16_t w = narrow_[v];
      wide[v] = (w & 0x8000u) ? (kClassObjectBitValue | (w & 0x7fffu)) : w;
    }
    wide_.swap(wide);
    std::vector<uint16_t>().swap(narrow_);
  }
  std::vector<uint16_t> narrow_;
  std::vector<uint32_t> wide_;
};

// A run of objects in one Android heap: objects [first, next run's first) are in `heap`.
struct HeapRun {
  uint32_t first = 0;
  HeapId heap;
};

struct HeapGraph::Rep {
  DumpInfo info;
  std::vector<ClassInfo> classes;
  std::vector<ClassSlots> slots;          // parallel to classes
  ClassId java_lang_class;                // kNoClass if the dump has none
  std::vector<uint32_t> classes_by_name;  // ClassId values sorted by (name, id); filled by Finish()

  IdIndex ids;  // raw ids, ascending, with the id -> index directory
  ClassWords class_words;
  std::vector<uint64_t> array_bits;
  std::vector<uint32_t> array_rank;  // filled by Finish()
  std::vector<uint32_t> array_lengths;

  std::vector<std::string> heap_names{"default"};
  std::vector<HeapRun> heap_runs;  // sorted by first; empty = every object in heap 0

  CsrGraph graph;
  std::vector<uint64_t> slot_bits;
  std::vector<uint64_t> slot_samples;  // filled by Finish()

  std::vector<GcRoot> roots;
  std::vector<ObjectIndex> root_objects;  // filled by Finish()

  // Shallow sizes the dump records for objects whose size the size model does not reproduce (IBM
  // dumps): size_override_objects ascending (ObjectIndex values), size_override_bytes parallel.
  std::vector<uint32_t> size_override_objects;
  std::vector<uint64_t> size_override_bytes;

  // Helpers usable while building (they need ids, class_words, array_bits and, for arrays,
  // array_rank).
  bool IsArray(uint32_t v) const { return (array_bits[v >> 6] >> (v & 63)) & 1; }
  uint32_t ArrayRank(uint32_t v) const;  // number of arrays before v; REQUIRES array_rank built
  uint32_t SlotCount(uint32_t v) const;  // REQUIRES array_rank built
  uint64_t SlotStart(uint32_t v) const;  // REQUIRES slot_samples built

  // Builds the derived indexes (array_rank, slot_samples, classes_by_name, root_objects) and packs
  // the ids (IdIndex::Pack: lookups by id get a little slower, so producers call this last).
  // REQUIRES: ids ascending; class_words, array_bits, array_lengths consistent.
  void BuildArrayRank();
  void BuildSlotSamples();
  void Finish();
};

// Shallow size of object v under the size model, without looking at recorded sizes. REQUIRES:
// class_words, array_bits, array_rank and array_lengths built.
uint64_t ModelShallowSize(const HeapGraph::Rep& rep, uint32_t v);
// Sets rep.size_override_* from (object, bytes) pairs in any order (the last pair of an object wins),
// keeping only sizes the model does not reproduce. Errors: InvalidArgument for an object out of
// range.
Status SetSizeOverrides(HeapGraph::Rep& rep, std::vector<std::pair<uint32_t, uint64_t>> sizes);

// Computes the slot tables of every class from the class table (instance fields along the super
// chain, statics, the referent slot of Reference subclasses). `constant_pool_refs[c]` lists
// constant pool indices of object entries of class c (may be empty / shorter than classes). Errors:
// InvalidArgument when a super chain has a cycle.
Status BuildClassSlots(HeapGraph::Rep& rep,
                       const std::vector<std::vector<uint32_t>>& constant_pool_refs);

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_HEAP_GRAPH_INTERNAL_H_
