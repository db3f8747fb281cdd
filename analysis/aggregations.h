// Aggregations over the dominator tree of a heap graph: what turns a dominator tree into answers
// about classes (seeds/002, "Dominators in the SAP Memory Analyzer": grouping by class, exclude
// patterns, immediate dominators, minimum retained size of sets; MAT's leak suspects for the
// accumulation point).
//
//   * ComputeClassRetainedSizes: the class histogram with shallow and retained size per class,
//     where the retained size of a class is the minimum retained size of its instance set (MAT
//     "retained heap (min)", NetBeans getRetainedSizeByClass): the sum of the retained sizes of the
//     instances that no other instance of the same class dominates. One iterative preorder walk,
//     O(n).
//   * GroupDominatedByClass: the dominator tree grouped by class (MAT "Group by class" on the
//     dominator tree): the immediate children of a set of nodes (the super root for the top level)
//     grouped by class.
//   * ImmediateDominatorsByClass: "who keeps these objects alive" (MAT's immediate_dominators
//     query): for every object the immediate dominator, climbing past dominators whose class
//     matches an exclude pattern (and optionally past instances of the object's own class), grouped
//     by the dominator's class.
//   * FindAccumulationPoints: the object whose retained set holds most of a set's retained size.
//   * TopObjectsByRetainedSize: the biggest objects (NetBeans/VisualVM "biggest objects by retained
//     size").
//
// Class objects: their class is java.lang.Class (HeapGraph::class_of, as in MAT). For grouping
// dominators (ImmediateDominatorsByClass) a class object is keyed and matched by the class it
// describes instead (ClassKey::class_object = true), so a static field holder `class
// com.acme.Cache` is reported as such and not hidden behind the exclude pattern that matches
// "java.lang.Class".
//
// Sizes are in bytes (whatever unit `retained_sizes` and HeapGraph::shallow_size use). Every
// function is reentrant, reads its inputs only and never recurses. `retained_sizes` is always the
// output of ComputeRetainedSizes(tree, ...) (tree.object_count() + 1 entries); `tree` is the
// dominator tree of `graph`.
#ifndef HEAPWATCH_ANALYSIS_AGGREGATIONS_H_
#define HEAPWATCH_ANALYSIS_AGGREGATIONS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/csr_graph.h"
#include "analysis/dominator_tree.h"
#include "analysis/heap_graph.h"
#include "analysis/retained_size.h"
#include "common/status.h"

namespace heapwatch::analysis {

// Class-name patterns as MAT's skip/exclude patterns: each is a regular expression (ECMAScript
// grammar) that must match the whole class name (Java source form, "java.util.HashMap$Node",
// "char[]"). A name matches the set when it matches any pattern. Note that "java.*" as a regular
// expression also matches "javax.swing.JFrame" and "java.lang.Object[]", as it does in MAT.
// Thread-safety: immutable after Compile; Matches is safe from several threads.
class ClassNamePatterns {
 public:
  ClassNamePatterns();  // matches nothing
  ~ClassNamePatterns();
  ClassNamePatterns(ClassNamePatterns&&) noexcept;
  ClassNamePatterns& operator=(ClassNamePatterns&&) noexcept;

  // Errors: InvalidArgument naming the pattern that is not a valid regular expression.
  static StatusOr<ClassNamePatterns> Compile(std::span<const std::string> patterns);

  // O(length of the name) per pattern.
  bool Matches(std::string_view class_name) const;
  const std::vector<std::string>& patterns() const { return patterns_; }

