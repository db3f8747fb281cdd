// static-collection: a large collection in a static field (docs/leak-patterns.md).
//
// For every static reference field of a class outside the JDK: the object it references matches
// when it retains at least options.static_collection_min_bytes and the largest object array among
// its references and their references (ArrayList.elementData, HashMap.table,
// ConcurrentHashMap.table; two levels) has at least options.static_collection_min_elements slots.
// O(static fields x (references of two levels)).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/leak_patterns/pattern_context.h"

namespace heapwatch::analysis::leak_patterns {
namespace {

// The largest object array among `v` and the objects within two references of it, and its length.
std::pair<ObjectIndex, uint32_t> LargestArray(const HeapGraph& graph, ObjectIndex v) {
  const CsrGraph& g = graph.graph();
  std::pair<ObjectIndex, uint32_t> best{kNoObject, 0};
  auto consider = [&](ObjectIndex o) {
    if (graph.kind(o) == ObjectKind::kObjectArray && graph.array_length(o) > best.second) {
      best = {o, graph.array_length(o)};
    }
  };
  consider(v);
  if (graph.kind(v) != ObjectKind::kInstance) return best;
  for (uint64_t e = g.first_edge(v); e < g.first_edge(ObjectIndex(v.value + 1)); ++e) {
    const ObjectIndex t = g.targets[e];
    consider(t);
    if (graph.kind(t) != ObjectKind::kInstance) continue;
    for (uint64_t f = g.first_edge(t); f < g.first_edge(ObjectIndex(t.value + 1)); ++f) {
      consider(g.targets[f]);
    }
  }
  return best;
}

}  // namespace

Status RecognizeStaticCollections(const PatternContext& c, const LeakPatternOptions& options,
                                  std::vector<LeakPatternMatch>* matches) {
  const HeapGraph& graph = c.graph();
  const CsrGraph& g = graph.graph();
  for (uint32_t k = 0; k < graph.class_count(); ++k) {
    const ClassInfo& info = graph.class_info(ClassId(k));
    const ObjectIndex co = info.class_object;
    if (!co.valid() || info.static_fields.empty() || IsJdkClassName(info.name) ||
        !c.reachable(co)) {
      continue;
    }
    for (uint64_t e = g.first_edge(co); e < g.first_edge(ObjectIndex(co.value + 1)); ++e) {
      const ReferenceSlot slot = graph.ResolveReference(co, e);
      if (slot.kind != ReferenceSlot::Kind::kStaticField) continue;
      const ObjectIndex target = g.targets[e];
      if (!c.reachable(target) || c.retained(target) < options.static_collection_min_bytes) {
        continue;
      }
      // The static field must be what keeps it: the class object dominates it.
      if (c.tree().immediate_dominator(target) != co) continue;
      const auto [array, slots] = LargestArray(graph, target);
      if (slots < options.static_collection_min_elements) continue;
      LeakPatternMatch match = NewMatch("static-collection");
      const std::string field =
          absl::StrCat(info.name, ".", graph.DescribeSlot(co, slot).substr(7));
      match.objects = 1;
      match.retained_bytes = c.retained(target);
      match.culprits.push_back(absl::StrCat("static field ", field));
      match.culprits.push_back(absl::StrCat("collection ", c.ObjectName(target), " with ", slots,
                                            " slots in ", c.ObjectName(array)));
      match.summary = absl::StrFormat(
          "static %s (a %s) retains %.1f MiB in %d slots: an unbounded cache or registry", field,
          c.ClassName(target), c.retained(target) / 1048576.0, slots);
      HW_ASSIGN_OR_RETURN(match.path, c.PathTo(target));
      match.anchors.push_back(target);
      matches->push_back(std::move(match));
    }
  }
  return absl::OkStatus();
}

}  // namespace heapwatch::analysis::leak_patterns
