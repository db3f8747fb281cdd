// HeapGraph: the whole object graph of one heap dump ("extended dump"), in a compact form that the
// analysis algorithms (dominator tree, retained sizes, paths to GC roots) and the reports work on.
//
// What it holds (source: the HPROF format, OpenJDK `src/hotspot/share/services/heapDumper.cpp`,
// Android `art/runtime/hprof/hprof.cc`; the seeds/004 HAHA notes):
//   * every object of the dump - instances, object arrays, primitive arrays and class objects -
//   numbered
//     densely 0..n-1 (ObjectIndex) in ascending order of their raw id (the address in HotSpot
//     dumps);
//   * per object: kind, class (ClassId), shallow size, raw id, array length, Android heap;
//   * the class table: name in Java source form, superclass, class object, class loader, instance
//   field
//     layout (names and types), static fields (names and types, never values), Reference subclass
//     flag, the shallow size of one instance under the dump's size model;
//   * the forward reference graph as CsrGraph (analysis/csr_graph.h) with per-edge weak flags;
//   * the GC roots (every root record with its kind, and the distinct root objects).
//
// Edges (what counts as a reference; nulls and references to ids that are not in the dump are
// dropped):
//   * instance  -> every non-null reference field, in dump order: the fields declared by the
//   object's own
//                  class first, then those of its superclass, and so on up to java.lang.Object;
//   * obj array -> every non-null element, in index order;
//   * class obj -> (pseudo references, as Eclipse MAT's ClassImpl.getReferences does, plus the
//   mirror's
//                  real signers/protection-domain references) superclass object, class loader,
//                  signers, protection domain, then every non-null static reference field in dump
//                  order, then every object entry of the constant pool;
//   * optionally (HeapGraphOptions::instance_class_edges, MAT's "<class>" pseudo reference) every
//   instance
//     and array -> its class object, as the first edge of the object.
//   The edge of the field java.lang.ref.Reference.referent (declared by Reference, inherited by
//   Soft-, Weak-, Phantom- and FinalReference, Android's FinalizerReference and any user subclass)
//   is flagged weak.
//
// Memory (n objects, e edges, s reference slots incl. nulls, a arrays): CsrGraph about 1.1n + 4e +
// e/8 bytes once built (32-bit offsets, at most 2^32 - 1 edges, stored compactly: CsrOffsets), raw
// ids about 2.2n once the graph is built (32-bit keys packed in blocks of 64 with 16-bit deltas,
// see id_index.h; 8n when the ids span more than 2^32 aligned units), classes 2n (4n beyond 32767
// classes), array lengths 4a, slot bitmap s/8: about 7 bytes per object and 4.1 bytes per edge
// (measured: 236 MB for a 978 MiB JDK 17 dump of 18.6 M objects and 25.7 M edges, 0.23x the file).
// No per-object heap allocation. MemoryUsage() reports the real figure.
//
// Thread-safety: a HeapGraph is immutable once built; concurrent const calls are safe.
// HeapGraphBuilder is not thread-safe.
#ifndef HEAPWATCH_ANALYSIS_HEAP_GRAPH_H_
#define HEAPWATCH_ANALYSIS_HEAP_GRAPH_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/csr_graph.h"
#include "common/histogram.h"
#include "common/status.h"