 private:
  struct Compiled;
  std::vector<std::string> patterns_;
  std::unique_ptr<Compiled> compiled_;
};

// The default exclude patterns: {"java.*", "javax.*", "jdk.*", "sun.*", "com\\.sun\\..*"}:
// JDK-internal holders such as String, HashMap$Node or the Object[] of a collection tell a person
// nothing about who leaks. ("java.*" is MAT's default, MAT at the corpus snapshot also skips sun.*,
// and com.sun.* is in MAT's default skip pattern.)
std::vector<std::string> DefaultExcludePatterns();

// ---- Class histogram with retained sizes.

// Per-class figures over the objects in the dominator tree (reachable objects, unless the tree
// keeps unreachable ones). Index by ClassId::value; class objects count under their class,
// java.lang.Class.
struct ClassRetained {
  uint64_t instances = 0;
  uint64_t shallow_bytes = 0;
  // Minimum retained size of the instance set: sum of retained_sizes[v] over instances v with no
  // proper dominator-tree ancestor of the same class.
  uint64_t retained_bytes = 0;
};
// One preorder walk of the dominator tree with a per-class count of ancestors on the current path.
// O(n) time; memory: 4 bytes per class plus the walk's stack (8 bytes per level of the deepest
// path). Objects whose class is kNoClass are skipped. Errors: InvalidArgument if the sizes do not
// match.
StatusOr<std::vector<ClassRetained>> ComputeClassRetainedSizes(const HeapGraph& graph,
                                                               const DominatorTree& tree,
                                                               const RetainedSizes& retained_sizes);

// ---- Dominator tree grouped by class.

struct DominatorGroup {
  ClassId class_id;  // kNoClass for objects without a class
  uint64_t objects = 0;
  uint64_t shallow_bytes = 0;
  uint64_t retained_bytes =
      0;  // sum of the children's retained sizes (children are disjoint subtrees)
};
// The children in the dominator tree of every node of `parents` (pass {tree.super_root()} for the
// top level of the tree), grouped by class (HeapGraph::class_of) and sorted by retained_bytes
// descending. O(total number of children + groups log groups). Errors: InvalidArgument for a parent
// out of range.
StatusOr<std::vector<DominatorGroup>> GroupDominatedByClass(const HeapGraph& graph,
                                                            const DominatorTree& tree,
                                                            const RetainedSizes& retained_sizes,
                                                            std::span<const ObjectIndex> parents);

// ---- Immediate dominators grouped by class ("who keeps them alive").

// What a dominator is grouped by: its class, or for a class object the class it describes.
struct ClassKey {
  ClassId class_id;           // kNoClass together with root == true for the super root
  bool class_object = false;  // the dominators are class objects (static fields hold the objects)
  bool root = false;  // "<ROOT>": the climb reached the super root (GC roots, top-level objects)
  friend bool operator==(const ClassKey&, const ClassKey&) = default;
};
// "<ROOT>", "class com.acme.Cache" for class objects, otherwise the class name.
std::string ClassKeyName(const HeapGraph& graph, const ClassKey& key);

struct ImmediateDominatorsOptions {
  // Dominators whose class (for class objects: the described class) matches are climbed past.
  const ClassNamePatterns* exclude =
      nullptr;  // nullptr = exclude nothing (MAT with an empty pattern)
  // Also climb past dominators of the same class as the dominated object (a linked list's previous
  // node says nothing about who holds the list). MAT does not; the suspect report does.
  bool skip_same_class = false;
  // Key (and match against `exclude`) a class-object dominator by the class it describes ("class
  // com.acme.Cache"). False does what MAT does: a class object is an instance of java.lang.Class,
  // so "java.*" climbs past every class object.
  bool class_objects_by_described_class = true;
  // When a climb past excluded dominators reaches the super root ("<ROOT>"), end it instead at the
  // nearest climbed-past dominator that is a holder a person can act on: a thread (an instance of
  // java.lang.Thread or a subclass, or a THREAD_OBJECT GC root) or a class object (its static
  // fields hold the objects). MAT does not (false); the suspect report does, so that ThreadLocal
  // values held by pool threads are "kept alive by java.lang.Thread", not by "<ROOT>"
  // (docs/analysis-report.md).
  bool name_excluded_root_holder = false;
};

struct DominatorClassGroup {
  ClassKey key;
  std::vector<ObjectIndex> dominators;  // distinct, in first-seen order; empty for "<ROOT>"
  uint64_t dominated = 0;               // objects of the input set in this group
  uint64_t dominator_shallow_bytes = 0;
  uint64_t dominated_shallow_bytes = 0;
  uint64_t dominator_retained_bytes = 0;  // minimum retained size of `dominators`
};
// For each object of `objects` in the tree (others are ignored; duplicates count once): d = its
// immediate dominator; while d is not the super root and d's class matches options.exclude (or,
// with skip_same_class, d is of the object's own class), d = immediate dominator of d (with
// name_excluded_root_holder, a climb that ends at the super root ends at the nearest climbed-past
// thread or class object instead, when there is one). The objects
// are grouped by the ClassKey of the d they end at, sorted by dominated_shallow_bytes descending
// (MAT's order). Cost: O(k + number of distinct ancestors climbed) with memoised climbs per class
// (as MAT caches excluded classes), O(n) at most; one regex match per distinct class.
// Errors: InvalidArgument for an object out of range or mismatched sizes.
StatusOr<std::vector<DominatorClassGroup>> ImmediateDominatorsByClass(
    const HeapGraph& graph, const DominatorTree& tree, const RetainedSizes& retained_sizes,
    std::span<const ObjectIndex> objects, const ImmediateDominatorsOptions& options);

// ---- Accumulation point.

struct AccumulationPoint {
  ObjectIndex object;        // an object, or tree.super_root() never (see below)
  uint64_t set_members = 0;  // members of the set in its retained set
  uint64_t set_bytes = 0;    // the part of the set's minimum retained size its retained set holds
};
struct AccumulationResult {
  uint64_t set_members = 0;               // members in the tree
  uint64_t minimum_retained_bytes = 0;    // of the whole set (= MinimumRetainedSize)
  std::vector<AccumulationPoint> points;  // at most max_points, heaviest first
};
// The accumulation point of a set S (e.g. all instances of a suspect class), in the spirit of MAT's
// leak suspects ("accumulated in one instance of X"):
//   Let w(v) be the part of S's minimum retained size that lies in v's dominator subtree (the sum
//   of retained_sizes[x] over members x not dominated by another member, x in subtree(v)). Starting
//   at the super root, repeatedly step to the child c with the largest w(c) while w(c) >= ratio *
//   w(current) and c is not itself a member. Where the walk stops:
//     * at an object: that object is the single accumulation point (it retains at least ratio of
//       its parent's share, and no single child of it does), e.g. the ArrayList or HashMap table
//       that holds the leaked instances;
//     * at the super root (no GC root's subtree holds ratio of S): S is spread; the points are the
//       super root's children with the largest w, at most max_points of them, each holding at least
//       `min_share` of the total.
//   A member reached as the heaviest child ends the walk at its parent (the holder), unless the
//   parent is the super root, in which case the member itself is the point.
//   With `graph`, a single point inside a run of objects of one class on the walk (the nodes of a
//   linked list, the entries of a java.lang.ref.ReferenceQueue or of Finalizer's list, the
//   PhantomCleanable list of a Cleaner: each node dominates the next) moves up that run to its
//   first object, the head of the linked structure. Without it the walk would stop wherever the
//   share of the remaining tail drops below `ratio`, an arbitrary node deep in the list that
//   changes from dump to dump, and two suspect classes held by the same list (the nodes' class
//   and their payload's) would name different points.
// ratio in (0, 1]; MAT's leak-suspect "big drop" default is 0.7.
// Cost: O(k + distinct ancestors of the members + children of the nodes on the walk), hash maps
// sized to the ancestors. Errors: InvalidArgument for a member out of range, ratio outside (0, 1],
// mismatched sizes (`graph` included).
StatusOr<AccumulationResult> FindAccumulationPoints(const DominatorTree& tree,
                                                    const RetainedSizes& retained_sizes,
                                                    std::span<const ObjectIndex> set,
                                                    double ratio = 0.7, size_t max_points = 5,
                                                    double min_share = 0.05,
                                                    const HeapGraph* graph = nullptr);

// ---- Biggest objects.

// The `count` objects with the largest retained sizes (ties: lower ObjectIndex first), descending;
// with `top_level_only`, only children of the super root (the first level of MAT's dominator tree).
// O(n log count) time, O(count) memory.
std::vector<ObjectIndex> TopObjectsByRetainedSize(const DominatorTree& tree,
                                                  const RetainedSizes& retained_sizes, size_t count,
                                                  bool top_level_only = false);

// All objects whose class (HeapGraph::class_of) is one of `classes` (several classes can share a
// name, one per class loader) and that are in the tree, in index order. O(n + classes).
std::vector<ObjectIndex> InstancesOf(const HeapGraph& graph, const DominatorTree& tree,
                                     std::span<const ClassId> classes);

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_AGGREGATIONS_H_
