// Known-leak patterns: recognisers over the heap graph that name the classic server-side leaks in
// the words a developer acts on (in the spirit of Shark's library of known Android leaks, for
// server JVMs). docs/leak-patterns.md lists every pattern with its recognition rule, explanation
// and fix.
//
// One recogniser per file of analysis/leak_patterns/, each registered in registry.cc:
//   thread-local-value        ThreadLocal values held by live threads (thread_local_values.cc)
//   listeners-never-removed   listeners/callbacks accumulating in a collection (listeners.cc)
//   class-loader-pinned       class loaders pinned by a thread or a JVM-wide registry
//                             (class_loader_pinned.cc)
//   static-collection         a large collection in a static field (static_collection.cc)
//   finalizer-backlog         objects waiting for finalization (finalizer_backlog.cc)
//   cleaner-backlog           Cleaner registrations never cleaned (cleaner_backlog.cc)
//
// A match names the culprits (the thread, the ThreadLocal and the static field declaring it, the
// registering class, the pinning path) and carries the path through the field that holds the
// leaked objects. Matches hold class, field and GC-root-kind names, object ids and sizes only:
// never primitive values or string contents, with one exception: the names of live threads, which
// the caller reads from the dump and passes in already masked and sanitised
// (analysis/thread_names.h, docs/leak-patterns.md "Thread names and privacy"). Units: bytes.
// Thread-safety: reentrant; reads its inputs only. No recogniser recurses over the graph.
#ifndef HEAPWATCH_ANALYSIS_LEAK_PATTERNS_LEAK_PATTERNS_H_
#define HEAPWATCH_ANALYSIS_LEAK_PATTERNS_LEAK_PATTERNS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/dominator_tree.h"
#include "analysis/heap_graph.h"
#include "analysis/report.h"
#include "analysis/retained_size.h"
#include "analysis/thread_names.h"
#include "common/status.h"

namespace heapwatch::analysis {

// What a pattern is (the registry's static description, also in docs/leak-patterns.md).
struct LeakPatternInfo {
  std::string_view id;           // stable, e.g. "thread-local-value"
  std::string_view name;         // "ThreadLocal value held by a live thread"
  std::string_view recognition;  // how the recogniser recognises it, one sentence
  std::string_view explanation;  // one paragraph: why it leaks and the usual fix
};

// LeakPatternMatch (one match) is part of the report model: analysis/report.h.

struct LeakPatternOptions {
  // thread-local-value: a ThreadLocal matches when its values in all live threads retain at least
  // this many bytes together.
  uint64_t thread_local_min_bytes = 256 * 1024;
  // listeners-never-removed: a collection matches when it holds at least this many listeners of one
  // class (a lambda/method reference or a class named *Listener, *Observer, *Callback, *Handler,
  // *Subscriber).
  uint32_t listener_min_count = 100;
  // static-collection: a collection in a static field matches when it retains at least this many
  // bytes...
  uint64_t static_collection_min_bytes = 4 * 1024 * 1024;
  // ...and holds at least this many elements (the length of its largest array).
  uint32_t static_collection_min_elements = 1000;
  // finalizer-backlog: matches when at least this many objects wait for finalization.
  uint32_t finalizer_min_pending = 10000;
  // cleaner-backlog: matches when at least this many objects registered with a Cleaner are kept
  // reachable by their own cleaning action...
  uint32_t cleaner_min_captured = 100;
  // ...or at least this many registrations wait for the cleaner thread.
  uint32_t cleaner_min_pending = 10000;
};

// Every pattern the library knows, in a fixed order.
std::span<const LeakPatternInfo> LeakPatterns();

// Runs every recogniser on `graph` (with `tree` = its dominator tree and `retained` its retained
// sizes) and returns the matches, largest retained_bytes first within each pattern, patterns in
// LeakPatterns() order. Cost: O(objects + references) for the class-loader recogniser's two
// searches (only when the dump has a class loader outside the JDK), O(objects) for the others,
// plus the shortest path searches of analysis/gc_root_paths.h for at most a few matches per
// pattern. Memory: a bitmap and a 4-byte parent per object for the class-loader searches.
// `thread_names` (may be null): the names of live threads as reports may show them, by thread
// object (ThreadNameForReport output); threads are then named by them too. Errors:
// InvalidArgument when `tree` or `retained` do not belong to `graph`.
StatusOr<std::vector<LeakPatternMatch>> RecognizeLeakPatterns(
    const HeapGraph& graph, const DominatorTree& tree, const RetainedSizes& retained,
    const LeakPatternOptions& options = {}, const ThreadNames* thread_names = nullptr);

// The matches that concern a suspect: those with an anchor that is, in the dominator tree, an
// ancestor or a descendant of (or equal to) one of `points` (the suspect's accumulation points,
// or, when it has none, its instances). O((matches x anchors + points) x tree depth).
std::vector<LeakPatternMatch> MatchesForSuspect(const DominatorTree& tree,
                                                std::span<const LeakPatternMatch> matches,
                                                std::span<const ObjectIndex> points);

}  // namespace heapwatch::analysis

#endif  // HEAPWATCH_ANALYSIS_LEAK_PATTERNS_LEAK_PATTERNS_H_
