// cleaner-backlog: java.lang.ref.Cleaner registrations that are never cleaned
// (docs/leak-patterns.md).
//
// Every registration with a Cleaner is a jdk.internal.ref.PhantomCleanable (JDK 9+; for
// Cleaner.register, CleanerImpl$PhantomCleanableRef with the cleaning `action`), kept in its
// Cleaner's list until it is cleaned. Two ways it stays there:
//   * the action reaches the object it should clean (a lambda or inner class capturing `this`):
//     the object is strongly reachable through the Cleaner itself and never becomes phantom
//     reachable. Found by a search from the action over strong references, bounded to
//     kCaptureSearchObjects objects and kCaptureSearchDepth references.
//   * the object became unreachable and the registration was enqueued (Reference.queue is
//     ReferenceQueue.ENQUEUED) but the cleaner thread has not run it (a blocking action).
// A match per cause when at least options.cleaner_min_captured / cleaner_min_pending
// registrations have it. O(registrations x kCaptureSearchObjects) plus one pass over the objects.
#include <deque>
#include <map>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/leak_patterns/pattern_context.h"

namespace heapwatch::analysis::leak_patterns {
namespace {

constexpr size_t kCaptureSearchObjects = 64;
constexpr int kCaptureSearchDepth = 4;

// True when `target` is reachable from `from` over strong references within the bounds above.
bool Reaches(const HeapGraph& graph, ObjectIndex from, ObjectIndex target) {
  const CsrGraph& g = graph.graph();
  std::deque<std::pair<ObjectIndex, int>> queue = {{from, 0}};
  absl::flat_hash_set<uint32_t> seen = {from.value};
  while (!queue.empty()) {
    const auto [v, depth] = queue.front();
    queue.pop_front();
    if (v == target) return true;
    if (depth == kCaptureSearchDepth) continue;
    for (uint64_t e = g.first_edge(v); e < g.first_edge(ObjectIndex(v.value + 1)); ++e) {
      if (g.is_weak(e)) continue;
      const ObjectIndex w = g.targets[e];
      if (w == target) return true;
      if (seen.size() >= kCaptureSearchObjects) return false;
      if (seen.insert(w.value).second) queue.push_back({w, depth + 1});
    }
  }
  return false;
}

std::string TopClasses(const std::map<std::string, uint64_t>& counts, size_t n) {
  std::vector<std::pair<uint64_t, std::string>> by_count;
  for (const auto& [name, count] : counts) by_count.push_back({count, name});
  std::sort(by_count.rbegin(), by_count.rend());
  std::string out;
  for (size_t k = 0; k < by_count.size() && k < n; ++k) {
    absl::StrAppend(&out, k == 0 ? "" : ", ", by_count[k].first, " ", by_count[k].second);
  }
  if (by_count.size() > n) absl::StrAppend(&out, ", ...");
  return out;
}

}  // namespace

Status RecognizeCleanerBacklog(const PatternContext& c, const LeakPatternOptions& options,
                               std::vector<LeakPatternMatch>* matches) {
  const HeapGraph& graph = c.graph();
  const CsrGraph& g = graph.graph();
  if (graph.FindClasses("jdk.internal.ref.PhantomCleanable").empty()) return absl::OkStatus();
  // ReferenceQueue.ENQUEUED (JDK 9+), to tell registrations waiting for the cleaner thread.
  ObjectIndex enqueued = kNoObject;
  if (const ClassId queue_class = graph.FindClass("java.lang.ref.ReferenceQueue");
      queue_class.valid() && graph.class_info(queue_class).class_object.valid()) {
    const ObjectIndex co = graph.class_info(queue_class).class_object;
    for (uint64_t e = g.first_edge(co); e < g.first_edge(ObjectIndex(co.value + 1)); ++e) {
      const ReferenceSlot slot = graph.ResolveReference(co, e);
      if (slot.kind == ReferenceSlot::Kind::kStaticField &&
          slot.field < graph.class_info(slot.declaring_class).static_fields.size() &&
          graph.class_info(slot.declaring_class).static_fields[slot.field].name == "ENQUEUED") {
        enqueued = g.targets[e];
      }
    }
  }

  struct Cause {
    uint64_t count = 0, bytes = 0;
    std::map<std::string, uint64_t> classes;  // of the objects to clean
    std::map<std::string, uint64_t> actions;  // of the actions (captured only)
    std::vector<ObjectIndex> anchors;
    ObjectIndex example = kNoObject;  // a registration
  };
  Cause captured, pending;
  for (uint32_t i = 0; i < graph.object_count(); ++i) {
    const ObjectIndex r(i);
    if (graph.kind(r) != ObjectKind::kInstance || !c.reachable(r) ||
        !c.IsSubclassOf(graph.class_of(r), "jdk.internal.ref.PhantomCleanable")) {
      continue;
    }
    const ObjectIndex referent = c.Field(r, "referent");
    if (!referent.valid()) continue;  // a list head, or cleaned
    Cause* cause = nullptr;
    const ObjectIndex action = c.Field(r, "action");
    if (action.valid() && Reaches(graph, action, referent)) {
      cause = &captured;
      ++cause->actions[c.ClassName(action)];
    } else if (enqueued.valid() && c.Field(r, "queue") == enqueued) {
      cause = &pending;
    } else {
      continue;
    }
    ++cause->count;
    ++cause->classes[c.ClassName(referent)];
    cause->bytes += c.retained(referent);
    if (cause->anchors.size() < 64) cause->anchors.push_back(referent);
    if (!cause->example.valid()) cause->example = r;
  }

  if (captured.count >= options.cleaner_min_captured) {
    LeakPatternMatch match = NewMatch("cleaner-backlog");
    match.objects = captured.count;
    match.retained_bytes = captured.bytes;
    match.culprits.push_back(absl::StrCat("objects registered: ", TopClasses(captured.classes, 5)));
    match.culprits.push_back(
        absl::StrCat("cleaning actions that capture them: ", TopClasses(captured.actions, 5)));
    const std::string first = captured.classes.size() == 1 ? captured.classes.begin()->first
                                                           : std::string("several classes");
    match.summary = absl::StrFormat(
        "%d objects (%s) registered with a java.lang.ref.Cleaner are never cleaned: the cleaning "
        "action captures the object it should clean, so the Cleaner itself keeps it reachable",
        captured.count, first);
    // The path to the first registration's object: Cleaner ... -> action -> captured field.
    const ObjectIndex referent = c.Field(captured.example, "referent");
    HW_ASSIGN_OR_RETURN(match.path, c.PathTo(referent));
    match.anchors = std::move(captured.anchors);
    matches->push_back(std::move(match));
  }
  if (pending.count >= options.cleaner_min_pending) {
    LeakPatternMatch match = NewMatch("cleaner-backlog");
    match.objects = pending.count;
    match.retained_bytes = pending.bytes;
    match.culprits.push_back(absl::StrCat("objects waiting: ", TopClasses(pending.classes, 5)));
    match.summary = absl::StrFormat(
        "%d objects registered with a java.lang.ref.Cleaner wait for its cleaner thread (%s "
        "first): the cleaning actions run slower than the objects become unreachable, or one "
        "blocks",
        pending.count, pending.classes.empty() ? "?" : TopClasses(pending.classes, 1));
    HW_ASSIGN_OR_RETURN(match.path, c.PathTo(pending.example));
    match.anchors = std::move(pending.anchors);
    matches->push_back(std::move(match));
  }
  return absl::OkStatus();
}

}  // namespace heapwatch::analysis::leak_patterns