namespace heapwatch::analysis {

// What an object is.
enum class ObjectKind : uint8_t {
  kInstance = 0,        // INSTANCE DUMP (0x21)
  kClass = 1,           // the class object of a CLASS DUMP (0x20)
  kObjectArray = 2,     // OBJECT ARRAY DUMP (0x22)
  kPrimitiveArray = 3,  // PRIMITIVE ARRAY DUMP (0x23) or Android's PRIMITIVE ARRAY NODATA (0xC3)
};
std::string_view ObjectKindName(
    ObjectKind kind);  // "instance", "class", "object array", "primitive array"

// HPROF basic types. The values are the HPROF type codes. DO NOT CHANGE.
enum class FieldType : uint8_t {
  kObject = 2,
  kBoolean = 4,
  kChar = 5,
  kFloat = 6,
  kDouble = 7,
  kByte = 8,
  kShort = 9,
  kInt = 10,
  kLong = 11,
};
// True for the codes listed above.
bool IsValidFieldType(uint8_t code);
// Size in bytes of a primitive value (boolean 1, char 2, float 4, double 8, byte 1, short 2, int 4,
// long 8); for kObject the size of a reference, which depends on the dump (pass the id or reference
// size).
uint32_t FieldTypeSize(FieldType type, uint32_t reference_size);
// Java source name: "int", "boolean", ...; "java.lang.Object" for kObject.
std::string_view FieldTypeName(FieldType type);

// Kinds of GC roots, one per HPROF root sub-record tag (HotSpot and Android).
enum class GcRootKind : uint8_t {
  kUnknown = 0,            // 0xFF ROOT UNKNOWN
  kJniGlobal = 1,          // 0x01 ROOT JNI GLOBAL
  kJniLocal = 2,           // 0x02 ROOT JNI LOCAL
  kJavaFrame = 3,          // 0x03 ROOT JAVA FRAME
  kNativeStack = 4,        // 0x04 ROOT NATIVE STACK
  kStickyClass = 5,        // 0x05 ROOT STICKY CLASS
  kThreadBlock = 6,        // 0x06 ROOT THREAD BLOCK
  kMonitorUsed = 7,        // 0x07 ROOT MONITOR USED
  kThreadObject = 8,       // 0x08 ROOT THREAD OBJECT
  kInternedString = 9,     // 0x89 Android ROOT INTERNED STRING
  kFinalizing = 10,        // 0x8A Android ROOT FINALIZING
  kDebugger = 11,          // 0x8B Android ROOT DEBUGGER
  kReferenceCleanup = 12,  // 0x8C Android ROOT REFERENCE CLEANUP
  kVmInternal = 13,        // 0x8D Android ROOT VM INTERNAL
  kJniMonitor = 14,        // 0x8E Android ROOT JNI MONITOR
  kUnreachable = 15,       // 0x90 Android UNREACHABLE
  // Not GC roots of the dump but inferred for dumps without root records (IBM PHD and text dumps;
  // analysis/root_inference.h, seed 000's HeapRoots terms):
  kPureRoot = 16,        // an object no other object references
  kArtificialRoot = 17,  // the lowest-indexed object of a cycle no other root reaches
};
inline constexpr int kGcRootKindCount = 18;
// Upper-case HPROF-style names: "UNKNOWN", "JNI_GLOBAL", "JAVA_FRAME", "STICKY_CLASS",
// "THREAD_OBJECT", "INTERNED_STRING", "VM_INTERNAL", ..., "PURE_ROOT", "ARTIFICIAL_ROOT".
std::string_view GcRootKindName(GcRootKind kind);

// One GC root record of the dump.
struct GcRoot {
  ObjectIndex object;
  GcRootKind kind = GcRootKind::kUnknown;
  // HPROF thread serial number for the kinds that carry one (thread object, JNI local, Java frame,
  // native stack, thread block, JNI monitor), else 0.
  uint32_t thread_serial = 0;
  // Frame number in the thread's stack trace for Java frame and JNI local roots (-1 =
  // unknown/none).
  int32_t frame = -1;
};

// Android heap of an object (HEAP DUMP INFO 0xFE sub-record): index into HeapGraph::heap_names().
struct HeapId {
  uint8_t value = 0;
  friend constexpr bool operator==(HeapId, HeapId) = default;
};

// How shallow sizes are computed (docs/size-model.md has the details and sources).
enum class SizeModel : uint8_t {
  kAuto = 0,      // kAndroid for "JAVA PROFILE 1.0.3" dumps, else kHotSpot
  kHotSpot = 1,   // HotSpot object layout: header, compressed or full references, field packing,
                  // alignment; layout parameters inferred from the dump (see ObjectLayout)
  kAndroid = 2,   // perflib/HAHA: instance size from the CLASS DUMP, arrays = length x element size
  kNetBeans = 3,  // NetBeans profiler heap library: instance data + 2 ids; arrays 2 ids + 8 +
                  // length x element size; no alignment
  kIbm = 4,       // IBM dumps (PHD, text): instance sizes from the dump's class records, arrays
                  // from a header and element size like kHotSpot's formula (ObjectLayout), sizes
                  // the dump records for single objects kept as they are (docs/dump-formats.md)
};
std::string_view SizeModelName(SizeModel model);  // "auto", "hotspot", "android", "netbeans", "ibm"

// The object layout a HotSpot size model uses; all sizes in bytes.
struct ObjectLayout {
  uint32_t reference_size = 8;  // reference fields and object array elements: 4 (32-bit VM,
                                // compressed oops) or 8
  uint32_t object_header =
      16;  // mark word + class pointer: 8 (32-bit), 12 (compressed class pointers), 16
  uint32_t array_length_offset = 16;  // offset of the 32-bit length field (== object_header)
  uint32_t word_size = 8;  // machine word: 4 on a 32-bit VM, else 8 (array bases align to it)
  uint32_t alignment = 8;  // object alignment (-XX:ObjectAlignmentInBytes)
  // HotSpot field packing: false = the classic layout of JDK 6..14 (classFileParser layout_fields),
  // true = FieldLayoutBuilder of JDK 15+ (fills gaps left in superclass layouts).
  bool jdk15_field_layout = false;
  // JDK 22+ (JDK-8139457): array elements start right after the length field instead of at the next
  // 8-byte boundary.
  bool unaligned_array_base = false;
  // True when the parameters were inferred from object address gaps; false when they are a default.
  bool inferred = false;
  // Objects whose computed size exceeds the distance to the next object (0 for a consistent
  // inference).
  uint64_t gap_violations = 0;
  // Objects whose computed size equals the distance to the next object (evidence for the
  // inference).
  uint64_t gap_exact = 0;

