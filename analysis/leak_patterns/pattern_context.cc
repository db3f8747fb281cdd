#include "analysis/leak_patterns/pattern_context.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/gc_root_paths.h"

namespace heapwatch::analysis::leak_patterns {

bool IsJdkClassName(std::string_view name) {
  for (std::string_view prefix : {"java.", "javax.", "jdk.", "sun.", "com.sun."}) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

PatternContext::PatternContext(const HeapGraph& graph, const DominatorTree& tree,
                               const RetainedSizes& retained, const ThreadNames* thread_names)
    : graph_(graph), tree_(tree), retained_(retained), thread_names_(thread_names) {
  for (const GcRoot& root : graph.gc_roots()) {
    root_kind_.try_emplace(root.object.value, root.kind);
    if (root.kind == GcRootKind::kThreadObject) thread_roots_.insert(root.object.value);
  }
}

ObjectIndex PatternContext::Field(ObjectIndex v, std::string_view name) const {
  uint64_t edge;
  return Field(v, name, &edge);
}

ObjectIndex PatternContext::Field(ObjectIndex v, std::string_view name, uint64_t* edge) const {
  *edge = kNoEdge;
  if (!v.valid() || graph_.kind(v) != ObjectKind::kInstance) return kNoObject;
  const CsrGraph& g = graph_.graph();
  for (uint64_t e = g.first_edge(v); e < g.first_edge(ObjectIndex(v.value + 1)); ++e) {
    const ReferenceSlot slot = graph_.ResolveReference(v, e);
    if (slot.kind != ReferenceSlot::Kind::kField || !slot.declaring_class.valid()) continue;
    const ClassInfo& decl = graph_.class_info(slot.declaring_class);
    if (slot.field < decl.instance_fields.size() && decl.instance_fields[slot.field].name == name) {
      *edge = e;
      return g.targets[e];
    }
  }
  return kNoObject;
}

bool PatternContext::IsSubclassOf(ClassId cls, std::string_view base) const {
  if (!cls.valid()) return false;
  std::vector<uint8_t>& cache = subclass_cache_[std::string(base)];
  if (cache.empty()) cache.assign(graph_.class_count(), 0);
  if (cache[cls.value] == 0) {
    bool yes = false;
    ClassId c = cls;
    // Bounded: super classes are added before their subclasses, so the chain ends; 256 guards
    // against a hostile dump anyway.
    for (int depth = 0; c.valid() && depth < 256; ++depth) {
      if (graph_.class_info(c).name == base) {
        yes = true;
        break;
      }
      c = graph_.class_info(c).super_class;
    }
    cache[cls.value] = yes ? 1 : 2;
  }
  return cache[cls.value] == 1;
}

std::string PatternContext::ClassName(ObjectIndex v) const {
  const ClassId cls = graph_.class_of(v);
  return cls.valid() ? graph_.class_info(cls).name : std::string();
}

std::string PatternContext::ObjectName(ObjectIndex v) const {
  if (graph_.kind(v) == ObjectKind::kClass && graph_.DescribedClass(v).valid()) {
    return absl::StrCat("class ", graph_.class_info(graph_.DescribedClass(v)).name);
  }
  return absl::StrFormat("%s@0x%x", ClassName(v), graph_.object_id(v));
}

std::string PatternContext::RootKind(ObjectIndex v) const {
  auto it = root_kind_.find(v.value);
  return it == root_kind_.end() ? std::string() : std::string(GcRootKindName(it->second));
}

bool PatternContext::IsThreadRoot(ObjectIndex v) const { return thread_roots_.contains(v.value); }

std::string PatternContext::ThreadName(ObjectIndex v) const {
  if (thread_names_ == nullptr) return "";
  auto it = thread_names_->find(v.value);
  return it == thread_names_->end() ? std::string() : it->second;
}

std::string PatternContext::ThreadObjectName(ObjectIndex v) const {
  const std::string name = ThreadName(v);
  return name.empty() ? ObjectName(v) : absl::StrCat(ObjectName(v), " \"", name, "\"");
}

std::string PatternContext::StaticFieldHolding(ObjectIndex v) const {
  if (!statics_built_) {
    statics_built_ = true;
    const CsrGraph& g = graph_.graph();
    for (uint32_t c = 0; c < graph_.class_count(); ++c) {
      const ClassInfo& info = graph_.class_info(ClassId(c));
      const ObjectIndex co = info.class_object;
      if (!co.valid() || info.static_fields.empty()) continue;
      for (uint64_t e = g.first_edge(co); e < g.first_edge(ObjectIndex(co.value + 1)); ++e) {
        const ReferenceSlot slot = graph_.ResolveReference(co, e);
        if (slot.kind != ReferenceSlot::Kind::kStaticField) continue;
        const ClassInfo& decl = graph_.class_info(slot.declaring_class);
        if (slot.field >= decl.static_fields.size()) continue;
        static_holder_.try_emplace(
            g.targets[e].value,
            absl::StrCat("static ", decl.name, ".", decl.static_fields[slot.field].name));
      }
    }
  }
  auto it = static_holder_.find(v.value);
  return it == static_holder_.end() ? std::string() : it->second;
}

ObjectSummary PatternContext::Summary(ObjectIndex v) const {
  const ObjectIndex one[] = {v};
  return SummarizeObjects(graph_, retained_, one).front();
}

StatusOr<GcRootPathReport> PatternContext::PathTo(ObjectIndex v) const {
  HW_ASSIGN_OR_RETURN(std::vector<GraphPath> paths,
                      ShortestPathsFromGcRoots(graph_.graph(), graph_.root_objects(), v, 1));
  if (paths.empty()) return GcRootPathReport();
  return PathReport(graph_, paths.front(), [this](ObjectIndex v) { return Summary(v); });
}

void PatternContext::AppendStep(GcRootPathReport* path, ObjectIndex from, uint64_t edge,
                                ObjectIndex to) const {
  PathStepReport step;
  step.reference = edge == kNoEdge ? "<class>" : graph_.DescribeReference(from, edge);
  step.weak = edge != kNoEdge && graph_.graph().is_weak(edge);
  if (step.weak) path->strong = false;
  step.object = Summary(to);
  path->steps.push_back(std::move(step));
}

}  // namespace heapwatch::analysis::leak_patterns
