// The report model of `heapwatchctl analyze` end to end on the hand-built heap of
// tests/analysis/leak_heap.h: pipeline::AnalyzeHeapGraph -> proto::ToDumpReport ->
// DumpReportToJson (the field names analyze --json has always had) and RenderDumpReport (the
// renderer `heapwatchctl report` uses: one dialect for objects and paths).
#include <nlohmann/json.hpp>
#include <string>

#include "ctl/dump_report_json.h"
#include "ctl/report_render.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pipeline/analyze_dump.h"
#include "proto/report_proto.h"
#include "tests/analysis/leak_heap.h"

namespace heapwatch::ctl {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::DumpReport LeakReport(size_t by_dynamic_rows = 0) {
  auto graph = analysis::testing::LeakHeap();
  EXPECT_TRUE(graph.ok()) << graph.status();
  pipeline::AnalyzeDumpOptions options;
  options.suspect_classes = {"com.acme.Session"};
  options.by_dynamic_rows = by_dynamic_rows;
  auto analysis = pipeline::AnalyzeHeapGraph(*graph, options);
  EXPECT_TRUE(analysis.ok()) << analysis.status();
  analysis->report.dump_path = "/tmp/x.hprof";
  v1::DumpReport report = proto::ToDumpReport(analysis->report, analysis->suspects);
  if (analysis->by_dynamic) *report.mutable_by_dynamic() = proto::ToProto(*analysis->by_dynamic);
  return report;
}

TEST(DumpReportTest, JsonKeepsTheAnalyzeFieldNames) {
  const v1::DumpReport report = LeakReport();
  nlohmann::json j = nlohmann::json::parse(DumpReportToJson(report));
  EXPECT_EQ(j["dump_path"], "/tmp/x.hprof");
  EXPECT_EQ(j["totals"]["objects"].get<uint64_t>(), report.totals().objects());
  EXPECT_GT(j["totals"]["objects"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["suspect"]["class_name"], "com.acme.Session");
  EXPECT_EQ(j["suspect"]["instances"].get<uint64_t>(), 5u);
  EXPECT_EQ(j["suspect"]["retained_bytes"].get<uint64_t>(), report.suspects(0).retained_bytes());
  EXPECT_EQ(j["suspect"]["accumulation_points"][0]["object"]["object_id"].get<uint64_t>(), 0x2000u);
  EXPECT_EQ(j["suspect"]["accumulation_points"][0]["path"]["steps"][1]["reference"],
            "static SESSIONS");
  EXPECT_EQ(j["suspect"]["kept_alive_by"][0]["class_name"], "class com.acme.Registry");
  EXPECT_EQ(j["suspect"]["kept_alive_by"][0]["biggest_dominator"]["object_id"].get<uint64_t>(),
            0x30u);
  EXPECT_EQ(j["histogram"].size(), static_cast<size_t>(report.histogram_size()));
  EXPECT_EQ(j["top_objects"][0]["gc_root_kind"], "STICKY_CLASS");
  EXPECT_TRUE(j["timings"].contains("total_seconds"));
  EXPECT_TRUE(j["timings"].contains("peak_rss_bytes"));
  // Dynamic sizes (the pipeline computes them by default): the five Sessions and their byte[].
  EXPECT_EQ(j["suspect"]["dynamic_objects"].get<uint64_t>(), 10u);
  EXPECT_EQ(j["suspect"]["dynamic_bytes"].get<uint64_t>(), report.suspects(0).dynamic_bytes());
  EXPECT_GT(j["suspect"]["dynamic_bytes"].get<uint64_t>(), 0u);
  for (const nlohmann::json& o : j["top_objects"]) {
    EXPECT_TRUE(o.contains("dynamic_bytes")) << o.dump();
    EXPECT_TRUE(o.contains("dynamic_objects")) << o.dump();
  }
  EXPECT_TRUE(j["suspect"]["accumulation_points"][0]["object"].contains("dynamic_bytes"));
  // Path steps have none.
  EXPECT_FALSE(j["suspect"]["shortest_path"]["steps"][0]["object"].contains("dynamic_bytes"));
  EXPECT_FALSE(j.contains("by_dynamic"));
}

TEST(DumpReportTest, ByDynamicInJsonAndText) {
  const v1::DumpReport report = LeakReport(/*by_dynamic_rows=*/3);
  nlohmann::json j = nlohmann::json::parse(DumpReportToJson(report));
  const nlohmann::json& by = j["by_dynamic"];
  ASSERT_EQ(by["objects_by_dynamic"].size(), 3u);
  // class com.acme.Registry reaches the list, its array, four Sessions and their byte[].
  EXPECT_EQ(by["objects_by_dynamic"][0]["object"]["class_name"], "class com.acme.Registry");
  EXPECT_EQ(by["objects_by_dynamic"][0]["object"]["dynamic_objects"].get<uint64_t>(), 11u);
  EXPECT_TRUE(by["objects_by_dynamic"][0]["estimate_exact"].get<bool>());
  EXPECT_EQ(by["shared_histogram"].size(), 10u);
  EXPECT_FALSE(by["all_references"].get<bool>());
  EXPECT_EQ(by["sketch_size"].get<uint32_t>(), analysis::DynamicSizeSketchOptions{}.sketch_size);
  EXPECT_TRUE(by.contains("classes_by_shared"));

  const std::string text = RenderDumpReport(report);
  EXPECT_THAT(text, HasSubstr("Biggest objects by dynamic size"));
  EXPECT_THAT(text, HasSubstr("Biggest classes by shared size"));
  EXPECT_THAT(text, HasSubstr("the thesis's Tab. 5.3"));
  EXPECT_THAT(text, HasSubstr("class com.acme.Registry@0x30"));
  // --by dynamic replaces the retained-size tables.
  EXPECT_THAT(text, Not(HasSubstr("Class histogram")));
  EXPECT_THAT(text, Not(HasSubstr("Biggest objects by retained size")));
}

TEST(DumpReportTest, TextUsesTheReportDialect) {
  const std::string text = RenderDumpReport(LeakReport());
  EXPECT_THAT(text, HasSubstr("Dump: /tmp/x.hprof"));
  EXPECT_THAT(text, HasSubstr("Class histogram"));
  EXPECT_THAT(text, HasSubstr("Suspect class com.acme.Session:\nInstances:              5\n"));
  // Objects are "class@0xid" and path steps "reference -> object (retained)", as in `report`
  // (analyze printed "-> static SESSIONS -> java.util.ArrayList @ 0x1000" before).
  EXPECT_THAT(text, HasSubstr("static SESSIONS -> java.util.ArrayList@0x1000 ("));
  EXPECT_THAT(text, HasSubstr("GC root (STICKY_CLASS) class com.acme.Registry@0x30"));
  EXPECT_THAT(text, Not(HasSubstr(" @ 0x")));
  EXPECT_THAT(text, HasSubstr("Biggest objects by retained size"));
  EXPECT_THAT(text, HasSubstr("Times: parse"));
  EXPECT_THAT(text, HasSubstr("Dynamic size:           "));
  EXPECT_THAT(text, HasSubstr("10 objects (everything the instances reach)"));
  EXPECT_THAT(text, HasSubstr("  dynamic size "));  // of the accumulation point
  EXPECT_THAT(text, HasSubstr("DYNAMIC"));          // column of the biggest objects
}

TEST(DumpReportTest, UnreachablePathWordingIsTheReportOne) {
  v1::DumpReport report = LeakReport();
  v1::DrillDownReport* s = report.mutable_suspects(0);
  s->mutable_shortest_path()->Clear();
  const std::string text = RenderDumpReport(report);
  EXPECT_THAT(text, HasSubstr("(no GC root reaches it)"));
  EXPECT_THAT(text, Not(HasSubstr("not reachable from a GC root")));
}

}  // namespace
}  // namespace heapwatch::ctl