  friend bool operator==(const ObjectLayout&, const ObjectLayout&) = default;
};

// Facts about the dump the graph was built from.
struct DumpInfo {
  std::string format;         // header string, e.g. "JAVA PROFILE 1.0.2"
  uint32_t id_size = 8;       // bytes per HPROF identifier: 4 or 8
  uint64_t timestamp_ms = 0;  // dump time from the header, milliseconds since the Unix epoch
  uint32_t dump_count = 0;    // heap dumps in the file
  uint32_t dump_ordinal = 0;  // which one this graph holds, 0-based
  SizeModel size_model = SizeModel::kHotSpot;  // the model the shallow sizes follow (never kAuto)
  ObjectLayout layout;                         // meaningful for kHotSpot
  // One paragraph on how sizes were computed for this dump (model, layout, the evidence behind
  // inferences).
  std::string size_model_notes;
  bool instance_class_edges = false;  // see HeapGraphOptions
  // Anomalies that were tolerated (each also described in `warnings`).
  uint64_t dangling_references =
      0;  // non-null references to ids with no object in the dump (dropped)
  uint64_t duplicate_objects = 0;     // objects whose id was already used (later records dropped)
  uint64_t unresolved_roots = 0;      // root records whose object is not in the dump (dropped)
  // The dump has no GC root records (or they leave objects unreached) and roots of kind kPureRoot
  // and kArtificialRoot were inferred (analysis/root_inference.h); `warnings` says how many.
  bool roots_inferred = false;
  std::vector<std::string> warnings;  // at most a few dozen human-readable lines
};

// One field of a class, as the CLASS DUMP lists it.
struct FieldInfo {
  std::string name;
  FieldType type = FieldType::kInt;
  friend bool operator==(const FieldInfo&, const FieldInfo&) = default;
};

// One class of the dump (a CLASS DUMP record, or a synthetic class the reader creates for primitive
// array types and classes referenced but never dumped).
struct ClassInfo {
  // Java source form: "java.lang.String", "java.util.HashMap$Node", "int[]",
  // "java.lang.Object[][]".
  std::string name;
  ClassId super_class;  // kNoClass for java.lang.Object, interfaces' absence, synthetic classes
  ObjectIndex class_object;      // kNoObject when the dump has no class object (synthetic class)
  uint64_t class_object_id = 0;  // raw id of the class object, 0 when synthetic
  ObjectIndex class_loader;  // kNoObject for the boot loader or when the loader is not in the dump
  ObjectKind instance_kind =
      ObjectKind::kInstance;                    // kObjectArray / kPrimitiveArray for array classes
  FieldType element_type = FieldType::kObject;  // array classes: the element type
  std::vector<FieldInfo> instance_fields;       // declared by this class only, in dump order
  std::vector<FieldInfo> static_fields;         // in dump order
  uint32_t declared_instance_size = 0;          // "instance size" u4 of the CLASS DUMP, in bytes
  uint32_t instance_size =
      0;  // shallow size of one instance in bytes under the size model (0: arrays)
  uint32_t class_object_size = 0;  // shallow size of the class object in bytes
  bool is_reference = false;       // java.lang.ref.Reference or a subclass of it
  bool synthetic = false;          // no CLASS DUMP record (created by the reader)
  // Instances list their references without naming the fields (IBM PHD and text dumps): each
  // instance has its own number of unnamed reference slots ("<reference[i]>"), and the instance
  // fields, if the dump lists any, are not reference slots.
  bool unnamed_references = false;
};

// What reference slot an edge comes from.
struct ReferenceSlot {
  enum class Kind : uint8_t {
    kField,             // instance field `field` of class `declaring_class`
    kStaticField,       // static field `field` of class `declaring_class`
    kArrayElement,      // element `array_index`
    kClassObject,       // pseudo reference "<class>": object -> its class object
    kSuperClass,        // "<super>"
    kClassLoader,       // "<classloader>"
    kSigners,           // "<signers>"
    kProtectionDomain,  // "<protection domain>"
    kConstantPool,      // "<constant pool[i]>", i = `field` (constant pool index)
    kUnnamed,           // "<reference[i]>", i = `array_index`: ClassInfo::unnamed_references
  };
  Kind kind = Kind::kField;
  ClassId declaring_class;
  uint32_t field = 0;
  uint64_t array_index = 0;
};

// Options that shape the graph (the reader passes them through).
struct HeapGraphOptions {
  // Add MAT's "<class>" pseudo reference from every instance and array to its class object (as
  // Eclipse MAT does; NetBeans and perflib do not). Costs one edge per object.
  bool instance_class_edges = false;
};

class HeapGraph {
 public:
  HeapGraph();  // an empty graph (no objects, no classes)
  ~HeapGraph();
  HeapGraph(HeapGraph&&) noexcept;
  HeapGraph& operator=(HeapGraph&&) noexcept;
  HeapGraph(const HeapGraph&) = delete;
  HeapGraph& operator=(const HeapGraph&) = delete;

