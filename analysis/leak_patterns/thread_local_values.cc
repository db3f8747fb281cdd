// thread-local-value: values of a ThreadLocal held by live threads (docs/leak-patterns.md).
//
// For every live thread (an instance of java.lang.Thread or a subclass that is a THREAD_OBJECT GC
// root): Thread.threadLocals and Thread.inheritableThreadLocals -> ThreadLocalMap.table (an
// Entry[]) -> each Entry's `value`, keyed by the Entry's weak `referent` (the ThreadLocal; null
// for a stale entry whose ThreadLocal was collected). Values are grouped by ThreadLocal over all
// threads; a group matches when its values retain options.thread_local_min_bytes together.
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/leak_patterns/pattern_context.h"

namespace heapwatch::analysis::leak_patterns {
namespace {

struct Held {
  ObjectIndex thread;
  uint64_t map_edge, table_edge, entry_edge, value_edge;
  ObjectIndex map, table, entry, value;
};

struct Group {
  std::vector<Held> values;
  uint64_t bytes = 0;
  std::map<std::string, uint64_t> value_classes;
};

// The task a thread runs: Thread.target (JDK <= 18) or Thread.holder.task (JDK 19+).
ObjectIndex ThreadTask(const PatternContext& c, ObjectIndex thread) {
  ObjectIndex task = c.Field(thread, "target");
  if (task.valid()) return task;
  ObjectIndex holder = c.Field(thread, "holder");
  return holder.valid() ? c.Field(holder, "task") : kNoObject;
}

std::string HumanBytes(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 20)) return absl::StrFormat("%.1f MiB", bytes / 1048576.0);
  if (bytes >= 1024) return absl::StrFormat("%.1f KiB", bytes / 1024.0);
  return absl::StrCat(bytes, " B");
}

}  // namespace

