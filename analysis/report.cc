#include "analysis/report.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analysis/aggregations.h"
#include "analysis/gc_root_paths.h"
#include "analysis/retained_size.h"

namespace heapwatch::analysis {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Names objects, sizes and root kinds for the report.
class Describer {
 public:
  Describer(const HeapGraph& graph, const RetainedSizes& retained)
      : graph_(graph), retained_(retained) {
    for (const GcRoot& root : graph.gc_roots())
      root_kind_.try_emplace(root.object.value, root.kind);
  }

  std::string ClassName(ObjectIndex v) const {
    if (graph_.kind(v) == ObjectKind::kClass) {
      ClassId described = graph_.DescribedClass(v);
      if (described.valid()) return absl::StrCat("class ", graph_.class_info(described).name);
    }
    ClassId cls = graph_.class_of(v);
    return cls.valid() ? graph_.class_info(cls).name : std::string("<unknown class>");
  }

  ObjectSummary Summary(ObjectIndex v) const {
    ObjectSummary s;
    s.object_id = graph_.object_id(v);
    s.class_name = ClassName(v);
    s.shallow_bytes = graph_.shallow_size(v);
    s.retained_bytes = retained_[v.value];
    auto root = root_kind_.find(v.value);
    if (root != root_kind_.end()) s.gc_root_kind = std::string(GcRootKindName(root->second));
    return s;
  }

  GcRootPathReport Path(const std::vector<GraphPath>& paths) const {
    if (paths.empty()) return GcRootPathReport();
    return PathReport(graph_, paths.front(), [this](ObjectIndex v) { return Summary(v); });
  }

