// class-loader-pinned: class loaders pinned after their application was stopped
// (docs/leak-patterns.md).
//
// In the JVM an object keeps its class alive, and a class its loader. The heap graph has no
// instance -> class edges (HPROF lists none; the reader adds them only on request), so both
// searches here add them: instance or array -> its class object, and the class object's
// "<classloader>" reference does the rest.
//
//   1. Candidates: instances of java.lang.ClassLoader subclasses outside jdk.* and sun.* (the JDK's
//      own boot, platform, application and reflection loaders) that define at least one class.
//   2. Search 1 (breadth first, strong references plus the instance -> class edges) from the GC
//      roots that do not belong to a thread (not THREAD_OBJECT, JAVA_FRAME, JNI_LOCAL,
//      NATIVE_STACK, THREAD_BLOCK, JNI_MONITOR), never entering a thread object and never
//      following the JVM-wide registries that pin loaders: static fields of java.sql.DriverManager
//      (registeredDrivers), java.lang.ApplicationShutdownHooks (hooks), java.beans.Introspector,
//      java.beans.ThreadGroupContext, com.sun.beans.introspect.*, java.io.ObjectStreamClass$Caches.
//   3. A candidate search 1 does not reach, but search 2 (from every GC root, nothing cut) does, is
//      pinned: everything that still holds it is a thread or one of those registries. Search 2's
//      parents give the pinning path, which is classified (a thread the application started, a
//      thread's context class loader, a stack frame, DriverManager, a shutdown hook, a Timer, a
//      JDK cache).
// Both searches are iterative: O(objects + references) time; a bitmap and a 4-byte parent per
// object.
#include <deque>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/gc_root_paths.h"
#include "analysis/leak_patterns/pattern_context.h"

