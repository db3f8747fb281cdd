#include "analysis/report.h"

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
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
    GcRootPathReport report;
    if (paths.empty()) return report;
    const GraphPath& path = paths.front();
    report.found = true;
    report.strong = path.weak_references == 0;
    for (size_t i = 0; i < path.steps.size(); ++i) {
      PathStepReport step;
      if (i > 0) {
        const GraphPathStep& from = path.steps[i - 1];
        step.reference = graph_.DescribeReference(from.object, from.edge);
        step.weak = from.weak;
      }
      step.object = Summary(path.steps[i].object);
      report.steps.push_back(std::move(step));
    }
    return report;
  }

 private:
  const HeapGraph& graph_;
  const RetainedSizes& retained_;
  absl::flat_hash_map<uint32_t, GcRootKind> root_kind_;
};

void Progress(const ReportOptions& options, std::string_view stage, double fraction) {
  if (options.progress) options.progress(stage, fraction);
}

StatusOr<SuspectReport> AnalyzeSuspect(const HeapGraph& graph, const DominatorTree& tree,
                                       const RetainedSizes& retained, const Describer& describe,
                                       const ReportOptions& options, double* paths_seconds) {
  const std::string& name = *options.suspect_class;
  std::vector<ClassId> classes = graph.FindClasses(name);
  if (classes.empty())
    return absl::NotFoundError(absl::StrCat("no class named \"", name, "\" in the dump"));
  SuspectReport suspect;
  suspect.class_name = name;
  std::vector<ObjectIndex> instances = InstancesOf(graph, tree, classes);
  suspect.instances = instances.size();
  for (ObjectIndex v : instances) suspect.shallow_bytes += graph.shallow_size(v);

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
      FindAccumulationPoints(tree, retained, instances, options.accumulation_ratio));
  suspect.minimum_retained_bytes = accumulation.minimum_retained_bytes;

  suspect.exclude_patterns = options.exclude_patterns.value_or(DefaultExcludePatterns());
  HW_ASSIGN_OR_RETURN(ClassNamePatterns exclude,
                      ClassNamePatterns::Compile(suspect.exclude_patterns));
  ImmediateDominatorsOptions dom_options;
  dom_options.exclude = &exclude;
  dom_options.skip_same_class = true;
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

  // Paths from GC roots: to the accumulation points (at most 3) and to the instance with the
  // largest retained size (the representative instance).
  Progress(options, "paths from GC roots", 0);
  auto start = Clock::now();
  size_t with_path = 0;
  for (const AccumulationPoint& point : accumulation.points) {
    AccumulationPointReport report;
    report.object = describe.Summary(point.object);
    report.suspect_instances = point.set_members;
    report.suspect_bytes = point.set_bytes;
    report.share = accumulation.minimum_retained_bytes == 0
                       ? 0
                       : static_cast<double>(point.set_bytes) /
                             static_cast<double>(accumulation.minimum_retained_bytes);
    if (with_path++ < 3) {
      HW_ASSIGN_OR_RETURN(
          std::vector<GraphPath> paths,
          ShortestPathsFromGcRoots(graph.graph(), graph.root_objects(), point.object, 1));
      report.path = describe.Path(paths);
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
  *paths_seconds = SecondsSince(start);
  return suspect;
}

}  // namespace

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
                                           const ReportOptions& options) {
  HW_RETURN_IF_ERROR(CheckReportInputs(graph, tree, retained, options));
  ReportOptions suspect_options = options;
  suspect_options.suspect_class = class_name;
  double paths_seconds = 0;
  return AnalyzeSuspect(graph, tree, retained, Describer(graph, retained), suspect_options,
                        &paths_seconds);
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

  for (ObjectIndex v : TopObjectsByRetainedSize(tree, retained, options.top_objects)) {
    report.top_objects.push_back(describe.Summary(v));
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

  double paths_seconds = 0;
  if (options.suspect_class) {
    HW_ASSIGN_OR_RETURN(SuspectReport suspect,
                        AnalyzeSuspect(graph, tree, retained, describe, options, &paths_seconds));
    report.suspect = std::move(suspect);
  }
  report.timings.gc_root_paths_seconds = paths_seconds;
  report.timings.aggregation_seconds = SecondsSince(start) - paths_seconds;
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

// ---- JSON

namespace {

nlohmann::json ToJson(const ObjectSummary& o) {
  nlohmann::json j = {{"object_id", o.object_id},
                      {"class_name", o.class_name},
                      {"shallow_bytes", o.shallow_bytes},
                      {"retained_bytes", o.retained_bytes}};
  if (!o.gc_root_kind.empty()) j["gc_root_kind"] = o.gc_root_kind;
  return j;
}

nlohmann::json ToJson(const ClassRow& r) {
  return {{"class_name", r.class_name},
          {"instances", r.instances},
          {"shallow_bytes", r.shallow_bytes},
          {"retained_bytes", r.retained_bytes}};
}

nlohmann::json ToJson(const GcRootPathReport& p) {
  nlohmann::json steps = nlohmann::json::array();
  for (const PathStepReport& s : p.steps) {
    nlohmann::json step = {
        {"reference", s.reference}, {"weak", s.weak}, {"object", ToJson(s.object)}};
    steps.push_back(std::move(step));
  }
  return {{"found", p.found}, {"strong", p.strong}, {"steps", std::move(steps)}};
}

nlohmann::json ToJson(const SuspectReport& s) {
  nlohmann::json points = nlohmann::json::array();
  for (const AccumulationPointReport& p : s.accumulation_points) {
    points.push_back({{"object", ToJson(p.object)},
                      {"suspect_instances", p.suspect_instances},
                      {"suspect_bytes", p.suspect_bytes},
                      {"share", p.share},
                      {"path", ToJson(p.path)}});
  }
  nlohmann::json kept = nlohmann::json::array();
  for (const DominatorClassRow& r : s.kept_alive_by) {
    nlohmann::json row = {{"class_name", r.class_name},
                          {"dominators", r.dominators},
                          {"dominated", r.dominated},
                          {"dominator_shallow_bytes", r.dominator_shallow_bytes},
                          {"dominated_shallow_bytes", r.dominated_shallow_bytes},
                          {"dominator_retained_bytes", r.dominator_retained_bytes}};
    if (r.dominators > 0) row["biggest_dominator"] = ToJson(r.biggest_dominator);
    kept.push_back(std::move(row));
  }
  return {{"class_name", s.class_name},
          {"instances", s.instances},
          {"shallow_bytes", s.shallow_bytes},
          {"retained_bytes", s.retained_bytes},
          {"minimum_retained_bytes", s.minimum_retained_bytes},
          {"accumulation_points", std::move(points)},
          {"kept_alive_by", std::move(kept)},
          {"exclude_patterns", s.exclude_patterns},
          {"shortest_path", ToJson(s.shortest_path)}};
}

}  // namespace

std::string ReportToJson(const Report& report) {
  const ReportTotals& t = report.totals;
  nlohmann::json j;
  j["dump_path"] = report.dump_path;
  j["dump_file_bytes"] = report.dump_file_bytes;
  j["dump_format"] = report.dump_format;
  j["size_model"] = report.size_model;
  j["totals"] = {{"objects", t.objects},
                 {"classes", t.classes},
                 {"gc_roots", t.gc_roots},
                 {"reachable_objects", t.reachable_objects},
                 {"unreachable_objects", t.unreachable_objects},
                 {"shallow_bytes", t.shallow_bytes},
                 {"reachable_shallow_bytes", t.reachable_shallow_bytes},
                 {"unreachable_shallow_bytes", t.unreachable_shallow_bytes}};
  j["histogram"] = nlohmann::json::array();
  for (const ClassRow& r : report.histogram) j["histogram"].push_back(ToJson(r));
  j["top_objects"] = nlohmann::json::array();
  for (const ObjectSummary& o : report.top_objects) j["top_objects"].push_back(ToJson(o));
  j["top_dominators_by_class"] = nlohmann::json::array();
  for (const ClassRow& r : report.top_dominators_by_class)
    j["top_dominators_by_class"].push_back(ToJson(r));
  if (report.suspect) j["suspect"] = ToJson(*report.suspect);
  const ReportTimings& tm = report.timings;
  j["timings"] = {{"parse_seconds", tm.parse_seconds},
                  {"dominators_seconds", tm.dominators_seconds},
                  {"retained_seconds", tm.retained_seconds},
                  {"gc_root_paths_seconds", tm.gc_root_paths_seconds},
                  {"aggregation_seconds", tm.aggregation_seconds},
                  {"total_seconds", tm.total_seconds},
                  {"peak_rss_bytes", tm.peak_rss_bytes}};
  return j.dump(2);
}

// ---- Text

namespace {

std::string Bytes(uint64_t bytes) {
  // Digits grouped by thousands: 12,345,678.
  std::string digits = absl::StrCat(bytes);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string Object(const ObjectSummary& o) {
  std::string s = absl::StrFormat("%s @ 0x%x", o.class_name, o.object_id);
  if (!o.gc_root_kind.empty()) absl::StrAppend(&s, " [GC root ", o.gc_root_kind, "]");
  return s;
}

void AppendClassTable(std::string* out, const std::vector<ClassRow>& rows,
                      std::string_view count_label) {
  absl::StrAppendFormat(out, "%16s %16s %16s  %s\n", count_label, "shallow bytes", "retained bytes",
                        "class");
  for (const ClassRow& r : rows) {
    absl::StrAppendFormat(out, "%16s %16s %16s  %s\n", Bytes(r.instances), Bytes(r.shallow_bytes),
                          Bytes(r.retained_bytes), r.class_name);
  }
}

void AppendPath(std::string* out, const GcRootPathReport& path, const std::string& indent) {
  if (!path.found) {
    absl::StrAppend(out, indent, "(not reachable from a GC root)\n");
    return;
  }
  if (!path.strong) absl::StrAppend(out, indent, "(only through a weak/soft reference)\n");
  for (const PathStepReport& step : path.steps) {
    if (step.reference.empty()) {
      absl::StrAppend(out, indent, Object(step.object), "\n");
    } else {
      absl::StrAppend(out, indent, "  ", step.weak ? "~~ " : "-> ", step.reference, " -> ",
                      Object(step.object), "\n");
    }
  }
}

}  // namespace

std::string ReportToText(const Report& report) {
  std::string out;
  const ReportTotals& t = report.totals;
  absl::StrAppend(&out, "Dump: ", report.dump_path, " (", Bytes(report.dump_file_bytes), " bytes, ",
                  report.dump_format, ", sizes: ", report.size_model, ")\n");
  absl::StrAppend(&out, "Objects: ", Bytes(t.objects), " (", Bytes(t.shallow_bytes),
                  " bytes); classes: ", Bytes(t.classes), "; GC roots: ", Bytes(t.gc_roots), "\n");
  absl::StrAppend(&out, "Reachable: ", Bytes(t.reachable_objects), " objects (",
                  Bytes(t.reachable_shallow_bytes),
                  " bytes); unreachable: ", Bytes(t.unreachable_objects), " objects (",
                  Bytes(t.unreachable_shallow_bytes), " bytes)\n\n");

  absl::StrAppend(&out,
                  "Class histogram (reachable objects; retained = minimum retained size of the "
                  "instances):\n");
  AppendClassTable(&out, report.histogram, "instances");
  absl::StrAppend(&out, "\nBiggest objects by retained size:\n");
  absl::StrAppendFormat(&out, "%16s %16s  %s\n", "retained bytes", "shallow bytes", "object");
  for (const ObjectSummary& o : report.top_objects) {
    absl::StrAppendFormat(&out, "%16s %16s  %s\n", Bytes(o.retained_bytes), Bytes(o.shallow_bytes),
                          Object(o));
  }
  absl::StrAppend(&out, "\nDominator tree, first level grouped by class:\n");
  AppendClassTable(&out, report.top_dominators_by_class, "objects");

  if (report.suspect) {
    const SuspectReport& s = *report.suspect;
    absl::StrAppend(&out, "\nSuspect class ", s.class_name, ": ", Bytes(s.instances),
                    " instances, shallow ", Bytes(s.shallow_bytes), " bytes, retained ",
                    Bytes(s.retained_bytes), " bytes (precise), ", Bytes(s.minimum_retained_bytes),
                    " bytes (minimum)\n");
    absl::StrAppend(&out, "\nAccumulation point(s):\n");
    if (s.accumulation_points.empty()) absl::StrAppend(&out, "  (none: no reachable instance)\n");
    for (const AccumulationPointReport& p : s.accumulation_points) {
      absl::StrAppendFormat(
          &out, "  %s retains %s instances, %s bytes of them (%.1f%%); retained size %s\n",
          Object(p.object), Bytes(p.suspect_instances), Bytes(p.suspect_bytes), 100 * p.share,
          Bytes(p.object.retained_bytes));
      if (!p.path.steps.empty() || !p.path.found) {
        absl::StrAppend(&out, "  path from a GC root:\n");
        AppendPath(&out, p.path, "    ");
      }
    }
    absl::StrAppend(&out,
                    "\nWho keeps them alive (immediate dominators grouped by class, skipping ",
                    absl::StrJoin(s.exclude_patterns, ", "), "):\n");
    absl::StrAppendFormat(&out, "%12s %12s %18s %18s  %s\n", "dominators", "dominated",
                          "dominated shallow", "dominators retained", "class");
    for (const DominatorClassRow& r : s.kept_alive_by) {
      absl::StrAppendFormat(&out, "%12s %12s %18s %18s  %s\n", Bytes(r.dominators),
                            Bytes(r.dominated), Bytes(r.dominated_shallow_bytes),
                            Bytes(r.dominator_retained_bytes), r.class_name);
    }
    absl::StrAppend(&out, "\nShortest strong path from a GC root to the biggest instance:\n");
    AppendPath(&out, s.shortest_path, "  ");
  }
  const ReportTimings& tm = report.timings;
  absl::StrAppendFormat(
      &out,
      "\nTimes: parse %.2f s, dominators %.2f s, retained sizes %.2f s, aggregations %.2f s, "
      "GC-root paths %.2f s, total %.2f s; peak RSS %s bytes\n",
      tm.parse_seconds, tm.dominators_seconds, tm.retained_seconds, tm.aggregation_seconds,
      tm.gc_root_paths_seconds, tm.total_seconds, Bytes(tm.peak_rss_bytes));
  return out;
}

}  // namespace heapwatch::analysis