  const DumpInfo& info() const;

  // ---- Objects. Every accessor below is O(1) unless noted; REQUIRES: v < object_count().
  uint32_t object_count() const;
  ObjectKind kind(ObjectIndex v) const;
  // The class of the object. For class objects this is java.lang.Class (kNoClass if the dump has no
  // java.lang.Class); use DescribedClass() for the class a class object stands for.
  ClassId class_of(ObjectIndex v) const;
  // For a class object: the class it is the class object of; kNoClass for every other object.
  ClassId DescribedClass(ObjectIndex v) const;
  // Shallow size in bytes under info().size_model, or the size the dump records for the object
  // when the model does not reproduce it (IBM dumps; HeapGraphBuilder::SetShallowSize,
  // BulkHeapGraphBuilder::SetObjectShallowSize). O(1), or O(log k) for a graph with k such sizes.
  uint64_t shallow_size(ObjectIndex v) const;
  // Raw HPROF id of the object (the object's address in HotSpot and Android dumps).
  uint64_t object_id(ObjectIndex v) const;
  // Element count for arrays, 0 for other objects (instances with unnamed references included).
  uint32_t array_length(ObjectIndex v) const;
  // Android heap of the object (HeapId{0} when the dump has no HEAP DUMP INFO). O(log heap
  // switches).
  HeapId heap(ObjectIndex v) const;
  // Heap names by HeapId: {"default"} for HotSpot; Android: "default", "app", "image", "zygote",
  // ...
  std::span<const std::string> heap_names() const;
  // The object with raw id `id`, or kNoObject. Expected O(1) (address-bucket directory over the
  // sorted ids), O(log n) worst case.
  ObjectIndex FindObject(uint64_t id) const;

