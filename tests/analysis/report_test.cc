// Tests of analysis/report.h: BuildReport on a small hand-built heap (a leak held by a static
// ArrayList, garbage, a weakly held object), its JSON and text forms, and its errors.
#include "analysis/report.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/heap_graph.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

using ::testing::HasSubstr;

ClassInfo Instance(std::string name, std::vector<std::string> reference_fields, uint32_t size) {
  ClassInfo c;
  c.name = std::move(name);
  for (auto& f : reference_fields) c.instance_fields.push_back(FieldInfo{f, FieldType::kObject});
  c.instance_size = size;
  c.class_object_size = 8;
  return c;
}

// com.acme.Registry (class, sticky root) --static SESSIONS--> ArrayList --elementData--> Object[4]
// -> 4 Session, each Session --data--> byte[]. One Session is garbage. A WeakReference (JNI global
// root) --referent--> a fifth Session that nothing else holds.
StatusOr<HeapGraph> LeakHeap() {
  HeapGraphBuilder b{DumpInfo{}};
  b.AddClass(Instance("java.lang.Object", {}, 16), 0x10);
  b.AddClass(Instance("java.lang.Class", {}, 96), 0x20);
  ClassInfo registry = Instance("com.acme.Registry", {}, 16);
  registry.static_fields.push_back(FieldInfo{"SESSIONS", FieldType::kObject});
  ClassId reg = b.AddClass(registry, 0x30);
  ClassId list = b.AddClass(Instance("java.util.ArrayList", {"elementData"}, 24), 0x40);
  ClassInfo objects;
  objects.name = "java.lang.Object[]";
  objects.instance_kind = ObjectKind::kObjectArray;
  ClassId arr = b.AddClass(objects, 0x50);
  ClassId session = b.AddClass(Instance("com.acme.Session", {"data"}, 24), 0x60);
  ClassInfo bytes;
  bytes.name = "byte[]";
  bytes.instance_kind = ObjectKind::kPrimitiveArray;
  bytes.element_type = FieldType::kByte;
  ClassId byte_array = b.AddClass(bytes, 0x70);
  ClassInfo reference = Instance("java.lang.ref.Reference", {"referent"}, 32);
  reference.is_reference = true;
  ClassId ref = b.AddClass(reference, 0x80);
  b.SetStaticReferences(reg, {0x1000});
  b.AddInstance(0x1000, list, {0x2000});
  b.AddObjectArray(0x2000, arr, {0x3000, 0x3010, 0x3020, 0x3030});
  for (uint64_t i = 0; i < 6; ++i) {
    b.AddInstance(0x3000 + 16 * i, session, {0x4000 + 16 * i});
    b.AddPrimitiveArray(0x4000 + 16 * i, byte_array, 1000);
  }
  // 0x3040: garbage; 0x3050: only weakly reachable.
  b.AddInstance(0x5000, ref, {0x3050});
  for (uint64_t c = 0x10; c <= 0x80; c += 0x10) b.AddRoot(c, GcRootKind::kStickyClass);
  b.AddRoot(0x5000, GcRootKind::kJniGlobal);
  return std::move(b).Build();
}

