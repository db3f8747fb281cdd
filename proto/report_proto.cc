#include "proto/report_proto.h"

#include <algorithm>
#include <string>

#include "absl/time/time.h"
#include "proto/time_util.h"

namespace heapwatch::proto {
namespace {

v1::ClassChange ChangeToProto(analysis::DumpClassChange change) {
  switch (change) {
    case analysis::DumpClassChange::kChanged:
      return v1::CLASS_CHANGE_CHANGED;
    case analysis::DumpClassChange::kNew:
      return v1::CLASS_CHANGE_NEW;
    case analysis::DumpClassChange::kVanished:
      return v1::CLASS_CHANGE_VANISHED;
    case analysis::DumpClassChange::kUnchanged:
      return v1::CLASS_CHANGE_UNCHANGED;
  }
  return v1::CLASS_CHANGE_UNSPECIFIED;
}

size_t Limit(size_t size, uint32_t max) { return max == 0 ? size : std::min<size_t>(size, max); }

}  // namespace

v1::HeapObject ToProto(const analysis::ObjectSummary& object) {
  v1::HeapObject out;
  out.set_object_id(object.object_id);
  out.set_class_name(object.class_name);
  out.set_shallow_bytes(object.shallow_bytes);
  out.set_retained_bytes(object.retained_bytes);
  out.set_gc_root_kind(object.gc_root_kind);
  out.set_dynamic_bytes(object.dynamic_bytes);
  out.set_dynamic_objects(object.dynamic_objects);
  out.set_thread_name(object.thread_name);
  return out;
}

v1::GcRootPath ToProto(const analysis::GcRootPathReport& path) {
  v1::GcRootPath out;
  out.set_found(path.found);
  out.set_strong(path.strong);
  for (const analysis::PathStepReport& step : path.steps) {
    v1::PathStep* s = out.add_steps();
    s->set_reference(step.reference);
    s->set_weak(step.weak);
    *s->mutable_object() = ToProto(step.object);
  }
  if (path.elided_steps > 0) {
    out.set_elided_steps(path.elided_steps);
    out.set_elided_after(static_cast<uint32_t>(path.elided_after));
  }
  return out;
}

v1::AccumulationPoint ToProto(const analysis::AccumulationPointReport& point) {
  v1::AccumulationPoint out;
  *out.mutable_object() = ToProto(point.object);
  out.set_suspect_instances(point.suspect_instances);
  out.set_suspect_bytes(point.suspect_bytes);
  out.set_share(point.share);
  *out.mutable_path() = ToProto(point.path);
  for (uint64_t id : point.dominator_ids) out.add_dominator_object_ids(id);
  return out;
}

v1::KeptAliveBy ToProto(const analysis::DominatorClassRow& row) {
  v1::KeptAliveBy out;
  out.set_class_name(row.class_name);
  out.set_dominators(row.dominators);
  out.set_dominated(row.dominated);
  out.set_dominator_shallow_bytes(row.dominator_shallow_bytes);
  out.set_dominated_shallow_bytes(row.dominated_shallow_bytes);
  out.set_dominator_retained_bytes(row.dominator_retained_bytes);
  if (row.dominators > 0 && !row.biggest_dominator.class_name.empty()) {
    *out.mutable_biggest_dominator() = ToProto(row.biggest_dominator);
  }
  return out;
}

v1::ExtendedDumpTotals ToProto(const analysis::ReportTotals& totals) {
  v1::ExtendedDumpTotals out;
  out.set_objects(totals.objects);
  out.set_classes(totals.classes);
  out.set_gc_roots(totals.gc_roots);
  out.set_reachable_objects(totals.reachable_objects);
  out.set_unreachable_objects(totals.unreachable_objects);
  out.set_shallow_bytes(totals.shallow_bytes);
  out.set_reachable_shallow_bytes(totals.reachable_shallow_bytes);
  out.set_unreachable_shallow_bytes(totals.unreachable_shallow_bytes);
  return out;
}

analysis::ReportTotals FromProto(const v1::ExtendedDumpTotals& totals) {
  analysis::ReportTotals out;
  out.objects = totals.objects();
  out.classes = totals.classes();
  out.gc_roots = totals.gc_roots();
  out.reachable_objects = totals.reachable_objects();
  out.unreachable_objects = totals.unreachable_objects();
  out.shallow_bytes = totals.shallow_bytes();
  out.reachable_shallow_bytes = totals.reachable_shallow_bytes();
  out.unreachable_shallow_bytes = totals.unreachable_shallow_bytes();
  return out;
}

v1::LeakPatternMatch ToProto(const analysis::LeakPatternMatch& match) {
  v1::LeakPatternMatch out;
  out.set_pattern_id(match.pattern_id);
  out.set_pattern_name(match.pattern_name);
  out.set_summary(match.summary);
  out.set_explanation(match.explanation);
  for (const std::string& culprit : match.culprits) out.add_culprits(culprit);
  *out.mutable_path() = ToProto(match.path);
  out.set_objects(match.objects);
  out.set_retained_bytes(match.retained_bytes);
  return out;
}

void FillDrillDownReport(const analysis::SuspectReport& suspect,
                         std::span<const analysis::ObjectSummary> top_objects,
                         v1::DrillDownReport* report) {
  report->set_class_name(suspect.class_name);
  report->set_instances(suspect.instances);
  report->set_shallow_bytes(suspect.shallow_bytes);
  report->set_retained_bytes(suspect.retained_bytes);
  report->set_minimum_retained_bytes(suspect.minimum_retained_bytes);
  report->set_dynamic_bytes(suspect.dynamic_bytes);
  report->set_dynamic_objects(suspect.dynamic_objects);
  report->clear_accumulation_points();
  for (const auto& point : suspect.accumulation_points)
    *report->add_accumulation_points() = ToProto(point);
  report->clear_kept_alive_by();
  for (const auto& row : suspect.kept_alive_by) *report->add_kept_alive_by() = ToProto(row);
  report->clear_exclude_patterns();
  for (const std::string& pattern : suspect.exclude_patterns) report->add_exclude_patterns(pattern);
  *report->mutable_shortest_path() = ToProto(suspect.shortest_path);
  report->clear_top_objects();
  for (const auto& object : top_objects) *report->add_top_objects() = ToProto(object);
  report->clear_leak_patterns();
  for (const auto& match : suspect.leak_patterns) *report->add_leak_patterns() = ToProto(match);
}

namespace {

v1::DynamicObject DynamicObjectToProto(const analysis::DynamicObjectRow& row) {
  v1::DynamicObject out;
  *out.mutable_object() = ToProto(row.object);
  out.set_estimated_dynamic_bytes(row.estimated_dynamic_bytes);
  out.set_estimate_exact(row.estimate_exact);
  out.set_component_objects(row.component_objects);
  out.set_shared_bytes(row.shared_bytes);
  return out;
}

v1::DynamicClass DynamicClassToProto(const analysis::DynamicClassRow& row) {
  v1::DynamicClass out;
  out.set_class_name(row.class_name);
  out.set_instances(row.instances);
  out.set_retained_bytes(row.retained_bytes);
  out.set_dynamic_bytes(row.dynamic_bytes);
  out.set_dynamic_objects(row.dynamic_objects);
  out.set_shared_bytes(row.shared_bytes);
  out.set_estimated_max_bytes(row.estimated_max_bytes);
  out.set_estimated_sum_bytes(row.estimated_sum_bytes);
  return out;
}

}  // namespace

v1::DynamicRanking ToProto(const analysis::DynamicRanking& ranking) {
  v1::DynamicRanking out;
  out.set_all_references(ranking.all_references);
  out.set_sketch_size(ranking.sketch_size);
  out.set_objects(ranking.objects);
  out.set_exact_estimates(ranking.exact_estimates);
  for (const auto& row : ranking.objects_by_dynamic)
    *out.add_objects_by_dynamic() = DynamicObjectToProto(row);
  for (const auto& row : ranking.objects_by_shared)
    *out.add_objects_by_shared() = DynamicObjectToProto(row);
  for (const auto& row : ranking.classes_by_dynamic)
    *out.add_classes_by_dynamic() = DynamicClassToProto(row);
  for (const auto& row : ranking.classes_by_shared)
    *out.add_classes_by_shared() = DynamicClassToProto(row);
  for (const analysis::SharedSizeBucket& b : ranking.shared_histogram) {
    v1::SharedSizeBucket* bucket = out.add_shared_histogram();
    bucket->set_from_bytes(b.from_bytes);
    bucket->set_to_bytes(b.to_bytes);
    bucket->set_objects(b.objects);
  }
  out.set_below_retained(ranking.below_retained);
  ToDuration(absl::Seconds(ranking.estimate_seconds), out.mutable_estimate_duration());
  ToDuration(absl::Seconds(ranking.exact_seconds), out.mutable_exact_duration());
  return out;
}

v1::ClassRetained ToProto(const analysis::ClassRow& row) {
  v1::ClassRetained out;
  out.set_class_name(row.class_name);
  out.set_instances(row.instances);
  out.set_shallow_bytes(row.shallow_bytes);
  out.set_retained_bytes(row.retained_bytes);
  return out;
}

namespace {
void FillTreemapCell(const analysis::TreemapCell& cell, v1::TreemapCell* out) {
  out->set_label(cell.label);
  switch (cell.kind) {
    case analysis::TreemapCell::Kind::kClass:
      out->set_kind("class");
      break;
    case analysis::TreemapCell::Kind::kStatics:
      out->set_kind("statics");
      break;
    case analysis::TreemapCell::Kind::kOther:
      out->set_kind("other");
      break;
    case analysis::TreemapCell::Kind::kSelf:
      out->set_kind("self");
      break;
  }
  out->set_objects(cell.objects);
  out->set_retained_bytes(cell.retained_bytes);
  out->set_accumulation_point(cell.accumulation_point);
}
}  // namespace

v1::DominatorTreemap ToProto(const analysis::DominatorTreemap& treemap) {
  v1::DominatorTreemap out;
  out.set_total_bytes(treemap.total_bytes);
  out.set_total_objects(treemap.total_objects);
  for (const analysis::TreemapCell& cell : treemap.cells) {  // two levels: no recursion needed
    v1::TreemapCell* c = out.add_cells();
    FillTreemapCell(cell, c);
    for (const analysis::TreemapCell& child : cell.children)
      FillTreemapCell(child, c->add_children());
  }
  return out;
}

v1::AnalysisTimings ToProto(const analysis::ReportTimings& timings) {
  v1::AnalysisTimings out;
  auto set = [](double seconds, google::protobuf::Duration* d) {
    ToDuration(absl::Seconds(seconds), d);
  };
  set(timings.parse_seconds, out.mutable_parse_duration());
  set(timings.dominators_seconds, out.mutable_dominators_duration());
  set(timings.retained_seconds, out.mutable_retained_duration());
  set(timings.gc_root_paths_seconds, out.mutable_gc_root_paths_duration());
  set(timings.aggregation_seconds, out.mutable_aggregation_duration());
  set(timings.total_seconds, out.mutable_total_duration());
  set(timings.dynamic_seconds, out.mutable_dynamic_duration());
  out.set_peak_rss_bytes(timings.peak_rss_bytes);
  return out;
}

v1::ClassLoaderReport ToProto(const analysis::ClassLoaderSummary& summary) {
  v1::ClassLoaderReport out;
  out.set_loader_objects(summary.loader_objects);
  out.set_boot_classes(summary.boot_classes);
  out.set_duplicated_class_names(summary.duplicated_class_names);
  for (const analysis::ClassLoaderRow& row : summary.loaders) {
    v1::ClassLoaderRow* r = out.add_loaders();
    r->set_loader_id(row.loader_id);
    r->set_loader_class(row.loader_class);
    r->set_classes(row.classes);
    r->set_instances(row.instances);
  }
  for (const analysis::DuplicateClassGroup& g : summary.duplicates) {
    v1::DuplicateClassGroup* d = out.add_duplicates();
    d->set_loader_class(g.loader_class);
    d->set_loaders(g.loaders);
    d->set_class_names(g.class_names);
    for (const std::string& e : g.examples) d->add_examples(e);
  }
  return out;
}

v1::DumpReport ToDumpReport(const analysis::Report& report,
                            std::span<const analysis::SuspectReport> suspects) {
  v1::DumpReport out;
  out.set_dump_path(report.dump_path);
  out.set_dump_file_bytes(report.dump_file_bytes);
  out.set_dump_format(report.dump_format);
  out.set_size_model(report.size_model);
  *out.mutable_totals() = ToProto(report.totals);
  for (const analysis::ClassRow& row : report.histogram) *out.add_histogram() = ToProto(row);
  for (const analysis::ObjectSummary& o : report.top_objects) *out.add_top_objects() = ToProto(o);
  for (const analysis::ClassRow& row : report.top_dominators_by_class)
    *out.add_top_dominators_by_class() = ToProto(row);
  if (report.suspect) FillDrillDownReport(*report.suspect, {}, out.add_suspects());
  for (const analysis::SuspectReport& s : suspects) FillDrillDownReport(s, {}, out.add_suspects());
  *out.mutable_timings() = ToProto(report.timings);
  for (const auto& match : report.leak_patterns) *out.add_leak_patterns() = ToProto(match);
  return out;
}

void FillDumpSummaryRecord(const analysis::DumpSummary& summary,
                           records::v1::ExtendedDumpSummary* record) {
  *record->mutable_totals() = ToProto(summary.totals);
  record->clear_classes();
  for (const analysis::ClassRow& row : summary.classes) {
    records::v1::DumpClassRow* r = record->add_classes();
    r->set_class_name(row.class_name);
    r->set_instances(row.instances);
    r->set_shallow_bytes(row.shallow_bytes);
    r->set_retained_bytes(row.retained_bytes);
  }
  record->clear_owners();
  for (const analysis::OwnerRow& row : summary.owners) {
    records::v1::DumpOwnerRow* r = record->add_owners();
    r->set_class_name(row.class_name);
    for (const std::string& step : row.path) r->add_path(step);
    r->set_retained_bytes(row.retained_bytes);
    r->set_objects(row.objects);
  }
}

analysis::DumpSummary DumpSummaryFromRecord(const records::v1::ExtendedDumpSummary& record) {
  analysis::DumpSummary summary;
  summary.totals = FromProto(record.totals());
  summary.classes.reserve(record.classes_size());
  for (const records::v1::DumpClassRow& r : record.classes()) {
    summary.classes.push_back(
        analysis::ClassRow{r.class_name(), r.instances(), r.shallow_bytes(), r.retained_bytes()});
  }
  summary.owners.reserve(record.owners_size());
  for (const records::v1::DumpOwnerRow& r : record.owners()) {
    analysis::OwnerRow row;
    row.class_name = r.class_name();
    row.path.assign(r.path().begin(), r.path().end());
    row.retained_bytes = r.retained_bytes();
    row.objects = r.objects();
    summary.owners.push_back(std::move(row));
  }
  return summary;
}

v1::ExtendedDumpDiff ToProto(const analysis::DumpDiff& diff, uint32_t max_classes,
                             uint32_t max_owners) {
  v1::ExtendedDumpDiff out;
  for (size_t i = 0; i < Limit(diff.classes.size(), max_classes); ++i) {
    const analysis::DumpClassDelta& c = diff.classes[i];
    v1::ExtendedDumpClassDelta* d = out.add_classes();
    d->set_class_name(c.class_name);
    d->set_change(ChangeToProto(c.change));
    d->set_before_instances(c.before_instances);
    d->set_after_instances(c.after_instances);
    d->set_delta_instances(c.delta_instances);
    d->set_before_shallow_bytes(c.before_shallow_bytes);
    d->set_after_shallow_bytes(c.after_shallow_bytes);
    d->set_delta_shallow_bytes(c.delta_shallow_bytes);
    d->set_before_retained_bytes(c.before_retained_bytes);
    d->set_after_retained_bytes(c.after_retained_bytes);
    d->set_delta_retained_bytes(c.delta_retained_bytes);
  }
  for (size_t i = 0; i < Limit(diff.owners.size(), max_owners); ++i) {
    const analysis::OwnerDelta& o = diff.owners[i];
    v1::OwnerDelta* d = out.add_owners();
    d->set_class_name(o.class_name);
    for (const std::string& step : o.path) d->add_path(step);
    d->set_before_retained_bytes(o.before_retained_bytes);
    d->set_after_retained_bytes(o.after_retained_bytes);
    d->set_delta_retained_bytes(o.delta_retained_bytes);
    d->set_before_objects(o.before_objects);
    d->set_after_objects(o.after_objects);
  }
  for (size_t i = 0; i < Limit(diff.owner_classes.size(), max_owners); ++i) {
    const analysis::OwnerClassDelta& o = diff.owner_classes[i];
    v1::OwnerClassDelta* d = out.add_owner_classes();
    d->set_class_name(o.class_name);
    d->set_before_retained_bytes(o.before_retained_bytes);
    d->set_after_retained_bytes(o.after_retained_bytes);
    d->set_delta_retained_bytes(o.delta_retained_bytes);
    d->set_before_objects(o.before_objects);
    d->set_after_objects(o.after_objects);
  }
  out.set_before_reachable_bytes(diff.before_reachable_bytes);
  out.set_after_reachable_bytes(diff.after_reachable_bytes);
  out.set_delta_reachable_bytes(diff.delta_reachable_bytes);
  out.set_class_count(static_cast<uint32_t>(diff.classes.size()));
  out.set_owner_count(static_cast<uint32_t>(diff.owners.size()));
  return out;
}

}  // namespace heapwatch::proto
