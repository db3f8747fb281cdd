#include "ctl/dump_report_json.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "proto/time_util.h"

namespace heapwatch::ctl {
namespace {

namespace v1 = ::heapwatch::v1;
using nlohmann::json;

json ObjectJson(const v1::HeapObject& o) {
  json j = {{"object_id", o.object_id()},
            {"class_name", o.class_name()},
            {"shallow_bytes", o.shallow_bytes()},
            {"retained_bytes", o.retained_bytes()}};
  if (!o.gc_root_kind().empty()) j["gc_root_kind"] = o.gc_root_kind();
  if (!o.thread_name().empty()) j["thread_name"] = o.thread_name();
  if (o.dynamic_objects() > 0) {
    j["dynamic_bytes"] = o.dynamic_bytes();
    j["dynamic_objects"] = o.dynamic_objects();
  }
  return j;
}

json ClassJson(const v1::ClassRetained& r) {
  return {{"class_name", r.class_name()},
          {"instances", r.instances()},
          {"shallow_bytes", r.shallow_bytes()},
          {"retained_bytes", r.retained_bytes()}};
}

json PathJson(const v1::GcRootPath& p) {
  json steps = json::array();
  for (const v1::PathStep& s : p.steps()) {
    steps.push_back(
        {{"reference", s.reference()}, {"weak", s.weak()}, {"object", ObjectJson(s.object())}});
  }
  json out = {{"found", p.found()}, {"strong", p.strong()}, {"steps", std::move(steps)}};
  if (p.elided_steps() > 0) {  // a shortened path: the steps left out after steps[elided_after - 1]
    out["elided_steps"] = p.elided_steps();
    out["elided_after"] = p.elided_after();
  }
  return out;
}

json LeakPatternsJson(const google::protobuf::RepeatedPtrField<v1::LeakPatternMatch>& matches) {
  json list = json::array();
  for (const v1::LeakPatternMatch& m : matches) {
    json culprits = json::array();
    for (const std::string& c : m.culprits()) culprits.push_back(c);
    list.push_back({{"pattern_id", m.pattern_id()},
                    {"pattern_name", m.pattern_name()},
                    {"summary", m.summary()},
                    {"explanation", m.explanation()},
                    {"culprits", std::move(culprits)},
                    {"path", PathJson(m.path())},
                    {"objects", m.objects()},
                    {"retained_bytes", m.retained_bytes()}});
  }
  return list;
}

json SuspectJson(const v1::DrillDownReport& s) {
  json points = json::array();
  for (const v1::AccumulationPoint& p : s.accumulation_points()) {
    points.push_back({{"object", ObjectJson(p.object())},
                      {"suspect_instances", p.suspect_instances()},
                      {"suspect_bytes", p.suspect_bytes()},
                      {"share", p.share()},
                      {"path", PathJson(p.path())}});
  }
  json kept = json::array();
  for (const v1::KeptAliveBy& r : s.kept_alive_by()) {
    json row = {{"class_name", r.class_name()},
                {"dominators", r.dominators()},
                {"dominated", r.dominated()},
                {"dominator_shallow_bytes", r.dominator_shallow_bytes()},
                {"dominated_shallow_bytes", r.dominated_shallow_bytes()},
                {"dominator_retained_bytes", r.dominator_retained_bytes()}};
    if (r.has_biggest_dominator()) row["biggest_dominator"] = ObjectJson(r.biggest_dominator());
    kept.push_back(std::move(row));
  }
  json patterns = json::array();
  for (const std::string& p : s.exclude_patterns()) patterns.push_back(p);
  json j = {{"class_name", s.class_name()},
            {"instances", s.instances()},
            {"shallow_bytes", s.shallow_bytes()},
            {"retained_bytes", s.retained_bytes()},
            {"minimum_retained_bytes", s.minimum_retained_bytes()},
            {"accumulation_points", std::move(points)},
            {"kept_alive_by", std::move(kept)},
            {"exclude_patterns", std::move(patterns)},
            {"shortest_path", PathJson(s.shortest_path())},
            {"leak_patterns", LeakPatternsJson(s.leak_patterns())}};
  if (s.dynamic_objects() > 0) {
    j["dynamic_bytes"] = s.dynamic_bytes();
    j["dynamic_objects"] = s.dynamic_objects();
  }
  return j;
}

double Seconds(const google::protobuf::Duration& d) {
  auto duration = proto::FromDuration(d);
  return duration.ok() ? absl::ToDoubleSeconds(*duration) : 0.0;
}

json DynamicObjectJson(const v1::DynamicObject& o) {
  return {{"object", ObjectJson(o.object())},
          {"estimated_dynamic_bytes", o.estimated_dynamic_bytes()},
          {"estimate_exact", o.estimate_exact()},
          {"component_objects", o.component_objects()},
          {"shared_bytes", o.shared_bytes()}};
}

json DynamicClassJson(const v1::DynamicClass& c) {
  return {{"class_name", c.class_name()},
          {"instances", c.instances()},
          {"retained_bytes", c.retained_bytes()},
          {"dynamic_bytes", c.dynamic_bytes()},
          {"dynamic_objects", c.dynamic_objects()},
          {"shared_bytes", c.shared_bytes()},
          {"estimated_max_bytes", c.estimated_max_bytes()},
          {"estimated_sum_bytes", c.estimated_sum_bytes()}};
}

json RankingJson(const v1::DynamicRanking& r) {
  json j = {{"all_references", r.all_references()},
            {"sketch_size", r.sketch_size()},
            {"objects", r.objects()},
            {"exact_estimates", r.exact_estimates()},
            {"below_retained", r.below_retained()},
            {"estimate_seconds", Seconds(r.estimate_duration())},
            {"exact_seconds", Seconds(r.exact_duration())}};
  auto objects = [](const auto& rows) {
    json list = json::array();
    for (const v1::DynamicObject& o : rows) list.push_back(DynamicObjectJson(o));
    return list;
  };
  auto classes = [](const auto& rows) {
    json list = json::array();
    for (const v1::DynamicClass& c : rows) list.push_back(DynamicClassJson(c));
    return list;
  };
  j["objects_by_dynamic"] = objects(r.objects_by_dynamic());
  j["objects_by_shared"] = objects(r.objects_by_shared());
  j["classes_by_dynamic"] = classes(r.classes_by_dynamic());
  j["classes_by_shared"] = classes(r.classes_by_shared());
  j["shared_histogram"] = json::array();
  for (const v1::SharedSizeBucket& b : r.shared_histogram()) {
    j["shared_histogram"].push_back(
        {{"from_bytes", b.from_bytes()}, {"to_bytes", b.to_bytes()}, {"objects", b.objects()}});
  }
  return j;
}

}  // namespace

std::string DumpReportToJson(const v1::DumpReport& report) {
  const v1::ExtendedDumpTotals& t = report.totals();
  json j;
  j["dump_path"] = report.dump_path();
  j["dump_file_bytes"] = report.dump_file_bytes();
  j["dump_format"] = report.dump_format();
  j["size_model"] = report.size_model();
  j["totals"] = {{"objects", t.objects()},
                 {"classes", t.classes()},
                 {"gc_roots", t.gc_roots()},
                 {"reachable_objects", t.reachable_objects()},
                 {"unreachable_objects", t.unreachable_objects()},
                 {"shallow_bytes", t.shallow_bytes()},
                 {"reachable_shallow_bytes", t.reachable_shallow_bytes()},
                 {"unreachable_shallow_bytes", t.unreachable_shallow_bytes()}};
  j["histogram"] = json::array();
  for (const v1::ClassRetained& r : report.histogram()) j["histogram"].push_back(ClassJson(r));
  j["top_objects"] = json::array();
  for (const v1::HeapObject& o : report.top_objects()) j["top_objects"].push_back(ObjectJson(o));
  j["top_dominators_by_class"] = json::array();
  for (const v1::ClassRetained& r : report.top_dominators_by_class())
    j["top_dominators_by_class"].push_back(ClassJson(r));
  if (report.suspects_size() > 0) j["suspect"] = SuspectJson(report.suspects(0));
  j["leak_patterns"] = LeakPatternsJson(report.leak_patterns());
  if (report.has_by_dynamic()) j["by_dynamic"] = RankingJson(report.by_dynamic());
  if (report.has_class_loaders()) {
    // docs/class-loaders.md: loaders by classes defined, and the class names several define.
    const v1::ClassLoaderReport& cl = report.class_loaders();
    json loaders = json::array();
    for (const v1::ClassLoaderRow& l : cl.loaders()) {
      loaders.push_back({{"loader_id", l.loader_id()},
                         {"loader_class", l.loader_class()},
                         {"classes", l.classes()},
                         {"instances", l.instances()}});
    }
    json duplicates = json::array();
    for (const v1::DuplicateClassGroup& g : cl.duplicates()) {
      duplicates.push_back(
          {{"loader_class", g.loader_class()},
           {"loaders", g.loaders()},
           {"class_names", g.class_names()},
           {"examples", std::vector<std::string>(g.examples().begin(), g.examples().end())}});
    }
    j["class_loaders"] = {{"loader_objects", cl.loader_objects()},
                          {"boot_classes", cl.boot_classes()},
                          {"duplicated_class_names", cl.duplicated_class_names()},
                          {"loaders", loaders},
                          {"duplicates", duplicates}};
  }
  const v1::AnalysisTimings& tm = report.timings();
  j["timings"] = {{"parse_seconds", Seconds(tm.parse_duration())},
                  {"dominators_seconds", Seconds(tm.dominators_duration())},
                  {"retained_seconds", Seconds(tm.retained_duration())},
                  {"gc_root_paths_seconds", Seconds(tm.gc_root_paths_duration())},
                  {"aggregation_seconds", Seconds(tm.aggregation_duration())},
                  {"dynamic_seconds", Seconds(tm.dynamic_duration())},
                  {"total_seconds", Seconds(tm.total_duration())},
                  {"peak_rss_bytes", tm.peak_rss_bytes()}};
  return j.dump(2);
}

}  // namespace heapwatch::ctl
