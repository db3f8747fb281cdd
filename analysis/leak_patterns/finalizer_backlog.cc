// finalizer-backlog: objects waiting for the finalizer thread (docs/leak-patterns.md).
//
// A java.lang.ref.Finalizer is enqueued for the finalizer thread when its `queue` field is
// ReferenceQueue.ENQUEUED (JDK 9+; the static field's object). The pattern matches when at least
// options.finalizer_min_pending are; their referents are counted by class. O(objects).
#include <map>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/leak_patterns/pattern_context.h"

namespace heapwatch::analysis::leak_patterns {

Status RecognizeFinalizerBacklog(const PatternContext& c, const LeakPatternOptions& options,
                                 std::vector<LeakPatternMatch>* matches) {
  const HeapGraph& graph = c.graph();
  const CsrGraph& g = graph.graph();
  const ClassId queue_class = graph.FindClass("java.lang.ref.ReferenceQueue");
  const std::vector<ClassId> finalizer_classes = graph.FindClasses("java.lang.ref.Finalizer");
  if (!queue_class.valid() || finalizer_classes.empty()) return absl::OkStatus();
  // The object a static field of `cls` refers to (kNoObject when absent or null).
  auto static_field = [&](ClassId cls, std::string_view name) {
    const ObjectIndex co = graph.class_info(cls).class_object;
    if (!co.valid()) return kNoObject;
    for (uint64_t e = g.first_edge(co); e < g.first_edge(ObjectIndex(co.value + 1)); ++e) {
      const ReferenceSlot slot = graph.ResolveReference(co, e);
      if (slot.kind == ReferenceSlot::Kind::kStaticField &&
          graph.class_info(slot.declaring_class).static_fields[slot.field].name == name) {
        return g.targets[e];
      }
    }
    return kNoObject;
  };
  // ReferenceQueue.ENQUEUED.
  const ObjectIndex enqueued = static_field(queue_class, "ENQUEUED");
  if (!enqueued.valid()) return absl::OkStatus();
  // The head of Finalizer's own queue (static Finalizer.queue -> ReferenceQueue.head): the path is
  // shown to its referent, a few steps from a GC root. Any other pending Finalizer can lie
  // thousands of `next` links down the queue.
  ObjectIndex head_referent = kNoObject;
  for (ClassId fc : finalizer_classes) {
    const ObjectIndex queue = static_field(fc, "queue");
    if (!queue.valid()) continue;
    const ObjectIndex head = c.Field(queue, "head");
    if (head.valid() && c.Field(head, "queue") == enqueued) head_referent = c.Field(head, "referent");
  }
  std::map<std::string, uint64_t> referents;
  uint64_t pending = 0, bytes = 0;
  std::vector<ObjectIndex> anchors;
  for (uint32_t i = 0; i < graph.object_count(); ++i) {
    const ObjectIndex f(i);
    if (graph.kind(f) != ObjectKind::kInstance || !c.reachable(f)) continue;
    const ClassId cls = graph.class_of(f);
    if (std::find(finalizer_classes.begin(), finalizer_classes.end(), cls) ==
        finalizer_classes.end()) {
      continue;
    }
    if (c.Field(f, "queue") != enqueued) continue;
    ++pending;
    const ObjectIndex referent = c.Field(f, "referent");
    if (referent.valid()) {
      ++referents[c.ClassName(referent)];
      bytes += c.retained(referent);
      if (anchors.size() < 64) anchors.push_back(referent);
    }
  }
  if (pending < options.finalizer_min_pending) return absl::OkStatus();
  LeakPatternMatch match = NewMatch("finalizer-backlog");
  match.objects = pending;
  match.retained_bytes = bytes;
  std::vector<std::pair<uint64_t, std::string>> by_count;
  for (const auto& [name, count] : referents) by_count.push_back({count, name});
  std::sort(by_count.rbegin(), by_count.rend());
  for (size_t k = 0; k < by_count.size() && k < 5; ++k) {
    match.culprits.push_back(
        absl::StrCat(by_count[k].first, " objects of class ", by_count[k].second, " wait"));
  }
  match.summary = absl::StrFormat(
      "%d objects wait for the finalizer thread (%s first): their finalize() runs slower than "
      "they become unreachable",
      pending, by_count.empty() ? "?" : by_count.front().second);
  if (head_referent.valid() && c.reachable(head_referent)) {
    HW_ASSIGN_OR_RETURN(match.path, c.PathTo(head_referent));
  } else if (!anchors.empty()) {
    HW_ASSIGN_OR_RETURN(match.path, c.PathTo(anchors.front()));
  }
  match.anchors = std::move(anchors);
  matches->push_back(std::move(match));
  return absl::OkStatus();
}

}  // namespace heapwatch::analysis::leak_patterns