TEST(ReportTest, SuspectAnalysisFindsTheStaticListAndItsPath) {
  auto graph = LeakHeap();
  ASSERT_TRUE(graph.ok()) << graph.status();
  ReportOptions options;
  options.suspect_class = "com.acme.Session";
  options.top_objects = 3;
  auto report = BuildReport(*graph, options);
  ASSERT_TRUE(report.ok()) << report.status();

  const uint64_t session = graph->shallow_size(graph->FindObject(0x3000));
  const uint64_t data = graph->shallow_size(graph->FindObject(0x4000));
  EXPECT_EQ(report->totals.objects, graph->object_count());
  EXPECT_EQ(report->totals.unreachable_objects, 2u);  // the garbage Session and its byte[]
  EXPECT_EQ(report->totals.unreachable_shallow_bytes, session + data);
  EXPECT_EQ(report->totals.reachable_objects + report->totals.unreachable_objects,
            report->totals.objects);

  ASSERT_TRUE(report->suspect.has_value());
  const SuspectReport& s = *report->suspect;
  EXPECT_EQ(s.instances, 5u);  // 4 in the list + the weakly held one (weak references are followed)
  EXPECT_EQ(s.shallow_bytes, 5 * session);
  EXPECT_EQ(s.minimum_retained_bytes, 5 * (session + data));
  EXPECT_EQ(s.retained_bytes, 5 * (session + data));  // nothing else dies with them
  ASSERT_EQ(s.accumulation_points.size(), 1u);
  const AccumulationPointReport& point = s.accumulation_points[0];
  EXPECT_EQ(point.object.object_id, 0x2000u);  // the ArrayList's Object[]
  EXPECT_EQ(point.object.class_name, "java.lang.Object[]");
  EXPECT_EQ(point.suspect_instances, 4u);
  EXPECT_DOUBLE_EQ(point.share, 0.8);
  ASSERT_TRUE(point.path.found);
  EXPECT_TRUE(point.path.strong);
  std::vector<std::string> refs;
  for (const PathStepReport& step : point.path.steps) refs.push_back(step.reference);
  EXPECT_THAT(refs, ::testing::ElementsAre("", "static SESSIONS", "elementData"));
  EXPECT_EQ(point.path.steps.front().object.class_name, "class com.acme.Registry");
  EXPECT_EQ(point.path.steps.front().object.gc_root_kind, "STICKY_CLASS");

  // Who keeps them alive: the Registry class (past ArrayList and Object[]), and the weak
  // reference's class is java.* so that one climbs to <ROOT>.
  ASSERT_EQ(s.kept_alive_by.size(), 2u);
  EXPECT_EQ(s.kept_alive_by[0].class_name, "class com.acme.Registry");
  EXPECT_EQ(s.kept_alive_by[0].dominated, 4u);
  EXPECT_EQ(s.kept_alive_by[0].biggest_dominator.object_id, 0x30u);
  EXPECT_EQ(s.kept_alive_by[1].class_name, "<ROOT>");
  EXPECT_EQ(s.kept_alive_by[1].dominated, 1u);

  // The shortest path leads to an instance (all have the same retained size: the lowest index
  // wins).
  ASSERT_TRUE(s.shortest_path.found);
  EXPECT_EQ(s.shortest_path.steps.back().object.class_name, "com.acme.Session");

  // Histogram: Session's retained size is the minimum retained size of its reachable instances.
  auto row = std::find_if(report->histogram.begin(), report->histogram.end(),
                          [](const ClassRow& r) { return r.class_name == "com.acme.Session"; });
  ASSERT_NE(row, report->histogram.end());
  EXPECT_EQ(row->instances, 5u);
  EXPECT_EQ(row->retained_bytes, 5 * (session + data));
  ASSERT_EQ(report->top_objects.size(), 3u);
  EXPECT_EQ(report->top_objects[0].class_name, "class com.acme.Registry");
  EXPECT_GE(report->top_objects[0].retained_bytes, report->top_objects[1].retained_bytes);
}

TEST(ReportTest, JsonCarriesTheModel) {
  auto graph = LeakHeap();
  ASSERT_TRUE(graph.ok());
  ReportOptions options;
  options.suspect_class = "com.acme.Session";
  auto report = BuildReport(*graph, options);
  ASSERT_TRUE(report.ok());
  report->dump_path = "/tmp/x.hprof";
  nlohmann::json j = nlohmann::json::parse(ReportToJson(*report));
  EXPECT_EQ(j["dump_path"], "/tmp/x.hprof");
  EXPECT_EQ(j["totals"]["objects"].get<uint64_t>(), report->totals.objects);
  EXPECT_EQ(j["suspect"]["class_name"], "com.acme.Session");
  EXPECT_EQ(j["suspect"]["retained_bytes"].get<uint64_t>(), report->suspect->retained_bytes);
  EXPECT_EQ(j["suspect"]["accumulation_points"][0]["object"]["object_id"].get<uint64_t>(), 0x2000u);
  EXPECT_EQ(j["suspect"]["accumulation_points"][0]["path"]["steps"][1]["reference"],
            "static SESSIONS");
  EXPECT_EQ(j["suspect"]["kept_alive_by"][0]["class_name"], "class com.acme.Registry");
  EXPECT_EQ(j["histogram"].size(), report->histogram.size());
  EXPECT_TRUE(j["timings"].contains("total_seconds"));

  std::string text = ReportToText(*report);
  EXPECT_THAT(text, HasSubstr("Suspect class com.acme.Session: 5 instances"));
  EXPECT_THAT(text, HasSubstr("-> static SESSIONS -> java.util.ArrayList @ 0x1000"));
  EXPECT_THAT(text, HasSubstr("class com.acme.Registry"));
}

TEST(ReportTest, ErrorsAreReturned) {
  auto graph = LeakHeap();
  ASSERT_TRUE(graph.ok());
  ReportOptions unknown;
  unknown.suspect_class = "com.acme.Nope";
  EXPECT_EQ(BuildReport(*graph, unknown).status().code(), absl::StatusCode::kNotFound);
  ReportOptions bad_pattern;
  bad_pattern.exclude_patterns = std::vector<std::string>{"(("};
  EXPECT_EQ(BuildReport(*graph, bad_pattern).status().code(), absl::StatusCode::kInvalidArgument);
  ReportOptions bad_ratio;
  bad_ratio.suspect_class = "com.acme.Session";
  bad_ratio.accumulation_ratio = 0;
  EXPECT_EQ(BuildReport(*graph, bad_ratio).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ReportTest, EmptyGraph) {
  HeapGraph empty;
  auto report = BuildReport(empty, {});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->totals.objects, 0u);
  EXPECT_TRUE(report->histogram.empty());
  EXPECT_TRUE(report->top_objects.empty());
}

}  // namespace
}  // namespace heapwatch::analysis
