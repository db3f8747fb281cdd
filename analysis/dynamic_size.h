// Dynamic sizes: of an object set taken together (exact), of every object (exact where affordable),
// and a near-linear estimate of every object's dynamic size.
//
// Definition (dynaTrace thesis, seed 001, chapter 2): the dynamic size of an object is "the size of
// the object and the size of all other objects reachable from it"; of a set, the total shallow size
// of the objects reachable from any member, each counted once. It is always >= the retained (GC)
// size (the retained set is a subset of the reachable set) and exposes what the retained size
// hides: objects that share a big structure (the thesis's Fig. 2.3: a buffer and a list holding the
// same data objects both retain little, both reach everything).
//
// Which references are followed (DynamicSizeOptions):
//   * default (strong references, as the issue asks: instance fields, array elements, static fields
//     of a class object that is itself reached): every reference of the HeapGraph except
//       - references flagged weak (java.lang.ref.Reference.referent of soft, weak, phantom and
//         final references): a referent counts only if it is also reachable otherwise;
//       - an object's implicit reference to its class object (MAT's "<class>" pseudo reference, a
//         graph edge only when the dump was read with instance_class_edges): a class object, and
//         through it its static fields, class loader, superclass, ..., counts only when something
//         else references it (a field of type Class, another class object's superclass or
//         constant-pool entry). Otherwise every object would reach its class's statics and loader,
//         and most objects would have the same dynamic size as their class loader.
//     A class object that is reached contributes its own shallow size and follows its pseudo
//     references (superclass, class loader, signers, protection domain, constant pool) and static
//     fields: a class keeps its loader and statics alive.
//   * all_references (the thesis's variant: its extended dumps held every reference JVMTI's
//     IterateOverReachableObjects reports, thesis appendix B.2): weak referents too, and every
//     object's reference to its class object (added on the fly when the graph does not store it).
// ReferencesFor() gives the StrongComponentsOptions of the same reference set for the HeapGraph
// overload of CondenseStrongComponents.
//
// Sizes are in bytes (HeapGraph::shallow_size, the dump's size model). Objects are counted once
// however many paths reach them; an object of the set counts itself. Unreachable objects (garbage)
// have dynamic sizes like any other: reachability from GC roots plays no role.
//
// Thread-safety: every function is reentrant and reads its inputs only; a DynamicSizes is a plain
// value whose const methods are safe to call concurrently.
#ifndef HEAPWATCH_ANALYSIS_DYNAMIC_SIZE_H_
#define HEAPWATCH_ANALYSIS_DYNAMIC_SIZE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/csr_graph.h"
#include "analysis/heap_graph.h"
#include "analysis/retained_size.h"
#include "analysis/strong_components.h"
#include "common/status.h"

namespace heapwatch::analysis {

struct DynamicSizeOptions {
  // The thesis's variant: follow weak/soft/phantom/final referents and every object's reference to
  // its class object too (see the file comment).
  bool all_references = false;
};

struct DynamicSize {
  uint64_t bytes = 0;    // total shallow size of the reachable set, in bytes
  uint64_t objects = 0;  // number of objects in it
  friend bool operator==(const DynamicSize&, const DynamicSize&) = default;
};

// The StrongComponentsOptions whose HeapGraph condensation has exactly the references `options`
// follows (follow_weak_references = follow_class_edges = all_references).
StrongComponentsOptions ReferencesFor(const DynamicSizeOptions& options);

// Exact dynamic size of `objects` taken together: every object reachable from any of them (the
// members included), each counted once (thesis section 4.3, Listing 4.2, made iterative: a DFS with
// an explicit stack). Duplicates in `objects` count once; an empty set has size 0.
// Cost: O(reached objects + their references) time; memory: a bitmap of n bits (n/8 bytes, cleared
// once) plus a stack of at most 4 bytes per reached object. Independent of the rest of the heap.
// Measured: the 2.49 M instances of the most numerous class of the 978 MiB benchmark dump (3.28 M
// objects reached) in 0.14 s CPU, 0.26-0.33 s wall on the loaded 2-core machine.
// Errors: InvalidArgument if a member is out of range (>= object_count()).
StatusOr<DynamicSize> ComputeDynamicSize(const HeapGraph& graph,
                                         std::span<const ObjectIndex> objects,
                                         const DynamicSizeOptions& options = {});

// The same on a plain CsrGraph with the caller's sizes: every edge is a reference, weak ones only
// with options.all_references (a CsrGraph has no class-object edges to tell apart). `shallow_size`
// is called once per reached object. Errors: InvalidArgument if a member or a followed reference
// is out of range.
StatusOr<DynamicSize> ComputeDynamicSize(const CsrGraph& graph, ShallowSizeFn shallow_size,
                                         std::span<const ObjectIndex> objects,
                                         const DynamicSizeOptions& options = {});

// Dynamic size of every object, exact or estimated, as the functions below return them. All
// objects of one strongly connected component have the same dynamic size (each reaches the others:
// thesis section 4.4), so the values are stored per component: the component of each object (4
// bytes per object) plus, per component, the bytes (8), the object count (4) and whether the value
// is exact (1 bit). Reads are O(1). Plain value; const methods are safe to call concurrently.
class DynamicSizes {
 public:
  DynamicSizes() = default;

