// BulkHeapGraphBuilder: the public way for a dump reader (HPROF, PHD, IBM text) to fill a HeapGraph
// (analysis/heap_graph.h) at streaming speed and with the graph's own compact memory: no per-object
// heap allocation, references appended in CSR order, ids sorted once. Readers never see the graph's
// internal representation (heap_graph_internal.h); this builder is the only producer interface
// besides the small convenience HeapGraphBuilder (heap_graph.h, for tests and hand-made graphs).
//
// The reader drives four stages, in this order (calling a method of another stage is a programming
// error and aborts through HW_CHECK; bad data gives an error Status, never a crash):
//
//   1. Classes.   info() (format, id size, ...), AddClass() for every class record with the raw ids
//                 its class object references, mutable_class() to link superclasses, AddHeapName()
//                 for Android heaps; FinishClasses() computes every class's reference slots.
//   2. Index.     IndexObjects() takes the raw ids of every object (collected in file order in
//                 analysis/id_chunks.h) and numbers them densely by ascending id (ObjectIndex).
//   3. Objects.   BeginObjects() picks one of two orders (see ObjectOrder), then one Add* call per
//                 object record: AddInstance(), BeginObjectArray() + AddArrayElements() +
//                 EndObjectArray(), AddPrimitiveArray(), AddClassObject(); FinishObjects().
//   4. Finishing. SampleAddressGaps() (evidence for a size-model inference), SetShallowSizes() for
//                 every class, AddRoot() for every GC root record; Build().
//
// Reference slots (what an edge is; heap_graph.h has the full definition): the reader passes raw
// ids (0 = null) in slot order and the builder resolves them to ObjectIndex, drops nulls, counts
// and drops ids with no object (DumpInfo::dangling_references), flags the referent slot of
// java.lang.ref.Reference subclasses weak, and adds MAT's "<class>" pseudo reference itself when
// HeapGraphOptions::instance_class_edges is set (the reader never passes it).
//   * instance:     one value per kObject instance field of its class hierarchy: the class's own
//                   fields first, then its superclass's, up to the root, each in declaration order;
//                   for a class with ClassInfo::unnamed_references, any number of values;
//   * object array: one value per element, in index order;
//   * class object: ClassObjectRefs (super, loader, signers, protection domain, each kObject static
//                   field, each object constant-pool entry), given once with AddClass().
//
// Cost (n objects, e non-null references, s reference slots): the same as the graph it builds
// (heap_graph.h: about 7 bytes per object and 4.1 per reference) plus, while building, 8 bytes per
// id until IndexObjects() has sorted them, 1 byte per object for Android heaps, and for
// ObjectOrder::kTwoRounds 1 bit per object and 8 bytes per array until EndFirstRound(). Every Add*
// call is O(its reference values) plus an expected O(1) id lookup per value. Nothing is allocated
// from a length the reader passes without the bound of ObjectLimits.
//
// Thread-safety: not thread-safe; one reader thread drives one builder.
#ifndef HEAPWATCH_ANALYSIS_HEAP_GRAPH_BUILDER_H_
#define HEAPWATCH_ANALYSIS_HEAP_GRAPH_BUILDER_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "analysis/csr_graph.h"
#include "analysis/heap_graph.h"
#include "analysis/id_chunks.h"
#include "common/status.h"

