// Internal to analysis/leak_patterns/: what every recogniser reads (the graph, its dominator tree
// and retained sizes) with the lookups they share: a field's value by name, subclass tests, the
// static field that holds an object, object names and paths from GC roots. Not a public header.
#ifndef HEAPWATCH_ANALYSIS_LEAK_PATTERNS_PATTERN_CONTEXT_H_
#define HEAPWATCH_ANALYSIS_LEAK_PATTERNS_PATTERN_CONTEXT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "analysis/leak_patterns/leak_patterns.h"

namespace heapwatch::analysis::leak_patterns {

class PatternContext {
 public:
  PatternContext(const HeapGraph& graph, const DominatorTree& tree, const RetainedSizes& retained,
                 const ThreadNames* thread_names = nullptr);

  const HeapGraph& graph() const { return graph_; }
  const DominatorTree& tree() const { return tree_; }
  uint64_t retained(ObjectIndex v) const { return retained_[v.value]; }
  bool reachable(ObjectIndex v) const { return v.valid() && tree_.reachable(v); }

  // The object the instance field `name` of `v` references (declared by v's class or a superclass;
  // the first one of that name, own class first), kNoObject when null or absent. O(references of
  // v x reference slots of v).
  ObjectIndex Field(ObjectIndex v, std::string_view name) const;
  // Same, with the index of the edge in graph().graph().targets (kNoEdge when absent).
  ObjectIndex Field(ObjectIndex v, std::string_view name, uint64_t* edge) const;

  // `cls` is the class named `base` or a subclass of it. Memoised per (class, base).
  bool IsSubclassOf(ClassId cls, std::string_view base) const;
  // The class of `v` ("class X" for class objects is not used here: the class of an instance or
  // array), "" when none.
  std::string ClassName(ObjectIndex v) const;
  // "java.lang.Thread@0x7f00" (the raw id in hex).
  std::string ObjectName(ObjectIndex v) const;
  // The GC-root kind name of `v` ("THREAD_OBJECT"), "" when it is not a GC root.
  std::string RootKind(ObjectIndex v) const;
  bool IsThreadRoot(ObjectIndex v) const;
  // The name of thread `v` as reports may show it (masked, sanitised), "" when unknown.
  std::string ThreadName(ObjectIndex v) const;
  // "java.lang.Thread@0x7f00 \"pool-#-thread-#\"": ObjectName plus the quoted thread name, if any.
  std::string ThreadObjectName(ObjectIndex v) const;

  // "static com.acme.Cache.ENTRIES" for every object some static field references (the first
  // static field found, in class order); built on first use: O(references of class objects).
  std::string StaticFieldHolding(ObjectIndex v) const;

  ObjectSummary Summary(ObjectIndex v) const;
  // The shortest path from a GC root to `v` (analysis/gc_root_paths.h), named, and shortened when
  // long (analysis/report.h PathReport); found = false when none. O(objects + references).
  StatusOr<GcRootPathReport> PathTo(ObjectIndex v) const;
  // Appends to `path` (which must end at `from`) the step from `from` through `edge`.
  void AppendStep(GcRootPathReport* path, ObjectIndex from, uint64_t edge, ObjectIndex to) const;

 private:
  const HeapGraph& graph_;
  const DominatorTree& tree_;
  const RetainedSizes& retained_;
  const ThreadNames* thread_names_;
  absl::flat_hash_map<uint32_t, GcRootKind> root_kind_;
  absl::flat_hash_set<uint32_t> thread_roots_;  // THREAD_OBJECT roots
  mutable absl::flat_hash_map<std::string, std::vector<uint8_t>> subclass_cache_;
  mutable bool statics_built_ = false;
  mutable absl::flat_hash_map<uint32_t, std::string> static_holder_;
};

// True for class names of the JDK ("java.", "javax.", "jdk.", "sun.", "com.sun.").
bool IsJdkClassName(std::string_view name);

// The recognisers (one per file), each appending its matches.
Status RecognizeThreadLocalValues(const PatternContext& context, const LeakPatternOptions& options,
                                  std::vector<LeakPatternMatch>* matches);
Status RecognizeListeners(const PatternContext& context, const LeakPatternOptions& options,
                          std::vector<LeakPatternMatch>* matches);
Status RecognizePinnedClassLoaders(const PatternContext& context, const LeakPatternOptions& options,
                                   std::vector<LeakPatternMatch>* matches);
Status RecognizeStaticCollections(const PatternContext& context, const LeakPatternOptions& options,
                                  std::vector<LeakPatternMatch>* matches);
Status RecognizeFinalizerBacklog(const PatternContext& context, const LeakPatternOptions& options,
                                 std::vector<LeakPatternMatch>* matches);
Status RecognizeCleanerBacklog(const PatternContext& context, const LeakPatternOptions& options,
                               std::vector<LeakPatternMatch>* matches);

// The registry's description of pattern `id` (which must exist).
const LeakPatternInfo& PatternInfo(std::string_view id);
// A match of pattern `id` with its id, name and explanation filled in.
LeakPatternMatch NewMatch(std::string_view id);

}  // namespace heapwatch::analysis::leak_patterns

#endif  // HEAPWATCH_ANALYSIS_LEAK_PATTERNS_PATTERN_CONTEXT_H_