  uint32_t object_count() const { return static_cast<uint32_t>(component_of_.size()); }
  uint32_t component_count() const { return static_cast<uint32_t>(bytes_.size()); }
  // Dynamic size of object v in bytes (estimated or exact, see exact()). REQUIRES: v <
  // object_count().
  uint64_t bytes(ObjectIndex v) const { return bytes_[component_of_[v.value].value]; }
  // Number of objects reachable from v (v included); an estimate where !exact(v), rounded, at most
  // 2^32 - 1.
  uint64_t objects(ObjectIndex v) const { return objects_[component_of_[v.value].value]; }
  // True when bytes(v) and objects(v) are exact (always for ComputeExactDynamicSizes; for the
  // estimate, when the object reaches few enough components that its sketch holds all of them).
  bool exact(ObjectIndex v) const { return exact_[component_of_[v.value].value]; }
  ComponentId component(ObjectIndex v) const { return component_of_[v.value]; }
  // The same per component. REQUIRES: c < component_count().
  uint64_t component_bytes(ComponentId c) const { return bytes_[c.value]; }
  uint64_t component_objects(ComponentId c) const { return objects_[c.value]; }
  bool component_exact(ComponentId c) const { return exact_[c.value]; }
  // bytes(v) of every object (8 bytes per object: for tests and small graphs).
  std::vector<uint64_t> BytesVector() const;
  // Bytes held.
  uint64_t MemoryUsage() const;