  // ---- References.
  // Forward references (see the file comment for what an edge is).
  const CsrGraph& graph() const;
  // Builds the reverse graph: successors(v) are the objects that reference v, one entry per forward
  // edge (so duplicates are kept), weak flags carried over. O(n + e) time, 4n + 4e + e/8 bytes; the
  // caller owns it.
  CsrGraph BuildReverseGraph() const;
  // Which slot forward edge `edge` of `from` comes from. REQUIRES: graph().first_edge(from) <= edge
  // < graph().first_edge(from + 1). O(number of reference slots of `from`) (word-wise bit counting;
  // for a huge array about length/64 operations).
  ReferenceSlot ResolveReference(ObjectIndex from, uint64_t edge) const;
  // Human-readable name of that slot: a field name "next" (declared by the object's own class) or
  // "java.util.HashMap.table" (declared by a superclass), "static INSTANCE", "[12]", or a pseudo
  // reference
  // "<class>", "<super>", "<classloader>", "<signers>", "<protection domain>", "<constant
  // pool[3]>", or "<reference[2]>" (a reference of an instance whose class has
  // unnamed_references).
  std::string DescribeReference(ObjectIndex from, uint64_t edge) const;
  std::string DescribeSlot(ObjectIndex from, const ReferenceSlot& slot) const;

  // ---- Classes.
  uint32_t class_count() const;
  // REQUIRES: c < class_count().
  const ClassInfo& class_info(ClassId c) const;
  // Every class with that name (several class loaders can define the same name), in ClassId order.
  // O(log C).
  std::vector<ClassId> FindClasses(std::string_view name) const;
  // The first class with that name, or kNoClass.
  ClassId FindClass(std::string_view name) const;
  // True if `c` is `ancestor` or a subclass of it. O(depth of the hierarchy).
  bool IsSubclassOf(ClassId c, ClassId ancestor) const;

  // ---- GC roots.
  // Every root record whose object is in the dump, in dump order (an object can be a root several
  // times).
  std::span<const GcRoot> gc_roots() const;
  // The distinct root objects, ascending.
  std::span<const ObjectIndex> root_objects() const;

  // Bytes of memory this graph holds (used sizes of its arrays and tables), for budgets and
  // benchmarks.
  uint64_t MemoryUsage() const;

  struct Rep;  // internal representation (heap_graph_internal.h), filled by the builders

  // Validates `rep` (CSR shape, indices in range, class references) and wraps it. Used by
  // HeapGraphBuilder and BulkHeapGraphBuilder (heap_graph_builder.h). Errors: Internal when an invariant does not hold (a bug in the
  // producer).
  static StatusOr<HeapGraph> FromRep(std::unique_ptr<Rep> rep);

  // Returns `graph` with `roots` appended to its GC root records (root_objects() is rebuilt).
  // info().roots_inferred becomes true when a root of kind kPureRoot or kArtificialRoot is added;
  // `note`, when not empty, is appended to info().warnings. O(n + roots). Used by root inference
  // (analysis/root_inference.h). Errors: InvalidArgument when a root's object is out of range.
  static StatusOr<HeapGraph> AddRoots(HeapGraph graph, std::span<const GcRoot> roots,
                                      std::string note = {});