 private:
  const HeapGraph& graph_;
  const RetainedSizes& retained_;
  absl::flat_hash_map<uint32_t, GcRootKind> root_kind_;
};

void Progress(const ReportOptions& options, std::string_view stage, double fraction) {
  if (options.progress) options.progress(stage, fraction);
}

// Sets the exact dynamic size of `objects` (taken together) into *bytes and *count, adding the time
// taken to *seconds.
Status SetDynamicSize(const HeapGraph& graph, std::span<const ObjectIndex> objects,
                      const ReportOptions& options, uint64_t* bytes, uint64_t* count,
                      double* seconds) {
  const auto start = Clock::now();
  HW_ASSIGN_OR_RETURN(DynamicSize size, ComputeDynamicSize(graph, objects, options.dynamic));
  *bytes = size.bytes;
  *count = size.objects;
  *seconds += SecondsSince(start);
  return absl::OkStatus();
}

StatusOr<SuspectReport> AnalyzeSuspect(const HeapGraph& graph, const DominatorTree& tree,
                                       const RetainedSizes& retained, const Describer& describe,
                                       const ReportOptions& options, ReportTimings* timings) {
  const std::string& name = *options.suspect_class;
  std::vector<ClassId> classes = graph.FindClasses(name);
  if (classes.empty())
    return absl::NotFoundError(absl::StrCat("no class named \"", name, "\" in the dump"));
  SuspectReport suspect;
  suspect.class_name = name;
  std::vector<ObjectIndex> instances = InstancesOf(graph, tree, classes);
  suspect.instances = instances.size();
  for (ObjectIndex v : instances) suspect.shallow_bytes += graph.shallow_size(v);
  if (options.dynamic_sizes) {
    Progress(options, "dynamic size", 0);
    HW_RETURN_IF_ERROR(SetDynamicSize(graph, instances, options, &suspect.dynamic_bytes,
                                      &suspect.dynamic_objects, &timings->dynamic_seconds));
  }

  Progress(options, "precise retained size", 0);
  SimulatedGcOptions gc_options;
  gc_options.follow_weak_references = tree.options().follow_weak_references;
  HW_ASSIGN_OR_RETURN(RetainedSetSize precise,
                      PreciseRetainedSize(
                          graph.graph(), graph.root_objects(), instances,
                          [&](ObjectIndex v) { return graph.shallow_size(v); }, gc_options));
  suspect.retained_bytes = precise.bytes;

  Progress(options, "accumulation point", 0);
  HW_ASSIGN_OR_RETURN(
      AccumulationResult accumulation,
      FindAccumulationPoints(tree, retained, instances, options.accumulation_ratio,
                             /*max_points=*/5, /*min_share=*/0.05, &graph));
  suspect.minimum_retained_bytes = accumulation.minimum_retained_bytes;

  suspect.exclude_patterns = options.exclude_patterns.value_or(DefaultExcludePatterns());
  HW_ASSIGN_OR_RETURN(ClassNamePatterns exclude,
                      ClassNamePatterns::Compile(suspect.exclude_patterns));
  ImmediateDominatorsOptions dom_options;
  dom_options.exclude = &exclude;
  dom_options.skip_same_class = true;
  dom_options.name_excluded_root_holder = true;
  HW_ASSIGN_OR_RETURN(std::vector<DominatorClassGroup> groups,
                      ImmediateDominatorsByClass(graph, tree, retained, instances, dom_options));
  for (const DominatorClassGroup& group : groups) {
    if (suspect.kept_alive_by.size() >= options.max_kept_alive_rows) break;
    DominatorClassRow row;
    row.class_name = ClassKeyName(graph, group.key);
    row.dominators = group.dominators.size();
    row.dominated = group.dominated;
    row.dominator_shallow_bytes = group.dominator_shallow_bytes;
    row.dominated_shallow_bytes = group.dominated_shallow_bytes;
    row.dominator_retained_bytes = group.dominator_retained_bytes;
    if (!group.dominators.empty()) {
      ObjectIndex biggest = *std::max_element(
          group.dominators.begin(), group.dominators.end(), [&](ObjectIndex a, ObjectIndex b) {
            return retained[a.value] != retained[b.value] ? retained[a.value] < retained[b.value]
                                                          : b < a;
          });
      row.biggest_dominator = describe.Summary(biggest);
    }
    suspect.kept_alive_by.push_back(std::move(row));
  }

  // Paths from GC roots: to every accumulation point (FindAccumulationPoints returns at most 5)
  // and to the instance with the largest retained size (the representative instance). Every point
  // gets its path: a point without one is rendered as unreachable, which a point never is (it is
  // in the dominator tree); an accumulation point that is itself a GC root (a pool thread holding
  // ThreadLocal values) has the one-step path "itself".
  Progress(options, "paths from GC roots", 0);
  double dynamic_seconds = 0;
  auto start = Clock::now();
  for (const AccumulationPoint& point : accumulation.points) {
    AccumulationPointReport report;
    report.object = describe.Summary(point.object);
    if (options.dynamic_sizes) {
      const ObjectIndex one[] = {point.object};
      HW_RETURN_IF_ERROR(SetDynamicSize(graph, one, options, &report.object.dynamic_bytes,
                                        &report.object.dynamic_objects, &dynamic_seconds));
    }
    report.suspect_instances = point.set_members;
    report.suspect_bytes = point.set_bytes;
    report.share = accumulation.minimum_retained_bytes == 0
                       ? 0
                       : static_cast<double>(point.set_bytes) /
                             static_cast<double>(accumulation.minimum_retained_bytes);
    HW_ASSIGN_OR_RETURN(
        std::vector<GraphPath> paths,
        ShortestPathsFromGcRoots(graph.graph(), graph.root_objects(), point.object, 1));
    report.path = describe.Path(paths);
    for (ObjectIndex d = tree.immediate_dominator(point.object);
         d != tree.super_root() && report.dominator_ids.size() < kMaxPointDominators;
         d = tree.immediate_dominator(d)) {
      report.dominator_ids.push_back(graph.object_id(d));
    }
    suspect.accumulation_points.push_back(std::move(report));
  }
  if (!instances.empty()) {
    ObjectIndex representative =
        *std::max_element(instances.begin(), instances.end(), [&](ObjectIndex a, ObjectIndex b) {
          return retained[a.value] != retained[b.value] ? retained[a.value] < retained[b.value]
                                                        : b < a;
        });
    HW_ASSIGN_OR_RETURN(
        std::vector<GraphPath> paths,
        ShortestPathsFromGcRoots(graph.graph(), graph.root_objects(), representative, 1));
    suspect.shortest_path = describe.Path(paths);
  }
  timings->gc_root_paths_seconds += SecondsSince(start) - dynamic_seconds;
  timings->dynamic_seconds += dynamic_seconds;
  return suspect;
}

}  // namespace