Status RecognizeThreadLocalValues(const PatternContext& c, const LeakPatternOptions& options,
                                  std::vector<LeakPatternMatch>* matches) {
  const HeapGraph& graph = c.graph();
  const CsrGraph& g = graph.graph();
  // Keyed by the ThreadLocal's index (kNoObject.value for stale entries); std::map for a
  // deterministic order.
  std::map<uint32_t, Group> groups;
  for (uint32_t i = 0; i < graph.object_count(); ++i) {
    const ObjectIndex thread(i);
    if (graph.kind(thread) != ObjectKind::kInstance || !c.IsThreadRoot(thread) ||
        !c.IsSubclassOf(graph.class_of(thread), "java.lang.Thread")) {
      continue;
    }
    for (std::string_view field : {"threadLocals", "inheritableThreadLocals"}) {
      Held h;
      h.thread = thread;
      h.map = c.Field(thread, field, &h.map_edge);
      if (!h.map.valid()) continue;
      h.table = c.Field(h.map, "table", &h.table_edge);
      if (!h.table.valid() || graph.kind(h.table) != ObjectKind::kObjectArray) continue;
      for (uint64_t e = g.first_edge(h.table); e < g.first_edge(ObjectIndex(h.table.value + 1));
           ++e) {
        h.entry_edge = e;
        h.entry = g.targets[e];
        h.value = c.Field(h.entry, "value", &h.value_edge);
        if (!h.value.valid() || !c.reachable(h.value)) continue;
        const ObjectIndex tl_object = c.Field(h.entry, "referent");
        Group& group = groups[tl_object.value];
        group.values.push_back(h);
        group.bytes += c.retained(h.value);
        ++group.value_classes[c.ClassName(h.value)];
      }
    }
  }

  for (auto& [key, group] : groups) {
    if (group.bytes < options.thread_local_min_bytes) continue;
    const ObjectIndex tl_object(key);
    LeakPatternMatch match = NewMatch("thread-local-value");
    match.objects = group.values.size();
    match.retained_bytes = group.bytes;
    std::string declared;
    if (tl_object.valid()) {
      declared = c.StaticFieldHolding(tl_object);
      match.culprits.push_back(
          declared.empty()
              ? absl::StrCat("ThreadLocal ", c.ObjectName(tl_object),
                             " (no static field references it)")
              : absl::StrCat("ThreadLocal ", c.ObjectName(tl_object), " declared by ", declared));
    } else {
      match.culprits.push_back(
          "stale entries: their ThreadLocal was collected, the values were never removed");
    }
    // Threads, largest share first.
    std::map<uint32_t, uint64_t> per_thread;
    for (const Held& h : group.values) per_thread[h.thread.value] += c.retained(h.value);
    std::vector<std::pair<uint64_t, uint32_t>> threads;
    for (auto [t, bytes] : per_thread) threads.push_back({bytes, t});
    std::sort(threads.begin(), threads.end(), [](auto a, auto b) { return a.first > b.first; });
    size_t pool_threads = 0;
    std::vector<std::string> names;  // distinct thread names (masked ones collapse), at most 3
    bool more_names = false;
    for (size_t i = 0; i < threads.size(); ++i) {
      const ObjectIndex thread(threads[i].second);
      if (const std::string name = c.ThreadName(thread); !name.empty()) {
        if (std::find(names.begin(), names.end(), name) != names.end()) {
        } else if (names.size() < 3) {
          names.push_back(name);
        } else {
          more_names = true;
        }
      }
      const ObjectIndex task = ThreadTask(c, thread);
      const std::string task_class = task.valid() ? c.ClassName(task) : "";
      const bool pool =
          task_class.find("ThreadPoolExecutor$Worker") != std::string::npos ||
          c.IsSubclassOf(graph.class_of(thread), "java.util.concurrent.ForkJoinWorkerThread");
      pool_threads += pool;
      if (i < 8) {
        match.culprits.push_back(absl::StrCat(
            "thread ", c.ThreadObjectName(thread), " (", c.RootKind(thread), " root",
            pool ? absl::StrCat(", pool worker ", task_class.empty() ? "" : task_class) : "",
            ") holds ", HumanBytes(threads[i].first)));
      }
    }
    if (threads.size() > 8) {
      match.culprits.push_back(absl::StrCat("... and ", threads.size() - 8, " more threads"));
    }
    std::string value_classes;
    for (const auto& [name, count] : group.value_classes) {
      absl::StrAppend(&value_classes, value_classes.empty() ? "" : ", ", count, " ", name);
    }
    match.summary = absl::StrCat(
        tl_object.valid()
            ? absl::StrCat("ThreadLocal ", declared.empty() ? c.ObjectName(tl_object) : declared)
            : std::string("Stale ThreadLocal entries"),
        " holds ", group.values.size(), group.values.size() == 1 ? " value" : " values", " (",
        value_classes, ") retaining ", HumanBytes(group.bytes), " in ", threads.size(),
        threads.size() == 1 ? " live thread" : " live threads",
        names.empty() ? ""
                      : absl::StrCat(" named \"", absl::StrJoin(names, "\", \""), "\"",
                                     more_names ? ", ..." : ""),
        pool_threads > 0 ? absl::StrCat(" (", pool_threads, " of them thread-pool workers)") : "",
        ": the values are set and never removed");
    // The path through the right fields: thread (GC root) -> threadLocals -> table -> [i] -> value,
    // for the largest value.
    const Held* biggest = &group.values.front();
    for (const Held& h : group.values) {
      if (c.retained(h.value) > c.retained(biggest->value)) biggest = &h;
    }
    match.path.found = true;
    PathStepReport root;
    root.object = c.Summary(biggest->thread);
    match.path.steps.push_back(std::move(root));
    c.AppendStep(&match.path, biggest->thread, biggest->map_edge, biggest->map);
    c.AppendStep(&match.path, biggest->map, biggest->table_edge, biggest->table);
    c.AppendStep(&match.path, biggest->table, biggest->entry_edge, biggest->entry);
    c.AppendStep(&match.path, biggest->entry, biggest->value_edge, biggest->value);
    for (const Held& h : group.values) {
      if (match.anchors.size() >= 64) break;
      match.anchors.push_back(h.value);
    }
    matches->push_back(std::move(match));
  }
  return absl::OkStatus();
}

}  // namespace heapwatch::analysis::leak_patterns