namespace heapwatch::analysis {

// The references of one class object, as raw ids (0 = null); the slot order of a class object.
struct ClassObjectRefs {
  uint64_t super_id = 0;              // "<super>": the superclass's class object
  uint64_t loader_id = 0;             // "<classloader>"; also gives ClassInfo::class_loader
  uint64_t signers_id = 0;            // "<signers>"
  uint64_t protection_domain_id = 0;  // "<protection domain>"
  // One value per kObject entry of ClassInfo::static_fields, in that order ("static NAME").
  std::vector<uint64_t> static_refs;
  // (constant pool index, id) of each object entry of the constant pool ("<constant pool[i]>").
  std::vector<std::pair<uint32_t, uint64_t>> constant_pool;
  // Android heap of the class record (ObjectOrder::kIndexOrder places class objects itself).
  HeapId heap;
};

// For a size-model inference: one sampled object and the distance from its id to the next object's
// id (ids are addresses in HotSpot and Android dumps).
struct AddressGap {
  uint32_t array_length = 0;  // element count for arrays, 0 for instances
  uint64_t gap = 0;           // next object's id - this object's id, in id units (bytes)
};

// How the object records of stage 3 arrive.
enum class ObjectOrder : uint8_t {
  // Every object except class objects exactly once, in ascending id order (HotSpot, Android and
  // NetBeans dumps list instances and arrays by address). One pass: each object's references are
  // appended to the CSR graph directly. Class objects are placed by the builder, from the
  // AddClass() data, when their index comes up; do not call AddClassObject(). REQUIRES: no id
  // repeats (IndexObjects() found no duplicates).
  kIndexOrder = 0,
  // Objects (class objects included, through AddClassObject()) in any order, ids possibly repeated
  // (the first record of an id wins, later ones are dropped). The reader presents the same records
  // in the same order twice: round 1 records each object's class, array length and number of
  // references, which sizes the CSR graph exactly (EndFirstRound()); round 2 fills the references.
  kTwoRounds = 1,
};

// Bounds the reader derives from its input, so that a corrupt file cannot make the builder allocate
// without bound.
struct ObjectLimits {
  // At most this many reference slots in all (every slot of a well-formed dump is backed by an id
  // in the file, so the file size over the id size is a bound). More: DataLoss.
  uint64_t max_reference_slots = std::numeric_limits<uint64_t>::max();
  // kIndexOrder: an upper bound of the non-null reference values of instances and object arrays
  // (e.g. their bytes over the id size); the builder reserves it plus the class objects' and
  // "<class>" references up front, so the CSR graph is never copied while it grows (capacity never
  // written costs address space, not memory). 0: no reservation.
  uint64_t expected_object_references = 0;
};

class BulkHeapGraphBuilder {
 public:
  // Largest number of classes a graph can hold.
  static constexpr uint32_t kMaxClasses = 0x7fffffffu;
  // Largest number of objects (ObjectIndex leaves its top value for kNoObject).
  static constexpr uint64_t kMaxObjects = 0xfffffffeu;
  // Warn() keeps at most this many lines in DumpInfo::warnings.
  static constexpr size_t kMaxWarnings = 40;

  // `info`: the dump's facts so far (format, id_size, timestamp_ms, dump_count, dump_ordinal); the
  // reader may complete it through info() at any stage (size model, layout, notes, warnings).
  // info.instance_class_edges is taken from `options`.
  explicit BulkHeapGraphBuilder(DumpInfo info, HeapGraphOptions options = {});
  ~BulkHeapGraphBuilder();
  BulkHeapGraphBuilder(BulkHeapGraphBuilder&&) noexcept;
  BulkHeapGraphBuilder& operator=(BulkHeapGraphBuilder&&) noexcept;
  BulkHeapGraphBuilder(const BulkHeapGraphBuilder&) = delete;
  BulkHeapGraphBuilder& operator=(const BulkHeapGraphBuilder&) = delete;

  // ---- Any stage.
  DumpInfo& info();
  const DumpInfo& info() const;
  // Appends a human-readable line to info().warnings unless it holds kMaxWarnings lines already.
  void Warn(std::string message);
  // The class table so far, by ClassId. Sizes are those AddClass() got until SetShallowSizes();
  // class_object and class_loader are resolved by FinishObjects().
  std::span<const ClassInfo> classes() const;
  // The first class named "java.lang.Class" (kNoClass if none); known after FinishClasses().
  ClassId java_lang_class() const;