 private:
  explicit HeapGraph(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

// Aligns `n` bytes up to a multiple of `alignment` (any positive value; 0 and 1 leave `n` as it
// is): object sizes under an alignment (HotSpot's -XX:ObjectAlignmentInBytes). O(1).
inline uint64_t AlignUp(uint64_t n, uint64_t alignment) {
  return alignment <= 1 ? n : (n + alignment - 1) / alignment * alignment;
}

// Shallow size in bytes of an array of `length` elements of type `element` under `info.size_model`
// (and `info.layout` for kHotSpot; references count info.id_size bytes for kAndroid and kNetBeans).
// O(1).
uint64_t ArrayShallowSize(const DumpInfo& info, FieldType element, uint64_t length);

// Per-class totals of one graph: instances and shallow bytes per ClassId (class objects are counted
// under java.lang.Class when the dump has it). Index by ClassId::value. O(n).
struct ClassTotals {
  uint64_t instances = 0;
  uint64_t shallow_bytes = 0;
};
std::vector<ClassTotals> ComputeClassTotals(const HeapGraph& graph);

// The class histogram of the dump, like `GC.class_histogram -all` / `jmap -histo` (every object in
// the dump, reachable or not): one row per class with at least one object, class names in source
// form ("byte[]", "java.lang.Object[]"), sorted by bytes descending then name; module empty.
// Classes of the same name from different loaders stay separate rows. O(n + C log C).
ClassHistogram ComputeClassHistogram(const HeapGraph& graph);

// Builds small graphs by hand: for tests and synthetic inputs (dump readers, which need streaming
// speed and bounded memory, use BulkHeapGraphBuilder in heap_graph_builder.h). Objects may be
// added in any order; Build() sorts them by id, resolves references (dropping nulls, counting
// dangling ones) and computes sizes. Shallow sizes: instances take ClassInfo::instance_size as given; arrays take
// align(array header + length x element size) with the layout of `info.layout` (or length x element
// size for SizeModel::kAndroid, the NetBeans formula for kNetBeans); class objects take
// ClassInfo::class_object_size.
class HeapGraphBuilder {
 public:
  explicit HeapGraphBuilder(DumpInfo info, HeapGraphOptions options = {});
  ~HeapGraphBuilder();

  // The dump's facts as given to the constructor (instance_class_edges taken from the options); a
  // reader may complete them (warnings, counts) before Build().
  DumpInfo& info();

  // Adds a class. `info.super_class` must be a class added before (or kNoClass);
  // `info.class_object` and `info.class_loader` are ignored: pass raw ids instead (0 = none). A
  // class object with id `class_object_id` is created unless it is 0.
  ClassId AddClass(ClassInfo info, uint64_t class_object_id, uint64_t class_loader_id = 0);
  // An instance of non-array class `cls`; `reference_values` holds one raw id per reference field
  // of the class hierarchy in dump order (own fields first, then the superclass's), 0 for null;
  // for a class with unnamed_references, the instance's references (any number).
  void AddInstance(uint64_t id, ClassId cls, std::vector<uint64_t> reference_values);
  void AddObjectArray(uint64_t id, ClassId array_class, std::vector<uint64_t> elements);
  void AddPrimitiveArray(uint64_t id, ClassId array_class, uint32_t length);
  // Raw ids of the static reference fields of `cls` in static_fields order (one per kObject static
  // field).
  void SetStaticReferences(ClassId cls, std::vector<uint64_t> values);
  void AddRoot(uint64_t id, GcRootKind kind, uint32_t thread_serial = 0, int32_t frame = -1);
  // The shallow size of object `id` in bytes when the dump gives it and the size model would
  // compute another (IBM dumps record array and object sizes). The last call for an id wins; an id
  // with no object is ignored.
  void SetShallowSize(uint64_t id, uint64_t bytes);

  // Errors: InvalidArgument for an unknown class, a reference count that does not match the class
  // layout, an object added twice with the same id.
  StatusOr<HeapGraph> Build() &&;

 private:
  struct Pending;
  std::unique_ptr<Pending> pending_;
};

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_HEAP_GRAPH_H_