namespace heapwatch::analysis::leak_patterns {
namespace {

constexpr uint32_t kUnvisited = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kRootParent = std::numeric_limits<uint32_t>::max() - 1;

bool ThreadRootKind(GcRootKind kind) {
  switch (kind) {
    case GcRootKind::kThreadObject:
    case GcRootKind::kJavaFrame:
    case GcRootKind::kJniLocal:
    case GcRootKind::kNativeStack:
    case GcRootKind::kThreadBlock:
    case GcRootKind::kJniMonitor:
      return true;
    default:
      return false;
  }
}

// Static fields of these classes are JVM-wide registries that pin class loaders.
bool RegistryClass(std::string_view name) {
  return name == "java.sql.DriverManager" || name == "java.lang.ApplicationShutdownHooks" ||
         name == "java.beans.Introspector" || name == "java.beans.ThreadGroupContext" ||
         name == "java.io.ObjectStreamClass$Caches" ||
         name.substr(0, 24) == "com.sun.beans.introspect";
}

// The class object an instance or array keeps alive (kNoObject for class objects and synthetic
// classes).
ObjectIndex ClassObjectOf(const HeapGraph& graph, ObjectIndex v) {
  if (graph.kind(v) == ObjectKind::kClass) return kNoObject;
  const ClassId cls = graph.class_of(v);
  return cls.valid() ? graph.class_info(cls).class_object : kNoObject;
}

}  // namespace

Status RecognizePinnedClassLoaders(const PatternContext& c, const LeakPatternOptions& options,
                                   std::vector<LeakPatternMatch>* matches) {
  (void)options;
  const HeapGraph& graph = c.graph();
  const CsrGraph& g = graph.graph();
  const uint32_t n = graph.object_count();

  // 1. Candidates and the classes each defines.
  absl::flat_hash_map<uint32_t, std::vector<ClassId>> defined;
  for (uint32_t k = 0; k < graph.class_count(); ++k) {
    const ObjectIndex loader = graph.class_info(ClassId(k)).class_loader;
    if (loader.valid()) defined[loader.value].push_back(ClassId(k));
  }
  std::vector<ObjectIndex> candidates;
  for (const auto& [loader_value, classes] : defined) {
    const ObjectIndex loader(loader_value);
    // Reachability is search 2's (with object -> class edges), not the dominator tree's: a loader
    // that only its classes' instances keep alive is not in the tree.
    if (graph.kind(loader) != ObjectKind::kInstance) continue;
    const std::string name = c.ClassName(loader);
    if (name.rfind("jdk.", 0) == 0 || name.rfind("sun.", 0) == 0) continue;
    if (!c.IsSubclassOf(graph.class_of(loader), "java.lang.ClassLoader")) continue;
    candidates.push_back(loader);
  }
  if (candidates.empty()) return absl::OkStatus();
  std::sort(candidates.begin(), candidates.end());

  std::vector<uint8_t> registry(graph.class_count(), 0);
  for (uint32_t k = 0; k < graph.class_count(); ++k) {
    registry[k] = RegistryClass(graph.class_info(ClassId(k)).name) ? 1 : 0;
  }
  std::vector<uint8_t> thread_class(graph.class_count(), 0);
  for (uint32_t k = 0; k < graph.class_count(); ++k) {
    thread_class[k] = c.IsSubclassOf(ClassId(k), "java.lang.Thread") ? 1 : 0;
  }
  auto is_thread = [&](ObjectIndex v) {
    if (graph.kind(v) != ObjectKind::kInstance) return false;
    const ClassId cls = graph.class_of(v);
    return cls.valid() && thread_class[cls.value] == 1;
  };

  // 2. Search 1: free reachability.
  std::vector<uint64_t> free((size_t{n} + 63) / 64, 0);
  auto is_free = [&](uint32_t v) { return (free[v >> 6] >> (v & 63)) & 1; };
  std::vector<uint32_t> queue;
  auto visit_free = [&](ObjectIndex v) {
    if (!v.valid() || v.value >= n || is_free(v.value) || is_thread(v)) return;
    free[v.value >> 6] |= uint64_t{1} << (v.value & 63);
    queue.push_back(v.value);
  };
  for (const GcRoot& root : graph.gc_roots()) {
    if (!ThreadRootKind(root.kind)) visit_free(root.object);
  }
  for (size_t head = 0; head < queue.size(); ++head) {
    const ObjectIndex u(queue[head]);
    const bool registry_class = graph.kind(u) == ObjectKind::kClass &&
                                graph.DescribedClass(u).valid() &&
                                registry[graph.DescribedClass(u).value] == 1;
    for (uint64_t e = g.first_edge(u); e < g.first_edge(ObjectIndex(u.value + 1)); ++e) {
      if (g.is_weak(e)) continue;
      if (registry_class &&
          graph.ResolveReference(u, e).kind == ReferenceSlot::Kind::kStaticField) {
        continue;
      }
      visit_free(g.targets[e]);
    }
    visit_free(ClassObjectOf(graph, u));
  }
  std::vector<ObjectIndex> pinned;
  for (ObjectIndex loader : candidates) {
    if (!is_free(loader.value)) pinned.push_back(loader);
  }
  if (pinned.empty()) return absl::OkStatus();
  free.clear();
  free.shrink_to_fit();

  // 3. Search 2: from every GC root, parents kept. Roots of threads first, so that a path starts
  // at the thread when one pins the loader.
  std::vector<uint32_t> parent(n, kUnvisited);
  queue.clear();
  absl::flat_hash_map<uint32_t, uint32_t> thread_of_serial;  // thread serial -> thread object
  for (const GcRoot& root : graph.gc_roots()) {
    if (root.kind == GcRootKind::kThreadObject) {
      thread_of_serial.try_emplace(root.thread_serial, root.object.value);
    }
  }
  absl::flat_hash_map<uint32_t, GcRoot> root_of;
  for (int pass = 0; pass < 2; ++pass) {
    for (const GcRoot& root : graph.gc_roots()) {
      if ((pass == 0) != ThreadRootKind(root.kind)) continue;
      const uint32_t v = root.object.value;
      if (v >= n || parent[v] != kUnvisited) continue;
      parent[v] = kRootParent;
      root_of.try_emplace(v, root);
      queue.push_back(v);
    }
  }
  for (size_t head = 0; head < queue.size(); ++head) {
    const ObjectIndex u(queue[head]);
    auto visit = [&](ObjectIndex t) {
      if (!t.valid() || t.value >= n || parent[t.value] != kUnvisited) return;
      parent[t.value] = u.value;
      queue.push_back(t.value);
    };
    for (uint64_t e = g.first_edge(u); e < g.first_edge(ObjectIndex(u.value + 1)); ++e) {
      if (!g.is_weak(e)) visit(g.targets[e]);
    }
    visit(ClassObjectOf(graph, u));
  }

  for (ObjectIndex loader : pinned) {
    if (parent[loader.value] == kUnvisited) continue;  // only weakly reachable: not pinned
    std::vector<ObjectIndex> chain;
    for (uint32_t v = loader.value; v != kRootParent; v = parent[v]) {
      chain.push_back(ObjectIndex(v));
      if (chain.size() > n) break;  // cannot happen: parents form a tree
    }
    std::reverse(chain.begin(), chain.end());
    LeakPatternMatch match = NewMatch("class-loader-pinned");
    match.objects = 1;
    match.retained_bytes = c.retained(loader);
    const size_t classes = defined[loader.value].size();
    // The path, named.
    match.path.found = true;
    PathStepReport first;
    first.object = c.Summary(chain.front());
    match.path.steps.push_back(std::move(first));
    std::string via;  // how it is pinned, for the summary
    for (size_t i = 0; i + 1 < chain.size(); ++i) {
      const ObjectIndex from = chain[i], to = chain[i + 1];
      uint64_t edge = kNoEdge;
      for (uint64_t e = g.first_edge(from); e < g.first_edge(ObjectIndex(from.value + 1)); ++e) {
        if (g.targets[e] == to && !g.is_weak(e)) {
          edge = e;
          break;
        }
      }
      c.AppendStep(&match.path, from, edge, to);
      if (!via.empty()) continue;
      const std::string reference = match.path.steps.back().reference;
      if (is_thread(from)) {
        const ClassInfo& thread_class = graph.class_info(graph.class_of(from));
        if (reference == "contextClassLoader" ||
            reference == "java.lang.Thread.contextClassLoader") {
          via = absl::StrCat("it is the context class loader of thread ", c.ThreadObjectName(from));
        } else if (thread_class.class_loader == loader || to == thread_class.class_object) {
          via = absl::StrCat("thread ", c.ThreadObjectName(from),
                             ", started by the application, is still running");
        } else {
          via = absl::StrCat("thread ", c.ThreadObjectName(from), " references it through ",
                             reference);
        }
      } else if (graph.kind(from) == ObjectKind::kClass && graph.DescribedClass(from).valid() &&
                 registry[graph.DescribedClass(from).value] == 1) {
        const std::string holder = graph.class_info(graph.DescribedClass(from)).name;
        if (holder == "java.sql.DriverManager") {
          via = "a JDBC driver it loaded is still registered in DriverManager.registeredDrivers";
        } else if (holder == "java.lang.ApplicationShutdownHooks") {
          via = "a shutdown hook it added is still registered in ApplicationShutdownHooks.hooks";
        } else {
          via = absl::StrCat("a JDK cache references its classes: ", holder, ".",
                             reference.substr(reference.rfind(' ') + 1));
        }
      }
    }
    if (via.empty()) {
      const auto root = root_of.find(chain.front().value);
      if (root != root_of.end() && ThreadRootKind(root->second.kind)) {
        const auto thread = thread_of_serial.find(root->second.thread_serial);
        const ClassId held = graph.class_of(chain.front());
        const bool own_code = graph.kind(chain.front()) != ObjectKind::kClass && held.valid() &&
                              graph.class_info(held).class_loader == loader;
        if (own_code && thread != thread_of_serial.end()) {
          via = absl::StrCat("thread ", c.ThreadObjectName(ObjectIndex(thread->second)),
                             " is still running the application's code (a ",
                             std::string(GcRootKindName(root->second.kind)), " root holds ",
                             c.ObjectName(chain.front()), ")");
        } else {
          via = absl::StrCat(
              "a ", std::string(GcRootKindName(root->second.kind)), " root",
              thread == thread_of_serial.end()
                  ? std::string()
                  : absl::StrCat(" of thread ", c.ThreadObjectName(ObjectIndex(thread->second))),
              " references it");
        }
      } else {
        via = "only threads and JVM-wide registries reference it";
      }
    }
    // A timer: the path runs through java.util.TimerThread.
    for (ObjectIndex v : chain) {
      if (c.ClassName(v) == "java.util.TimerThread") {
        via = absl::StrCat("a java.util.Timer's thread ", c.ThreadObjectName(v),
                           " still runs a task of the application");
        break;
      }
    }
    match.culprits.push_back(absl::StrCat("class loader ", c.ObjectName(loader), " defining ",
                                          classes, classes == 1 ? " class" : " classes"));
    match.culprits.push_back(absl::StrCat("pinned because ", via));
    match.summary = absl::StrFormat(
        "Class loader %s (%d %s%s) is held only by threads or JVM-wide registries: %s",
        c.ObjectName(loader), classes, classes == 1 ? "class" : "classes",
        c.reachable(loader)
            ? absl::StrFormat(", retaining %.1f MiB", c.retained(loader) / 1048576.0)
            : std::string(),
        via);
    match.anchors.push_back(loader);
    matches->push_back(std::move(match));
  }
  return absl::OkStatus();
}

}  // namespace heapwatch::analysis::leak_patterns