 private:
  friend class DynamicSizesBuilder;
  std::vector<ComponentId> component_of_;
  std::vector<uint64_t> bytes_;
  std::vector<uint32_t> objects_;
  std::vector<bool> exact_;
};

// ---- Exact dynamic size of every object.
//
// Method: on the condensation DAG (C components, E edges; strong_components.h) each component's
// reachable set is the union of its successors' sets. Two exact methods, chosen by cost:
//   1. the thesis's SimpleCompDynamicSize (section 4.4): a DFS over the DAG from every component,
//      with a per-component "visited by" stamp instead of clearing a visited array. Cost: the sum
//      over all components of the components and DAG edges they reach; quadratic in the worst case,
//      near-linear for tree-like heaps;
//   2. bit-parallel transitive closure: targets are taken 256 components at a time; one pass over
//      the components in increasing id order (sinks first) ORs each component's 256-bit "reaches
//      target i" mask from its successors' (only components with id >= the chunk's first target
//      can reach it, so each pass starts there), and adds the targets' bytes and counts with
//      byte-indexed lookup tables. Cost: the sum over the passes of the components and DAG edges
//      at or above the chunk, about C/256 * (C + E) / 2 work units (each 4 words), known before it
//      starts.
// kAuto predicts method 1's cost from a DFS out of 256 components spread over the ids (a sample
// allowed 1/8 of method 2's cost and of max_work), runs method 1 if the prediction is lower,
// stopping it once it has done as much work as method 2 would (or max_work), and otherwise (or
// then) method 2 if that fits max_work. So it does at most about 2.1 times the work of the cheaper
// method, and refuses (ResourceExhausted) rather than exceed about twice max_work. Measured:
// docs/dynamic-size.md. Memory: besides the condensation and the result, 4C (method 1's stamps) or
// 32C (method 2's masks) + 8C, and a DFS stack.
struct ExactDynamicSizesOptions {
  // Budget in work units (a component or DAG edge visited by method 1, a component or edge of one
  // pass of method 2). Default 2^33: tens of seconds at most (a unit takes 1-4 ns here).
  uint64_t max_work = uint64_t{1} << 33;
  // kAuto as described above; the other two run one method only (for tests and benchmarks), and
  // refuse when it would exceed max_work.
  enum class Method : uint8_t { kAuto, kComponentDfs, kBitParallel };
  Method method = Method::kAuto;
};

// Exact dynamic size (bytes and object count) of every object of `graph`, following the references
// `references` selects. Time: O(n + m) for the condensation plus the cost above; memory: the
// condensation, the method's scratch, and the result (4n + 13C bytes). Errors: ResourceExhausted
// when both methods would exceed options.max_work (the message gives both costs); InvalidArgument
// as CondenseStrongComponents.
StatusOr<DynamicSizes> ComputeExactDynamicSizes(const HeapGraph& graph,
                                                const DynamicSizeOptions& references = {},
                                                const ExactDynamicSizesOptions& options = {});
// The same on a condensation made by the caller (its component_bytes are the sizes; the result
// copies its component_of). Errors: ResourceExhausted as above; InvalidArgument if the
// condensation is inconsistent (sizes of its vectors, a DAG edge that does not go to a lower id).
StatusOr<DynamicSizes> ComputeExactDynamicSizes(const Condensation& condensation,
                                                const ExactDynamicSizesOptions& options = {});

// ---- Estimated dynamic size of every object.
//
// The thesis's BFS-based algorithm (section 4.5, Listing 4.3) propagates each component's full set
// of reachable ids from the leaves to the roots and ran out of memory on real dumps; this estimate
// propagates bounded samples of those sets the same way.
// Method: priority sampling (N. Duffield, C. Lund, M. Thorup, "Priority sampling for estimation of
// arbitrary subset sums", J. ACM 54(6), 2007) of the components, merged over the condensation DAG
// as bottom-k sketches (E. Cohen, H. Kaplan, "Summarizing data using bottom-k sketches", PODC
// 2007): each component x with bytes w_x > 0 gets the rank r_x = u_x / w_x with u_x a hash of (x,
// seed) uniform in (0, 1], the same wherever x appears. The sketch of a set holds its k + 1 items
// of smallest rank. Components are visited in increasing id order (sinks first, so every successor
// is done), and sketch(x) = the k + 1 smallest of {x} and the successors' sketches (duplicates
// merged); a sketch is freed once its last predecessor has used it. Estimate for x when its sketch
// is full, with tau = 1 / (the (k+1)-th smallest rank): w_x + the sum over the other k smallest of
// max(w_i, tau) bytes (unbiased: DLT's subset-sum estimator for the reachable set minus x, plus
// x's own bytes, which are certain), and objects_x + the sum of objects_i * max(1, tau / w_i) for
// the count. When the sketch holds at most k items it is the whole reachable set and the value is
// exact (DynamicSizes::exact()). Components of 0 bytes are never sampled: they add to no other
// component's estimated object count (only to their own, and to exact values).
//
// Error: unbiased; relative standard error about 1/sqrt(k - 1) or less (DLT 2007: the variance of
// the total estimate is at most W^2 / (k - 1); skewed weights, where heavy components are taken
// whole, give less). At the default k = 512: at most about 4.4%. Measured on the 22 corpus dumps:
// median relative error of the estimated (not exact) values 0.02-4.6% per dump, p90 at most 5.7%
// (k = 256: up to 6.2% and 10%); docs/dynamic-size.md. Not clamped: an estimate can fall below the
// object's retained size or the exact value of a successor.
//
// Cost: O(n + m) for the condensation plus O(C + E * k) for the merges (each DAG edge merges two
// sorted lists of at most k + 1 entries); memory: 8 bytes per sketch entry for the sketches still
// waiting for a predecessor (at most k + 1 entries each, fewer for small reachable sets), 10 bytes
// per component of bookkeeping, plus the condensation and the result.
struct DynamicSizeSketchOptions {
  // k, the number of sampled components per sketch (2..65534). Error and memory as above; on the
  // benchmark dumps k = 512 costs about what k = 256 does (most sketches are small or shared).
  uint32_t sketch_size = 512;
  // Seed of the hash that gives each component its rank.
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  // Budget for the sketches waiting for a predecessor (their peak, in bytes): beyond it the
  // estimate refuses (ResourceExhausted) instead of growing.
  uint64_t max_sketch_bytes = uint64_t{4} << 30;
};

// Estimated dynamic size of every object of `graph`, following the references `references`
// selects. Errors: InvalidArgument if sketch_size is out of range, or as CondenseStrongComponents;
// ResourceExhausted when the sketches exceed max_sketch_bytes.
StatusOr<DynamicSizes> EstimateDynamicSizes(const HeapGraph& graph,
                                            const DynamicSizeOptions& references = {},
                                            const DynamicSizeSketchOptions& options = {});
// The same on a condensation made by the caller (copies its component_of). Errors:
// InvalidArgument if sketch_size is out of range or the condensation is inconsistent;
// ResourceExhausted as above.
StatusOr<DynamicSizes> EstimateDynamicSizes(const Condensation& condensation,
                                            const DynamicSizeSketchOptions& options = {});

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_DYNAMIC_SIZE_H_