  // ---- Stage 1: classes.
  // Adds a class: `info.class_object_id` is the raw id of its class object (0 for a class that
  // has no class object in the dump); info.class_object and info.class_loader are ignored (the
  // builder resolves them); info.super_class may name a class added later (link it with
  // mutable_class() before FinishClasses()). `refs` are its class object's references. Returns
  // ClassId{number of classes added before}. REQUIRES: fewer than kMaxClasses classes (the reader
  // bounds this with an error of its own).
  ClassId AddClass(ClassInfo info, ClassObjectRefs refs = {});
  // The class `c` for editing (superclass links, names). REQUIRES: stage 1, c < classes().size().
  ClassInfo& mutable_class(ClassId c);
  // Names the next Android heap: the first call gives HeapId{1} (HeapId{0} is "default").
  // Objects are put into heaps with SetHeap() and ClassObjectRefs::heap.
  HeapId AddHeapName(std::string name);
  // Computes the reference slots of every class (instance fields along the super chain, class
  // object slots, the weak referent slot of java.lang.ref.Reference and its subclasses) and finds
  // java.lang.Class. O(sum over classes of their hierarchy's fields).
  // Errors: InvalidArgument when a superclass id is out of range or a super chain has a cycle.
  Status FinishClasses();

  // ---- Stage 2: the object index.
  // Numbers the objects densely by ascending raw id. `objects`: the ids of the instances and arrays
  // in file order; pass `objects_ascending` when they are strictly ascending (then only
  // `class_objects` is sorted: O(n + m log m)). `class_objects`: the ids of the class objects, one
  // per class record as the dump lists them (a repeated record is counted as a duplicate). Repeated
  // ids are kept once and counted in info().duplicate_objects. Both inputs are consumed (their
  // chunks are freed as they are converted). O(n) for ids that fit 32-bit keys (radix sort), else
  // O(n log n). Errors: ResourceExhausted for more than kMaxObjects objects.
  Status IndexObjects(IdChunks&& objects, bool objects_ascending, IdChunks&& class_objects);
  uint32_t object_count() const;
  // The raw id of object `v`. REQUIRES: v < object_count(). O(1).
  uint64_t object_id(ObjectIndex v) const;
  // The object with raw id `id`, or kNoObject. Expected O(1).
  ObjectIndex FindObject(uint64_t id) const;
  // Adds a class without fields for objects whose class record is missing or of the wrong kind
  // (e.g. "unknown-class@0x1234", or "int[]" for primitive arrays when the dump has no such class
  // record): its instances have no reference slots and it has no class object. Stages 2 and 3.
  // REQUIRES: info.instance_fields and info.static_fields empty. Returns kNoClass once the graph
  // holds kMaxClasses classes; the next Add* call or FinishObjects() then fails with
  // ResourceExhausted.
  ClassId AddLateClass(ClassInfo info);