GcRootPathReport PathReport(const HeapGraph& graph, const GraphPath& path,
                            const std::function<ObjectSummary(ObjectIndex)>& summary) {
  GcRootPathReport report;
  report.found = true;
  report.strong = path.weak_references == 0;
  const size_t n = path.steps.size();
  const bool shorten = n > kPathHeadSteps + kPathTailSteps;
  if (shorten) {
    report.elided_steps = n - kPathHeadSteps - kPathTailSteps;
    report.elided_after = kPathHeadSteps;
  }
  report.steps.reserve(shorten ? kPathHeadSteps + kPathTailSteps : n);
  for (size_t i = 0; i < n; ++i) {
    if (shorten && i == kPathHeadSteps) i = n - kPathTailSteps;  // skip the middle
    PathStepReport step;
    if (i > 0) {
      const GraphPathStep& from = path.steps[i - 1];
      step.reference = graph.DescribeReference(from.object, from.edge);
      step.weak = from.weak;
    }
    step.object = summary(path.steps[i].object);
    report.steps.push_back(std::move(step));
  }
  return report;
}

std::vector<ObjectSummary> SummarizeObjects(const HeapGraph& graph, const RetainedSizes& retained,
                                            std::span<const ObjectIndex> objects) {
  const Describer describe(graph, retained);
  std::vector<ObjectSummary> out;
  out.reserve(objects.size());
  for (ObjectIndex v : objects) out.push_back(describe.Summary(v));
  return out;
}

ReportTotals ComputeReportTotals(const HeapGraph& graph, const DominatorTree& tree) {
  ReportTotals totals;
  totals.objects = graph.object_count();
  totals.classes = graph.class_count();
  totals.gc_roots = graph.root_objects().size();
  for (const GcRoot& root : graph.gc_roots()) {
    totals.inferred_roots +=
        root.kind == GcRootKind::kPureRoot || root.kind == GcRootKind::kArtificialRoot;
  }
  for (uint32_t i = 0; i < graph.object_count(); ++i) {
    const ObjectIndex v(i);
    const uint64_t size = graph.shallow_size(v);
    totals.shallow_bytes += size;
    if (tree.reachable_from_gc_roots(v)) {
      ++totals.reachable_objects;
      totals.reachable_shallow_bytes += size;
    } else {
      ++totals.unreachable_objects;
      totals.unreachable_shallow_bytes += size;
    }
  }
  return totals;
}

static Status CheckReportInputs(const HeapGraph& graph, const DominatorTree& tree,
                                const RetainedSizes& retained, const ReportOptions& options) {
  if (tree.object_count() != graph.object_count() ||
      retained.size() != graph.object_count() + size_t{1}) {
    return absl::InvalidArgumentError(
        "dominator tree or retained sizes do not belong to this heap graph");
  }
  if (options.exclude_patterns) {
    HW_RETURN_IF_ERROR(ClassNamePatterns::Compile(*options.exclude_patterns).status());
  }
  return absl::OkStatus();
}

StatusOr<SuspectReport> BuildSuspectReport(const HeapGraph& graph, const DominatorTree& tree,
                                           const RetainedSizes& retained,
                                           const std::string& class_name,
                                           const ReportOptions& options, ReportTimings* timings) {
  HW_RETURN_IF_ERROR(CheckReportInputs(graph, tree, retained, options));
  ReportOptions suspect_options = options;
  suspect_options.suspect_class = class_name;
  ReportTimings ignored;
  return AnalyzeSuspect(graph, tree, retained, Describer(graph, retained), suspect_options,
                        timings != nullptr ? timings : &ignored);
}

