// The registry of known-leak patterns: every pattern's description and the order recognisers run.
#include <algorithm>
#include <array>

#include "absl/container/flat_hash_set.h"
#include "analysis/leak_patterns/leak_patterns.h"
#include "analysis/leak_patterns/pattern_context.h"

namespace heapwatch::analysis {
namespace {

constexpr std::array<LeakPatternInfo, 6> kPatterns = {{
    {"thread-local-value", "ThreadLocal value held by a live thread",
     "A live thread (THREAD_OBJECT GC root) holds, through Thread.threadLocals or "
     "inheritableThreadLocals -> ThreadLocalMap.table -> Entry.value, values of one ThreadLocal "
     "that retain at least the threshold together.",
     "A ThreadLocal's value lives as long as the thread that set it, not as long as the task that "
     "set it: pool threads never end, so every value a task leaves in a ThreadLocal stays until "
     "the "
     "same thread overwrites it, and a value that grows (a list a task appends to) grows without "
     "bound. Even when the ThreadLocal itself is gone the entry's value stays until the map "
     "happens "
     "to expunge it. Usual fix: call remove() in a finally block of the task that called set() or "
     "get() (or in the pool's afterExecute), keep values small and bounded, and do not store "
     "objects of a web application's classes in ThreadLocals of container threads."},
    {"listeners-never-removed", "Listeners registered and never removed",
     "An array (the storage of a collection) holds at least the threshold number of listener "
     "objects of one class: a lambda or method reference ($$Lambda) or a class named *Listener, "
     "*Observer, *Callback, *Handler or *Subscriber, defined outside the JDK.",
     "An event source keeps a strong reference to every listener registered with it. When the "
     "objects that register (views, sessions, per-request handlers) are short-lived but the source "
     "(an event bus, a static registry, a long-lived model) is not, each registration keeps the "
     "listener and everything it captures (for a method reference, the object whose method it is) "
     "alive forever. A lambda or method reference registered twice is two listeners, and a new "
     "method reference is not equal to the one registered before, so removeListener(this::on) "
     "removes nothing. Usual fix: keep the registration (the listener object or the subscription "
     "handle the source returns) and unregister it when the registering object is closed or "
     "disposed; or make the source hold listeners weakly."},
    {"class-loader-pinned", "Class loader pinned after its application was stopped",
     "A class loader outside the JDK is reachable, but only through a thread (a thread the "
     "application started, or a thread whose context class loader it is) or a JVM-wide registry: "
     "DriverManager.registeredDrivers, ApplicationShutdownHooks.hooks, the Introspector and "
     "ObjectStreamClass caches; every path from the other GC roots to it is cut there.",
     "A class loader and every class it defined (with their static fields) stay in memory as long "
     "as any object of any of those classes, or the loader itself, is reachable. When an "
     "application server stops or redeploys an application it drops its own references, but a "
     "thread the application started and never stopped, a thread's context class loader, a JDBC "
     "driver left registered in DriverManager, a shutdown hook, a Timer, or a JDK cache keyed by "
     "the application's classes still references it, and every redeploy leaks one more copy of "
     "the application (metaspace grows, OutOfMemoryError: Metaspace). Usual fix: stop the "
     "application's threads, executors and Timers when it stops; deregister JDBC drivers "
     "(DriverManager.deregisterDriver) and remove shutdown hooks it added; reset the context class "
     "loader of threads it created or borrowed; clear Introspector caches "
     "(Introspector.flushCaches)."},
    {"static-collection", "Unbounded collection in a static field",
     "A static field of a class outside the JDK references a collection that retains at least the "
     "byte threshold and whose largest array holds at least the element threshold.",
     "A collection in a static field lives as long as its class, usually as long as the JVM. Used "
     "as a cache or a registry without eviction, it keeps every entry ever put in it: sessions, "
     "requests, results keyed by ids that never repeat. Usual fix: bound it (a size- or "
     "time-bounded cache such as Caffeine or a LinkedHashMap with removeEldestEntry), remove "
     "entries when their owner ends (logout, request end), or keep it in an object with a "
     "lifecycle instead of a static field. Weak keys help only when nothing else, including the "
     "value, references the key."},
    {"finalizer-backlog", "Objects waiting for finalization",
     "At least the threshold number of java.lang.ref.Finalizer references are enqueued "
     "(Reference.queue is ReferenceQueue.ENQUEUED) and wait for the finalizer thread.",
     "An object whose class overrides finalize() is not freed by the first GC that finds it "
     "unreachable: it is queued for the single finalizer thread, and freed only after finalize() "
     "ran. When objects become finalizable faster than that thread runs their finalize() methods "
     "(a slow or blocking finalize(), or a finalizer thread starved of CPU), the queue and "
     "everything its objects reference grow. Usual fix: do not override finalize() (deprecated "
     "since Java 9); release resources with try-with-resources or a java.lang.ref.Cleaner, and "
     "make any finalize() that remains fast and non-blocking."},
    {"cleaner-backlog", "Cleaner registrations never cleaned",
     "Registrations with a java.lang.ref.Cleaner (jdk.internal.ref.PhantomCleanable) whose "
     "cleaning action reaches the registered object over strong references, or that are enqueued "
     "(Reference.queue is ReferenceQueue.ENQUEUED) and wait for the cleaner thread, at least the "
     "threshold number of either.",
     "A Cleaner runs an object's cleaning action after the object became phantom reachable. The "
     "Cleaner keeps every registered action strongly, so an action that references the object "
     "(a lambda or method reference capturing this, an inner class, a field of the object "
     "itself) keeps the object reachable forever: it is never cleaned, and every registration "
     "adds one more object to the Cleaner's list. Actions that block or run slowly make "
     "registrations wait in the queue of the Cleaner's single thread instead. Usual fix: make the "
     "action a static nested class (or a lambda in a static context) holding only the state to "
     "release, never the object; keep actions short and non-blocking; call Cleanable.clean() "
     "explicitly (try-with-resources) so the Cleaner is only the safety net."},
}};

}  // namespace

std::span<const LeakPatternInfo> LeakPatterns() { return kPatterns; }

namespace leak_patterns {

const LeakPatternInfo& PatternInfo(std::string_view id) {
  for (const LeakPatternInfo& info : kPatterns) {
    if (info.id == id) return info;
  }
  HW_CHECK(false);
  return kPatterns.front();
}

LeakPatternMatch NewMatch(std::string_view id) {
  const LeakPatternInfo& info = PatternInfo(id);
  LeakPatternMatch match;
  match.pattern_id = std::string(info.id);
  match.pattern_name = std::string(info.name);
  match.explanation = std::string(info.explanation);
  return match;
}

}  // namespace leak_patterns

StatusOr<std::vector<LeakPatternMatch>> RecognizeLeakPatterns(const HeapGraph& graph,
                                                              const DominatorTree& tree,
                                                              const RetainedSizes& retained,
                                                              const LeakPatternOptions& options,
                                                              const ThreadNames* thread_names) {
  if (tree.object_count() != graph.object_count() ||
      retained.size() != graph.object_count() + size_t{1}) {
    return absl::InvalidArgumentError(
        "leak patterns: the dominator tree or retained sizes do not belong to this heap graph");
  }
  const leak_patterns::PatternContext context(graph, tree, retained, thread_names);
  using Recognizer = Status (*)(const leak_patterns::PatternContext&, const LeakPatternOptions&,
                                std::vector<LeakPatternMatch>*);
  constexpr Recognizer kRecognizers[] = {
      leak_patterns::RecognizeThreadLocalValues,  leak_patterns::RecognizeListeners,
      leak_patterns::RecognizePinnedClassLoaders, leak_patterns::RecognizeStaticCollections,
      leak_patterns::RecognizeFinalizerBacklog,   leak_patterns::RecognizeCleanerBacklog};
  std::vector<LeakPatternMatch> all;
  for (Recognizer recognize : kRecognizers) {
    std::vector<LeakPatternMatch> matches;
    HW_RETURN_IF_ERROR(recognize(context, options, &matches));
    std::stable_sort(matches.begin(), matches.end(),
                     [](const LeakPatternMatch& a, const LeakPatternMatch& b) {
                       return a.retained_bytes > b.retained_bytes;
                     });
    for (LeakPatternMatch& m : matches) all.push_back(std::move(m));
  }
  // One name per leak: a static collection that a more specific pattern already explains (the bus
  // of listeners-never-removed, which anchors the object the static field holds) is not repeated.
  absl::flat_hash_set<uint32_t> explained;
  for (const LeakPatternMatch& m : all) {
    if (m.pattern_id != "listeners-never-removed") continue;
    for (ObjectIndex a : m.anchors) explained.insert(a.value);
  }
  std::erase_if(all, [&explained](const LeakPatternMatch& m) {
    if (m.pattern_id != "static-collection") return false;
    for (ObjectIndex a : m.anchors) {
      if (explained.contains(a.value)) return true;
    }
    return false;
  });
  return all;
}

std::vector<LeakPatternMatch> MatchesForSuspect(const DominatorTree& tree,
                                                std::span<const LeakPatternMatch> matches,
                                                std::span<const ObjectIndex> points) {
  // Ancestors (dominator tree) of the points, the points included.
  absl::flat_hash_set<uint32_t> point_set;
  absl::flat_hash_set<uint32_t> above_points;
  for (ObjectIndex p : points) {
    if (!p.valid() || p.value >= tree.object_count() || !tree.reachable(p)) continue;
    point_set.insert(p.value);
    for (ObjectIndex a = p;
         a.valid() && a != tree.super_root() && above_points.insert(a.value).second;
         a = tree.immediate_dominator(a)) {
    }
  }
  std::vector<LeakPatternMatch> out;
  for (const LeakPatternMatch& match : matches) {
    bool related = false;
    for (ObjectIndex anchor : match.anchors) {
      if (!anchor.valid() || anchor.value >= tree.object_count() || !tree.reachable(anchor)) {
        continue;
      }
      if (above_points.contains(anchor.value)) {  // the anchor is a point or holds one
        related = true;
        break;
      }
      for (ObjectIndex a = anchor; a.valid() && a != tree.super_root();
           a = tree.immediate_dominator(a)) {
        if (point_set.contains(a.value)) {  // a point holds the anchor
          related = true;
          break;
        }
      }
      if (related) break;
    }
    if (related) out.push_back(match);
  }
  return out;
}

}  // namespace heapwatch::analysis