  // ---- Stage 3: objects.
  // Starts stage 3. Allocates the per-object columns (class words, array bitmap, CSR offsets).
  void BeginObjects(ObjectOrder order, const ObjectLimits& limits = {});
  // Objects added from now on are in Android heap `heap` (HeapId{0} until called). REQUIRES:
  // heap.value < number of heap names. Ignored in round 2 of kTwoRounds.
  void SetHeap(HeapId heap);
  // One instance of class `cls` (an instance class: ClassInfo::instance_kind kInstance) with one
  // raw id per reference slot (see the file comment); for a class with unnamed_references (IBM PHD
  // and text dumps), the instance's references as the dump lists them, any number below 2^32. `index`, when not null, receives the
  // object's index, or kNoObject when the record repeats an id and is dropped (kTwoRounds; the
  // class of a dropped record is not looked at, nor, in round 2, the class of any record: pass
  // kNoClass there if resolving it costs something).
  // Errors (for every Add* call):
  //   FailedPrecondition: the record does not fit the index or the first round (its id was not
  //     indexed, comes out of ascending order in kIndexOrder, leaves an indexed id that is not a
  //     class object unfilled, or differs between the rounds of kTwoRounds): for a reader that
  //     indexed the same input, the input changed.
  //   InvalidArgument: `cls` is not a class of the right kind, or the number of values does not
  //     match the object's slots.
  //   ResourceExhausted: more than kMaxCsrEdges (2^32 - 1) non-null references, or more than
  //     kMaxClasses classes (AddLateClass).
  //   DataLoss: more reference slots than ObjectLimits::max_reference_slots.
  Status AddInstance(uint64_t id, ClassId cls, std::span<const uint64_t> reference_values,
                     ObjectIndex* index = nullptr);
  // An object array of class `cls` (instance_kind kObjectArray) with `length` elements, given
  // through AddArrayElements() calls (any split) before EndObjectArray(). Errors as AddInstance;
  // EndObjectArray() fails with InvalidArgument when the elements given differ from `length`.
  Status BeginObjectArray(uint64_t id, ClassId cls, uint32_t length, ObjectIndex* index = nullptr);
  Status AddArrayElements(std::span<const uint64_t> elements);
  Status EndObjectArray();
  // A primitive array of class `cls` (instance_kind kPrimitiveArray). Errors as AddInstance.
  Status AddPrimitiveArray(uint64_t id, ClassId cls, uint32_t length, ObjectIndex* index = nullptr);
  // kTwoRounds only: the class record of `cls` at this point of the input (its class object gets
  // the id classes()[cls].class_object_id and the references of its ClassObjectRefs). A repeated
  // class record is dropped like any repeated id. The class object is in the heap of the last
  // SetHeap() call. Errors as AddInstance.
  Status AddClassObject(ClassId cls, ObjectIndex* index = nullptr);
  // kTwoRounds, round 1 only: true when an earlier record of this round holds `id`, so that a
  // record of it now is dropped. Lets a reader skip work with side effects (creating a class for
  // an unknown class id) for repeats. Expected O(1).
  bool HasRecord(uint64_t id) const;
  // kTwoRounds only: ends round 1. Sizes the CSR graph and the slot bitmap exactly.
  // Errors: FailedPrecondition when an indexed object got no record; ResourceExhausted and
  // DataLoss as AddInstance.
  Status EndFirstRound();
  // Ends stage 3: kIndexOrder places the class objects left after the last object; kTwoRounds
  // removes the references to ids with no object. Resolves ClassInfo::class_object and
  // class_loader, sets info().dangling_references. Errors: FailedPrecondition when an indexed
  // object got no record or a record was left open; ResourceExhausted (AddLateClass).
  Status FinishObjects();

  // ---- Stage 4: finishing.
  // Address evidence for a size-model inference: for each class (by ClassId), up to `per_class`
  // of its instances or arrays (class objects are not sampled), every k-th in index order with
  // k = max(1, instances / per_class), each with the distance from its id to the next object's id
  // (the last object has no successor and is never sampled). O(n) time, O(classes x per_class)
  // memory. REQUIRES: after FinishObjects().
  std::vector<std::vector<AddressGap>> SampleAddressGaps(uint32_t per_class) const;
  // Sets the shallow size in bytes of one instance of `c` (arrays: ignored, their size follows
  // info().size_model and info().layout through ArrayShallowSize) and of its class object.
  // REQUIRES: after FinishObjects(), c < classes().size().
  void SetShallowSizes(ClassId c, uint32_t instance_size, uint32_t class_object_size);
  // The shallow size in bytes of object `v` when the dump records it and the size model would
  // compute another (IBM dumps). Kept only where it differs from the model's size (after every
  // SetShallowSizes() call); the last call for an object wins. O(1) here, O(k log k) in Build() for
  // k calls, 12 bytes per size kept. REQUIRES: after FinishObjects(), v < object_count().
  void SetObjectShallowSize(ObjectIndex v, uint64_t bytes);
  // A GC root record. A root whose object is not in the index is counted in
  // info().unresolved_roots and dropped. REQUIRES: after FinishObjects().
  void AddRoot(uint64_t id, GcRootKind kind, uint32_t thread_serial = 0, int32_t frame = -1);

  // Builds the graph (the derived indexes, Android heap runs, packed ids) and validates it.
  // May also be called in stage 1 when no object will come (a file without a heap dump): the
  // graph then holds the classes added and no objects. info().size_model kAuto becomes kHotSpot.
  // Errors: FailedPrecondition when called in stage 2 or 3; ResourceExhausted (AddLateClass);
  // Internal when a graph invariant does not hold (a bug in the builder).
  StatusOr<HeapGraph> Build() &&;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_HEAP_GRAPH_BUILDER_H_