StatusOr<Report> BuildReport(const HeapGraph& graph, const DominatorTree& tree,
                             const RetainedSizes& retained, const ReportOptions& options) {
  HW_RETURN_IF_ERROR(CheckReportInputs(graph, tree, retained, options));
  auto start = Clock::now();
  Report report;
  report.dump_format = graph.info().format;
  report.size_model = std::string(SizeModelName(graph.info().size_model));
  Describer describe(graph, retained);

  Progress(options, "aggregations", 0);
  report.totals = ComputeReportTotals(graph, tree);

  HW_ASSIGN_OR_RETURN(std::vector<ClassRetained> per_class,
                      ComputeClassRetainedSizes(graph, tree, retained));
  for (uint32_t c = 0; c < per_class.size(); ++c) {
    if (per_class[c].instances == 0) continue;
    report.histogram.push_back(ClassRow{graph.class_info(ClassId(c)).name, per_class[c].instances,
                                        per_class[c].shallow_bytes, per_class[c].retained_bytes});
  }
  std::sort(report.histogram.begin(), report.histogram.end(),
            [](const ClassRow& a, const ClassRow& b) {
              if (a.retained_bytes != b.retained_bytes) return a.retained_bytes > b.retained_bytes;
              if (a.shallow_bytes != b.shallow_bytes) return a.shallow_bytes > b.shallow_bytes;
              return a.class_name < b.class_name;
            });
  if (options.histogram_rows > 0 && report.histogram.size() > options.histogram_rows) {
    report.histogram.resize(options.histogram_rows);
  }

  double dynamic_seconds = 0;
  for (ObjectIndex v : TopObjectsByRetainedSize(tree, retained, options.top_objects)) {
    ObjectSummary summary = describe.Summary(v);
    if (options.dynamic_sizes) {
      const ObjectIndex one[] = {v};
      HW_RETURN_IF_ERROR(SetDynamicSize(graph, one, options, &summary.dynamic_bytes,
                                        &summary.dynamic_objects, &dynamic_seconds));
    }
    report.top_objects.push_back(std::move(summary));
  }
  const ObjectIndex super_root[] = {tree.super_root()};
  HW_ASSIGN_OR_RETURN(std::vector<DominatorGroup> top_groups,
                      GroupDominatedByClass(graph, tree, retained, super_root));
  for (const DominatorGroup& group : top_groups) {
    if (report.top_dominators_by_class.size() >= options.top_objects) break;
    report.top_dominators_by_class.push_back(
        ClassRow{group.class_id.valid() ? graph.class_info(group.class_id).name : "<unknown class>",
                 group.objects, group.shallow_bytes, group.retained_bytes});
  }

  report.timings.dynamic_seconds = dynamic_seconds;
  if (options.suspect_class) {
    HW_ASSIGN_OR_RETURN(SuspectReport suspect,
                        AnalyzeSuspect(graph, tree, retained, describe, options, &report.timings));
    report.suspect = std::move(suspect);
  }
  report.timings.aggregation_seconds =
      SecondsSince(start) - report.timings.gc_root_paths_seconds - report.timings.dynamic_seconds;
  Progress(options, "done", 1);
  return report;
}

StatusOr<Report> BuildReport(const HeapGraph& graph, const ReportOptions& options) {
  auto start = Clock::now();
  Progress(options, "dominator tree", 0);
  HW_ASSIGN_OR_RETURN(DominatorTree tree,
                      ComputeDominatorTree(graph.graph(), graph.root_objects()));
  double dominators_seconds = SecondsSince(start);
  auto retained_start = Clock::now();
  Progress(options, "retained sizes", 0);
  RetainedSizes retained =
      ComputeRetainedSizes(tree, [&](ObjectIndex v) { return graph.shallow_size(v); });
  double retained_seconds = SecondsSince(retained_start);
  HW_ASSIGN_OR_RETURN(Report report, BuildReport(graph, tree, retained, options));
  report.timings.dominators_seconds = dominators_seconds;
  report.timings.retained_seconds = retained_seconds;
  report.timings.total_seconds = SecondsSince(start);
  return report;
}

}  // namespace heapwatch::analysis
